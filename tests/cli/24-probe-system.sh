# mgpu-probe --system on GPUs it cannot see here: --from gives the GPUs of
# an nvidia-smi CSV, and the checklist says for each whether this binary
# carries code for its compute capability (SASS, PTX the driver compiles,
# or none), from the GPU code list the build recorded.
. tests/cli/lib.sh
unset CUDA_VISIBLE_DEVICES MASTER_PORT
P=$BIN/mgpu-probe
D=$SRC/tests/data/smi
"$P" --system --from "$D/archs.csv" >sys.tsv 2>err.txt || fail "--system --from exited $?"
[ ! -s err.txt ] || fail "--system --from wrote to stderr: $(cat err.txt)"
grep -q "^gpus	cuda_gpus	8 (from '$D/archs.csv')	" sys.tsv || fail "cuda_gpus: $(grep cuda_gpus sys.tsv)"
grep -q "^gpus	gpu 3	NVIDIA H100 80GB HBM3, 79.6 GiB, cc 9.0, ? SMs, " sys.tsv ||
	fail "gpu 3 row: $(grep 'gpu 3' sys.tsv)"
grep -q "^gpus	gpu 7	NVIDIA A10, .*, cc ?, " sys.tsv || fail "unknown cc: $(grep 'gpu 7' sys.tsv)"
grep -q "^p2p	0->1	unknown	" sys.tsv || fail "--from P2P is not unknown: $(grep p2p sys.tsv | head -n 2)"
# check N: the value and verdict of checklist row gpu_N_code.
check() { awk -F '\t' -v i="gpu_$1_code" '$1 == "checklist" && $2 == i { print $3 " => " $4 }' sys.tsv; }
has() { check "$1" | grep -q -- "$2" || fail "gpu_$1_code: '$(check "$1")', want '$2'"; }
[ "$(grep -c '^checklist	gpu_[0-9]*_code	' sys.tsv)" = 8 ] || fail "not one code check per GPU"

archs=$(awk -F '\t' '$2 == "cuda_archs" { print $3 }' sys.tsv)
case $archs in
"NA (built without CUDA)")
	for i in 0 1 2 3 4 5 6 7; do has $i "built without CUDA.* => fail$"; done ;;
"sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120 compute_120")
	# The default list: every card users have, PTX for the newest.
	has 0 "^cc 7.0: no code for it in this binary (sm_75 .*); rebuild with CUDA_ARCHS=70 .* => fail$"
	has 1 "^cc 7.5: SASS sm_75 => pass$"
	has 2 "^cc 8.9: SASS sm_89 => pass$"
	has 3 "^cc 9.0: SASS sm_90 => pass$"
	has 4 "^cc 10.3: SASS sm_100 (binary-compatible within the major version) => pass$"
	has 5 "^cc 12.0: SASS sm_120 => pass$"
	has 6 "^cc 13.0: PTX compute_120, compiled by the driver at first use .* => pass$"
	has 7 "^compute capability unknown; .* => fail$" ;;
*)	# CUDA_ARCHS=...: the V100 (7.0) is never built, unknown cc never passes.
	has 0 "=> fail$"
	has 7 "=> fail$" ;;
esac

# JSON Lines carry the same rows; --from - reads the CSV from stdin.
"$P" --system --from - --json <"$D/archs.csv" >sys.json || fail "--system --json exited $?"
python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
codes = [r for r in rows if r["section"] == "checklist"
         and r["item"].startswith("gpu_") and r["item"].endswith("_code")]
assert len(codes) == 8 and all(r["check"] in ("pass", "fail") for r in codes), codes
' sys.json || fail "--system --json code rows"
expect 1 "'missing.csv': cannot open" "$P" --system --from missing.csv
expect 1 "'$D/empty.csv': empty input" "$P" --system --from "$D/empty.csv"
exit 0

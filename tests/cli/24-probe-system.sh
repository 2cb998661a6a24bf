# mgpu-probe --system on GPUs it cannot see here: --from gives the GPUs of
# an nvidia-smi CSV, and the checklist says for each whether this binary
# carries code for its compute capability (SASS, PTX the driver compiles,
# or none), from the GPU code list the build recorded. Then the OpenBLAS
# kernel check: the core OpenBLAS chose against the CPU's vector features,
# made to disagree with OPENBLAS_CORETYPE.
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

# OpenBLAS: the core, its threads and the CPU's vector features.
unset OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS
"$P" --system >sys.tsv 2>err.txt || fail "--system exited $?"
core=$(awk -F '\t' '$2 == "blas_core" { print $3 }' sys.tsv)
[ -n "$core" ] || fail "no blas_core row"
grep -q "^host	blas_threads	1 in each CPU rank of mgpu-train, [0-9]* in this process	" sys.tsv ||
	fail "blas_threads: $(grep blas_threads sys.tsv)"
grep -q "^host	cpu_vector	" sys.tsv || fail "no cpu_vector row"
grep -q "^checklist	blas_fits_cpu	" sys.tsv || fail "no blas_fits_cpu check"
OPENBLAS_NUM_THREADS=1 "$P" --system | grep -q "	1 in each CPU rank of mgpu-train, 1 in this process (OPENBLAS_NUM_THREADS)	" ||
	fail "OPENBLAS_NUM_THREADS=1 not reported"
# Generic SSE kernels forced on a CPU with AVX: a failed check naming the
# fix, and a warning on stderr (none with -q). Only a DYNAMIC_ARCH OpenBLAS
# (Debian's) takes OPENBLAS_CORETYPE.
if grep -qw avx /proc/cpuinfo 2>/dev/null && grep -q "DYNAMIC_ARCH" sys.tsv; then
	OPENBLAS_CORETYPE=Prescott "$P" --system >slow.tsv 2>err.txt || fail "exit $?"
	grep -q "^host	blas_core	Prescott " slow.tsv || fail "core: $(grep blas_core slow.tsv)"
	grep -q "^checklist	blas_fits_cpu	OpenBLAS chose Prescott kernels (SSE only) but the CPU has .*; set OPENBLAS_CORETYPE=[A-Za-z]*	fail$" slow.tsv ||
		fail "no misfit: $(grep blas_fits_cpu slow.tsv)"
	[ "$(wc -l <err.txt)" = 1 ] && grep -q "^mgpu-probe: warning: OpenBLAS chose Prescott kernels.*OPENBLAS_CORETYPE=" err.txt ||
		fail "misfit warning: $(cat err.txt)"
	OPENBLAS_CORETYPE=Prescott "$P" --system -q >/dev/null 2>err.txt || fail "-q exit $?"
	[ ! -s err.txt ] || fail "-q warned: $(cat err.txt)"
	# The fix it names makes the check pass.
	fix=$(sed -n 's/.*set OPENBLAS_CORETYPE=\([A-Za-z]*\).*/\1/p' slow.tsv)
	OPENBLAS_CORETYPE=$fix "$P" --system 2>err.txt | grep -q "^checklist	blas_fits_cpu	.*	pass$" ||
		fail "OPENBLAS_CORETYPE=$fix does not pass"
	[ ! -s err.txt ] || fail "warned after the fix: $(cat err.txt)"
fi
exit 0

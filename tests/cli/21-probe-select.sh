# mgpu-probe: the selection rules on nvidia-smi CSV fixtures in every
# documented format, the output formats, and CUDA_VISIBLE_DEVICES.
. tests/cli/lib.sh
unset CUDA_VISIBLE_DEVICES
P=$BIN/mgpu-probe
D=$SRC/tests/data/smi
# ids FILE [OPTION...]: the --ids line, which must exit 0.
ids() {
	f=$1
	shift
	"$P" --from "$f" --ids "$@" 2>ids.err || fail "--from $f $*: exit $?: $(cat ids.err)"
}
want() { [ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"; }

# Display GPU 0 excluded; 80 GB first; the 40 GB tie by lowest ordinal.
want "$(ids "$D/four.csv")" "2,1,3" "four.csv"
want "$(ids "$D/four-noheader-nounits.csv")" "2,1,3" "noheader,nounits"
want "$(ids "$D/four-nounits.csv")" "2,1,3" "nounits"
want "$(ids "$D/four.csv" --include-display)" "2,1,3,0" "--include-display"
want "$(ids "$D/four.csv" --max-used 50)" "2,1" "--max-used 50"
want "$(ids "$D/four.csv" --count 2)" "2,1" "--count 2"
want "$(ids "$D/four.csv" --single)" "2" "--single"
want "$(ids "$D/four.csv" --count 9)" "2,1,3" "--count 9"
grep -q "warning: --count 9: only 3 GPUs are eligible" ids.err || fail "--count 9: $(cat ids.err)"
want "$(ids "$D/reordered.csv")" "0,1" "equal GPUs listed out of order"
want "$(ids "$D/na.csv")" "0" "[N/A] values"
want "$(cat "$D/four.csv" | "$P" --from - --ids)" "2,1,3" "--from -"

# Memory threshold: GB = 10^9 bytes; 7630 MiB passes 8, 7629 MiB does not.
want "$(ids "$D/memory-edge.csv")" "0,2" "memory-edge"
want "$(ids "$D/memory-edge.csv" --min-memory 6)" "0,2,1,3" "--min-memory 6"
want "$(ids "$D/memory-edge.csv" --min-memory 8.2)" "0" "--min-memory 8.2"
expect 1 "no eligible GPU among 4: GPU 0 8.58 GB memory < 9 GB (--min-memory)" \
	"$P" --from "$D/memory-edge.csv" --min-memory 9 --ids
"$P" -q --from "$D/memory-edge.csv" --min-memory 9 --ids >out.txt 2>err.txt && fail "none: exit 0"
[ ! -s out.txt ] && [ ! -s err.txt ] || fail "-q with none eligible printed something"

# TSV: a header, kept GPUs first, every excluded one with its reason.
"$P" --from "$D/four.csv" >sel.tsv || fail "TSV exited $?"
head -n 1 sel.tsv | grep -q "^index	selected	order	name	mem_total_bytes	" || fail "TSV header"
[ "$(wc -l <sel.tsv)" = 5 ] || fail "TSV rows: $(cat sel.tsv)"
[ "$(sed -n 2p sel.tsv | cut -f 1-5)" = "2	1	1	NVIDIA A100-SXM4-80GB	85899345920" ] ||
	fail "TSV first row: $(sed -n 2p sel.tsv)"
sed -n 5p sel.tsv | grep -q "^0	0	NA	NVIDIA GeForce RTX 3060	.*	drives a display (--include-display)$" ||
	fail "TSV excluded row: $(sed -n 5p sel.tsv)"
"$P" --from "$D/four.csv" --json >sel.json || fail "--json exited $?"
python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["index"] for r in rows] == [2, 1, 3, 0], rows
assert [r["selected"] for r in rows] == [1, 1, 1, 0], rows
assert rows[0]["order"] == 1 and "order" not in rows[3], rows
assert rows[3]["reason"].startswith("drives a display"), rows
assert rows[1]["mem_total_bytes"] == 40960 << 20 and rows[1]["compute_cap"] == "8.0", rows
' sel.json || fail "--json rows"

# On a terminal: an aligned table with the reasons.
if script -qc true /dev/null >/dev/null 2>&1; then
	script -qc "'$P' --from '$D/four.csv'" /dev/null | tr -d '\r' >tty.txt
	grep -q "^GPU  NAME  *MEMORY  *USED  *DISPLAY  *CC  *PCI BUS ID  *SELECTED$" tty.txt ||
		fail "terminal header: $(cat tty.txt)"
	grep -q "^0  *NVIDIA GeForce RTX 3060  *12288 MiB  *4%  *yes .*no: drives a display" tty.txt ||
		fail "terminal row: $(cat tty.txt)"
fi

# CUDA_VISIBLE_DEVICES: ordinals renumbered in the order given.
want "$(CUDA_VISIBLE_DEVICES=0,2 ids "$D/four.csv" --include-display)" "1,0" "CVD=0,2"
want "$(CUDA_VISIBLE_DEVICES=0,2 ids "$D/four.csv")" "1" "CVD=0,2 without display"
want "$(CUDA_VISIBLE_DEVICES=GPU-aaaa3333,GPU-bbbb2222 ids "$D/four.csv")" "1,0" "CVD by UUID"
CUDA_VISIBLE_DEVICES=GPU-aaaa3333,GPU-bbbb2222 "$P" --from "$D/four.csv" >cvd.tsv
[ "$(awk -F '\t' '$1 == 0 { print $17 }' cvd.tsv)" = 3 ] || fail "ordinal 0 is not GPU 3: $(cat cvd.tsv)"
grep -q "^NA	0	NA	.*hidden by CUDA_VISIBLE_DEVICES$" cvd.tsv || fail "hidden rows: $(cat cvd.tsv)"
want "$(CUDA_VISIBLE_DEVICES=2,9,1 ids "$D/four.csv")" "0" "CVD=2,9,1"
grep -q "warning: CUDA_VISIBLE_DEVICES='2,9,1': entry '9' is not a GPU ordinal" ids.err ||
	fail "CVD invalid entry: $(cat ids.err)"
set +e
CUDA_VISIBLE_DEVICES=GPU-aaaa,1 "$P" --from "$D/four.csv" --ids >out.txt 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] && [ ! -s out.txt ] || fail "CVD ambiguous: exit $rc, $(cat out.txt)"
grep -q "entry 'GPU-aaaa' is ambiguous (2 GPUs match)" err.txt || fail "ambiguous: $(cat err.txt)"
expect 1 "hides all 4 GPUs" env CUDA_VISIBLE_DEVICES= "$P" --from "$D/four.csv" --ids

# No devices: exit 1, one line.
expect 1 "no GPUs: '$D/none.csv' lists no GPU (No devices were found)" "$P" --from "$D/none.csv"
exit 0

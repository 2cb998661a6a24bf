# mgpu-probe: the contract every tool shares (help, version, usage errors,
# closed pipe, -o, man page lint), and what it says on this machine: no GPU
# means exit 1 with one line saying why; --system always reports, exit 0.
. tests/cli/lib.sh
unset CUDA_VISIBLE_DEVICES MASTER_PORT
P=$BIN/mgpu-probe
D=$SRC/tests/data/smi
"$P" --help >help.txt || fail "--help exited $?"
grep -q "^usage: mgpu-probe" help.txt || fail "--help lacks the usage line"
help_man_agree mgpu-probe.1 help.txt
grep -q "^  --min-memory GB  *total memory at least GB x 10^9 bytes \[8\]$" help.txt ||
	fail "--help lacks --min-memory's default"
"$P" --version | grep -q "^mgpu-probe [0-9]" || fail "--version"
"$P" -vV | grep -q "^features: cuda=" || fail "-vV lacks the features"
expect 2 "unknown or incomplete option '--frobnicate'" "$P" --frobnicate
expect 2 "unknown or incomplete option '--from'" "$P" --from
expect 2 "--min-memory: 'lots' is not a number" "$P" --min-memory lots
expect 2 "--max-used: 101 is out of range" "$P" --max-used 101
expect 2 "--count: 0 is out of range" "$P" --count 0
expect 2 "--count: '2x' is not an integer" "$P" --count 2x
expect 2 "--single and --count: choose one" "$P" --single --count 2
expect 2 "--ids and --json: choose one" "$P" --ids --json
expect 2 "--ids and --format: choose one" "$P" --ids --format tsv
expect 2 "--json and --format tsv: choose one" "$P" --json --format tsv
# --format markdown: the same rows as a Markdown table.
"$P" --from "$D/four.csv" --format markdown >sel.md || fail "--format markdown exited $?"
head -n 2 sel.md | tail -n 1 | grep -q '^| --- | --- |' || fail "markdown: $(cat sel.md)"
[ "$(grep -c '^| ' sel.md)" = 6 ] || fail "markdown rows: $(cat sel.md)"
expect 2 "--system reports on this machine; it takes no --ids" "$P" --system --ids
expect 2 "unexpected argument 'extra'" "$P" extra

# -o: the whole output, written atomically; a bad path leaves nothing.
"$P" --from "$D/four.csv" -o sel.tsv || fail "-o exited $?"
[ "$(wc -l <sel.tsv)" = 5 ] || fail "-o: $(cat sel.tsv)"
[ -z "$(ls | grep '\.tmp\.')" ] || fail "-o left a temporary: $(ls)"
expect 1 "'nodir/x.tsv': cannot create" "$P" --from "$D/four.csv" -o nodir/x.tsv

# A reader that goes away early: a quiet exit, nothing on stderr.
rc=$(closed_pipe "$P" --from "$D/four.csv")
[ ! -s err.txt ] || fail "closed pipe printed: $(cat err.txt)"
[ "$rc" = 141 ] || fail "closed pipe: exit $rc, want 141 (SIGPIPE)"

# This machine, as CUDA sees it.
set +e
"$P" >out.txt 2>err.txt
rc=$?
set -e
case $rc in
1)	[ ! -s out.txt ] || fail "no GPU but stdout: $(cat out.txt)"
	[ "$(wc -l <err.txt)" = 1 ] || fail "no GPU: want one line: $(cat err.txt)"
	grep -q "^mgpu-probe: no \(eligible \)\{0,1\}GPU" err.txt || fail "no GPU: $(cat err.txt)"
	"$P" -q >out.txt 2>err.txt && fail "-q: exit 0 without a GPU"
	[ ! -s err.txt ] || fail "-q printed: $(cat err.txt)" ;;
0)	head -n 1 out.txt | grep -q "^index	selected	order	name" || fail "GPU: no header" ;;
*)	fail "mgpu-probe exited $rc: $(cat err.txt)" ;;
esac

# --system: exit 0 whatever the machine has, every check present.
"$P" --system >sys.tsv 2>err.txt || fail "--system exited $?: $(cat err.txt)"
[ ! -s err.txt ] || fail "--system wrote to stderr: $(cat err.txt)"
head -n 1 sys.tsv | grep -q "^section	item	value	check$" || fail "--system header"
for c in gpus_visible driver_supports_runtime nccl_loadable rendezvous_port_free \
	shm_large_enough; do
	grep -q "^checklist	$c	.*	\(pass\|fail\)$" sys.tsv || fail "--system lacks check $c"
done
for i in cuda_driver cuda_runtime cublas nccl nvidia_driver cpu_model cpu_cores memory dev_shm; do
	grep -q "	$i	" sys.tsv || fail "--system lacks $i"
done
if [ "$rc" = 1 ]; then
	grep -q "^checklist	gpus_visible	0 GPUs.*	fail$" sys.tsv || fail "gpus_visible passes"
fi
"$P" --system --json >sys.json || fail "--system --json exited $?"
python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
tsv = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])][1:]
assert all("section" in r and "item" in r and "value" in r for r in rows), rows
checks = sum(1 for r in rows if r.get("check") in ("pass", "fail"))
assert checks == sum(1 for r in tsv if r[3] in ("pass", "fail")) >= 5, rows
' sys.json sys.tsv || fail "--system --json is not the JSON Lines of the TSV rows"
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$SRC/man/mgpu-probe.1" || fail "man page lint"
fi
exit 0

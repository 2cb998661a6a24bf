# mgpu-bench train on small data and in its Markdown table: a run shorter
# than the warm-up has its warm-up lowered to fit (said once on stderr, the
# row's warmup_steps column the steps left out), never a failed row; the
# time column names the steps every row ran ("Time for 24 Steps (s)", not a
# "Training Time" that grows with devices); a failure's message is written
# once under the table, whose cells say only "failed". Timings are never
# asserted.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
mkidx small 80 20 8 4
"$B" train --cpu-ranks 1,2 --modes ddp --repeat 1 -- --data small --model mlp:64-8-4 \
	--batch-size 8 >small.tsv 2>err.txt || fail "small data: $(cat err.txt)"
python3 - small.tsv <<'PY' || fail "small data rows: $(cat small.tsv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
assert len(rows) == 2, rows
for r in rows:
    assert r["status"] == "ok", r
    assert 0 < int(r["warmup_steps"]) < 20, r
PY
[ "$(grep -c 'fewer than the 20 warm-up steps' err.txt)" = 1 ] || fail "warm-up note: $(cat err.txt)"

mkidx d 600 50 8 4
"$B" train --cpu-ranks 1,2 --modes ddp --repeat 1 --warmup-steps 4 --format markdown -- \
	--data d --model mlp:64-8-4 --batch-size 8 --max-steps 24 >t.md 2>err.txt ||
	fail "markdown: $(cat err.txt)"
grep -q '^| Configuration *| Throughput (samples/s) | Time for 24 Steps (s) |' t.md ||
	fail "time column: $(head -n 2 t.md)"
grep -q 'Training Time' t.md && fail "a Training Time column: $(head -n 2 t.md)"

# every row fails the same way: "failed" in the cells, the message once below
set +e
"$B" train --cpu-ranks 1,2 --modes ddp --repeat 1 --format markdown -- --data d \
	--model mlp:32-4 --max-steps 24 >f.md 2>err.txt
set -e
grep -q '^| 1 CPU rank *| *failed |' f.md || fail "failed cell: $(cat f.md)"
grep -q 'samples have 64 features' f.md || fail "no message: $(cat f.md)"
[ "$(grep -c 'samples have 64 features' f.md)" = 1 ] || fail "message not once: $(cat f.md)"
grep -q '^Failed: 1 CPU rank, 2 CPU ranks (DDP): ' f.md || fail "failed line: $(cat f.md)"
exit 0

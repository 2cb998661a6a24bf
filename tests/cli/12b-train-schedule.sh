# mgpu-train's learning-rate schedule ends where the run ends: with
# --max-steps the cosine decay spans those steps (not --epochs), the first
# step after warm-up runs at --lr and the last at exactly --min-lr, as
# mgpu-train(1) says; the summary counts epochs as the step rows do;
# checkpoints keep --max-steps, and a resume that changes it says so.
. tests/cli/lib.sh
mkidx d 200 50 8 4
run() { "$BIN/mgpu-train" --data d --model mlp:64-16-4 --batch-size 16 --log-every 1 \
	--lr 0.1 --min-lr 0.01 -q "$@"; }
check() { # check FILE STEPS: cosine from 0.1 at step 1 to 0.01 at step STEPS
	python3 - "$1" "$2" <<'PY' || fail "schedule: $(cat "$1")"
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
n = int(sys.argv[2])
steps = [r for r in rows if r["kind"] == "step"]
assert [int(r["step"]) for r in steps] == list(range(1, n + 1)), [r["step"] for r in steps]
for i, r in enumerate(steps):
    want = 0.01 + 0.09 * 0.5 * (1 + math.cos(math.pi * i / (n - 1)))
    assert abs(float(r["lr"]) - want) < 1e-5 * want, (r["step"], r["lr"], want)
assert float(steps[-1]["lr"]) == 0.01, steps[-1]
s = [r for r in rows if r["kind"] == "summary"][0]
assert s["epoch"] == steps[-1]["epoch"], ("summary epoch", s["epoch"], steps[-1]["epoch"])
PY
}
# 10 steps of a 5-epoch run (11 steps per epoch): stopped inside epoch 1
run --epochs 5 --max-steps 10 >short.tsv
check short.tsv 10
grep -q "^summary	10	1	" short.tsv || fail "summary epoch: $(grep ^summary short.tsv)"
# no --max-steps: the schedule spans the epochs, the summary says epoch 2
run --epochs 2 >full.tsv
check full.tsv 22
grep -q "^summary	22	2	" full.tsv || fail "summary epoch: $(grep ^summary full.tsv)"

# the checkpoint keeps --max-steps: resuming it finds the run finished;
# giving another value extends it and says that the schedule moved
run --epochs 5 --max-steps 10 --save-dir ck >/dev/null
"$BIN/mgpu-train" --resume ck >out.tsv 2>err.txt || fail "resume: $(cat err.txt)"
grep -q "already at the last step (10)" err.txt || fail "resume without --max-steps: $(cat err.txt)"
"$BIN/mgpu-train" --resume ck --max-steps 20 >out.tsv 2>err.txt || fail "extend: $(cat err.txt)"
grep -q "max-steps 20, not the checkpoint's 10: the learning-rate schedule now ends" err.txt ||
	fail "extension not announced: $(cat err.txt)"
grep -q "^summary	20	2	" out.tsv || fail "extended run: $(cat out.tsv)"
exit 0

# mgpu-train --tensorboard: event files that TensorBoard's own reader
# (the tensorboard package from PyPI, in a venv made for the tests) reads
# back with the run's metrics and settings; rank 0 alone writes them,
# flushed at each evaluation so a killed run keeps what it evaluated.
. tests/cli/lib.sh
mkidx d 600 100 8 4
VENV=${MGPU_TB_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mgpu/tb-venv}
if ! "$VENV/bin/python" -c 'import tensorboard' 2>/dev/null; then
	{ python3 -m venv "$VENV" && "$VENV/bin/pip" install -q tensorboard; } >venv.log 2>&1 ||
		{ echo "cannot install tensorboard from PyPI into $VENV: $(tail -n 1 venv.log)"; exit 77; }
fi
PY=$VENV/bin/python
# read DIR: every scalar as "tag step value", then the text tags' first lines
cat >read.py <<'PY'
import sys
from tensorboard.backend.event_processing import event_accumulator as ea
a = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
a.Reload()
for t in sorted(a.Tags()["scalars"]):
    for e in a.Scalars(t):
        print("%s %d %.6g" % (t, e.step, e.value))
for t in a.Tags()["tensors"]:
    for e in a.Tensors(t):
        print("text %s %d %s" % (t, e.step, e.tensor_proto.string_val[0].decode()))
PY
train() { "$BIN/mgpu-train" --data d --model mlp:64-16-4 --batch-size 16 -q "$@"; }

# 2 ranks, --save-dir: SAVE_DIR/tb by default, one file (rank 0's)
train --cpu-ranks 2 --epochs 2 --log-every 5 --lr 0.0125 --save-dir ck >m.tsv ||
	fail "2 ranks with a save dir"
[ "$(ls ck/tb | wc -l)" = 1 ] || fail "want one event file: $(ls ck/tb)"
ls ck/tb | grep -q '^events\.out\.tfevents\.' || fail "file name: $(ls ck/tb)"
"$PY" read.py ck/tb >tb.txt || fail "tensorboard cannot read the log: $(cat tb.txt)"
for tag in train/loss train/lr train/samples_per_s train/grad_norm val/loss val/acc \
	test/loss test/acc; do
	grep -q "^$tag " tb.txt || fail "no $tag: $(cat tb.txt)"
done
# the scalars are the records': every step's loss and lr, every evaluation
awk -F '\t' '$1 == "step" { printf "train/loss %d %.6g\n", $2, $4 }' m.tsv >want.txt
grep '^train/loss ' tb.txt | awk '{ printf "train/loss %d %.5g\n", $2, $3 }' >got.txt
awk '{ printf "train/loss %d %.5g\n", $2, $3 }' want.txt >want5.txt
cmp -s got.txt want5.txt || fail "train/loss differs from the step records: $(diff got.txt want5.txt)"
[ "$(wc -l <got.txt)" -ge 6 ] || fail "too few step scalars: $(cat got.txt)"
[ "$(grep -c '^val/loss ' tb.txt)" = "$(grep -c '^eval' m.tsv)" ] || fail "an eval is missing"
awk -F '\t' '$1 == "eval" { printf "val/acc %d %.4g\n", $2, $10 }' m.tsv >want.txt
grep '^val/acc ' tb.txt | awk '{ printf "val/acc %d %.4g\n", $2, $3 }' >got.txt
cmp -s got.txt want.txt || fail "val/acc differs: $(diff got.txt want.txt)"
grep -q '^text settings 0 .*# mgpu-train settings' tb.txt || fail "no settings text: $(grep text tb.txt)"
"$PY" - ck/tb <<'PY' || fail "the settings text lacks the run's lr"
import sys
from tensorboard.backend.event_processing import event_accumulator as ea
a = ea.EventAccumulator(sys.argv[1], size_guidance={ea.TENSORS: 0}); a.Reload()
text = a.Tensors("settings")[0].tensor_proto.string_val[0].decode()
sys.exit(0 if "    lr = 0.0125\n" in text and "    cpu-ranks = 2\n" in text else 1)
PY
# a resumed run adds its own file; the steps go on
train --cpu-ranks 2 --epochs 3 --log-every 5 --lr 0.0125 --save-dir ck --resume ck >r.tsv ||
	fail "resume"
[ "$(ls ck/tb | wc -l)" = 2 ] || fail "after the resume: $(ls ck/tb)"
"$PY" read.py ck/tb >tb2.txt
last=$(awk -F '\t' '$1 == "eval" { s = $2 } END { print s }' r.tsv)
grep -q "^val/loss $last " tb2.txt || fail "the resumed run's eval at $last: $(grep val/loss tb2.txt)"

# --tensorboard DIR without a save dir; neither: no log
train --epochs 1 --tensorboard logs/a >/dev/null || fail "--tensorboard"
"$PY" read.py logs/a | grep -q '^val/loss ' || fail "--tensorboard DIR: no val/loss"
find . -name 'events.out.*' | sort >before.txt
train --epochs 1 >/dev/null
find . -name 'events.out.*' | sort | cmp -s - before.txt || fail "a log without --tensorboard"

# killed after its first evaluation: that evaluation is in the log
"$BIN/mgpu-train" --data d --model mlp:64-16-4 --batch-size 16 --epochs 100000 --log-every 1 \
	--tensorboard kill >k.tsv 2>k.err &
K=$!
trap 'kill -KILL $K 2>/dev/null || true; rm -rf "$T"' EXIT
for _ in $(seq 400); do grep -q '^eval' k.tsv 2>/dev/null && break; sleep 0.05; done
grep -q '^eval' k.tsv || fail "no evaluation in 20 s"
kill -KILL $K
{ wait $K; } 2>/dev/null || true
first=$(awk -F '\t' '$1 == "eval" { print $2; exit }' k.tsv)
"$PY" read.py kill >k.txt || fail "the killed run's log does not read"
grep -q "^val/loss $first " k.txt || fail "the killed run's log lacks the eval at $first: $(cat k.txt)"

# a gpt's tokens per second and bits per byte
text_idx g 300 32 17 3
"$BIN/mgpu-train" --data g --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=128 --epochs 1 \
	--batch-size 8 --log-every 2 --tensorboard gtb -q >/dev/null 2>g.err || fail "gpt: $(cat g.err)"
"$PY" read.py gtb >g.txt
grep -q '^train/tokens_per_s ' g.txt && grep -q '^val/bpb ' g.txt || fail "gpt tags: $(cut -d' ' -f1 g.txt | sort -u)"

# a regression's RMSE (vector targets from CSV columns), and no accuracy
python3 -c 'import random; r = random.Random(1); print("a,b,y"); [print("%.3f,%.3f,%.3f" % (a, b, a - b)) for a, b in ((r.random(), r.random()) for _ in range(200))]' >r.csv
"$BIN/mgpu-shard" -q --val-fraction 0.2 --test-fraction 0.1 --target-columns y -d rs -o rs/m.tsv r.csv
"$BIN/mgpu-cache" -q -o rc rs/m.tsv >/dev/null
"$BIN/mgpu-train" --data rc --model mlp:auto-8-auto --epochs 2 --batch-size 8 --tensorboard rtb \
	--json -q >r.json 2>r.err || fail "regression: $(cat r.err)"
"$PY" read.py rtb >r.txt
want=$(python3 -c 'import json, sys; print("%.5g" % [json.loads(l) for l in open("r.json") if "summary" in l][0]["test_rmse"])')
[ "$(awk '$1 == "test/rmse" { printf "%.5g", $3 }' r.txt)" = "$want" ] && grep -q '^val/rmse ' r.txt ||
	fail "regression tags: $(cat r.txt)"
! grep -q '^val/acc \|^test/acc ' r.txt || fail "a regression's accuracy: $(grep acc r.txt)"
exit 0

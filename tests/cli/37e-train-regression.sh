# mgpu-train on vector targets (CSV --target-columns, a regression): an
# mlp (and a conv net ending in linear auto) takes the target's K as its
# class count, trains on the mean squared error, and the evaluation and
# summary records carry val_rmse / test_rmse, which fall; --evaluate of
# the checkpoint gives the summary's numbers again; outputs that do not fit
# the target, and the target flags' bad values, are errors.
. tests/cli/lib.sh
TR=$BIN/mgpu-train
# y1 = 2a - b + c d / 2, y2 = d + 1: what an mlp learns in a few epochs
python3 - <<'PY'
import random
r = random.Random(3)
with open("r.csv", "w") as f:
    f.write("a,b,c,d,y1,y2\n")
    for i in range(480):
        a, b, c, d = (r.uniform(-1, 1) for _ in range(4))
        f.write("%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n" % (a, b, c, d, 2 * a - b + c * d / 2, d + 1))
PY
"$BIN/mgpu-shard" -q --val-fraction 0.1 --test-fraction 0.1 --target-columns y1,y2 -d s \
	-o s/m.tsv r.csv 2>err.txt || fail "shard: $(cat err.txt)"
"$BIN/mgpu-cache" -q -o c s/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
"$TR" -q --data c --model mlp:auto-32-auto --epochs 4 --batch-size 16 --log-every 6 \
	--save-dir ck --json >run.json 2>err.txt || fail "train: $(cat err.txt)"
python3 - run.json <<'PY' || fail "records: $(cat run.json)"
import json, math, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in recs if r["kind"] == "step"]
evals = [r for r in recs if r["kind"] == "eval"]
summ = [r for r in recs if r["kind"] == "summary"][0]
assert len(evals) == 4, evals
assert steps[-1]["loss"] < steps[0]["loss"] / 4, (steps[0], steps[-1])
rmse = [e["val_rmse"] for e in evals]
assert rmse[-1] < rmse[0] and rmse[-1] < 0.2, rmse
# the mean squared error over both values is the RMSE squared
assert abs(evals[-1]["val_loss"] - rmse[-1] ** 2) < 1e-5, evals[-1]
assert summ["val_rmse"] == rmse[-1] and 0 < summ["test_rmse"] < 0.2, summ
assert "val_acc" not in summ and "test_acc" not in summ, summ  # no accuracy of a regression
assert "val_pck" not in summ and "val_miou" not in summ, summ
PY
"$TR" -q --evaluate --resume ck >e.tsv 2>err.txt || fail "--evaluate: $(cat err.txt)"
head -n 1 e.tsv | tr '\t' '\n' | tail -n 2 | tr '\n' ' ' | grep -qx 'val_rmse test_rmse ' ||
	fail "TSV columns: $(head -n 1 e.tsv)"
python3 - run.json e.tsv <<'PY' || fail "--evaluate differs: $(cat e.tsv)"
import json, sys
want = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][0]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
got = dict(zip(rows[0], rows[1]))
for k in ("val_rmse", "test_rmse", "val_loss", "test_loss"):
    assert abs(float(got[k]) - want[k]) <= 1e-6 * max(1, abs(want[k])), (k, got[k], want[k])
PY
# --resume from the middle (the checkpoint of step 48) ends where the
# uninterrupted run ended, bit for bit
[ -d ck/step-00000048 ] || fail "no checkpoint of step 48: $(ls ck)"
"$TR" -q --resume ck/step-00000048 --save-dir ck2 --json >res.json 2>err.txt || fail "--resume: $(cat err.txt)"
[ "$(grep '"summary"' res.json | sed 's/"wall_s":[^,]*,//; s/"samples_per_s":[^,]*,//; s/"rss_bytes":.*//')" = \
  "$(grep '"summary"' run.json | sed 's/"wall_s":[^,]*,//; s/"samples_per_s":[^,]*,//; s/"rss_bytes":.*//')" ] ||
	fail "resumed: $(grep summary res.json) vs $(grep summary run.json)"
# a conv net over the 4 values as a series, linear auto: K outputs
"$TR" -q --data c --model 'cnn:conv 4 k=3 p=1; relu; flatten; linear auto' --epochs 1 \
	--batch-size 16 >cnn.tsv 2>err.txt || fail "cnn: $(cat err.txt)"
grep -q '^summary' cnn.tsv || fail "cnn: no summary"
# outputs that are not the target's: one line naming the model and both shapes
expect 1 "'c': the model 'mlp:4-8-3,act=relu' gives 3x1x1 outputs a sample, its vector target takes 2x1x1 (2 values)" \
	"$TR" -q --data c --model mlp:auto-8-3 --epochs 1
expect 1 "'c': its samples carry vector targets, and a gpt model trains on token ids, not on targets" \
	"$TR" -q --data c --model gpt:layers=1,heads=1,dim=8,ctx=3 --epochs 1
expect 1 "'c': --flip-pairs swaps keypoints, and its samples carry vector targets" \
	"$TR" -q --data c --augment flip --flip-pairs 0:1 --epochs 1
expect 1 "'c': --per-class counts class labels, and its samples carry vector targets" \
	"$TR" -q --data c --per-class --epochs 1
# the target flags' bad values are usage errors
expect 2 "--sigma: 0 is out of range" "$TR" --data c --sigma 0
expect 2 "--sigma: 'x' is not a number" "$TR" --data c --sigma x
expect 2 "--output-stride: 0 is out of range" "$TR" --data c --output-stride 0
expect 2 "--output-stride: 65 is out of range" "$TR" --data c --output-stride 65
expect 2 "--pck: -1 is out of range" "$TR" --data c --pck -1
expect 2 "--mask-classes: 257 is out of range" "$TR" --data c --mask-classes 257
expect 2 "--flip-pairs: '1:1' is not pairs" "$TR" --data c --flip-pairs 1:1 --augment flip
expect 2 "--flip-pairs: '0:1,1:2' is not pairs" "$TR" --data c --flip-pairs 0:1,1:2 --augment flip
expect 2 "--flip-pairs swaps parts in a flip: give --augment flip too" \
	"$TR" --data c --flip-pairs 0:1
exit 0

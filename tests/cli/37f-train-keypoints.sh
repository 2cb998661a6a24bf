# mgpu-train on keypoint targets (examples/make_pose_data.py's frames,
# resized to 24x24): a fully-convolutional cnn ending in `conv 2 k=1` at
# output stride 2 learns the two parts' confidence maps; its loss falls,
# the eval and summary records carry the keypoint error in input pixels
# and PCK, and a numpy decode of --predict's maps (each map's peak,
# refined by a parabola, times the stride) against the shards' keypoints
# gives the same error; --pck, --sigma and --output-stride change what
# they should; 1 rank x 8 and 2 ranks x 4 train alike with augmentation
# moving the keypoints (--flip-pairs); outputs of another shape and parts
# a pair does not have are errors naming them.
. tests/cli/lib.sh
need_pose_python
TR=$BIN/mgpu-train
"$PY" "$SRC/examples/make_pose_data.py" -o pose.tar --count 200 2>err.txt || fail "make_pose_data: $(cat err.txt)"
"$BIN/mgpu-shard" -q --val-fraction 0.1 --test-fraction 0.1 --resize 24x24 -d s -o s/m.tsv pose.tar \
	2>err.txt || fail "shard: $(cat err.txt)"
"$BIN/mgpu-cache" -q -o c s/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
NET='cnn:conv 8 k=3 p=1; relu; conv 16 k=3 s=2 p=1; relu; conv 16 k=3 p=1; relu; conv 2 k=1'
"$TR" -q --data c --model "$NET" --output-stride 2 --sigma 1 --optimizer adamw --lr 0.003 \
	--epochs 4 --batch-size 16 --log-every 3 --save-dir ck --json >run.json 2>err.txt ||
	fail "train: $(cat err.txt)"
"$PY" - run.json <<'PY' || fail "records: $(cat run.json)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in recs if r["kind"] == "step"]
evals = [r for r in recs if r["kind"] == "eval"]
s = [r for r in recs if r["kind"] == "summary"][0]
assert steps[-1]["loss"] < 0.7 * steps[0]["loss"], (steps[0], steps[-1])
for r in evals + [s]:
    assert 0 < r["val_kp_err_px"] < 12 and 0 <= r["val_pck"] <= 1, r
    assert "val_acc" not in r and "val_rmse" not in r and "val_miou" not in r, r
assert 0 < s["test_kp_err_px"] < 12 and 0 <= s["test_pck"] <= 1, s
assert evals[-1]["val_loss"] < evals[0]["val_loss"], evals
PY
# the TSV header has the keypoint columns
"$TR" -q --evaluate --resume ck >e.tsv 2>err.txt || fail "--evaluate: $(cat err.txt)"
head -n 1 e.tsv | tr '\t' '\n' | tail -n 4 | tr '\n' ' ' |
	grep -qx 'val_kp_err_px val_pck test_kp_err_px test_pck ' || fail "TSV columns: $(head -n 1 e.tsv)"
col() { awk -F '\t' -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i } $1 == "summary" { print $k[c] }' "$1"; }
want=$("$PY" -c 'import json, sys; print([json.loads(l) for l in open("run.json") if "summary" in l][0]["test_kp_err_px"])')
"$PY" -c "import sys; sys.exit(abs($(col e.tsv test_kp_err_px) - $want) > 1e-5)" ||
	fail "--evaluate: test_kp_err_px $(col e.tsv test_kp_err_px), training's $want"
# --pck: within 100 pixels of a 24x24 image every part counts; within 0.001 none
"$TR" -q --evaluate --resume ck --pck 100 >p1.tsv && [ "$(col p1.tsv test_pck)" = 1 ] ||
	fail "--pck 100: $(col p1.tsv test_pck)"
"$TR" -q --evaluate --resume ck --pck 0.001 >p2.tsv && [ "$(col p2.tsv test_pck)" = 0 ] ||
	fail "--pck 0.001: $(col p2.tsv test_pck)"
# --predict: (N, 2, 12, 12) maps of the test split in data order; the
# error of their refined peaks, x the stride, against the shards' keypoints
"$TR" -q --evaluate --resume ck --predict maps.npy >/dev/null 2>err.txt || fail "--predict: $(cat err.txt)"
"$PY" - maps.npy s/m.tsv "$(col e.tsv test_kp_err_px)" <<'PY' || fail "a numpy decode of the maps"
import io, json, os, sys, tarfile
import numpy as np
maps, manifest, want = np.load(sys.argv[1]), sys.argv[2], float(sys.argv[3])
assert maps.shape == (20, 2, 12, 12) and maps.dtype == np.float32, (maps.shape, maps.dtype)
kps = []
d = os.path.dirname(manifest)
rows = [l.rstrip("\n").split("\t") for l in open(manifest)][1:]
for r in rows:
    if not r[1].startswith("test"):
        continue
    t = tarfile.open(os.path.join(d, r[1]))
    kps += [json.loads(t.extractfile(x).read()) for x in t.getmembers() if x.name.endswith(".json")]
assert len(kps) == 20, len(kps)
def refine(l, c, r):
    den = l - 2 * c + r
    if den >= 0:
        return 0.0
    return max(-0.5, min(0.5, (l - r) / (2 * den)))
errs = []
for mp, kp in zip(maps, kps):
    for p, pt in enumerate(kp):
        if pt is None:
            continue
        h = mp[p]
        v, u = divmod(int(np.argmax(h)), h.shape[1])
        du = refine(h[v, u - 1], h[v, u], h[v, u + 1]) if 0 < u < h.shape[1] - 1 else 0.0
        dv = refine(h[v - 1, u], h[v, u], h[v + 1, u]) if 0 < v < h.shape[0] - 1 else 0.0
        errs.append(np.hypot((u + du) * 2 - pt[0], (v + dv) * 2 - pt[1]))
got = float(np.mean(errs))
assert abs(got - want) < 1e-3 * max(1, want), (got, want)
PY
# --sigma shapes the maps: a first step's loss differs
first() { "$TR" -q --data c --model "$NET" --output-stride 2 --max-steps 1 --batch-size 8 \
	--log-every 1 "$@" | awk -F '\t' '$1 == "step" { print $4 }'; }
[ "$(first --sigma 1)" != "$(first --sigma 3)" ] || fail "--sigma 1 and 3 gave the same loss"
# 1 rank x 8 and 2 ranks x 4: the same steps, augmentation moving the keypoints
AUG="--augment crop=2,flip,rotate=10 --flip-pairs 0:1"
"$TR" -q --data c --model "$NET" --output-stride 2 --epochs 1 --max-steps 8 --batch-size 8 \
	--log-every 1 $AUG >w1.tsv 2>err.txt || fail "1 rank: $(cat err.txt)"
"$TR" -q --data c --model "$NET" --output-stride 2 --epochs 1 --max-steps 8 --batch-size 4 \
	--cpu-ranks 2 --log-every 1 $AUG >w2.tsv 2>err.txt || fail "2 ranks: $(cat err.txt)"
"$PY" - w1.tsv w2.tsv <<'PY' || fail "world sizes differ: $(cut -f 1-4,9 w1.tsv) vs $(cut -f 1-4,9 w2.tsv)"
import sys
def rows(p):
    r = [l.rstrip("\n").split("\t") for l in open(p)]
    h = r[0]
    return [dict(zip(h, x)) for x in r[1:]]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
la = [float(r["loss"]) for r in a if r["kind"] == "step"]
lb = [float(r["loss"]) for r in b if r["kind"] == "step"]
assert len(la) == 8 and len(lb) == 8, (la, lb)
assert all(abs(x - y) <= 1e-4 * max(abs(x), 1e-3) for x, y in zip(la, lb)), (la, lb)
sa = [r for r in a if r["kind"] == "summary"][0]
sb = [r for r in b if r["kind"] == "summary"][0]
for k in ("val_loss", "val_kp_err_px", "test_kp_err_px"):
    assert abs(float(sa[k]) - float(sb[k])) <= 1e-4 * max(1, abs(float(sa[k]))), (k, sa[k], sb[k])
PY
# --resume from the middle of an augmented run ends where it ended
"$TR" -q --data c --model "$NET" --output-stride 2 --epochs 2 --batch-size 16 $AUG \
	--save-dir ka >a.tsv 2>err.txt || fail "augmented: $(cat err.txt)"
"$TR" -q --resume ka/step-00000010 >b.tsv 2>err.txt || fail "--resume: $(cat err.txt)"
[ "$(grep '^summary' a.tsv | cut -f 9-12,26-)" = "$(grep '^summary' b.tsv | cut -f 9-12,26-)" ] ||
	fail "resumed: $(grep '^summary' b.tsv) vs $(grep '^summary' a.tsv)"
# the flip swaps the pair: without --flip-pairs the same run trains otherwise
"$TR" -q --data c --model "$NET" --output-stride 2 --epochs 1 --max-steps 8 --batch-size 8 \
	--log-every 1 --augment crop=2,flip,rotate=10 >w3.tsv 2>err.txt || fail "no pairs: $(cat err.txt)"
! cmp -s w1.tsv w3.tsv || fail "--flip-pairs 0:1 changed nothing"
# the example spec of models/ trains on them at stride 2
"$TR" -q --data c --model "$SRC/models/pose-fcn.spec" --output-stride 2 --max-steps 2 \
	--batch-size 8 >fcn.tsv 2>err.txt || fail "models/pose-fcn.spec: $(cat err.txt)"
# errors name the model and both shapes, or the part
expect 1 "'c': the model 'cnn:input 1 24 24; conv 8 k=3 s=1 p=1; relu; conv 16 k=3 s=2 p=1; relu; conv 16 k=3 s=1 p=1; relu; conv 2 k=1 s=1 p=0' gives 2x12x12 outputs a sample, its keypoints target takes 2x24x24 (2 maps of 24x24 at --output-stride 1)" \
	"$TR" -q --data c --model "$NET" --epochs 1
expect 1 "'c': the model 'mlp:576-512-256-2,act=relu' gives 2x1x1 outputs a sample, its keypoints target takes 2x12x12" \
	"$TR" -q --data c --output-stride 2 --epochs 1
expect 1 "'c': --flip-pairs names part 2, and the keypoints have 2 parts (0 to 1)" \
	"$TR" -q --data c --model "$NET" --output-stride 2 --augment flip --flip-pairs 0:2 --epochs 1
expect 1 "'c': --predict-as class gives class ids, and its samples carry keypoints targets" \
	"$TR" -q --evaluate --resume ck --predict x.npy --predict-as class
exit 0

# mgpu-train --evaluate --resume CK: the checkpoint's metrics on a data
# set's splits without training (any world size, batch, or a cache of the
# same data), nothing written to the checkpoint; --predict OUT.npy: each
# test sample's logits or class ids in data order, which numpy reads and an
# independent numpy forward of model.safetensors, normalised with the
# statistics its metadata carries, reproduces.
. tests/cli/lib.sh
need_numpy
mkidx d 600 100 8 4
TR=$BIN/mgpu-train
"$TR" --data d --model mlp:64-16-4 --epochs 2 --batch-size 16 --lr 0.02 --save-dir ck -q >train.tsv
summary() { awk -F '\t' '$1 == "summary" { print $9, $10, $11, $12 }' "$1"; }
summary train.tsv >want.txt
ls ck >before.txt
"$TR" --evaluate --resume ck -q >e1.tsv 2>err.txt || fail "--evaluate: $(cat err.txt)"
[ "$(grep -c . e1.tsv)" = 2 ] || fail "want a header and one summary: $(cat e1.tsv)"
summary e1.tsv | cmp -s - want.txt || fail "metrics $(summary e1.tsv) differ from training's $(cat want.txt)"
awk -F '\t' '$1 == "summary" && $6 != "NA" { exit 1 }' e1.tsv || fail "an evaluation trained: $(cat e1.tsv)"
ls ck | cmp -s - before.txt || fail "--evaluate changed the checkpoint dir: $(ls ck)"
# other ranks and batch sizes, a cache of the same data: the same metrics
"$TR" --evaluate --resume ck --data d --cpu-ranks 2 --batch-size 7 -q >e2.tsv ||
	fail "--evaluate on 2 ranks"
"$PY" - want.txt e2.tsv <<'PY' || fail "2 ranks: $(summary e2.tsv) vs $(cat want.txt)"
import sys
want = [float(v) for v in open(sys.argv[1]).read().split()]
got = [l.split("\t") for l in open(sys.argv[2]) if l.startswith("summary")][0]
got = [float(got[i]) for i in (8, 9, 10, 11)]
assert all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(got, want)), (got, want)
PY
"$BIN/mgpu-shard" -q --val-fraction 0.1 -d sh d | "$BIN/mgpu-cache" -q -o c - >/dev/null
"$TR" --evaluate --resume ck --data c -q >e3.tsv || fail "--evaluate on a cache"
[ "$(summary e3.tsv | cut -d' ' -f 3-4)" = "$(cut -d' ' -f 3-4 want.txt)" ] ||
	fail "cache test metrics: $(summary e3.tsv) vs $(cat want.txt)"
# --predict: logits, then class ids, in the test split's order
"$TR" --evaluate --resume ck --predict logits.npy -q >/dev/null || fail "--predict"
"$TR" --evaluate --resume ck --predict ids.npy --predict-as class --cpu-ranks 2 -q >/dev/null ||
	fail "--predict-as class"
ls ./*.tmp.* 2>/dev/null && fail "--predict left a temporary"
test_acc=$(cut -d' ' -f 4 want.txt)
"$PY" - "ck/$(cat ck/latest)/model.safetensors" d/t10k-images-idx3-ubyte.gz \
	d/t10k-labels-idx1-ubyte.gz "$test_acc" <<'PY' || fail "the predictions"
import gzip, json, struct, sys
import numpy as np
path, images, labels, acc = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
meta = hdr.pop("__metadata__")
W = {}
for k, v in hdr.items():
    a, b = v["data_offsets"]
    W[k] = np.frombuffer(raw[8 + n + a:8 + n + b], np.float32).reshape(v["shape"]).astype(np.float64)
# what man/mgpu-train.1 tells a PyTorch user: (x - mean) / std on the raw bytes
mean, std = float(meta["mgpu_input_mean"]), float(meta["mgpu_input_std"])
scale, shift = np.float32(meta["mgpu_norm_scale"]), np.float32(meta["mgpu_norm_shift"])
assert abs(1 / std - scale) <= 1e-6 * scale and abs(-mean / std - shift) <= 1e-5, meta
x = np.frombuffer(gzip.open(images).read()[16:], np.uint8).reshape(-1, 64).astype(np.float64)
y = np.frombuffer(gzip.open(labels).read()[8:], np.uint8)
h = (x - mean) / std
h = np.maximum(h @ W["layers.0.weight"].T + W["layers.0.bias"], 0)
ref = h @ W["layers.1.weight"].T + W["layers.1.bias"]
logits, ids = np.load("logits.npy"), np.load("ids.npy")
assert logits.dtype == np.float32 and logits.shape == (100, 4), (logits.dtype, logits.shape)
assert ids.dtype == np.int32 and ids.shape == (100,), (ids.dtype, ids.shape)
err = np.abs(logits - ref).max() / max(1.0, np.abs(ref).max())
assert err < 1e-4, err
assert (ids == logits.argmax(1)).all()
assert abs((ids == y).mean() - acc) < 1e-9, ((ids == y).mean(), acc)
PY
# after training too, and a gpt's next-byte ids (N, T); vocab 130 keeps
# its logits in rows of 136 on the device, which --predict writes without
# the gaps: their loss and accuracy against the test bytes are the ones
# --evaluate reports
"$TR" --data d --model mlp:64-16-4 --epochs 1 --predict after.npy -q >/dev/null ||
	fail "--predict after training"
text_idx g 300 32 17 3
"$TR" --data g --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=130 --epochs 1 --batch-size 8 \
	--save-dir gck -q >/dev/null || fail "gpt"
"$TR" --evaluate --resume gck --predict g.npy --predict-as class -q >/dev/null || fail "gpt --predict"
"$TR" --evaluate --resume gck --predict gl.npy -q >ge.tsv || fail "gpt --predict logits"
"$PY" - ge.tsv <<'PY' || fail "predictions' shapes or the gpt's logits"
import sys
import numpy as np
a, l, b = np.load("g.npy"), np.load("gl.npy"), np.load("after.npy")
assert a.shape == (32, 16) and a.dtype == np.int32 and 0 <= a.min() and a.max() < 130, a.shape
assert l.shape == (32, 16, 130) and (l.argmax(2) == a).all(), l.shape
assert b.shape == (100, 4), b.shape
rows = [r.rstrip("\n").split("\t") for r in open(sys.argv[1])]
s = dict(zip(rows[0], rows[-1]))
y = np.frombuffer(open("g/t10k-images-idx3-ubyte", "rb").read()[16:], np.uint8)
y = y.reshape(32, 17)[:, 1:].astype(np.int64)
l = l.astype(np.float64)
m = l.max(2)
lse = np.log(np.exp(l - m[..., None]).sum(2)) + m
loss = (lse - np.take_along_axis(l, y[..., None], 2)[..., 0]).mean()
acc = (l.argmax(2) == y).mean()
assert abs(loss - float(s["test_loss"])) < 1e-4 * max(1.0, loss), (loss, s["test_loss"])
assert abs(acc - float(s["test_acc"])) < 1e-5, (acc, s["test_acc"])
PY
# usage errors
expect 2 "--evaluate needs the checkpoint to evaluate: --resume DIR" "$TR" --evaluate --data d
expect 2 "--evaluate trains nothing and saves no checkpoint" "$TR" --evaluate --resume ck --save-dir x
expect 2 "--predict-as needs --predict FILE.npy" "$TR" --data d --predict-as class
exit 0

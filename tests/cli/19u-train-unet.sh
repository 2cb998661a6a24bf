# mgpu-train with a U-Net's lines (man/mgpu-model.7): a net with two
# levels of skip connections (save, cat), a transposed conv and nearest
# upsampling learns 8x8 images through a class head; an independent numpy
# forward of its checkpoint (tests/cli/cnn_fwd.py, from the recorded spec)
# reproduces mgpu's test loss and every logit of --predict; 2 ranks x 8
# match 1 rank x 16 through the skips (with BatchNorm under --sync-bn);
# models/unet-pose.spec fits 96x96 RGB frames and, its outputs being
# maps, is refused on class labels; bad skips and sizes that overflow are
# refused naming the spec.
. tests/cli/lib.sh
need_numpy
mkidx d 600 120 8 4
unet="cnn:conv 8 k=3 p=1; bn; relu; save e1; maxpool 2; conv 12 k=3 p=1; gn 3; silu; save e2; \
avgpool 2; conv 16 k=3 p=1 bias; relu; tconv 12 k=2 s=2 bias; cat e2; conv 12 k=3 p=1; bn; \
relu; up 2; cat e1; tconv 8 k=3 p=1 g=2; relu; cat e1; maxpool 2; dropout 0.1; linear auto"
run() { "$BIN/mgpu-train" --data d --optimizer sgd --momentum 0.9 --lr 0.05 --log-every 5 \
	-q "$@"; }

# It learns, through both skips (stopped while the loss is far from 0,
# so that the numpy forward below has a loss to match).
run --model "$unet" --max-steps 10 --lr 0.02 --batch-size 32 --save-dir ck \
	--predict pred.npy >train.tsv || fail "train"
acc=$(awk -F '\t' '$1 == "summary" { print $12 }' train.tsv)
loss=$(awk -F '\t' '$1 == "summary" { print $11 }' train.tsv)
awk -v a="$acc" -v l="$loss" 'BEGIN { exit !(a >= 0.9 && l > 0.05) }' ||
	fail "test accuracy $acc, loss $loss: $(cat train.tsv)"

# numpy forward of the checkpoint: the test loss and each test sample's
# logits; the tconv weights are ConvTranspose2d's (in, out/groups, kh, kw).
gunzip -k d/t10k-images-idx3-ubyte.gz d/t10k-labels-idx1-ubyte.gz
test_loss=$(awk -F '\t' '$1 == "summary" { print $11 }' train.tsv)
steps=$(awk -F '\t' '$1 == "summary" { print $2 }' train.tsv)
"$PY" "$SRC/tests/cli/cnn_fwd.py" "ck/$(cat ck/latest)/model.safetensors" \
	d/t10k-images-idx3-ubyte "$test_loss" "$steps" --labels d/t10k-labels-idx1-ubyte \
	--predict pred.npy >fwd.txt 2>&1 || fail "numpy forward: $(cat fwd.txt)"
"$PY" - "ck/$(cat ck/latest)/model.safetensors" <<'PY' || fail "checkpoint tensors"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
h = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]]); h.pop("__metadata__")
m = {k: v["shape"] for k, v in h.items()}
assert m["12.weight"] == [16, 12, 2, 2] and m["12.bias"] == [12], m
assert m["19.weight"] == [20, 4, 3, 3] and "19.bias" not in m, m
assert m["14.weight"] == [12, 24, 3, 3], m
assert not any(k.startswith(("3.", "8.", "13.", "17.", "18.", "21.")) for k in m), m
PY

# Data-parallel through the skips (GroupNorm only: per sample):
# 2 ranks x 8 match 1 rank x 16.
gn="cnn:conv 6 k=3 p=1 bias; gn 2; silu; save a; avgpool 2; conv 8 k=3 p=1; silu; \
tconv 6 k=2 s=2 bias; cat a; conv 6 k=3 p=1; silu; up 2; avgpool 2; gap; linear auto"
run --model "$gn" --max-steps 12 --batch-size 16 --log-every 1 >one.tsv || fail "1 rank"
run --model "$gn" --max-steps 12 --batch-size 8 --cpu-ranks 2 --log-every 1 >two.tsv ||
	fail "2 ranks"
[ "$(losses one.tsv | wc -l)" = 12 ] || fail "$(losses one.tsv | wc -l) steps"
same_losses one.tsv two.tsv || fail "2 ranks x 8 differ from 1 rank x 16"
# With BatchNorm on both sides of the skips, --sync-bn makes 2 ranks x 8
# train as 1 rank x 16 too (the norms meet the ranks in the same order).
run --model "$unet" --max-steps 8 --batch-size 16 --log-every 1 >bn1.tsv || fail "bn 1 rank"
run --model "$unet" --max-steps 8 --batch-size 8 --cpu-ranks 2 --log-every 1 --sync-bn \
	>bn2.tsv || fail "bn 2 ranks --sync-bn"
same_losses bn1.tsv bn2.tsv || fail "--sync-bn: 2 ranks x 8 differ from 1 rank x 16"

# models/unet-pose.spec on 96x96 RGB frames: its outputs are maps, and
# class labels are refused.
"$PY" - <<'PY'
import numpy as np
r = np.random.default_rng(3)
np.save("frames.npy", r.integers(0, 255, (12, 3, 96, 96), dtype=np.uint8))
np.save("lab.npy", np.arange(12) % 3)
PY
"$BIN/mgpu-shard" -q -o sh/m.tsv --labels lab.npy frames.npy >/dev/null || fail "shard frames"
expect 1 "'sh/m.tsv': class labels need a conv net that ends with 'linear' (a 'conv' last gives maps, for targets)" \
	"$BIN/mgpu-train" --data sh/m.tsv --model "$SRC/models/unet-pose.spec" --batch-size 4 \
	--max-steps 1 -q

# Refused, naming the spec and its line.
printf 'cnn\nconv 8 k=3 p=1\nsave e1\n# the decoder\nmaxpool 2\ncat e1\nlinear auto\n' >bad.spec
expect 1 "'bad.spec': line 6 ('cat e1') gets 8 x 4 x 4 but line 3 saved 8 x 8 x 8 there" \
	"$BIN/mgpu-train" --data d --model bad.spec -q
printf 'cnn\nconv 8 k=3 p=1\nsave e1\nmaxpool 2\nlinear auto\n' >unused.spec
expect 2 "'unused.spec': line 3: 'save e1' is never read by a 'cat e1'" \
	"$BIN/mgpu-train" --data d --model unused.spec -q
expect 2 "line 2 ('cat e2'): no 'save e2' before it" \
	"$BIN/mgpu-train" --data d --model "cnn:save e1; cat e2; linear auto" -q
expect 1 "--model: line 2 (up) gets 1 x 2040 x 2040 (samples of d): its output or weights would hold more than 2147483647 values" \
	"$BIN/mgpu-train" --data d --model "cnn:up 255; up 255; gap; linear auto" -q
expect 1 "--model: line 2 (conv) gets 1 x 512 x 512 (samples of d): its output or weights would hold more than 2147483647 values" \
	"$BIN/mgpu-train" --data d --model "cnn:up 64; conv 65536 k=1; linear auto" -q
exit 0

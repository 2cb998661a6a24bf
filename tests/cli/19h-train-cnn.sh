# mgpu-train with a cnn: model (man/mgpu-model.7): a small ResNet learns
# 8x8 images; its checkpoint holds torch.nn.Sequential's names and layouts
# (BatchNorm running statistics included) and an independent numpy reading
# of the recorded spec and tensors reproduces the test loss; a 1-D net
# learns series read from a UEA/UCR .ts directory and its checkpoint
# forwards the same way; resume is bit-identical (running statistics too);
# a net without BatchNorm on 2 ranks x 8 matches 1 rank x 16, and so does
# a ResNet with --sync-bn (not without); the spec
# files under models/ load; bad specs and --dtype fp16 are refused (bf16:
# 19i-train-cnn-bf16.sh).
. tests/cli/lib.sh
need_numpy
mkidx d 600 120 8 4
res="cnn:conv 8 k=3 p=1; bn; relu; res 8; res 12 s=2; maxpool 2; gap; dropout 0.1; linear auto"
run() { "$BIN/mgpu-train" --data d --optimizer sgd --momentum 0.9 --lr 0.05 --log-every 5 \
	-q "$@"; }

# It learns.
run --model "$res" --epochs 3 --batch-size 32 --save-dir ck >train.tsv || fail "train"
acc=$(awk -F '\t' '$1 == "summary" { print $12 }' train.tsv)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "test accuracy $acc: $(cat train.tsv)"

# numpy forward of a checkpoint: the spec it records (metadata mgpu_spec),
# read line by line; evaluation-mode BatchNorm with the saved running
# statistics; the inputs normalised as its metadata says.
cat >fwd.py <<'PY'
import json, struct, sys
import numpy as np
path, data, want, nbatches = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
meta = hdr.pop("__metadata__")
W = {}
for k, v in hdr.items():
    assert v["dtype"] == "F32", (k, v)
    a, b = v["data_offsets"]
    W[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(v["shape"]).astype(np.float64)
spec = meta["mgpu_spec"]
assert spec.startswith("cnn:input "), spec
lines = [l.split() for l in spec[4:].split("; ")]
shape = [int(v) for v in lines[0][1:]]
oned = len(shape) == 2
kw = lambda w: {a.split("=")[0]: int(a.split("=")[1]) for a in w if "=" in a}
def w4(t):  # Conv1d weights (K, C, k) as (K, C, 1, k)
    return t[:, :, None, :] if t.ndim == 3 else t
def conv(x, w, b, s, p, g=1, d=1):
    w = w4(w)
    N, C, H, Wd = x.shape
    K, Cg, kh, kwd = w.shape
    ph, sh, dh = (0, 1, 1) if oned else (p, s, d)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (p, p)))
    OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    OW = (Wd + 2 * p - d * (kwd - 1) - 1) // s + 1
    out = np.zeros((N, K, OH, OW))
    Kg = K // g
    for i in range(kh):
        for j in range(kwd):
            patch = xp[:, :, i * dh:i * dh + sh * (OH - 1) + 1:sh, j * d:j * d + s * (OW - 1) + 1:s]
            for gi in range(g):
                out[:, gi * Kg:(gi + 1) * Kg] += np.einsum("nchw,kc->nkhw", patch[:, gi * Cg:(gi + 1) * Cg],
                                                           w[gi * Kg:(gi + 1) * Kg, :, i, j])
    return out if b is None else out + b[None, :, None, None]
def bn(x, pre):
    assert W[pre + ".num_batches_tracked"].shape == () and W[pre + ".num_batches_tracked"] == nbatches
    sc = W[pre + ".weight"] / np.sqrt(W[pre + ".running_var"] + 1e-5)
    return (x - W[pre + ".running_mean"][None, :, None, None]) * sc[None, :, None, None] + W[pre + ".bias"][None, :, None, None]
def pool(x, k, s, p, mx):
    kh, sh, ph = (1, 1, 0) if oned else (k, s, p)
    N, C, H, Wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (p, p)), constant_values=-np.inf if mx else 0)
    OH, OW = (H + 2 * ph - kh) // sh + 1, (Wd + 2 * p - k) // s + 1
    wins = [xp[:, :, i:i + sh * (OH - 1) + 1:sh, j:j + s * (OW - 1) + 1:s] for i in range(kh) for j in range(k)]
    return np.max(wins, 0) if mx else np.sum(wins, 0) / (kh * k)
relu = lambda v: np.maximum(v, 0)
img = open(data, "rb").read() if data.endswith("ubyte") else None
if img is not None:
    cnt = struct.unpack(">I", img[4:8])[0]
    x = np.frombuffer(img[-cnt * int(np.prod(shape)):], dtype=np.uint8).astype(np.float64)
    labels = np.frombuffer(open(sys.argv[5], "rb").read()[8:], dtype=np.uint8).astype(np.int64)
else:
    z = np.load(data)
    x, labels = z["x"].astype(np.float32).astype(np.float64), z["y"]
x = x * float(meta["mgpu_norm_scale"]) + float(meta["mgpu_norm_shift"])
h = x.reshape([-1] + ([shape[0], 1, shape[1]] if oned else shape))
for i, w in enumerate(lines[1:]):
    op, a, pre = w[0], kw(w), str(i)
    if op == "conv":
        h = conv(h, W[pre + ".weight"], W.get(pre + ".bias"), a["s"], a["p"], a.get("g", 1), a.get("d", 1))
    elif op == "bn":
        h = bn(h, pre)
    elif op == "relu":
        h = relu(h)
    elif op in ("maxpool", "avgpool"):
        h = pool(h, a["k"], a["s"], a.get("p", 0), op == "maxpool")
    elif op == "gap":
        h = h.mean((2, 3), keepdims=True)
    elif op == "dropout":
        pass
    elif op == "res":
        s = a.get("s", 1)
        y = relu(bn(conv(h, W[pre + ".conv1.weight"], None, s, 1), pre + ".bn1"))
        y = bn(conv(y, W[pre + ".conv2.weight"], None, 1, 1), pre + ".bn2")
        if pre + ".downsample.0.weight" in W:
            h = bn(conv(h, W[pre + ".downsample.0.weight"], None, s, 0), pre + ".downsample.1")
        h = relu(y + h)
    elif op == "linear":
        h = h.reshape(h.shape[0], -1) @ W[pre + ".weight"].T + W[pre + ".bias"]
    else:
        raise SystemExit(f"op {op}")
h -= h.max(-1, keepdims=True)
lp = h - np.log(np.exp(h).sum(-1, keepdims=True))
got = -lp[np.arange(len(labels)), labels].mean()
print(f"numpy test loss {got:.6f}, mgpu-train {want:.6f}")
sys.exit(0 if abs(got - want) <= 1e-4 * max(1.0, abs(want)) else 1)
PY
gunzip -k d/t10k-images-idx3-ubyte.gz d/t10k-labels-idx1-ubyte.gz
test_loss=$(awk -F '\t' '$1 == "summary" { print $11 }' train.tsv)
steps=$(awk -F '\t' '$1 == "summary" { print $2 }' train.tsv)
"$PY" fwd.py "ck/$(cat ck/latest)/model.safetensors" d/t10k-images-idx3-ubyte "$test_loss" \
	"$steps" d/t10k-labels-idx1-ubyte >fwd.txt 2>&1 || fail "numpy forward: $(cat fwd.txt)"

# Names and layouts as torch.nn: conv (out, in/groups, kh, kw), torchvision
# BasicBlock's names, the running statistics beside the weights, no
# optimizer state for them.
"$PY" - ck/"$(cat ck/latest)" <<'PY' || fail "checkpoint tensors"
import json, struct, sys
def names(p):
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
    return {k: v["shape"] for k, v in h.items()}
m, o = names(sys.argv[1] + "/model.safetensors"), names(sys.argv[1] + "/optim.safetensors")
assert m["0.weight"] == [8, 1, 3, 3] and "0.bias" not in m, m
assert m["1.running_var"] == [8] and m["1.num_batches_tracked"] == [], m
assert m["3.conv1.weight"] == [8, 8, 3, 3] and "3.downsample.0.weight" not in m, m
assert m["4.downsample.0.weight"] == [12, 8, 1, 1] and m["4.downsample.1.running_mean"] == [12], m
assert m["8.weight"] == [4, 12] and m["8.bias"] == [4], m
assert "1.running_mean.momentum" not in o and "1.weight.momentum" in o, sorted(o)
PY

# Resume: 10 + 10 steps end where 20 do, bit for bit, statistics included.
run --model "$res" --max-steps 20 --batch-size 16 --save-dir full --save-every 10 --keep 0 \
	>/dev/null || fail "20 steps"
mkdir part
cp -r full/step-00000010 part/
run --model "$res" --max-steps 20 --batch-size 16 --resume part/step-00000010 --save-dir part \
	>/dev/null || fail "resume"
cmp full/step-00000020/model.safetensors part/step-00000020/model.safetensors ||
	fail "resumed weights or running statistics differ"

# No BatchNorm (GroupNorm is per sample): 2 ranks x 8 match 1 rank x 16.
gn="cnn:conv 6 k=3 p=1 bias; gn 2; silu; avgpool 2; conv 8 k=3 p=1; relu; gap; linear auto"
run --model "$gn" --max-steps 12 --batch-size 16 --log-every 1 >one.tsv || fail "gn 1 rank"
run --model "$gn" --max-steps 12 --batch-size 8 --cpu-ranks 2 --log-every 1 >two.tsv ||
	fail "gn 2 ranks"
losses() { awk -F '\t' '$1 == "step" { print $2, $4 }' "$1"; }
[ "$(losses one.tsv | wc -l)" = 12 ] || fail "$(losses one.tsv | wc -l) steps"
paste -d ' ' <(losses one.tsv) <(losses two.tsv) | awk '
	{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4 * $2) { print; bad = 1 } }
	END { exit bad }' || fail "2 ranks x 8 differ from 1 rank x 16"
# With BatchNorm each rank normalises its own 8, as torch DDP: not the
# 1-rank run; with --sync-bn the statistics are the 16 samples' on both
# ranks, as torch's SyncBatchNorm: 2 ranks x 8 match 1 rank x 16 (the
# counts per channel summed too, so the moments are the whole batch's).
run --model "$res" --max-steps 12 --batch-size 16 --log-every 1 >bn1.tsv || fail "bn 1 rank"
run --model "$res" --max-steps 12 --batch-size 8 --cpu-ranks 2 --log-every 1 >bn2.tsv ||
	fail "bn 2 ranks"
run --model "$res" --max-steps 12 --batch-size 8 --cpu-ranks 2 --log-every 1 --sync-bn \
	>bn2s.tsv || fail "bn 2 ranks --sync-bn"
paste -d ' ' <(losses bn1.tsv) <(losses bn2s.tsv) | awk '
	{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4 * $2) { print; bad = 1 } }
	END { exit bad }' || fail "--sync-bn: 2 ranks x 8 differ from 1 rank x 16"
[ "$(losses bn1.tsv)" != "$(losses bn2.tsv)" ] ||
	fail "without --sync-bn 2 ranks x 8 normalised as 1 rank x 16"

# 1-D: a UEA/UCR directory of 3-channel series, 2 classes (a sine or a
# ramp on channel 1); the spec file under models/ trains on it.
"$PY" - <<'PY'
import numpy as np
r = np.random.default_rng(4)
for split, n in (("TRAIN", 48), ("TEST", 24)):
    xs, ys = [], []
    with open(f"Waves_{split}.ts", "w") as f:
        f.write("@problemName Waves\n@timeStamps false\n@univariate false\n@dimensions 3\n"
                "@equalLength true\n@seriesLength 40\n@classLabel true ramp sine\n@data\n")
        for i in range(n):
            y = i % 2
            x = r.normal(0, 0.3, (3, 40))
            t = np.arange(40)
            x[1] += np.sin(t / 3.0) if y else t / 20.0 - 1
            f.write(":".join(",".join(f"{v:.5f}" for v in row) for row in x) + f":{['ramp', 'sine'][y]}\n")
            xs.append(np.array([[float(f"{v:.5f}") for v in row] for row in x], np.float32)); ys.append(y)
    if split == "TEST":
        np.savez("waves_test.npz", x=np.array(xs), y=np.array(ys))
PY
mkdir ts && mv Waves_TRAIN.ts Waves_TEST.ts ts/
"$BIN/mgpu-train" --data ts --model "$SRC/models/har-cnn1d.spec" --epochs 8 --batch-size 8 \
	--lr 0.05 -q --save-dir ck1 >ts.tsv || fail "1-D net"
acc=$(awk -F '\t' '$1 == "summary" { print $12 }' ts.tsv)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "1-D test accuracy $acc: $(cat ts.tsv)"
"$BIN/mgpu-train" --data ts --model "$SRC/models/har-cnn1d.spec" --max-steps 1 --batch-size 8 \
	2>info.txt >/dev/null || fail "1-D info run"
grep -q "model cnn:input 3 40; conv 32 k=7 s=1 p=3; bn; relu; " info.txt ||
	fail "1-D spec line: $(cat info.txt)"
test_loss=$(awk -F '\t' '$1 == "summary" { print $11 }' ts.tsv)
steps=$(awk -F '\t' '$1 == "summary" { print $2 }' ts.tsv)
"$PY" fwd.py "ck1/$(cat ck1/latest)/model.safetensors" waves_test.npz "$test_loss" "$steps" \
	>fwd1.txt 2>&1 || fail "numpy forward of the 1-D net: $(cat fwd1.txt)"

# The ResNet spec file loads and runs on 28x28 images.
mkidx_big big 64
"$BIN/mgpu-train" --data big --model "$SRC/models/resnet-fmnist.spec" --max-steps 2 \
	--batch-size 8 -q >big.tsv || fail "models/resnet-fmnist.spec"

# Refused, naming the problem.
expect 1 "'d': samples are 1 x 8 x 8 but the model's input line says 3 x 8 x 8" \
	"$BIN/mgpu-train" --data d --model "cnn:input 3 8 8; conv 4 k=3; linear auto" -q
expect 1 "line 2 (maxpool) gets 4 x 2 x 2: its output would be empty" \
	"$BIN/mgpu-train" --data d --model "cnn:conv 4 k=7; maxpool 3; linear auto" -q
expect 2 "a conv net ends with a 'linear' line" \
	"$BIN/mgpu-train" --data d --model "cnn:conv 4 k=3; relu" -q
expect 2 "--dtype fp16: a cnn trains in fp32 or bf16" \
	"$BIN/mgpu-train" --data d --model "$res" --dtype fp16 -q
exit 0

# cnn_fwd.py - an independent numpy reading of a cnn checkpoint
# (man/mgpu-model.7): the spec it records (model.safetensors' metadata
# mgpu_spec), read line by line; evaluation-mode BatchNorm with the saved
# running statistics; the inputs normalised as its metadata says. Prints
# the test loss and exits 0 when it is mgpu-train's within 1e-4 (and,
# with --predict, when every output of mgpu-train --predict's file is
# within 1e-4 of numpy's).
#
# usage: cnn_fwd.py MODEL.safetensors DATA WANT_LOSS NUM_BATCHES
#            [--labels IDX_LABELS] [--predict PRED.npy] [--stride N --sigma S]
# DATA is IDX images (with --labels), an .npz of x and y, or a shard
# manifest whose test split holds images (.npy) with keypoints (.json):
# then the loss is the MSE of the net's maps against the keypoints'
# Gaussian maps (mgpu_keypoints_render: sigma in map cells, a part's map
# centred on its (x, y) / stride; a missing part's map weighs 0).
import argparse, io, json, os, struct, sys, tarfile
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("path")
ap.add_argument("data")
ap.add_argument("want", type=float)
ap.add_argument("nbatches", type=int)
ap.add_argument("--labels")
ap.add_argument("--predict")
ap.add_argument("--stride", type=int, default=1)
ap.add_argument("--sigma", type=float, default=2.0)
arg = ap.parse_args()

raw = open(arg.path, "rb").read()
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


def w4(t):  # 1-D weights (K, C, k) as (K, C, 1, k)
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


def tconv(x, w, b, s, p, o, g=1, d=1):
    """torch's ConvTranspose2d as a scatter: weight (C, K/g, kh, kw); every
    input pixel adds its weighted kernel at (ih s + kh d, iw s + kw d) of an
    uncropped output, whose borders p are then cut off."""
    w = w4(w)
    N, C, H, Wd = x.shape
    _, Kg, kh, kwd = w.shape
    ph, sh, dh, oh = (0, 1, 1, 0) if oned else (p, s, d, o)
    OH = (H - 1) * sh - 2 * ph + dh * (kh - 1) + oh + 1
    OW = (Wd - 1) * s - 2 * p + d * (kwd - 1) + o + 1
    full = np.zeros((N, Kg * g, (H - 1) * sh + dh * (kh - 1) + 1 + oh, (Wd - 1) * s + d * (kwd - 1) + 1 + o))
    Cg = C // g
    for i in range(kh):
        for j in range(kwd):
            for gi in range(g):
                full[:, gi * Kg:(gi + 1) * Kg, i * dh:i * dh + sh * (H - 1) + 1:sh,
                     j * d:j * d + s * (Wd - 1) + 1:s] += np.einsum(
                         "nchw,ck->nkhw", x[:, gi * Cg:(gi + 1) * Cg], w[gi * Cg:(gi + 1) * Cg, :, i, j])
    out = full[:, :, ph:ph + OH, p:p + OW]
    return out if b is None else out + b[None, :, None, None]


def bn(x, pre):
    assert W[pre + ".num_batches_tracked"].shape == () and W[pre + ".num_batches_tracked"] == arg.nbatches
    sc = W[pre + ".weight"] / np.sqrt(W[pre + ".running_var"] + 1e-5)
    return (x - W[pre + ".running_mean"][None, :, None, None]) * sc[None, :, None, None] + W[pre + ".bias"][None, :, None, None]


def gn(x, G, pre):
    N, C, H, Wd = x.shape
    v = x.reshape(N, G, -1)
    v = (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + 1e-5)
    return v.reshape(x.shape) * W[pre + ".weight"][None, :, None, None] + W[pre + ".bias"][None, :, None, None]


def pool(x, k, s, p, mx):
    kh, sh, ph = (1, 1, 0) if oned else (k, s, p)
    N, C, H, Wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (p, p)), constant_values=-np.inf if mx else 0)
    OH, OW = (H + 2 * ph - kh) // sh + 1, (Wd + 2 * p - k) // s + 1
    wins = [xp[:, :, i:i + sh * (OH - 1) + 1:sh, j:j + s * (OW - 1) + 1:s] for i in range(kh) for j in range(k)]
    return np.max(wins, 0) if mx else np.sum(wins, 0) / (kh * k)


relu = lambda v: np.maximum(v, 0)
silu = lambda v: v / (1 + np.exp(-v))

kps = None
if arg.data.endswith(".tsv"):  # a shard manifest: the test split's images and keypoints
    xs, kps = [], []
    rows = [l.rstrip("\n").split("\t") for l in open(arg.data)][1:]
    for r in rows:
        if r[0] != "test":
            continue
        t = tarfile.open(os.path.join(os.path.dirname(arg.data), r[1]))
        for m in t.getmembers():
            if m.name.endswith(".npy"):
                xs.append(np.load(io.BytesIO(t.extractfile(m).read())))
            elif m.name.endswith(".json"):
                kps.append(json.loads(t.extractfile(m).read()))
    x = np.array(xs).astype(np.float64)
elif arg.labels:
    img = open(arg.data, "rb").read()
    cnt = struct.unpack(">I", img[4:8])[0]
    x = np.frombuffer(img[-cnt * int(np.prod(shape)):], dtype=np.uint8).astype(np.float64)
    labels = np.frombuffer(open(arg.labels, "rb").read()[8:], dtype=np.uint8).astype(np.int64)
else:
    z = np.load(arg.data)
    x, labels = z["x"].astype(np.float32).astype(np.float64), z["y"]
x = x * float(meta["mgpu_norm_scale"]) + float(meta["mgpu_norm_shift"])
h = x.reshape([-1] + ([shape[0], 1, shape[1]] if oned else shape))
saved = {}
for i, w in enumerate(lines[1:]):
    op, a, pre = w[0], kw(w), str(i)
    if op == "conv":
        h = conv(h, W[pre + ".weight"], W.get(pre + ".bias"), a["s"], a["p"], a.get("g", 1), a.get("d", 1))
    elif op == "tconv":
        h = tconv(h, W[pre + ".weight"], W.get(pre + ".bias"), a["s"], a["p"], a.get("o", 0), a.get("g", 1),
                  a.get("d", 1))
    elif op == "bn":
        h = bn(h, pre)
    elif op == "gn":
        h = gn(h, int(w[1]), pre)
    elif op == "relu":
        h = relu(h)
    elif op == "silu":
        h = silu(h)
    elif op in ("maxpool", "avgpool"):
        h = pool(h, a["k"], a["s"], a.get("p", 0), op == "maxpool")
    elif op == "gap":
        h = h.mean((2, 3), keepdims=True)
    elif op == "up":
        h = h.repeat(int(w[1]), 3) if oned else h.repeat(int(w[1]), 2).repeat(int(w[1]), 3)
    elif op == "save":
        saved[w[1]] = h
    elif op == "cat":
        h = np.concatenate([h, saved[w[1]]], 1)
    elif op in ("dropout", "flatten"):
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
ok = True
if arg.predict:
    got = np.load(arg.predict)
    err = np.abs(got - h).max()
    print(f"--predict: {got.shape} outputs, largest difference from numpy {err:.3g}")
    ok = got.shape == h.shape and err <= 1e-4 * max(1.0, np.abs(h).max())
if kps is not None:  # keypoints: MSE against their Gaussian maps
    N, P, mh, mw = h.shape
    t, wt = np.zeros(h.shape), np.ones((N, P))
    jj, ii = np.arange(mw)[None, :], np.arange(mh)[:, None]
    for n, kp in enumerate(kps):
        for p, pt in enumerate(kp):
            if pt is None:
                wt[n, p] = 0
                continue
            u, v = pt[0] / arg.stride, pt[1] / arg.stride
            t[n, p] = np.exp(-((jj - u) ** 2 + (ii - v) ** 2) / (2 * arg.sigma ** 2))
    loss = ((h - t) ** 2 * wt[:, :, None, None]).mean((1, 2, 3)).mean()
else:
    h = h - h.max(-1, keepdims=True)
    lp = h - np.log(np.exp(h).sum(-1, keepdims=True))
    loss = -lp[np.arange(len(labels)), labels].mean()
print(f"numpy test loss {loss:.6f}, mgpu-train {arg.want:.6f}")
sys.exit(0 if ok and abs(loss - arg.want) <= 1e-4 * max(1.0, abs(arg.want)) else 1)

#!/bin/sh
# 15-safetensors-python.sh - safetensors interoperability with Python, both directions:
# a file written by mgpu_st_write() must load in Python (the `safetensors`
# package with numpy when installed, else a stdlib-only check of the header
# JSON and the raw little-endian floats), and a file written by Python must
# load with mgpu_st_load(). The C side is a small driver (tests/drv/st_drv.c)
# that make builds, so no compiler is needed here. Exit 0 pass, 1 fail, 77
# skip (no python3).
set -u
B=${MGPU_BUILD:-build}
DRV=$B/tests/drv/st_drv
command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; exit 77; }
[ -x "$DRV" ] || { echo "$DRV is missing: make builds it"; exit 1; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT

"$DRV" write "$t/c.safetensors" || exit 1

python3 - "$t/c.safetensors" <<'EOF' || exit 1
import json, struct, sys
path = sys.argv[1]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
assert n % 8 == 0, f"header length {n} not a multiple of 8"
hdr = json.loads(raw[8:8 + n].decode("utf-8"))
data = raw[8 + n:]
assert hdr["__metadata__"] == {"format": "pt", "note": "caf\u00e9 \"q\"\n"}, hdr["__metadata__"]
want = {"fc1.weight": ([2, 3], [1.5, -2.0, 3.25, 0.0, 1e-3, 7.0]),
        "fc1.bias": ([3], [0.5, -0.25, 8.0]), "step": ([], [42.0]), "zero": ([0, 4], [])}
for name, (shape, vals) in want.items():
    t = hdr[name]
    assert t["dtype"] == "F32" and t["shape"] == shape, (name, t)
    b, e = t["data_offsets"]
    got = struct.unpack("<%df" % len(vals), data[b:e])
    assert all(abs(x - y) <= 1e-7 * max(1, abs(y)) for x, y in zip(got, vals)), (name, got)
try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError:
    print("stdlib check only: safetensors/numpy not installed")
    sys.exit(0)
d = load_file(path)
assert d["fc1.weight"].shape == (2, 3) and d["fc1.weight"].dtype == np.float32
assert np.array_equal(d["fc1.weight"], np.array([[1.5, -2, 3.25], [0, 1e-3, 7]], np.float32))
assert np.array_equal(d["fc1.bias"], np.array([0.5, -0.25, 8], np.float32))
assert d["step"].shape == () and d["step"] == 42 and d["zero"].shape == (0, 4)
with safe_open(path, framework="numpy") as f:
    assert f.metadata() == {"format": "pt", "note": "caf\u00e9 \"q\"\n"}, f.metadata()
out = sys.argv[1].replace("c.safetensors", "py.safetensors")
save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
           "h": np.array([1, -2, 0.5], np.float16),
           "d": np.array([[0.125]], np.float64),
           "i": np.array([7, 8], np.int64)}, out, metadata={"who": "python"})
print("safetensors", __import__("safetensors").__version__)
EOF

if [ -f "$t/py.safetensors" ]; then
	"$DRV" read "$t/py.safetensors" >"$t/out" || exit 1
	sort "$t/out" >"$t/got"
	cat >"$t/want" <<'EOF'
a F32 [2,3] 0 0.25 0.5 0.75 1 1.25
d F64 [1,1] 0.125
h F16 [3] 1 -2 0.5
i I64 [2]
meta python
EOF
	diff -u "$t/want" "$t/got" || exit 1
fi
echo ok

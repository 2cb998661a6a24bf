#!/bin/sh
# st_python.sh - safetensors interoperability with Python, both directions:
# a file written by mgpu_st_write() must load in Python (the `safetensors`
# package with numpy when installed, else a stdlib-only check of the header
# JSON and the raw little-endian floats), and a file written by Python must
# load with mgpu_st_load(). A small C driver is compiled against
# $MGPU_BUILD/libmgpu.a. Exit 0 pass, 1 fail, 77 skip (no python3, no C
# compiler or no built library).
set -u
B=${MGPU_BUILD:-build}
CC=${CC:-cc}
command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "no C compiler ($CC)"; exit 77; }
[ -f "$B/libmgpu.a" ] || { echo "$B/libmgpu.a not built"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT

cat >"$t/drv.c" <<'EOF'
/* drv write PATH | drv read PATH: the C side of st_python.sh */
#include <stdio.h>
#include <string.h>
#include "core/err.h"
#include "nn/safetensors.h"

static int wr(const char *path)
{
	static float w[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f}, b[3] = {0.5f, -0.25f, 8.0f};
	static float s = 42.0f;
	struct mgpu_st_entry e[4] = {
		{"fc1.weight", w, 2, {2, 3}}, {"fc1.bias", b, 1, {3}},
		{"step", &s, 0, {0}}, {"zero", NULL, 2, {0, 4}},
	};
	const char *meta[] = {"format", "pt", "note", "caf\xc3\xa9 \"q\"\n"};
	return mgpu_st_write(path, e, 4, meta, 2);
}

static int rd(const char *path)
{
	struct mgpu_st st;
	float v[64];
	int i, k;
	size_t j;

	if (mgpu_st_load(path, &st) < 0)
		return -1;
	for (i = 0; i < st.n; i++) {
		printf("%s %s [", st.t[i].name, mgpu_st_dtype_name(st.t[i].dtype));
		for (k = 0; k < st.t[i].ndim; k++)
			printf("%s%lld", k ? "," : "", (long long)st.t[i].shape[k]);
		printf("]");
		if (st.t[i].count <= 64 && mgpu_st_read_f32(&st.t[i], v, st.t[i].count) == 0)
			for (j = 0; j < st.t[i].count; j++)
				printf(" %g", v[j]);
		printf("\n");
	}
	printf("meta %s\n", mgpu_st_meta(&st, "who") ? mgpu_st_meta(&st, "who") : "-");
	mgpu_st_free(&st);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc != 3)
		return 2;
	rc = strcmp(argv[1], "write") == 0 ? wr(argv[2]) : rd(argv[2]);
	if (rc < 0)
		fprintf(stderr, "drv: error: %s\n", mgpu_errmsg());
	return rc < 0;
}
EOF
# only err, io, json and safetensors are pulled from the archive: no CUDA
LIBS="-lopenblas -lzstd -larchive -lm -pthread"
# a SANITIZE= build needs the same runtime at link time
SAN=
if nm "$B/libmgpu.a" 2>/dev/null | grep -q ' U __asan_init'; then
	SAN="-fsanitize=address,undefined"
fi
# shellcheck disable=SC2086
if ! $CC -std=c11 -D_GNU_SOURCE $SAN -Ilib -o "$t/drv" "$t/drv.c" "$B/libmgpu.a" \
	$LIBS >"$t/cc.log" 2>&1; then
	tail -n 20 "$t/cc.log"
	echo "cannot build the C driver"
	exit 1
fi

"$t/drv" write "$t/c.safetensors" || exit 1

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
	"$t/drv" read "$t/py.safetensors" >"$t/out" || exit 1
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

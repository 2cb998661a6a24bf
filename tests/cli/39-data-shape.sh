# A sample's shape travels from the source to the cache and the trainer:
# IDX (N,H,W) and .npy (N,H,W) become 1xHxW, .npy (N,C,H,W) CxHxW, PPM
# members 3xHxW planar, and --shape gives flat sources (CSV) a shape; a
# --shape of another size is an error naming the source.
. tests/cli/lib.sh
need_numpy
S=$BIN/mgpu-shard C=$BIN/mgpu-cache
mkidx idx 40 10 6 3
"$PY" - <<'PY'
import io, tarfile, numpy as np
r = np.random.default_rng(1)
np.save("hw.npy", r.integers(0, 255, (30, 5, 7), dtype=np.uint8))
np.save("chw.npy", r.random((30, 2, 5, 7), dtype=np.float32))
np.save("lab.npy", np.arange(30) % 3)
with open("flat.csv", "w") as f:
    f.write(",".join(f"f{i}" for i in range(12)) + ",label\n")
    for i in range(30):
        f.write(",".join(str(i + j) for j in range(12)) + f",{i % 2}\n")
with tarfile.open("ppm.tar", "w") as t:
    for i in range(4):
        px = bytes((10 * i + k) % 256 for k in range(2 * 3 * 3))  # 2 rows, 3 cols, RGB
        for name, data in ((f"s{i}.ppm", b"P6\n3 2\n255\n" + px), (f"s{i}.cls", b"1")):
            m = tarfile.TarInfo(name); m.size = len(data); t.addfile(m, io.BytesIO(data))
PY
shape_of() { # shape_of SHARD-ARGS...: the cache's train shape
	rm -rf sh c
	"$S" -q -o sh/m.tsv "$@" >/dev/null || fail "shard $*"
	"$C" -q -o c sh/m.tsv >/dev/null || fail "cache $*"
	"$C" --info c | awk -F'\t' '$1 == "train" { print $3 }'
}
[ "$(shape_of idx)" = 1x6x6 ] || fail "IDX: $(shape_of idx)"
[ "$(shape_of --labels lab.npy hw.npy)" = 1x5x7 ] || fail "npy (N,H,W)"
[ "$(shape_of --labels lab.npy chw.npy)" = 2x5x7 ] || fail "npy (N,C,H,W)"
[ "$(shape_of --labels lab.npy --shape 7x5 hw.npy)" = 7x5 ] || fail "npy as series (N,C,L)"
[ "$(shape_of flat.csv)" = 12 ] || fail "CSV flat: $(shape_of flat.csv)"
[ "$(shape_of --shape 3x2x2 flat.csv)" = 3x2x2 ] || fail "CSV --shape 3x2x2"
[ "$(shape_of --shape 3x4 flat.csv)" = 3x4 ] || fail "CSV --shape 3x4"
"$C" --info --json c | grep -q '"split":"train","samples":[0-9]*,"shape":"3x4"' ||
	fail "--info --json: $(cat c/../c/* 2>/dev/null | head -c 0)$("$C" --info --json c)"
# PPM pixels become planar (C,H,W): channel 0 holds every pixel's red.
[ "$(shape_of ppm.tar)" = 3x2x3 ] || fail "PPM: $(shape_of ppm.tar)"
"$PY" - <<'PY' || fail "PPM not planar"
import io, tarfile, numpy as np
t = tarfile.open("sh/train-000000.tar")
for m in t.getmembers():
    if m.name.endswith(".npy"):
        x = np.load(io.BytesIO(t.extractfile(m).read()))
        i = int(m.name[:8])
        px = np.array([(10 * i + k) % 256 for k in range(18)], dtype=np.uint8).reshape(2, 3, 3)
        assert x.shape == (3, 2, 3) and (x == px.transpose(2, 0, 1)).all(), (x, px)
PY
# The trainer sees the same shape (mgpu-train -v says it).
shape_of idx >/dev/null
"$BIN/mgpu-train" -v --data c --model mlp:auto-8-auto --epochs 1 --batch-size 8 \
	>/dev/null 2>err.txt || fail "train: $(cat err.txt)"
grep -q "samples 1x6x6" err.txt || fail "trainer's shape: $(cat err.txt)"
# Errors: a shape of another size names the source (exit 1); a malformed
# one, or --shape with --text, is a usage error (exit 2).
expect 1 "'flat.csv': --shape 5x5 holds 25 values, but its samples are 12 (12 values)" \
	"$S" -q -o e/m.tsv --shape 5x5 flat.csv
[ ! -e e ] || fail "a failed run left its directory"
expect 2 "--shape: '3x' is not a shape" "$S" -o e/m.tsv --shape 3x flat.csv
expect 2 "--shape: '12' is not a shape" "$S" -o e/m.tsv --shape 12 flat.csv
expect 2 "--shape: '0x12' is not a shape" "$S" -o e/m.tsv --shape 0x12 flat.csv
expect 2 "drop --shape" "$S" -o e/m.tsv --text --context 8 --shape 3x4 flat.csv
exit 0

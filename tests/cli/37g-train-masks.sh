# mgpu-train on mask targets (segmentation): a WebDataset of 16x16 gray
# PNG frames with KEY.mask.png class ids (background 0, a bright box 1, a
# grey box 2, a border of 255 that counts nowhere) trains a fully-conv cnn
# on the per-pixel cross-entropy; the records carry the mean IoU (val_miou,
# test_miou), which rises, and the pixel accuracy; --predict-as class gives
# each test pixel's class, whose IoU against the masks is the summary's;
# the class count comes from the data or --mask-classes; 1 rank x 8 and
# 2 ranks x 4 (mode ddp and dp) train alike with augmentation moving the
# masks.
. tests/cli/lib.sh
TR=$BIN/mgpu-train
python3 - <<'PY'
import io, random, struct, tarfile, zlib
def png(rows):
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
r = random.Random(5)
with tarfile.open("seg.tar", "w", format=tarfile.USTAR_FORMAT) as t:
    for k in range(160):
        img = [[r.randrange(20, 60) for _ in range(16)] for _ in range(16)]
        mask = [[0] * 16 for _ in range(16)]
        for cls, val in ((1, 200), (2, 120)):
            y, x, h, w = r.randrange(1, 9), r.randrange(1, 9), r.randrange(3, 7), r.randrange(3, 7)
            for i in range(y, y + h):
                for j in range(x, x + w):
                    img[i][j] = val + r.randrange(-10, 10)
                    mask[i][j] = cls
        for i in range(16):
            mask[i][0] = mask[i][15] = mask[0][i] = mask[15][i] = 255
        for name, rows in (("%04d.png" % k, img), ("%04d.mask.png" % k, mask)):
            d = png(rows)
            m = tarfile.TarInfo(name); m.size = len(d); t.addfile(m, io.BytesIO(d))
PY
"$BIN/mgpu-shard" -q --val-fraction 0.1 --test-fraction 0.1 -d s -o s/m.tsv seg.tar 2>err.txt ||
	fail "shard: $(cat err.txt)"
"$BIN/mgpu-cache" -q -o c s/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
NET='cnn:conv 8 k=3 p=1 bias; relu; conv 3 k=1 bias'
"$TR" -q --data c --model "$NET" --optimizer adamw --lr 0.05 --epochs 5 --batch-size 8 \
	--log-every 4 --save-dir ck --json >run.json 2>err.txt || fail "train: $(cat err.txt)"
python3 - run.json <<'PY' || fail "records: $(cat run.json)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in recs if r["kind"] == "step"]
evals = [r for r in recs if r["kind"] == "eval"]
s = [r for r in recs if r["kind"] == "summary"][0]
assert steps[-1]["loss"] < 0.5 * steps[0]["loss"], (steps[0], steps[-1])
miou = [e["val_miou"] for e in evals]
assert miou[-1] > miou[0] + 0.2 and miou[-1] > 0.8, miou
assert 0.8 < s["test_miou"] <= 1 and 0.8 < s["test_acc"] <= 1 and s["val_miou"] == miou[-1], s
assert "val_kp_err_px" not in s and "val_rmse" not in s, s
PY
# --predict-as class: (16, 16, 16) ids whose IoU and accuracy against the
# test masks (255 left out) are the summary's test_miou and test_acc
"$TR" -q --evaluate --resume ck --predict ids.npy --predict-as class >e.tsv 2>err.txt ||
	fail "--predict: $(cat err.txt)"
head -n 1 e.tsv | tr '\t' '\n' | tail -n 2 | tr '\n' ' ' | grep -qx 'val_miou test_miou ' ||
	fail "TSV columns: $(head -n 1 e.tsv)"
col() { awk -F '\t' -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i } $1 == "summary" { print $k[c] }' e.tsv; }
python3 - ids.npy s "$(col test_miou)" "$(col test_acc)" <<'PY' || fail "IoU of the predicted ids"
import os, struct, sys, tarfile, zlib, ast
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<H", raw[8:10])[0]
hdr = ast.literal_eval(raw[10:10 + n].decode())
assert hdr["descr"] == "<i4" and hdr["shape"] == (16, 16, 16), hdr
ids = struct.unpack("<%di" % (16 * 256), raw[10 + n:])
def npy_u8(b):  # the shard's KEY.mask.npy
    n = struct.unpack("<H", b[8:10])[0]
    return b[10 + n:]
t = tarfile.open(os.path.join(sys.argv[2], "test-000000.tar"))
masks = [npy_u8(t.extractfile(m).read()) for m in t.getmembers() if m.name.endswith(".mask.npy")]
assert len(masks) == 16
inter, uni, ok, n = [0] * 3, [0] * 3, 0, 0
for i, m in enumerate(masks):
    for p in range(256):
        y, g = ids[i * 256 + p], m[p]
        if g == 255:
            continue
        ok, n = ok + (y == g), n + 1
        for c in range(3):
            inter[c] += y == c and g == c
            uni[c] += y == c or g == c
got = sum(a / b for a, b in zip(inter, uni) if b) / sum(1 for b in uni if b)
assert abs(got - float(sys.argv[3])) < 1e-5, (got, sys.argv[3])
assert n == 16 * 196 and abs(ok / n - float(sys.argv[4])) < 1e-5, (ok / n, sys.argv[4])
PY
# --mask-classes: more than the data's 3 needs 4 channels; fewer is an error
"$TR" -q --data c --model 'cnn:conv 4 k=1' --mask-classes 4 --max-steps 2 >/dev/null 2>err.txt ||
	fail "--mask-classes 4: $(cat err.txt)"
expect 1 "'c': the model 'cnn:input 1 16 16; conv 3 k=1 s=1 p=0' gives 3x16x16 outputs a sample, its mask target takes 4x16x16 (4 classes of 16x16 pixels)" \
	"$TR" -q --data c --model 'cnn:conv 3 k=1' --mask-classes 4 --epochs 1
expect 1 "'c': mask labels go up to 2, beyond --mask-classes 2" \
	"$TR" -q --data c --model 'cnn:conv 2 k=1' --mask-classes 2 --epochs 1
# 1 rank x 8 and 2 ranks x 4 (ddp, and dp's threads), the masks cropped and
# flipped with the images
AUG="--augment crop=2,flip"
"$TR" -q --data c --model "$NET" --epochs 1 --max-steps 6 --batch-size 8 --log-every 1 $AUG \
	>w1.tsv 2>err.txt || fail "1 rank: $(cat err.txt)"
"$TR" -q --data c --model "$NET" --epochs 1 --max-steps 6 --batch-size 4 --cpu-ranks 2 \
	--log-every 1 $AUG >w2.tsv 2>err.txt || fail "2 ranks: $(cat err.txt)"
"$TR" -q --data c --model "$NET" --epochs 1 --max-steps 6 --batch-size 4 --cpu-ranks 2 \
	--mode dp --log-every 1 $AUG >w3.tsv 2>err.txt || fail "mode dp: $(cat err.txt)"
for w in w2 w3; do
python3 - w1.tsv $w.tsv <<'PY' || fail "world sizes differ: $(cut -f 1-4 w1.tsv) vs $(cut -f 1-4 $w.tsv)"
import sys
def rows(p):
    r = [l.rstrip("\n").split("\t") for l in open(p)]
    return [dict(zip(r[0], x)) for x in r[1:]]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
la = [float(r["loss"]) for r in a if r["kind"] == "step"]
lb = [float(r["loss"]) for r in b if r["kind"] == "step"]
assert len(la) == 6 and all(abs(x - y) <= 1e-4 * abs(x) for x, y in zip(la, lb)), (la, lb)
sa = [r for r in a if r["kind"] == "summary"][0]
sb = [r for r in b if r["kind"] == "summary"][0]
for k in ("val_loss", "val_miou", "test_miou", "test_acc"):
    assert abs(float(sa[k]) - float(sb[k])) <= 1e-4, (k, sa[k], sb[k])
PY
done
exit 0

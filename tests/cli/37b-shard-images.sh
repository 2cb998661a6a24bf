# PNG and JPEG sources of mgpu-shard: an ImageFolder directory (class ids in
# sorted folder order, names kept in the manifest) and WebDataset members
# (.png/.jpg/.jpeg); samples are C x H x W, 16-bit PNG float32 in [0, 1];
# different sizes are an error naming the file unless --resize HxW;
# corrupt and truncated images get one line naming the file or member.
. tests/cli/lib.sh
need_numpy
IMG=$SRC/tests/data/img
# mkpng PATH W H C DEPTH V...: a solid PNG (zlib + struct, no PIL)
mkpng() {
	python3 - "$@" <<'PY'
import struct, sys, zlib
p, w, h, c, depth = sys.argv[1], *map(int, sys.argv[2:6])
v = [int(x) for x in sys.argv[6:]]
px = b"".join(x.to_bytes(depth // 8, "big") for x in v[:c])
raw = b"".join(b"\0" + px * w for _ in range(h))
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
ct = {1: 0, 3: 2, 4: 6}[c]
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ct, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(p, "wb").write(png)
PY
}
# dump MANIFEST: every sample of every shard as "label shape dtype first-values"
dump() {
	"$PY" - "$1" <<'PY'
import io, os, sys, tarfile
import numpy as np
m = sys.argv[1]
rows = [l.split("\t") for l in open(m) if l[0] != "#"][1:]
out = []
for r in rows:
    t = tarfile.open(os.path.join(os.path.dirname(m), r[1]))
    mem = {x.name: t.extractfile(x).read() for x in t.getmembers()}
    for k in sorted(n[:-4] for n in mem if n.endswith(".npy")):
        a = np.load(io.BytesIO(mem[k + ".npy"]))
        out.append("%s %s %s %s" % (mem[k + ".cls"].decode().strip(), "x".join(map(str, a.shape)),
                   a.dtype, " ".join("%g" % x for x in a.reshape(a.shape[0], -1)[:, 0])))
print("\n".join(sorted(out)))
PY
}

# ImageFolder: classes "cat" < "dog" < "zebra" (sorted, not made in order)
mkdir -p f/zebra f/cat/sub f/dog f/.ipynb_checkpoints
mkpng f/zebra/a.png 4 3 3 8 1 2 3
mkpng f/cat/b.PNG 4 3 3 8 200 100 50
cp "$IMG/rgb-4x3.jpg" f/cat/sub/c.jpeg
cp "$IMG/rgb-4x3.jpg" f/dog/d.jpg
echo "not an image" >f/dog/notes.txt
echo "ignored" >f/README
mkpng f/.ipynb_checkpoints/x.png 9 9 1 8 0
"$BIN/mgpu-shard" -q --val-fraction 0 -o s/manifest.tsv f 2>err.txt || fail "ImageFolder: $(cat err.txt)"
[ "$(grep '^#class' s/manifest.tsv)" = "$(printf '#class\t0\tcat\n#class\t1\tdog\n#class\t2\tzebra')" ] ||
	fail "class names: $(cat s/manifest.tsv)"
dump s/manifest.tsv >got.txt
# JPEG is lossy: the solid (200,100,50) decodes within a step or two
"$PY" - got.txt <<'PY' || fail "ImageFolder samples: $(cat got.txt)"
import sys
rows = [l.split() for l in open(sys.argv[1])]
assert len(rows) == 4, rows
assert all(r[1] == "3x3x4" and r[2] == "uint8" for r in rows), rows
labels = sorted(r[0] for r in rows)
assert labels == ["0", "0", "1", "2"], labels
zebra = [r for r in rows if r[0] == "2"][0]
assert zebra[3:] == ["1", "2", "3"], zebra
for r in rows:
    if r[0] != "2":
        assert all(abs(int(a) - b) <= 3 for a, b in zip(r[3:], (200, 100, 50))), r
PY

# different sizes: an error naming the file, unless --resize
mkpng f/zebra/big.png 8 6 3 8 9 9 9
expect 1 "f/zebra/big.png': a u8 3x6x8 image (CxHxW), the first was u8 3x3x4 (--resize HxW" \
	"$BIN/mgpu-shard" -q -o s2/manifest.tsv f
[ ! -e s2 ] || fail "a failed run left s2"
"$BIN/mgpu-shard" -q --val-fraction 0 --resize 2x5 -o s3/manifest.tsv f || fail "--resize"
dump s3/manifest.tsv | awk '{print $2}' | sort -u >shapes.txt
[ "$(cat shapes.txt)" = "3x2x5" ] || fail "--resize shapes: $(cat shapes.txt)"
expect 2 "--resize '5': want HxW" "$BIN/mgpu-shard" --resize 5 f
expect 2 "--resize '0x4'" "$BIN/mgpu-shard" --resize 0x4 f
rm f/zebra/big.png

# corrupt and truncated: one line naming the file, nothing on disk
head -c 60 f/zebra/a.png >f/zebra/trunc.png
expect 1 "f/zebra/trunc.png': corrupt PNG: truncated" "$BIN/mgpu-shard" -q -o s4/manifest.tsv f
rm f/zebra/trunc.png
head -c 200 "$IMG/rgb-4x3.jpg" >f/dog/trunc.jpg
expect 1 "f/dog/trunc.jpg': corrupt JPEG" "$BIN/mgpu-shard" -q -o s4/manifest.tsv f
rm f/dog/trunc.jpg
printf 'GIF89a' >f/dog/fake.png
expect 1 "f/dog/fake.png': neither a PNG nor a JPEG image" "$BIN/mgpu-shard" -q -o s4/manifest.tsv f
rm f/dog/fake.png
mkdir f/empty
expect 1 "f/empty': a class folder without .png, .jpg or .jpeg files" \
	"$BIN/mgpu-shard" -q -o s4/manifest.tsv f
[ ! -e s4 ] || fail "a failed run left s4"

# WebDataset members: gray PNG, gray JPEG, 16-bit gray PNG, corrupt member
mkdir w
mkpng w/a.png 4 3 1 8 7
cp "$IMG/gray-4x3.jpg" w/b.jpg
cp "$IMG/gray-4x3.jpg" w/c.input.JPEG
printf 3 >w/a.cls; printf 4 >w/b.cls; printf 5 >w/c.cls
(cd w && tar --format=ustar -cf ../w.tar a.png a.cls b.jpg b.cls c.input.JPEG c.cls)
"$BIN/mgpu-shard" -q --val-fraction 0 -o ws/manifest.tsv w.tar || fail "wds images"
dump ws/manifest.tsv >wgot.txt
"$PY" - wgot.txt <<'PY' || fail "wds samples: $(cat wgot.txt)"
import sys
rows = sorted(l.split() for l in open(sys.argv[1]))
assert [r[:3] for r in rows] == [["3", "1x3x4", "uint8"], ["4", "1x3x4", "uint8"],
                                  ["5", "1x3x4", "uint8"]], rows
assert rows[0][3] == "7" and abs(int(rows[1][3]) - 60) <= 2, rows
PY
mkpng w/d.png 4 3 1 16 65535
printf 0 >w/d.cls
(cd w && tar --format=ustar -cf ../w16.tar d.png d.cls)
"$BIN/mgpu-shard" -q --val-fraction 0 -o w16/manifest.tsv w16.tar || fail "16-bit"
[ "$(dump w16/manifest.tsv)" = "0 1x3x4 float32 1" ] || fail "16-bit: $(dump w16/manifest.tsv)"
mkpng w/e.png 5 3 1 8 7
printf 1 >w/e.cls
(cd w && tar --format=ustar -cf ../wsize.tar a.png a.cls e.png e.cls)
expect 1 "'wsize.tar': entry 'e.png': a 3x5 image, the first was 3x4 (--resize HxW" \
	"$BIN/mgpu-shard" -q -o x/manifest.tsv wsize.tar
"$BIN/mgpu-shard" -q --val-fraction 0 --resize 3x4 -o wr/manifest.tsv wsize.tar || fail "wds --resize"
head -c 40 w/a.png >w/f.png
printf 1 >w/f.cls
(cd w && tar --format=ustar -cf ../wbad.tar a.png a.cls f.png f.cls)
expect 1 "'wbad.tar': entry 'f.png': corrupt PNG" "$BIN/mgpu-shard" -q -o x/manifest.tsv wbad.tar
[ ! -e x ] || fail "a failed run left x"
exit 0

# Targets beyond a class id through mgpu-shard and mgpu-cache: CSV
# --target-columns (a regression vector), WebDataset KEY.json keypoints
# (missing parts null; scaled with --resize), KEY.mask.png masks (resized
# with the image); the shards carry them back (KEY.target.npy, KEY.json,
# KEY.mask.npy), the cache says what it holds (--info's target column),
# and every mistake is one line naming the file and member.
. tests/cli/lib.sh
# mkwds TAR SPEC...: a tar of members NAME=KIND:ARGS (stdlib only):
#   png:W,H,V     an 8-bit gray W x H PNG of value V (or V+row+col with "ramp")
#   text:STRING   the bytes of STRING
mkwds() {
	python3 - "$@" <<'PY'
import io, struct, sys, tarfile, zlib
def png(w, h, f):
    raw = b"".join(b"\0" + bytes(f(i, j) for j in range(w)) for i in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
with tarfile.open(sys.argv[1], "w", format=tarfile.USTAR_FORMAT) as t:
    for spec in sys.argv[2:]:
        name, kind, arg = spec.split("=", 1)[0], *spec.split("=", 1)[1].split(":", 1)
        if kind == "png":
            w, h, v = arg.split(",")
            d = png(int(w), int(h), (lambda i, j: (i * 10 + j) % 256) if v == "ramp" else
                    (lambda i, j, v=int(v): v))
        else:
            d = arg.encode()
        m = tarfile.TarInfo(name); m.size = len(d); t.addfile(m, io.BytesIO(d))
PY
}
# members TAR: the shard's member names and, for .json, their text
members() {
	python3 - "$1" <<'PY'
import sys, tarfile
t = tarfile.open(sys.argv[1])
for m in t.getmembers():
    print(m.name, t.extractfile(m).read().decode() if m.name.endswith(".json") else "")
PY
}
info_target() { "$BIN/mgpu-cache" -q --info "$1" | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c["target"] }'; }

# CSV: y2 and y1 are the target, in that order; no label column needed
printf 'a,y1,b,y2\n1,2,3,4\n5,6,7,8\n9,10,11,12\n' >r.csv
"$BIN/mgpu-shard" -q --val-fraction 0 --target-columns y2,1 -d c -o c/m.tsv r.csv 2>err.txt ||
	fail "csv targets: $(cat err.txt)"
members c/train-000000.tar >mem.txt
grep -q '^00000000.target.npy' mem.txt || fail "no .target.npy: $(cat mem.txt)"
"$BIN/mgpu-cache" -q -o cc c/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
[ "$(info_target cc)" = "vector 2" ] || fail "csv cache target: $(info_target cc)"
expect 1 "'r.csv': --target-columns: no column 'y9' in the header" \
	"$BIN/mgpu-shard" --target-columns y9 -d c2 -o c2/m.tsv r.csv

# keypoints: two parts, the second missing in b; no .cls anywhere
mkwds k.tar a.png=png:8,6,50 'a.json=text:[[1, 2], [7, 5.5]]' \
	b.png=png:8,6,90 'b.json=text:{"keypoints": [[3.25, 4], null], "id": 7}' \
	c.png=png:8,6,10 'c.json=text:[[0, 0], [2, 3, 0]]' c.txt=text:ignored
"$BIN/mgpu-shard" -q --val-fraction 0 -d k -o k/m.tsv k.tar 2>err.txt || fail "keypoints: $(cat err.txt)"
members k/train-000000.tar | sort >got.txt
grep -qx '00000000.json \[\[1, 2\], \[7, 5.5\]\]' got.txt &&
	grep -qx '00000001.json \[\[3.25, 4\], null\]' got.txt &&
	grep -qx '00000002.json \[\[0, 0\], null\]' got.txt || fail "keypoint members: $(cat got.txt)"
"$BIN/mgpu-cache" -q -o kc k/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
[ "$(info_target kc)" = "keypoints 2x2" ] || fail "keypoint cache target: $(info_target kc)"
# --resize 3x4 halves both axes: x' = (x + 0.5) / 2 - 0.5
"$BIN/mgpu-shard" -q --val-fraction 0 --resize 3x4 -d kr -o kr/m.tsv k.tar 2>err.txt ||
	fail "resized keypoints: $(cat err.txt)"
members kr/train-000000.tar >mem.txt
grep -qx '00000000.json \[\[0.25, 0.75\], \[3.25, 2.5\]\]' mem.txt || fail "resized keypoints: $(cat mem.txt)"

# masks: 8-bit gray PNG of class ids, resized with the image (nearest)
mkwds m.tar a.png=png:8,6,50 a.mask.png=png:8,6,ramp a.cls=text:1 \
	b.png=png:8,6,60 b.seg.png=png:8,6,3 b.cls=text:0
"$BIN/mgpu-shard" -q --val-fraction 0 -d m -o m/m.tsv m.tar 2>err.txt || fail "masks: $(cat err.txt)"
members m/train-000000.tar >mem.txt
grep -q '^00000000.mask.npy' mem.txt || fail "no .mask.npy: $(cat mem.txt)"
"$BIN/mgpu-cache" -q -o mc m/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
[ "$(info_target mc)" = "mask 6x8" ] || fail "mask cache target: $(info_target mc)"
"$BIN/mgpu-shard" -q --val-fraction 0 --resize 3x4 -d mr -o mr/m.tsv m.tar 2>err.txt ||
	fail "resized masks: $(cat err.txt)"
"$BIN/mgpu-cache" -q -o mrc mr/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
[ "$(info_target mrc)" = "mask 3x4" ] || fail "resized mask target: $(info_target mrc)"

# errors: one line naming the archive and the member
mkwds bad1.tar a.png=png:8,6,50 'a.json=text:[[1, 2], [3]]'
expect 1 "'bad1.tar': entry 'a.json': part 1 is not [x, y]" "$BIN/mgpu-shard" -d e1 -o e1/m.tsv bad1.tar
mkwds bad2.tar a.png=png:8,6,50 'a.json=text:[[1, 2]]' b.png=png:8,6,50 'b.json=text:[[1, 2], [3, 4]]'
expect 1 "'bad2.tar': entry 'b': target keypoints 2x2 differs from the first sample's keypoints 1x2" \
	"$BIN/mgpu-shard" -d e2 -o e2/m.tsv bad2.tar
mkwds bad3.tar a.png=png:8,6,50 a.mask.png=png:4,6,1
expect 1 "'bad3.tar': entry 'a.mask.png': a 6x4 mask for a 6x8 image" "$BIN/mgpu-shard" -d e3 -o e3/m.tsv bad3.tar
mkwds bad4.tar a.png=png:8,6,50 'a.json=text:[[1, 2]' b.png=png:8,6,50
expect 1 "'bad4.tar': entry 'a.json': bad JSON" "$BIN/mgpu-shard" -d e4 -o e4/m.tsv bad4.tar
mkwds bad5.tar a.png=png:8,6,50 'a.json=text:[[1, 2]]' b.png=png:8,6,50 b.cls=text:0
expect 1 "'bad5.tar': entry 'b': target none differs from the first sample's keypoints 1x2" \
	"$BIN/mgpu-shard" -d e5 -o e5/m.tsv bad5.tar
expect 1 "'k.tar': --target-columns names CSV columns" \
	"$BIN/mgpu-shard" --target-columns y -d e6 -o e6/m.tsv k.tar
exit 0

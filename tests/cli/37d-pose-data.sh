# examples/make_pose_data.py (numpy and Pillow) writes the pose data set:
# 96x96 PNG frames of a turned Fashion-MNIST item with two keypoints each
# (its centre and its top) as KEY.json; the same seed gives the same bytes;
# mgpu-shard and mgpu-cache take it as 1x96x96 images with a keypoints
# 2x2 target, and the shards carry every frame's keypoints unchanged.
# Skips when no Python with numpy and Pillow can be found or made (a venv
# from PyPI, kept in the build directory).
. tests/cli/lib.sh
need_pose_python
"$PY" "$SRC/examples/make_pose_data.py" -o pose.tar --count 60 2>err.txt || fail "make_pose_data: $(cat err.txt)"
"$PY" "$SRC/examples/make_pose_data.py" -o again.tar --count 60
cmp -s pose.tar again.tar || fail "the same seed wrote other bytes"
"$PY" "$SRC/examples/make_pose_data.py" -o other.tar --count 60 --seed 7
! cmp -s pose.tar other.tar || fail "--seed 7 wrote the same bytes"
"$BIN/mgpu-shard" -q --val-fraction 0.1 -d s -o s/m.tsv pose.tar 2>err.txt || fail "shard: $(cat err.txt)"
"$BIN/mgpu-cache" -q -o c s/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"
"$BIN/mgpu-cache" -q --info c >info.txt
awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
	NR > 1 { print $c["split"], $c["samples"], $c["shape"], $c["dtype"], $c["target"] }' info.txt >got.txt
printf 'train 54 1x96x96 u8 keypoints 2x2\nval 6 1x96x96 u8 keypoints 2x2\n' >want.txt
cmp -s got.txt want.txt || fail "cache: $(cat got.txt)"
# every frame's keypoints, read back from the shards, are the script's
"$PY" - pose.tar s/m.tsv <<'PY' || fail "keypoints changed on the way"
import io, json, os, sys, tarfile
import numpy as np
from PIL import Image
src = tarfile.open(sys.argv[1])
m = {x.name: src.extractfile(x).read() for x in src.getmembers()}
frames = sorted(n[:-5] for n in m if n.endswith(".json"))
assert len(frames) == 60, len(frames)
want = {}
for k in frames:
    img = np.array(Image.open(io.BytesIO(m[k + ".png"])))
    kp = json.loads(m[k + ".json"])
    assert img.shape == (96, 96) and len(kp) == 2, (img.shape, kp)
    for x, y in kp:  # both parts on the canvas, the centre on the item
        assert 0 <= x < 96 and 0 <= y < 96, kp
    x, y = (int(round(v)) for v in kp[0])
    assert img[y - 3:y + 4, x - 3:x + 4].max() > 0, (k, kp)
    want[img.tobytes()] = kp
seen = 0
d = os.path.dirname(sys.argv[2])
for line in list(open(sys.argv[2]))[1:]:
    t = tarfile.open(os.path.join(d, line.split("\t")[1]))
    s = {x.name: t.extractfile(x).read() for x in t.getmembers()}
    for k in (n[:-5] for n in s if n.endswith(".json")):
        img = np.load(io.BytesIO(s[k + ".npy"]))
        got = np.array(json.loads(s[k + ".json"]), np.float32)
        assert (got == np.array(want[img[0].tobytes()], np.float32)).all(), k
        seen += 1
assert seen == 60, seen
PY
exit 0

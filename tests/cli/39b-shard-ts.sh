# UEA/UCR .ts time series: mgpu-shard reads a file, or a directory's
# NAME_TRAIN.ts with its NAME_TEST.ts as the test split; samples are
# float32 (C, L), classes the @classLabel names in sorted order, recorded
# in the manifest and the cache; the values equal a plain Python reading;
# bad files are one error naming the file and line, leaving nothing.
. tests/cli/lib.sh
need_numpy
S=$BIN/mgpu-shard C=$BIN/mgpu-cache
cp -r "$SRC/tests/data/ts" tiny
"$S" -q -o sh/manifest.tsv tiny || fail "shard the directory"
[ "$(grep '^#class' sh/manifest.tsv)" = "$(printf '#class\t0\trun\n#class\t1\tsit\n#class\t2\twalk')" ] ||
	fail "class names: $(cat sh/manifest.tsv)"
grep -q "^train	train-000000.tar	4	" sh/manifest.tsv && grep -q "^test	test-000000.tar	2	" \
	sh/manifest.tsv || fail "splits: $(cat sh/manifest.tsv)"
"$C" -q -o c sh/manifest.tsv >/dev/null || fail "cache"
"$C" --info c >info.tsv
grep -q "^train	4	2x3	f32	3	" info.tsv && grep -q "^test	2	2x3	f32	3	" info.tsv ||
	fail "cache info: $(cat info.tsv)"
# The shards hold what a plain reading of the files gives.
"$PY" - "$SRC/tests/data/ts" <<'PY' || fail "values differ from the .ts files"
import io, sys, tarfile, numpy as np
def read(path):
    cls, rows, data = None, [], False
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#%": continue
        if not data:
            w = line.split()
            if w[0].lower() == "@classlabel": cls = sorted(w[2:])
            data = w[0].lower() == "@data"
            continue
        *dims, lab = line.split(":")
        rows.append((np.array([[float(v) for v in d.split(",")] for d in dims], np.float32), cls.index(lab)))
    return rows
for split, name in (("train", "Tiny_TRAIN.ts"), ("test", "Tiny_TEST.ts")):
    want = read(f"{sys.argv[1]}/{name}")
    t = tarfile.open(f"sh/{split}-000000.tar")
    ms = t.getmembers()
    got = {}
    for a, b in zip(ms[0::2], ms[1::2]):
        got[int(a.name[:8])] = (np.load(io.BytesIO(t.extractfile(a).read())), int(t.extractfile(b).read()))
    assert len(got) == len(want), (split, len(got))
    for k, (x, y) in enumerate(want):
        gx, gy = got[k]
        assert gx.dtype == np.float32 and gx.shape == x.shape and (gx == x).all() and gy == y, (split, k, gx, x, gy, y)
PY
# mgpu-train reads the directory itself: the TEST file is its test split.
"$BIN/mgpu-train" -v --data tiny --model mlp:auto-4-auto --epochs 1 --batch-size 1 \
	--val-fraction 0.25 >direct.tsv 2>err.txt || fail "train on the directory: $(cat err.txt)"
grep -q "samples 2x3, 3 classes" err.txt || fail "direct: $(cat err.txt)"
awk -F '\t' '$1 == "summary" && $11 != "NA" { ok = 1 } END { exit !ok }' direct.tsv ||
	fail "no test loss from Tiny_TEST.ts: $(cat direct.tsv)"
# One file alone is a source too; mgpu-train takes the shape and classes.
"$S" -q --val-fraction 0.25 -o one/m.tsv tiny/Tiny_TRAIN.ts || fail "shard one file"
"$BIN/mgpu-train" -v --data one/m.tsv --model mlp:auto-4-auto --epochs 1 --batch-size 1 \
	>/dev/null 2>err.txt || fail "train: $(cat err.txt)"
grep -q "samples 2x3, 3 classes" err.txt || fail "trainer's view: $(cat err.txt)"
# Bad files: one line naming the file and line, exit 1, nothing written.
head -n 11 tiny/Tiny_TRAIN.ts >bad.ts
printf '1,2,3:4,5,6:walk\n1,2:3,4:run\n' >>bad.ts
expect 1 "'bad.ts': line 13: dimension 1 has 2 values, the first series 3 (unequal lengths" \
	"$S" -q -o b/m.tsv bad.ts
[ ! -e b ] || fail "a failed run left its directory"
head -n 11 tiny/Tiny_TRAIN.ts >miss.ts
printf '1,?,3:4,5,6:walk\n' >>miss.ts
expect 1 "'miss.ts': line 12: dimension 1, value 2 is missing ('?')" "$S" -q -o b/m.tsv miss.ts
head -c 200 tiny/Tiny_TRAIN.ts >cut.ts
expect 1 "'cut.ts': no @data line" "$S" -q -o b/m.tsv cut.ts
expect 1 "has its own test set" "$S" -q --test-fraction 0.1 -o b/m.tsv tiny
mkdir two && cp tiny/Tiny_TRAIN.ts two/A_TRAIN.ts && cp tiny/Tiny_TRAIN.ts two/B_TRAIN.ts
expect 1 "'two': holds more than one *_TRAIN.ts" "$S" -q -o b/m.tsv two
exit 0

# The real UEA BasicMotions set (6 channels x 100 steps, 4 activities, 40
# + 40 series) through mgpu-shard and mgpu-cache: its files come from
# `make data-basicmotions` (BUILD/data/BasicMotions) or are fetched here
# from the aeon wheel on PyPI; offline the test is skipped with the reason.
. tests/cli/lib.sh
need_numpy
bm=$(dirname "$BIN")/data/BasicMotions
if ! [ -s "$bm/BasicMotions_TRAIN.ts" ]; then
	bm=$T/bm
	sh "$SRC/mk/fetch-basicmotions.sh" "$bm" 2>fetch.txt ||
		{ echo "BasicMotions not available: $(cat fetch.txt)"; exit 77; }
fi
"$BIN/mgpu-shard" -q -o sh/m.tsv "$bm" || fail "shard BasicMotions"
[ "$(grep -c '^#class' sh/m.tsv)" = 4 ] && grep -q "^#class	0	Badminton$" sh/m.tsv &&
	grep -q "^#class	3	Walking$" sh/m.tsv || fail "classes: $(cat sh/m.tsv)"
"$BIN/mgpu-cache" -q -o c sh/m.tsv >/dev/null || fail "cache"
"$BIN/mgpu-cache" --info c >info.tsv
grep -q "^train	40	6x100	f32	4	" info.tsv && grep -q "^test	40	6x100	f32	4	" info.tsv ||
	fail "info: $(cat info.tsv)"
# Values and labels as numpy reads the file, series by series.
"$PY" - "$bm/BasicMotions_TEST.ts" <<'PY' || fail "values differ from the file"
import io, sys, tarfile, numpy as np
rows, data, cls = [], False, None
for line in open(sys.argv[1]):
    line = line.strip()
    if not line or line[0] == "#": continue
    if not data:
        w = line.split()
        if w[0] == "@classLabel": cls = sorted(w[2:])
        data = w[0] == "@data"
        continue
    *dims, lab = line.split(":")
    rows.append((np.array([np.array(d.split(","), dtype=np.float64) for d in dims]).astype(np.float32), cls.index(lab)))
t = tarfile.open("sh/test-000000.tar")
ms = t.getmembers()
assert len(ms) == 80 and len(rows) == 40
for a, b in zip(ms[0::2], ms[1::2]):
    x, y = rows[int(a.name[:8])]
    gx = np.load(io.BytesIO(t.extractfile(a).read()))
    assert gx.shape == (6, 100) and (gx == x).all() and int(t.extractfile(b).read()) == y
PY
exit 0

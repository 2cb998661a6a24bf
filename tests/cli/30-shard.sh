# mgpu-shard: the tool contract, seeded and stratified splits, per-rank
# balanced shards that GNU tar, bsdtar and Python's tarfile read, byte-identical
# reruns, and every bad input: one line naming the file, exit 1, nothing left.
. tests/cli/lib.sh
# A python3 first on PATH that lacks numpy (as pyenv's may) must not matter.
mkdir -p nonumpy
printf '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n' >nonumpy/python3
chmod +x nonumpy/python3
PATH=$PWD/nonumpy:$PATH need_numpy
PATH=$PWD/nonumpy:$PATH "$PY" -c 'import numpy' || fail "need_numpy chose '$PY', which lacks numpy"
need_numpy
S=$BIN/mgpu-shard
"$S" --help | grep -q "^usage: mgpu-shard" || fail "--help"
"$S" --version | grep -q "^mgpu-shard [0-9]" || fail "--version"
expect 2 "unknown or incomplete option '--frob'" "$S" --frob x
expect 2 "--shard-size: 'x' is not" "$S" --shard-size x d
expect 2 "--val-fraction: 1.5 is out of range" "$S" --val-fraction 1.5 d
expect 2 "no SOURCE given" "$S"
expect 2 "--val-fraction + --test-fraction must stay below 1" "$S" --val-fraction 0.6 --test-fraction 0.5 d
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$SRC/man/mgpu-shard.1" "$SRC/man/mgpu-formats.5" || fail "man lint"
fi

# A CSV of 4 classes (sizes 60, 30, 20, 10).
python3 - <<'PY'
import random
r = random.Random(1)
with open("d.csv", "w") as f:
    f.write("f0,f1,label,f2\n")
    for i, c in enumerate([0]*60 + [1]*30 + [2]*20 + [3]*10):
        f.write(f"{i},{r.random():.4f},{c},{c*2.5}\n")
PY
"$S" -q --seed 7 --val-fraction 0.2 --test-fraction 0.1 --stratify --shard-size 16 --ranks 3 \
	-o a/manifest.tsv d.csv
"$S" -q --seed 7 --val-fraction 0.2 --test-fraction 0.1 --stratify --shard-size 16 --ranks 3 \
	-o b/manifest.tsv d.csv
cmp a/manifest.tsv b/manifest.tsv || fail "manifests differ between identical runs"
for f in a/*.tar; do cmp "$f" "b/$(basename "$f")" || fail "$f differs between runs"; done
"$S" -q --seed 8 --val-fraction 0.2 --shard-size 16 -o c/manifest.tsv d.csv
cmp -s a/val-000000.tar c/val-000000.tar && fail "another seed gave the same val shard"
head -n 1 a/manifest.tsv | grep -qx "$(printf 'split\tpath\tsamples\tbytes\tsha256')" ||
	fail "manifest header"
"$PY" - a <<'PY' || fail "shard check (see above)"
import hashlib, io, os, sys, tarfile, numpy as np
d = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(f"{d}/manifest.tsv")][1:]
per = {}
for split, path, n, nbytes, sha in rows:
    data = open(f"{d}/{path}", "rb").read()
    assert len(data) == int(nbytes) and hashlib.sha256(data).hexdigest() == sha, path
    t = tarfile.open(f"{d}/{path}")
    ms = t.getmembers()
    assert all(m.mtime == 946684800 and m.uid == 0 and m.mode == 0o644 for m in ms)
    assert len(ms) == 2 * int(n), (path, len(ms))
    for a, b in zip(ms[0::2], ms[1::2]):
        assert a.name.endswith(".npy") and b.name == a.name[:-4] + ".cls"
        x = np.load(io.BytesIO(t.extractfile(a).read()))
        y = int(t.extractfile(b).read())
        assert x.dtype == np.float32 and x.shape == (3,) and x[2] == y * 2.5, (x, y)
        per.setdefault(split, []).append(y)
    per.setdefault(split + "_sizes", []).append(int(n))
for s in ("train", "val", "test"):
    sizes = per[s + "_sizes"]
    assert len(sizes) % 3 == 0 and max(sizes) - min(sizes) <= 1, (s, sizes)
want = {"val": 0.2, "test": 0.1}
for s, f in want.items():
    for c, size in enumerate([60, 30, 20, 10]):
        got = per[s].count(c)
        assert abs(got - f * size) <= 1, (s, c, got, f * size)
assert len(per["val"]) == 24 and len(per["test"]) == 12 and len(per["train"]) == 84
PY
tar -tf a/train-000000.tar | head -n 2 | grep -q '\.cls$' || fail "GNU tar listing"
if command -v bsdtar >/dev/null; then
	[ "$(bsdtar -tf a/train-000000.tar | wc -l)" = "$(tar -tf a/train-000000.tar | wc -l)" ] ||
		fail "bsdtar listing"
fi
mkdir x && (cd x && tar -xf ../a/val-000000.tar 2>../tarerr.txt) && [ ! -s tarerr.txt ] ||
	fail "tar -x warned: $(cat tarerr.txt)"

# A WebDataset tar made by Python's tarfile (PGM inputs, keys with dots and
# directories) is read correctly: shard it, then compare with what went in.
python3 - <<'PY'
import io, tarfile
with tarfile.open("py.tar", "w") as t:
    for i in range(10):
        img = b"P5\n3 2\n255\n" + bytes((i * 10 + j) % 256 for j in range(6))
        for name, data in ((f"dir.v1/s{i}.img.pgm", img), (f"dir.v1/s{i}.cls", str(i % 4).encode())):
            m = tarfile.TarInfo(name); m.size = len(data); t.addfile(m, io.BytesIO(data))
PY
"$S" -q --shard-size 100 -o p/manifest.tsv py.tar
"$PY" - <<'PY' || fail "python-made tar read wrongly"
import io, tarfile, numpy as np
t = tarfile.open("p/train-000000.tar")
ms = t.getmembers()
assert len(ms) == 20
for a, b in zip(ms[0::2], ms[1::2]):
    i = int(a.name[:8])
    x = np.load(io.BytesIO(t.extractfile(a).read()))
    assert x.dtype == np.uint8 and x.shape == (1, 2, 3), x.shape  # (C,H,W)
    assert list(x.ravel()) == [(i * 10 + j) % 256 for j in range(6)], (i, x)
    assert int(t.extractfile(b).read()) == i % 4
PY
# Also from stdin, gzip-compressed.
gzip -c py.tar | "$S" -q --shard-size 100 -o s/manifest.tsv - || fail "tar.gz on stdin"
cmp s/train-000000.tar p/train-000000.tar || fail "stdin gave other shards"

# Bad inputs: one line naming file and entry, exit 1, no shard directory left.
badtar() { # badtar NAME PYTHON-MEMBERS
	python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name, data in eval(sys.argv[2]):
        m = tarfile.TarInfo(name); m.size = len(data); t.addfile(m, io.BytesIO(data))
PY
}
npy='(b"\x93NUMPY\x01\x00v\x00" + b"{\x27descr\x27: \x27|u1\x27, \x27fortran_order\x27: False, \x27shape\x27: (4,), }".ljust(117) + b"\n")'
badtar nolabel.tar "[('a.npy', $npy + b'abcd')]"
expect 1 "'nolabel.tar': entry 'a': no .cls label" "$S" -o o1/m.tsv nolabel.tar
badtar word.tar "[('a.npy', $npy + b'abcd'), ('a.cls', b'cat')]"
expect 1 "'word.tar': entry 'a.cls': label 'cat' is not a decimal integer" "$S" -o o1/m.tsv word.tar
badtar range.tar "[('a.npy', $npy + b'abcd'), ('a.cls', b'300')]"
expect 1 "'range.tar': entry 'a.cls': label 300 out of range [0,256)" "$S" -o o1/m.tsv range.tar
badtar short.tar "[('a.npy', $npy + b'abc'), ('a.cls', b'1')]"
expect 1 "'short.tar': entry 'a.npy': truncated" "$S" -o o1/m.tsv short.tar
badtar shape.tar "[('a.npy', $npy + b'abcd'), ('a.cls', b'1'), ('b.npy', $npy.replace(b'(4,)', b'(2,)') + b'ab'), ('b.cls', b'1')]"
expect 1 "'shape.tar': entry 'b.npy': shape 2 differs from the first sample's 4" "$S" -o o1/m.tsv shape.tar
badtar huge.tar "[('a.npy', $npy.replace(b'(4,)', b'(9999999999999,9999999999)') + b'abcd'), ('a.cls', b'1')]"
expect 1 "'huge.tar': entry 'a.npy': npy header claims an absurd size" "$S" -o o1/m.tsv huge.tar
# Non-finite float features are refused, naming file and sample (or entry).
f4='(b"\x93NUMPY\x01\x00v\x00" + b"{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (2,), }".ljust(117) + b"\n")'
badtar nan.tar "[('a.npy', $f4 + b'\x00\x00\x80\x3f\x00\x00\xc0\x7f'), ('a.cls', b'1')]"
expect 1 "'nan.tar': entry 'a.npy': element 1 is nan; features must be finite" "$S" -o o1/m.tsv nan.tar
"$PY" - <<'PY'
import numpy as np
x = np.ones((5, 3), np.float32); x[3, 1] = np.nan
np.save("nan.npy", x)
x = np.ones((5, 3), np.float64); x[2, 0] = 1e300
np.save("big.npy", x)
np.save("lab.npy", np.arange(5, dtype=np.int64) % 2)
PY
expect 1 "'nan.npy': sample 3, element 1 is nan; features must be finite" \
	"$S" --labels lab.npy -o o1/m.tsv nan.npy
expect 1 "'big.npy': sample 2, element 0 is inf; features must be finite" \
	"$S" --labels lab.npy -o o1/m.tsv big.npy
head -c 3000 a/train-000000.tar >cut.tar
expect 1 "'cut.tar': entry '" "$S" -o o1/m.tsv cut.tar
printf 'f0,label\n1,2\nx,1\n' >bad.csv
expect 1 "'bad.csv': line 3: column 'f0': 'x' is not a number" "$S" -o o1/m.tsv bad.csv
expect 1 "'d.csv': line 1: no label column 'lbl'" "$S" --label-column lbl -o o1/m.tsv d.csv
printf 'label,f0,label\n1,2,3\n' >dup.csv
expect 1 "'dup.csv': line 1: columns 0 and 2 are both named 'label': which is the label?" \
	"$S" -o o1/m.tsv dup.csv
mkidx idx 50 10 4 3 truncate
expect 1 "idx/train-images-idx3-ubyte.gz" "$S" -o o1/m.tsv idx
expect 1 "'nothing.tar': cannot open" "$S" -o o1/m.tsv nothing.tar
[ ! -e o1 ] || fail "a failed run left o1/: $(ls o1)"
# SIGINT and SIGTERM stop a run (while loading or between shards): exit 130
# or 143, and no shard, manifest or directory of the run stays.
mkidx_big big 20000
interrupted INT 0.5 130 "$S" -q --shard-size 20 -o o2/m.tsv big
[ ! -e o2 ] || fail "SIGINT left o2/: $(ls o2 | head -3)"
mkdir o3
interrupted TERM 0.7 143 "$S" -q --shard-size 20 -o o3/m.tsv big
[ -z "$(ls -A o3)" ] || fail "SIGTERM left in o3/: $(ls -A o3 | head -3)"
rm -rf big o3
# A write error part way (a file size limit, its signal ignored: EFBIG)
# leaves nothing: no shard, no manifest temporary, no directory made.
(trap '' XFSZ; ulimit -f 20; exec "$S" -q --shard-size 16 -o w/deep/m.tsv d.csv) \
	>out.txt 2>err.txt && fail "a write error went unnoticed"
grep -q "write failed: File too large" err.txt || fail "write error: $(cat err.txt)"
[ ! -e w ] || fail "a write error left: $(find w)"
# The manifest to a full stdout: the same.
expect 1 "cannot write to standard output" sh -c "exec '$S' -q -d full d.csv >/dev/full"
[ "$(ls -d full* 2>/dev/null)" = "" ] || fail "stdout error left: $(ls -d full*)"
# A run killed part way (SIGXFSZ) leaves its temporary; the next run
# removes it, as the process that made it is gone.
mkdir k
(ulimit -f 20; exec "$S" -q --shard-size 16 -o k/set/m.tsv d.csv) 2>/dev/null &&
	fail "not killed by SIGXFSZ"
ls -d k/set.tmp.* >/dev/null 2>&1 || fail "the killed run left no temporary: $(ls -a k)"
"$S" -q --shard-size 16 -o k/set/m.tsv d.csv
[ "$(ls k)" = set ] || fail "stale temporaries stay: $(ls k)"

# Re-sharding into the same directory: an identical rerun changes nothing
# and says so; another set is refused (naming --force) and the old set
# stays; --force replaces the whole set, leaving no shard of the old one.
"$S" -q --shard-size 16 -o r/manifest.tsv d.csv
ino=$(stat -c %i r/manifest.tsv)
dead=$(sh -c 'echo $$')
touch "r/train-000000.tar.tmp.$dead" # as an older, killed version left it
"$S" --shard-size 16 -o r/manifest.tsv d.csv 2>err.txt
grep -q "'r' already holds this shard set" err.txt || fail "rerun: $(cat err.txt)"
[ "$(stat -c %i r/manifest.tsv)" = "$ino" ] || fail "an identical rerun rewrote the set"
[ ! -e "r/train-000000.tar.tmp.$dead" ] || fail "a dead run's temporary in r stays"
cp -r r r.saved
expect 1 "'r': holds another shard set; --force replaces it" \
	"$S" -q --shard-size 50 --seed 3 -o r/manifest.tsv d.csv
diff -r r r.saved >/dev/null || fail "a refused run changed r"
[ "$(ls -d r.tmp.* 2>/dev/null)" = "" ] || fail "a refused run left its temporary"
"$S" -q --force --shard-size 50 --seed 3 -o r/manifest.tsv d.csv
[ "$(ls r | wc -l)" = "$(($(wc -l <r/manifest.tsv)))" ] || fail "--force left old shards: $(ls r)"
cut -f 2 r/manifest.tsv | tail -n +2 | while read -r f; do [ -f "r/$f" ] || fail "no r/$f"; done
"$BIN/mgpu-cache" -q -o rc r/manifest.tsv >/dev/null || fail "the replaced set does not read"
mkdir f && touch f/notes.txt
expect 1 "'f': holds 'notes.txt', which is no part of a shard set" "$S" -q -d f d.csv
expect 1 "'.': shards need a directory of their own (-d DIR)" "$S" -q -o m.tsv d.csv
# -d apart from -o: the manifest names the shards by absolute path.
mkdir man && "$S" -q -d apart -o man/m.tsv d.csv
grep -q "	$PWD/apart/train-000000.tar	" man/m.tsv || fail "paths: $(cat man/m.tsv)"
"$BIN/mgpu-cache" -q -o ac man/m.tsv >/dev/null || fail "a manifest apart does not read"
# A long shard path goes into the manifest whole (not cut at a table cell).
deep=$PWD/$(printf 'd%.0s' $(seq 150))/shards
"$S" -q -d "$deep" -o man/deep.tsv d.csv
grep -q "	$deep/train-000000.tar	" man/deep.tsv || fail "long path cut: $(cat man/deep.tsv)"
"$BIN/mgpu-cache" -q -o dc man/deep.tsv >/dev/null || fail "a manifest of long paths does not read"
# A path a TSV line cannot hold is refused, not altered, and nothing stays.
expect 1 "a control character (tab, line end) cannot go in a manifest" \
	"$S" -q -d "tab	dir" -o man/tab.tsv d.csv
[ ! -e "tab	dir" ] && [ ! -e man/tab.tsv ] || fail "a refused path left $(ls)"
exit 0

# mgpu-shard --text: text files cut into samples of T+1 bytes (windows every
# T bytes, each file on its own, tails dropped) hold exactly the files' bytes
# at those offsets, under label 0, in the seeded split of any source; the
# same seed gives the same bytes; stdin works; mgpu-cache stores the samples
# unchanged (read back from a raw cache by its documented layout); and bad
# text or flags get one line naming the file, with nothing left on disk.
. tests/cli/lib.sh
S=$BIN/mgpu-shard C=$BIN/mgpu-cache

# Two texts: a.txt has every byte value (byte-level, not just ASCII) and a
# tail of 5 bytes at context 16; b.txt is exactly 3 windows (3*16+1 bytes).
python3 - <<'PY'
import random
r = random.Random(5)
a = bytes(range(256)) + b"".join(r.choice([b"the ", b"cat ", b"sat.\n", b"\x00\xff"])
                                 for _ in range(400))
a = a[:16 * 80 + 1 + 5]
open("a.txt", "wb").write(a)
open("b.txt", "wb").write(bytes(r.randrange(256) for _ in range(16 * 3 + 1)))
PY
shard() { "$S" -q --text --context 16 --val-fraction 0.2 --test-fraction 0.1 --shard-size 25 "$@"; }
shard --ranks 2 -o m/manifest.tsv a.txt b.txt

# check_shards DIR FILE...: the manifest's shards hold, over all splits, each
# window of the files exactly once (key = index over the files in order),
# byte for byte, as a uint8 .npy of shape (17,) with label "0".
check_shards() {
	python3 - "$@" <<'PY' || fail "shards of $1 (see above)"
import ast, collections, hashlib, sys, tarfile
d, files, T = sys.argv[1], sys.argv[2:], 16
want = []
for f in files:
    b = open(f, "rb").read()
    want += [b[k * T:k * T + T + 1] for k in range((len(b) - 1) // T)]
seen, per = {}, collections.Counter()
for line in list(open(f"{d}/manifest.tsv"))[1:]:
    split, path, n, nbytes, sha = line.rstrip("\n").split("\t")
    data = open(f"{d}/{path}", "rb").read()
    assert len(data) == int(nbytes) and hashlib.sha256(data).hexdigest() == sha, path
    ms = tarfile.open(f"{d}/{path}").getmembers()
    t = tarfile.open(f"{d}/{path}")
    assert len(ms) == 2 * int(n), path
    for a, c in zip(ms[0::2], ms[1::2]):
        npy = t.extractfile(a).read()
        hl = int.from_bytes(npy[8:10], "little")
        h = ast.literal_eval(npy[10:10 + hl].decode())
        assert h["descr"] == "|u1" and h["shape"] == (T + 1,), (a.name, h)
        key = int(a.name.split(".")[0])
        assert c.name == a.name[:-4] + ".cls" and t.extractfile(c).read() == b"0", c.name
        assert key not in seen, f"sample {key} twice"
        assert npy[10 + hl:] == want[key], f"{path}: sample {key} differs from the file"
        seen[key] = split
        per[split] += 1
assert len(seen) == len(want) == 80 + 3, (len(seen), len(want))
n = len(want)
assert per["val"] == round(0.2 * n) and per["test"] == round(0.1 * n), per
PY
}
check_shards m a.txt b.txt
[ "$(grep -c '^train' m/manifest.tsv)" = 4 ] || fail "--ranks 2: train shards not a multiple of 2"

# Same seed, same bytes; another seed, another split; the order of the files
# is the order of the samples.
shard -o m2/manifest.tsv a.txt b.txt
shard --ranks 2 -o m3/manifest.tsv a.txt b.txt
cmp m/manifest.tsv m3/manifest.tsv || fail "same seed: manifests differ"
for f in m/*.tar; do cmp "$f" "m3/${f#m/}" || fail "same seed: $f differs"; done
shard --seed 9 -o m4/manifest.tsv a.txt b.txt
check_shards m4 a.txt b.txt
cmp -s m2/val-000000.tar m4/val-000000.tar && fail "another seed gave the same val shard"
shard -o m5/manifest.tsv b.txt a.txt
check_shards m5 b.txt a.txt
# Standard input is a text like any file.
shard -o s1/manifest.tsv a.txt
shard -o s2/manifest.tsv - <a.txt
cmp s1/manifest.tsv s2/manifest.tsv || fail "text on stdin gave other shards than the file"

# The cache holds the shards' samples unchanged: a raw cache read by its
# documented layout gives each split's rows in the shards' order.
"$C" -q --raw -o rc m/manifest.tsv >/dev/null
python3 - m rc/mgpu.cache <<'PY' || fail "raw cache of text shards (see above)"
import struct, sys, tarfile
d, path = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
assert raw[:8] == b"MGPUCACH"
flags, dtype, ndim = struct.unpack_from("<III", raw, 16)
shape = struct.unpack_from("<4I", raw, 28)
classes, = struct.unpack_from("<I", raw, 44)
total, index = struct.unpack_from("<QQ", raw, 136)
assert flags == 1 and dtype == 1 and ndim == 1 and shape == (17, 0, 0, 0) and classes == 1, \
    (flags, dtype, shape, classes)
rows = {0: [], 1: [], 2: []}
for i in range(total):
    off, nbytes, r, first, split = struct.unpack_from("<QQQQI", raw, index + 48 * i)
    chunk = raw[off:off + nbytes]
    rows[split] += [chunk[j * 17:(j + 1) * 17] for j in range(r)]
    assert chunk[r * 17:r * 18] == bytes(r), "labels not 0"
want = {0: [], 1: [], 2: []}
for line in list(open(f"{d}/manifest.tsv"))[1:]:
    split, p = line.split("\t")[:2]
    t = tarfile.open(f"{d}/{p}")
    for m in t.getmembers()[0::2]:
        want[["train", "val", "test"].index(split)].append(t.extractfile(m).read()[-17:])
assert rows == want, "cache rows differ from the shards' samples"
PY
"$C" -q -o zc m/manifest.tsv >/dev/null
"$C" --info zc | awk -F '\t' 'NR > 1 && !($3 == 17 && $4 == "u8" && $5 == 1 && $9 == 0) { exit 1 }' ||
	fail "compressed cache of text: $("$C" --info zc)"
"$C" -q --verify zc >/dev/null || fail "--verify of the text cache"

# Errors: one line naming the file, exit 1 or 2, and no shard directory.
: >empty.txt
printf 'sixteen bytes!!!' >short.txt
mkdir adir
expect 1 "'empty.txt': empty, no text to cut into samples" shard -o e/manifest.tsv a.txt empty.txt
expect 1 "'short.txt': 16 bytes, shorter than one sample of 17 (context 16 + 1)" \
	shard -o e/manifest.tsv a.txt short.txt
expect 1 "'missing.txt': cannot open" shard -o e/manifest.tsv missing.txt
expect 1 "'adir'" shard -o e/manifest.tsv adir
expect 1 "'-': empty" shard -o e/manifest.tsv - <empty.txt
[ ! -e e ] || fail "a failed run left $(ls -R e)"
expect 2 "--text needs --context T" "$S" --text -o e/manifest.tsv a.txt
expect 2 "--context needs --text" "$S" --context 16 -o e/manifest.tsv a.txt
expect 2 "--text samples have no labels" "$S" --text --context 16 --labels l.npy a.txt
expect 2 "--text samples have no labels" "$S" --text --context 16 --label-column 0 a.txt
expect 2 "--context: 0 is out of range" "$S" --text --context 0 a.txt
expect 2 "--context: 'x' is not" "$S" --text --context x a.txt
[ ! -e e ] || fail "a refused run left $(ls -R e)"
exit 0

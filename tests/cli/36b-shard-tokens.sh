# mgpu-shard --tokens: an llm.c .bin (uint16, version 1), a raw nanoGPT
# uint16 .bin and a raw uint32 file (--token-bytes 4) become samples of T+1
# ids that hold exactly the files' ids at offsets k*T, as <u2/<u4 .npy under
# label 0; mgpu-cache keeps them u16/u32; a tiny gpt with a padded vocab
# trains on them (1 and 2 ranks) and samples ids below its vocab; ids at or
# above a vocab, byte data under a vocab above 256 and token data under an
# mlp get one line naming the file, the sample and the position.
. tests/cli/lib.sh
S=$BIN/mgpu-shard C=$BIN/mgpu-cache TR=$BIN/mgpu-train

python3 - <<'PY'
import array, random
r = random.Random(7)
ids = array.array("H", [(i * 7 + r.randrange(3)) % 300 for i in range(16 * 60 + 1 + 5)])
h = array.array("i", [0] * 256); h[0] = 20240520; h[1] = 1; h[2] = len(ids)
open("a.bin", "wb").write(h.tobytes() + ids.tobytes())
raw = array.array("H", [r.randrange(300) for _ in range(16 * 20 + 1)])
raw[5] = 299
open("n.bin", "wb").write(raw.tobytes())
open("w.bin", "wb").write(array.array("I", [r.randrange(70000) for _ in range(16 * 4 + 1)]).tobytes())
PY
"$S" -q --tokens --context 16 --val-fraction 0.1 --shard-size 25 -o m/manifest.tsv a.bin n.bin

# check_shards DIR DESCR FMT FILE...: every window of the files' ids once,
# id for id, as DESCR .npy of shape (17,) with label "0".
check_shards() {
	python3 - "$@" <<'PY' || fail "shards of $1 (see above)"
import array, ast, sys, tarfile
d, descr, fmt, files, T = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:], 16
want = []
for f in files:
    b = open(f, "rb").read()
    if b[:4] == (20240520).to_bytes(4, "little"):
        b = b[1024:]
    ids = array.array(fmt, b)
    want += [list(ids[k * T:k * T + T + 1]) for k in range((len(ids) - 1) // T)]
seen = set()
for line in list(open(f"{d}/manifest.tsv"))[1:]:
    split, path, n = line.split("\t")[:3]
    t = tarfile.open(f"{d}/{path}")
    ms = t.getmembers()
    for a, c in zip(ms[0::2], ms[1::2]):
        npy = t.extractfile(a).read()
        hl = int.from_bytes(npy[8:10], "little")
        h = ast.literal_eval(npy[10:10 + hl].decode())
        assert h["descr"] == descr and h["shape"] == (T + 1,), (a.name, h)
        key = int(a.name.split(".")[0])
        assert t.extractfile(c).read() == b"0", c.name
        assert list(array.array(fmt, npy[10 + hl:])) == want[key], f"sample {key} differs"
        seen.add(key)
assert len(seen) == len(want), (len(seen), len(want))
PY
}
check_shards m "<u2" H a.bin n.bin
"$S" -q --tokens --token-bytes 4 --context 16 -o w/manifest.tsv w.bin
check_shards w "<u4" I w.bin

"$C" -q -o c m/manifest.tsv >/dev/null
"$C" --info c >info.tsv
grep -q "^train	[0-9]*	17	u16	" info.tsv || fail "cache is not u16 rows of 17: $(cat info.tsv)"
"$C" -q -o cw w/manifest.tsv >/dev/null
"$C" --info cw | grep -q "	u32	" || fail "cache of 4-byte ids is not u32"

# a tiny gpt over the 300 ids, its vocab padded to 320; 1 and 2 ranks
M=gpt:layers=1,heads=2,dim=16,ctx=16,vocab=300,padded_vocab=320
"$TR" -q --data c --model $M --max-steps 4 --batch-size 4 --sample 8 --prompt "7 14" >t1.tsv
grep -q "^summary" t1.tsv || fail "no summary: $(cat t1.tsv)"
tail -n 1 t1.tsv | python3 -c '
import sys
ids = [int(v) for v in sys.stdin.read().split()]
assert ids[:2] == [7, 14] and len(ids) == 10 and all(0 <= i < 300 for i in ids), ids' ||
	fail "sampled ids: $(tail -n 1 t1.tsv)"
"$TR" -q --data m/manifest.tsv --model $M --max-steps 2 --global-batch-size 8 \
	--cpu-ranks 2 >t2.tsv || fail "2 ranks on token data"
grep -q "^summary" t2.tsv || fail "2 ranks: no summary"
"$TR" -q --data cw --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=70000 --max-steps 1 \
	--batch-size 2 >/dev/null || fail "u32 ids under vocab 70000"

# errors: one line naming the file and where
expect 1 "'n.bin': token 299 at position 5 is not below vocab 299" \
	"$S" --tokens --vocab 299 --context 16 -o v/manifest.tsv n.bin
[ ! -e v ] || fail "a refused shard run left v/"
expect 1 "'m/manifest.tsv': train sample" \
	"$TR" --data m/manifest.tsv --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=290 --max-steps 1 \
	--batch-size 2
grep -q "position [0-9]*: token 29[0-9] is not below vocab 290" err.txt ||
	fail "no position in: $(cat err.txt)"
expect 1 "token ids (u16) need a gpt model" \
	"$TR" --data c --model mlp:17-8-300 --max-steps 1 --batch-size 2
printf 'the cat sat on the mat, the cat sat on the mat, again and again\n' >t.txt
"$S" -q --text --context 16 -o bt/manifest.tsv t.txt
expect 1 "'bt/manifest.tsv': holds bytes (token ids 0 to 255): a gpt on it has a vocab of at most 256, not 300" \
	"$TR" --data bt/manifest.tsv --model $M --max-steps 1 --batch-size 1
expect 2 "--token-bytes and --vocab need --tokens" "$S" --token-bytes 4 --context 4 a.bin
expect 2 "--text and --tokens exclude each other" "$S" --text --tokens --context 4 a.bin
expect 2 "--tokens needs --context T" "$S" --tokens a.bin
expect 2 "3 is not a width" "$S" --tokens --token-bytes 3 --context 4 a.bin
expect 1 "'a.bin': llm.c token file version 1 holds 2-byte ids, not --token-bytes 4" \
	"$S" --tokens --token-bytes 4 --context 4 -o x/manifest.tsv a.bin
expect 1 "the samples are u16 token ids, stored as they are" "$C" --normalize -o cn m/manifest.tsv
exit 0

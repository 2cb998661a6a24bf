# mgpu-shard --text --bpe N: the merges are learned on the training split
# only (every merge's bytes occur in the training text, though each window
# here repeats a word no other window has), the tokenizer goes in place
# with the shards (bpe.txt), every sample is T+1 ids whose bytes are the
# text's words, and a rerun writes the same set; mgpu-train samples
# text through --tokenizer; bad flags are refused.
. tests/cli/lib.sh
S=$BIN/mgpu-shard C=$BIN/mgpu-cache TR=$BIN/mgpu-train

python3 - <<'PY'
import random
r = random.Random(11)
seen, out = set(), []
while len(out) < 160:
    w = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3))
    if w not in seen:
        seen.add(w)
        out.append((w + " ") * 8)
open("t.txt", "w").write("".join(out) + "end")
PY
"$S" -q --text --bpe 200 --context 16 --val-fraction 0.2 --test-fraction 0.1 -o b/manifest.tsv t.txt
[ -s b/bpe.txt ] || fail "no bpe.txt beside the shards"
head -n 1 b/bpe.txt | grep -q '^mgpu-bpe 1 [0-9]*$' || fail "bpe.txt header: $(head -n 1 b/bpe.txt)"
python3 - <<'PY' || fail "bpe shards (see above)"
import ast, array, tarfile
T = 16
lines = open("b/bpe.txt").read().split("\n")
n = int(lines[0].split()[2])
tok = {i: bytes([i]) for i in range(256)}
for i in range(n):
    a, b = map(int, lines[1 + i].split())
    assert a < 256 + i and b < 256 + i, (i, a, b)
    tok[256 + i] = tok[a] + tok[b]
text = open("t.txt", "rb").read()
words = set(text.split())
dec = {}
for line in list(open("b/manifest.tsv"))[1:]:
    split, path = line.split("\t")[:2]
    t = tarfile.open("b/" + path)
    for m in t.getmembers():
        if not m.name.endswith(".npy"):
            continue
        npy = t.extractfile(m).read()
        hl = int.from_bytes(npy[8:10], "little")
        h = ast.literal_eval(npy[10:10 + hl].decode())
        assert h["descr"] == "<u2" and h["shape"] == (T + 1,), h
        ids = array.array("H", npy[10 + hl:])
        piece = b"".join(tok[i] for i in ids)
        # a split's windows join up where they were consecutive: whole words
        # inside a sample are the text's words
        assert set(piece.split()[1:-1]) <= words, f"{split} {m.name}: {piece!r}"
        dec.setdefault(split, []).append(piece)
train = b"|".join(dec["train"])
assert dec.get("val") and dec.get("test"), dec.keys()
for i in range(n):
    s = tok[256 + i]
    assert s in train, f"merge {i} {s!r} is not in the training text: learned elsewhere"
# a merge on a word of the validation windows only would have failed above;
# make sure there were such words to tempt it
val_words = {w for p in dec["val"] for w in p.split()}
train_words = {w for p in dec["train"] for w in p.split()}
assert val_words - train_words, "no validation-only word: the check proves nothing"
assert n > 50, n
PY
cp b/bpe.txt first.txt
"$S" -q --text --bpe 200 --context 16 --val-fraction 0.2 --test-fraction 0.1 -o b/manifest.tsv \
	t.txt 2>err.txt
cmp -s b/bpe.txt first.txt || fail "a rerun learned other merges"
V=$((256 + $(head -n 1 b/bpe.txt | cut -d' ' -f3)))

"$C" -q -o c b/manifest.tsv >/dev/null
"$TR" -q --data c --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=$V --max-steps 3 \
	--batch-size 4 --sample 20 --prompt "abc " --tokenizer b/bpe.txt >s.tsv
tail -n 1 s.tsv | grep -q '^abc ' || fail "sample is not text after its prompt: $(tail -n 1 s.tsv)"
# a tokenizer with more tokens than the model has
{ echo "mgpu-bpe 1 $((V - 256 + 2))"; tail -n +2 b/bpe.txt; echo "97 97"; echo "98 98"; } >big.txt
if "$TR" -q --data c --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=$V --max-steps 1 \
	--batch-size 4 --sample 5 --tokenizer big.txt >/dev/null 2>err.txt; then
	fail "a tokenizer larger than the model sampled"
fi
grep -q "a tokenizer of $((V + 2)) tokens, the model's vocab is $V" err.txt ||
	fail "tokenizer too large: $(cat err.txt)"
expect 2 "--bpe needs --text" "$S" --bpe 10 --tokens --context 4 t.txt
# bits per byte through the tokenizer: nats per token / ln 2 / bytes per token
"$TR" -q --data c --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=$V --max-steps 2 \
	--batch-size 4 --tokenizer b/bpe.txt >bpb.tsv
python3 - <<'PY' || fail "bpb through --tokenizer: $(cat bpb.tsv)"
import array, ast, csv, math, tarfile
lines = open("b/bpe.txt").read().split("\n")
tok = {i: bytes([i]) for i in range(256)}
for i in range(int(lines[0].split()[2])):
    a, b = map(int, lines[1 + i].split())
    tok[256 + i] = tok[a] + tok[b]
nbytes = ntok = 0
for line in list(open("b/manifest.tsv"))[1:]:
    split, path = line.split("\t")[:2]
    if split != "val":
        continue
    t = tarfile.open("b/" + path)
    for m in t.getmembers():
        if m.name.endswith(".npy"):
            d = t.extractfile(m).read()
            hl = int.from_bytes(d[8:10], "little")
            ids = array.array("H", d[10 + hl:])[1:]
            nbytes += sum(len(tok[i]) for i in ids)
            ntok += len(ids)
r = [r for r in csv.DictReader(open("bpb.tsv"), delimiter="\t") if r["kind"] == "summary"][0]
want = float(r["val_loss"]) / math.log(2) / (nbytes / ntok)
assert abs(float(r["val_bpb"]) - want) < 1e-4 * want, (r["val_bpb"], want)
assert nbytes / ntok > 1.5, nbytes / ntok
PY
"$S" -q --text --context 16 -o bytes/manifest.tsv t.txt
if "$TR" -q --data bytes/manifest.tsv --model gpt:layers=1,heads=2,dim=16,ctx=16 \
	--max-steps 1 --batch-size 2 --sample 5 --tokenizer b/bpe.txt >/dev/null 2>err.txt; then
	fail "--tokenizer on byte data sampled"
fi
grep -q -- "--tokenizer: the data are bytes" err.txt || fail "byte data: $(cat err.txt)"

# GPT-2's tokenizer from its files (the fixture of test_gpt2tok): a text of
# one fixture sentence repeated encodes to the ids tiktoken gave it
G=$SRC/tests/data/gpt2tok
python3 - "$G" <<'PY'
import sys
line = open(sys.argv[1] + "/cases.tsv").read().split("\n")[1]
text = bytes.fromhex(line.split("\t")[0]).decode()
open("fox.txt", "w").write((text + "\n") * 40)
PY
"$S" -q --text --tokenizer "$G" --context 16 -o g/manifest.tsv fox.txt
[ ! -e g/bpe.txt ] || fail "--tokenizer wrote a bpe.txt"
python3 - "$G" <<'PY' || fail "GPT-2 token shards (see above)"
import ast, array, sys, tarfile
line = open(sys.argv[1] + "/cases.tsv").read().split("\n")[1]
want = [int(v) for v in line.split("\t")[1].split()]
t = tarfile.open("g/train-000000.tar")
ids = []
for m in sorted(t.getmembers(), key=lambda m: m.name):
    if m.name.endswith(".npy"):
        npy = t.extractfile(m).read()
        hl = int.from_bytes(npy[8:10], "little")
        ids.append(list(array.array("H", npy[10 + hl:])))
assert ids, "no samples"
# each sentence is its fixture ids, then the line break (id 198)
period = want + [198]
for row in ids:
    s = " ".join(map(str, row[:-1]))
    assert s in " ".join(map(str, period * 4)), row
PY
# the same tokenizer as a tiktoken ranks file (base64 bytes, rank = id),
# written here from encoder.json, makes the same shards
python3 - "$G" <<'PY'
import base64, json, sys
u = [c for c in range(256) if chr(c).isprintable() and chr(c) != " "]
cs = u + [256 + n for n in range(256 - len(u))]
dec = dict(zip(map(chr, cs), u + [b for b in range(256) if b not in u]))
enc = json.load(open(sys.argv[1] + "/encoder.json", encoding="utf-8"))
with open("fix.tiktoken", "w") as f:
    for tok, i in sorted(enc.items(), key=lambda kv: kv[1]):
        if tok != "<|endoftext|>":
            f.write("%s %d\n" % (base64.b64encode(bytes(dec[c] for c in tok)).decode(), i))
PY
"$S" -q --text --tokenizer fix.tiktoken --context 16 -o r/manifest.tsv fox.txt
for f in g/*.tar; do
	cmp -s "$f" "r/${f#g/}" || fail "tiktoken ranks: r/${f#g/} differs from $f"
done
"$C" -q -o gc g/manifest.tsv >/dev/null
"$TR" -q --data gc --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=303 --max-steps 2 \
	--batch-size 4 --sample 5 --prompt "The quick" --tokenizer "$G" >gs.tsv
tail -n 1 gs.tsv | grep -q '^The quick' || fail "GPT-2 sample: $(tail -n 1 gs.tsv)"
expect 2 "--tokenizer needs --text" "$S" --tokenizer "$G" --tokens --context 4 t.txt
expect 2 "--bpe learns a tokenizer, --tokenizer reads one" \
	"$S" --text --bpe 5 --tokenizer "$G" --context 4 t.txt
printf 'caf\351\n' >latin1.txt
expect 1 "text is not UTF-8 at byte 3" "$S" --text --tokenizer "$G" --context 2 \
	-o l/manifest.tsv latin1.txt
exit 0

# A gpt and the bytes it reads and writes (issue 19): --json sample records
# stay valid JSON whatever bytes are drawn (bytes 0x80 and above escaped as
# \u0080..\u00ff, read back with .encode("latin-1")); a vocab above 256 on
# byte data is refused naming the file (it trained, then printed garbage);
# a float32 cache (--dtype f32, --normalize) is refused naming the file
# and the fix; byte samples gather no feature statistics for a gpt (its
# checkpoint records the identity norm) and a checkpoint that recorded
# some (older builds) still resumes.
. tests/cli/lib.sh
text_idx d 400 32 17 5
M=$BIN/mgpu-train

# a nearly uniform draw over 256 byte values: most samples hold bytes >= 0x80
"$M" --data d --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=256 --batch-size 16 \
	--max-steps 2 -q --json --sample 200 --temperature 100 \
	--prompt "$(printf 'caf\303\251 ')" >run.jsonl
python3 - run.jsonl <<'PY' || fail "--json sample: $(tail -c 600 run.jsonl)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1], "rb")]
s = recs[-1]
assert s["kind"] == "sample", s
text = s["text"].encode("latin-1")
assert len(text) == 200, len(text)
assert any(b >= 0x80 for b in text), text
assert s["prompt"].encode("latin-1") == "café ".encode(), s["prompt"]
PY
grep -q '\\u00' run.jsonl || fail "no escaped byte in the sample"

expect 1 "'d': holds bytes (token ids 0 to 255): a gpt on it has a vocab of at most 256, not 300" \
	"$M" --data d --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=300 --max-steps 1 -q

# the text as shards, then a float32 cache of them
python3 -c 'import sys; sys.stdout.write("the quick brown fox. " * 200)' >t.txt
"$BIN/mgpu-shard" -q --text --context 16 -o sh/m.tsv t.txt
"$BIN/mgpu-cache" -q --dtype f32 -o cf sh/m.tsv >/dev/null
expect 1 "'cf': holds float32 features, but a gpt reads byte tokens: build the cache with --dtype u8 and without --normalize" \
	"$M" --data cf --model gpt:layers=1,heads=2,dim=16,ctx=16 --max-steps 1 -q
# bytes are token ids to a gpt: no statistics are computed for them (issue
# 20: that decoded every chunk of the training split for nothing)
"$M" --data d --model gpt:layers=1,heads=2,dim=16,ctx=16 --batch-size 16 --max-steps 2 -q \
	--save-dir ck >/dev/null
st=ck/$(cat ck/latest)/state.json
grep -q '"norm_scale": 1,' "$st" && grep -q '"norm_shift": 0,' "$st" ||
	fail "a gpt's checkpoint records feature statistics: $(grep norm_ "$st")"
# what older builds recorded for the bytes is no difference in the data
sed -i 's/"norm_scale": 1,/"norm_scale": 0.031635887920856476,/' "$st"
"$M" --data d --model gpt:layers=1,heads=2,dim=16,ctx=16 --batch-size 16 --max-steps 4 -q \
	--save-dir ck --resume "${st%/state.json}" >/dev/null ||
	fail "a gpt checkpoint with feature statistics does not resume"
[ "$(cat ck/latest)" = step-00000004 ] || fail "resumed to $(cat ck/latest)"
exit 0

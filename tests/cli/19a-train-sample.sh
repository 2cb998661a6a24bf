# mgpu-train --sample N --prompt TEXT [--temperature X]: a gpt trained on a
# repeating text continues a prompt with that text (greedy), the same seed
# gives the same draws, a resume at the last step only samples, --json makes
# the sample a record, and the options are refused where they mean nothing.
. tests/cli/lib.sh
# Windows of a text repeating one phrase (period 21), as 1 x 17 IDX "images".
text_idx d 1600 32 17 5 "the quick brown fox. " 400
model=gpt:layers=1,heads=2,dim=32,ctx=16,vocab=128
run() { "$BIN/mgpu-train" --data d --model $model --optimizer adamw --lr 0.02 \
	--warmup-steps 5 --batch-size 32 --log-every 50 -q "$@"; }

# Greedy: the continuation is the phrase, well past the 16-byte context.
want="brown fox. the quick brown fox. the quick brown fox. "
run --epochs 3 --save-dir ck --sample ${#want} --prompt "the quick " >train.tsv
tail -n 1 train.tsv >sample.txt
[ "$(cat sample.txt)" = "the quick $want" ] ||
	fail "greedy sample: '$(cat sample.txt)', want 'the quick $want'"
grep -q '^summary	' train.tsv || fail "no summary before the sample: $(cat train.tsv)"
[ "$(grep -c 'quick' train.tsv)" = 1 ] || fail "the sample is not printed once"

# A resume at the last step trains nothing and samples from the checkpoint:
# the same text; with -o the metrics go to the file and only the text out.
run --resume ck --sample ${#want} --prompt "the quick " -o m.tsv >resumed.txt
cmp sample.txt resumed.txt || fail "resumed sample: '$(cat resumed.txt)'"
grep -q '^summary	' m.tsv || fail "-o m.tsv lacks the summary"

# Drawn samples: the same seed gives the same text, and a high temperature
# strays from the greedy one. An empty prompt starts at a line break.
run --resume ck --sample 60 --temperature 1 -o /dev/null >t1.txt
run --resume ck --sample 60 --temperature 1 -o /dev/null >t2.txt
cmp t1.txt t2.txt || fail "same seed, other text: '$(cat t1.txt)' vs '$(cat t2.txt)'"
[ "$(wc -c <t1.txt)" = 61 ] || fail "--sample 60 printed $(wc -c <t1.txt) bytes"
run --resume ck --sample 60 --temperature 5 --prompt "the quick " -o /dev/null >hot.txt
! cmp -s hot.txt sample.txt || fail "temperature 5 drew the greedy text"

# A vocabulary too small for a line break (bytes 0..7): an empty prompt
# starts at byte 0 and the sample stays inside the vocabulary.
text_idx small 64 8 9 3 "$(printf '\001\002\003\004\005\006\007')" 40
"$BIN/mgpu-train" --data small --model gpt:layers=1,heads=1,dim=8,ctx=8,vocab=8 \
	--batch-size 8 --max-steps 2 -q --sample 5 -o /dev/null >small.txt 2>small.err ||
	fail "vocab 8, no prompt: $(cat small.err)"
[ "$(wc -c <small.txt)" = 6 ] || fail "vocab 8: $(wc -c <small.txt) bytes"

# --json: the sample is one more record, a JSON object.
run --resume ck --sample 20 --prompt "the quick " --json >s.json
tail -n 1 s.json | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
assert r["kind"] == "sample" and r["prompt"] == "the quick ", r
assert r["text"] == "brown fox. the quick", r' || fail "json sample: $(tail -n 1 s.json)"

# 2 CPU ranks: rank 0 alone prints the sample.
run --max-steps 5 --batch-size 16 --cpu-ranks 2 --sample 8 --prompt "the " >ddp.tsv
[ "$(grep -c '^the ' ddp.tsv)" = 1 ] || fail "2 ranks: $(cat ddp.tsv)"

# Refused: an mlp, --prompt or --temperature alone, a prompt byte past vocab.
expect 2 "--sample needs a gpt model" "$BIN/mgpu-train" --data d --model mlp:17-4-2 \
	--sample 5
expect 2 "--prompt needs --sample N" "$BIN/mgpu-train" --data d --model $model --prompt x
expect 2 "--temperature needs --sample N" "$BIN/mgpu-train" --data d --model $model \
	--temperature 1
expect 2 "--prompt: byte 200 at position 1 is not below the model's vocab 128" \
	"$BIN/mgpu-train" --data d --model $model --sample 5 --prompt "$(printf 'a\310')"
expect 2 "--temperature" "$BIN/mgpu-train" --data d --model $model --sample 5 \
	--temperature -1
exit 0

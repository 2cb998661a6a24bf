# Text through the whole pipeline: mgpu-shard --text, mgpu-cache, mgpu-train
# with a gpt. The cache serves the shards' bytes (training on either gives
# the same losses to the bit), the model learns the text, and the *_bpb
# columns are the nats-per-byte losses over ln 2 for a gpt and NA for an mlp.
. tests/cli/lib.sh
# A text with structure a tiny model picks up in two epochs.
python3 - <<'PY'
import random
r = random.Random(2)
words = ["the ", "cat ", "sat ", "on ", "a ", "mat. ", "dog ", "ran.\n"]
open("t.txt", "w").write("".join(r.choice(words) for _ in range(3000)))
PY
"$BIN/mgpu-shard" -q --text --context 16 --val-fraction 0.1 --test-fraction 0.05 \
	--shard-size 200 -o lm/manifest.tsv t.txt
"$BIN/mgpu-cache" -q -o lm/cache lm/manifest.tsv >/dev/null
train() {
	"$BIN/mgpu-train" -q --model gpt:layers=1,heads=2,dim=32,ctx=16 --optimizer adamw \
		--lr 1e-2 --warmup-steps 5 --batch-size 16 --epochs 3 --log-every 20 "$@"
}
# losses FILE: the columns that do not depend on timing.
losses() {
	awk -F '\t' 'function v(n) { return n in c ? $c[n] : "none" }
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
	{ print $1, v("step"), v("loss"), v("val_loss"), v("val_acc"), v("test_loss"),
		v("test_acc"), v("bpb"), v("val_bpb"), v("test_bpb") }' "$1"
}
train --data lm/cache >cache.tsv
train --data lm/manifest.tsv >shards.tsv
losses cache.tsv >a.txt
losses shards.tsv >b.txt
[ "$(wc -l <a.txt)" -gt 5 ] && cmp a.txt b.txt >/dev/null ||
	fail "the cache and the shards trained differently: $(diff a.txt b.txt | head -4)"

# Named columns; bpb = loss / ln 2 (to the 6 digits printed) on every row
# that has a loss, and it learned: the words' unigram entropy is about 3.5
# bits per byte, what the model knows after 3 epochs about 1.4.
awk -F '\t' '
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
function same(nats, bits) { return nats == "NA" ? bits == "NA" : bits != "NA" &&
	(bits - nats / log(2)) ^ 2 < (2e-5 * bits) ^ 2 }
$1 == "step" && !same($c["loss"], $c["bpb"]) { print "step", $0; bad = 1 }
($1 == "eval" || $1 == "summary") && !same($c["val_loss"], $c["val_bpb"]) { print "val", $0; bad = 1 }
$1 == "summary" { if (!same($c["test_loss"], $c["test_bpb"]) || $c["test_bpb"] == "NA") bad = 1
	if (!($c["test_bpb"] < 2.5)) { print "did not learn: test_bpb", $c["test_bpb"]; bad = 1 }
	seen = 1 }
END { exit bad || !seen }' cache.tsv || fail "bits per byte columns: $(cat cache.tsv)"

# An mlp's classes are no bytes: its bpb columns stay NA.
"$BIN/mgpu-train" -q --data lm/cache --model mlp:17-8-2 --epochs 1 --json >mlp.json
grep -q '"val_loss"' mlp.json || fail "mlp run: $(cat mlp.json)"
! grep -q '_bpb\|"bpb"' mlp.json || fail "an mlp reported bits per byte: $(grep bpb mlp.json)"
exit 0

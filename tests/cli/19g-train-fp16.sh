# mgpu-train --dtype fp16: IEEE half-precision products with fp32
# accumulation and dynamic loss scaling as torch.cuda.amp.GradScaler.
# An overflow on one rank (MGPU_TEST_OVERFLOW=RANK:STEP makes that rank's
# gradient infinite at that step) skips the step on every rank alike and
# halves the scale, in every sync strategy, matching 1 rank overflowing
# at the same step; a scale too large backs off step by step; clean steps
# grow it; the checkpoint keeps the scaler and a resume is bit-identical;
# over 200 steps fp16 tracks fp32 on an MLP and a gpt.
. tests/cli/lib.sh
noisy_idx nd 4000 400
TR=$BIN/mgpu-train
# column number of a name in a TSV's header
col() { head -1 "$1" | tr '\t' '\n' | grep -nx "$2" | cut -d: -f1; }
# STEP SCALE SKIPPED of every step record
scaler() { awk -F '\t' -v s="$(col "$1" loss_scale)" -v k="$(col "$1" skipped_steps)" \
	'$1 == "step" { print $2, $s, $k }' "$1"; }
# the summary's val_loss val_acc test_loss test_acc
metrics() { awk -F '\t' '$1 == "summary" { print $9, $10, $11, $12 }' "$1"; }
run() { "$TR" --data nd --model mlp:64-32-4 --epochs 1 --max-steps 12 --batch-size 16 --lr 0.05 \
	--log-every 1 --dtype fp16 -q "$@"; }

# An overflow of rank 1 at step 4 (0-based): every rank skips the 5th
# update and the scale halves; the same as 1 rank overflowing there.
MGPU_TEST_OVERFLOW=0:4 run --batch-size 32 >one.tsv || fail "1 rank"
run --batch-size 32 >clean.tsv || fail "no overflow"
[ "$(scaler one.tsv | sed -n '4p;5p;12p' | tr '\n' ' ')" = "4 65536 0 5 32768 1 12 32768 1 " ] ||
	fail "1 rank: step scale skipped: $(scaler one.tsv | tr '\n' ' ')"
[ "$(scaler clean.tsv | sed -n 12p)" = "12 65536 0" ] || fail "clean run: $(scaler clean.tsv | tail -1)"
[ "$(metrics one.tsv)" != "$(metrics clean.tsv)" ] || fail "skipping a step changed nothing"
for v in "0 ddp" "0 dp" "1 ddp"; do
	set -- $v
	MGPU_SYNC_STAGED=$1 MGPU_TEST_OVERFLOW=1:4 run --cpu-ranks 2 --mode $2 >two.tsv ||
		fail "2 ranks, mode $2, staged $1"
	scaler two.tsv | cmp -s - <(scaler one.tsv) ||
		fail "mode $2 (staged $1): $(scaler two.tsv | tr '\n' ' ')"
	# with staged sync each rank holds its own weights, and the evaluation
	# splits the rows over the ranks: a rank that updated would show
	python3 - one.tsv two.tsv <<'PY' || fail "mode $2 (staged $1): not the 1-rank run's weights"
import sys
def m(p):
    r = [l.split("\t") for l in open(p) if l.startswith("summary")][0]
    return [float(r[i]) for i in (8, 9, 10, 11)]
a, b = m(sys.argv[1]), m(sys.argv[2])
assert all(abs(x - y) <= 1e-5 * max(1.0, abs(x)) for x, y in zip(a, b)), (a, b)
PY
done

# A scale too large overflows step after step, halving until it fits; the
# model then trains.
run --loss-scale 1e12 --max-steps 80 >big.tsv || fail "--loss-scale 1e12"
python3 - big.tsv <<'PY' || fail "backoff: $(scaler big.tsv | tr '\n' ' ')"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
h = rows[0]
s, k, loss = h.index("loss_scale"), h.index("skipped_steps"), h.index("loss")
steps = [r for r in rows if r[0] == "step"]
scales = [float(r[s]) for r in steps]
skipped = [int(r[k]) for r in steps]
n = skipped[-1]
assert 5 <= n <= 25, n
for i, (sc, sk) in enumerate(zip(scales, skipped)):
    assert abs(sc - 1e12 * 0.5 ** sk) <= 1e-5 * sc, (i, sc, sk)  # 6 digits printed
assert skipped[n - 1] == n and skipped[n] == n, skipped  # the first n steps, then none
first = sum(float(r[loss]) for r in steps[:n]) / n  # the weights of step 0
last = sum(float(r[loss]) for r in steps[-10:]) / 10
assert last < 0.95 * first, (first, last)
PY
# clean steps grow it: every 4th by 2 here; backoff and growth settable
run --loss-scale 1024 --loss-scale-interval 4 --loss-scale-growth 3 >grow.tsv || fail "growth"
[ "$(scaler grow.tsv | sed -n '3p;4p;8p;12p' | tr '\n' ' ')" = "3 1024 0 4 3072 0 8 9216 0 12 27648 0 " ] ||
	fail "growth: $(scaler grow.tsv | tr '\n' ' ')"
MGPU_TEST_OVERFLOW=0:1 run --loss-scale-backoff 0.25 --max-steps 3 >back.tsv
[ "$(scaler back.tsv | sed -n 2p)" = "2 16384 1" ] || fail "backoff 0.25: $(scaler back.tsv | tr '\n' ' ')"

# The checkpoint keeps the scaler; the resumed run is the uninterrupted one.
MGPU_TEST_OVERFLOW=0:2 run --loss-scale-interval 3 --max-steps 20 --save-every 8 --keep 0 \
	--save-dir ck >full.tsv
# (halved at step 3, grown back at 6, 2 clean steps since)
st=ck/step-00000008/state.json
grep -q '"loss_scale": 65536,' "$st" && grep -q '"loss_scale_clean": 2,' "$st" &&
	grep -q '"skipped_steps": 1,' "$st" || fail "state.json: $(grep -A2 loss_scale "$st")"
run --loss-scale-interval 3 --max-steps 20 --resume ck/step-00000008 >rest.tsv || fail "resume"
[ "$(grep '^step' rest.tsv | head -1 | cut -f 2)" = 9 ] || fail "resumed at $(grep '^step' rest.tsv | head -1)"
diff <(grep '^step' full.tsv | sed -n '9,$p' | cut -f 1-5,24,25) <(grep '^step' rest.tsv | cut -f 1-5,24,25) ||
	fail "the resumed run differs from the uninterrupted one"
expect 2 "--loss-scale-interval 5 differs from the checkpoint's 3" run --loss-scale-interval 5 \
	--max-steps 20 --resume ck/step-00000008

# fp16 tracks fp32 over 200 steps (25-step means, every step, test loss).
track() {
	[ "$(grep -c '^step' "$2")" = 200 ] || fail "$2: $(grep -c '^step' "$2") steps, want 200"
	paste <(awk -F '\t' '$1 == "step" { print $2, $4 }' "$1") \
		<(awk -F '\t' '$1 == "step" { print $2, $4 }' "$2") | awk -v w="$3" -v s="$4" '
		function rel(x, y) { return (x > y ? x - y : y - x) / y }
		{ a += $2; b += $4; if ($2 != $4) differ = 1 }
		rel($4, $2) > s { print "step " $1 ": " $2 " vs " $4; bad = 1 }
		NR % 25 == 0 { if (rel(b, a) > w) { print "steps to " NR ": " a / 25 " vs " b / 25; bad = 1 }
			a = b = 0 }
		END { if (!differ) { print "fp16 gave the fp32 losses bit for bit"; bad = 1 }; exit bad }'
}
mlp() { "$TR" --data nd --model mlp:64-64-32-4,act=gelu,layernorm --max-steps 200 --epochs 10 \
	--log-every 1 -q --batch-size 32 --optimizer adamw --lr 0.003 "$@"; }
mlp >mlp32.tsv
mlp --dtype fp16 >mlp16.tsv
track mlp32.tsv mlp16.tsv 0.002 0.01 || fail "mlp: fp16 does not track fp32"
[ "$(scaler mlp16.tsv | tail -1 | cut -d' ' -f 3)" = 0 ] || fail "mlp: fp16 overflowed"
text_idx g 1200 64 17 3
gpt() { "$TR" --data g --model gpt:layers=2,heads=2,dim=32,ctx=16,vocab=128 --optimizer adamw \
	--lr 0.003 --warmup-steps 5 --log-every 1 -q --max-steps 200 --epochs 10 --batch-size 16 "$@"; }
gpt >gpt32.tsv
gpt --dtype fp16 >gpt16.tsv
track gpt32.tsv gpt16.tsv 0.005 0.02 || fail "gpt: fp16 does not track fp32"
exit 0

# mgpu-train --augment crop=P,flip: training rows are cropped and flipped
# from (seed, epoch, sample), so 2 ranks see the 1-rank run's batches at the
# same global batch (the same losses, 1e-4 relative), any prefetch gives
# the same run, a rerun is bit-identical, and the augmentation changes the
# run; samples that are no images are refused naming the data; the option
# is part of a checkpoint's fixed settings.
. tests/cli/lib.sh
mkidx d 800 100 8 4
common="--data d --model mlp:auto-32-auto --epochs 2 --log-every 1 -q --lr 0.05"
aug="--augment crop=2,flip"
"$BIN/mgpu-train" $common $aug --batch-size 32 >one.tsv || fail "one rank"
"$BIN/mgpu-train" $common $aug --batch-size 16 --cpu-ranks 2 --prefetch 3 >ddp.tsv ||
	fail "two ranks"
"$BIN/mgpu-train" $common $aug --batch-size 32 --prefetch 0 >again.tsv || fail "rerun"
"$BIN/mgpu-train" $common --batch-size 32 >plain.tsv || fail "no augmentation"
losses() { awk -F '\t' '$1 == "step" { print $2, $4 } $1 == "eval" { print "eval", $9 }' "$1"; }
[ "$(losses one.tsv | grep -vc eval)" = 44 ] || fail "$(losses one.tsv | wc -l) records"
paste -d ' ' <(losses one.tsv) <(losses ddp.tsv) | awk '
	{ d = $2 - $4; if (d < 0) d = -d; r = d / ($2 > 0 ? $2 : 1)
	  if ($1 != $3 || r > 1e-4) { print "step " $1 ": " $2 " vs " $4; bad = 1 } }
	END { exit bad }' || fail "two ranks differ from one"
[ "$(losses one.tsv)" = "$(losses again.tsv)" ] || fail "a rerun is not bit-identical"
[ "$(losses one.tsv)" != "$(losses plain.tsv)" ] || fail "--augment changed nothing"
# A resume mid-epoch continues the same draws; a checkpoint fixes the
# option: a resume with another augmentation is refused.
"$BIN/mgpu-train" $common $aug --batch-size 32 --save-every 5 --keep 10 --save-dir ck \
	>saved.tsv || fail "save"
[ "$(losses saved.tsv)" = "$(losses one.tsv)" ] || fail "saving changed the run"
expect 2 "--augment flip differs from the checkpoint's crop=2,flip" \
	"$BIN/mgpu-train" $common --augment flip --batch-size 32 --resume ck/step-00000005
"$BIN/mgpu-train" $common $aug --batch-size 32 --resume ck/step-00000005 >resumed.tsv ||
	fail "resume"
[ "$(losses resumed.tsv)" = "$(losses one.tsv | tail -n +6)" ] ||
	fail "the resumed run differs: $(losses resumed.tsv | head -n 3)"
# Flat samples are no images: an error naming the data (exit 1); given a
# shape they are.
python3 -c '
import random
r = random.Random(2)
print(",".join("f%d" % i for i in range(12)) + ",label")
for i in range(64): print(",".join(str(r.random()) for _ in range(12)) + ",%d" % (i % 2))' >flat.csv
"$BIN/mgpu-shard" -q -o flat/m.tsv flat.csv && "$BIN/mgpu-shard" -q --shape 3x2x2 -o img/m.tsv flat.csv ||
	fail "shard"
expect 1 "'flat/m.tsv': --augment crops and flips images (CxHxW), but its samples are 12" \
	"$BIN/mgpu-train" --data flat/m.tsv --model mlp:auto-8-auto --epochs 1 $aug
"$BIN/mgpu-train" --data img/m.tsv --model mlp:auto-8-auto --epochs 1 --batch-size 8 -q $aug \
	>/dev/null ||
	fail "3x2x2 samples refused"
expect 2 "--augment: 'crop=4,spin' is not crop=P" "$BIN/mgpu-train" --data d --augment crop=4,spin
exit 0

# mgpu-train --dtype bf16 with a cnn: torch.autocast's arithmetic (the
# convolutions and the linear head read bf16-rounded operands and sum in
# fp32; BatchNorm, pooling, activations, weights and optimizer stay fp32).
# A small ResNet's bf16 loss falls and tracks fp32's over 30 steps without
# being the same; oneDNN's bf16 convolutions and cpu's fallback for CPUs
# without them (the f32 primitives on rounded inputs, forced here with
# ONEDNN_MAX_CPU_ISA=AVX2) train alike; 2 ranks x 8 agree with 1 rank x
# 16; a resumed bf16 run is bit-identical, its checkpoint is fp32
# safetensors that records --dtype, and a resume may not change it; fp16
# is refused.
. tests/cli/lib.sh
mkidx d 600 120 8 4
res="cnn:conv 8 k=3 p=1; bn; relu; res 8; res 12 s=2; maxpool 2; gap; dropout 0.1; linear auto"
run() { "$BIN/mgpu-train" --data d --model "$res" --optimizer sgd --momentum 0.9 --lr 0.05 \
	--batch-size 32 --log-every 1 -q "$@"; }

run --max-steps 30 >fp32.tsv
run --max-steps 30 --dtype bf16 >bf16.tsv
[ "$(losses bf16.tsv | wc -l)" = 30 ] || fail "bf16: $(losses bf16.tsv | wc -l) steps, want 30"
# every 10-step mean within 10% of fp32's (the worst seen: 4%), the first
# step within 0.5% (one forward from the same weights), some step
# different, and the last 10 steps' mean a fifth of the first 10's
paste -d ' ' <(losses fp32.tsv) <(losses bf16.tsv) | awk '
	function rel(x, y) { return (x > y ? x - y : y - x) / y }
	$1 != $3 { print "step " $1 " vs " $3; bad = 1 }
	$1 == 1 && rel($4, $2) > 0.005 { print "step 1: " $2 " vs " $4; bad = 1 }
	{ a += $2; b += $4; if ($2 != $4) differ = 1 }
	NR % 10 == 0 { if (rel(b, a) > 0.1) { print "steps to " NR ": " a / 10 " vs " b / 10; bad = 1 }
		if (NR == 10) first = b; last = b; a = b = 0 }
	END { if (!differ) { print "bf16 gave the fp32 losses bit for bit"; bad = 1 }
		if (last > first / 5) { print "bf16 loss fell from " first / 10 " to " last / 10 " only"; bad = 1 }
		exit bad }' || fail "bf16 does not track fp32"
acc=$(awk -F '\t' '$1 == "summary" { print $12 }' bf16.tsv)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "bf16 test accuracy $acc: $(cat bf16.tsv)"

# The fallback (where oneDNN has bf16 convolutions; else both runs are
# the fallback): the same arithmetic in another order of sums, so the
# first step agrees to 3e-5 (the printed digits); from the second on a
# weight whose last fp32 bit differs may round to the other bf16
# neighbour, and the runs part as bf16 and fp32 do (10 steps' mean within
# 10%).
ONEDNN_MAX_CPU_ISA=AVX2 run --max-steps 10 --dtype bf16 >avx2.tsv
paste -d ' ' <(losses bf16.tsv | head -10) <(losses avx2.tsv) | awk '
	function rel(x, y) { return (x > y ? x - y : y - x) / y }
	$1 != $3 || ($1 == 1 && rel($4, $2) > 3e-5) { print; bad = 1 }
	{ a += $2; b += $4 }
	END { exit bad || NR != 10 || rel(b, a) > 0.1 }' ||
	fail "bf16 without oneDNN's bf16 convolutions differs"

# World size in bf16 (no BatchNorm; a grouped conv): 2 ranks x 8 agree
# with 1 rank x 16, the first step to 3e-5 (the same rounded weights),
# then on average to 3e-3 (a weight may round to the other bf16 neighbour,
# as 19b-train-bf16.sh says of the MLP and the gpt).
gn="cnn:conv 6 k=3 p=1 bias; gn 2; silu; avgpool 2; conv 8 k=3 p=1 g=2; relu; gap; linear auto"
run --model "$gn" --max-steps 12 --batch-size 16 --dtype bf16 >one.tsv
run --model "$gn" --max-steps 12 --batch-size 8 --cpu-ranks 2 --dtype bf16 >two.tsv
paste -d ' ' <(losses one.tsv) <(losses two.tsv) | awk '
	{ d = $2 - $4; if (d < 0) d = -d; r = d / $2; sum += r
	  if ($1 != $3 || ($1 == 1 && r > 3e-5)) { print; bad = 1 } }
	END { if (NR != 12 || sum / NR > 3e-3) { print NR, "mean", sum / NR; bad = 1 }; exit bad }' ||
	fail "bf16: 2 ranks x 8 differ from 1 rank x 16"

# Resume: 10 + 10 steps end where 20 do, bit for bit, taking bf16 from the
# checkpoint, which keeps fp32 tensors and records the dtype.
run --max-steps 20 --dtype bf16 --save-dir full --save-every 10 --keep 0 >/dev/null
mkdir part
cp -r full/step-00000010 part/
run --resume part/step-00000010 --save-dir part >/dev/null
bf16_resumed full/step-00000020 part/step-00000020
expect 2 "--dtype fp32 differs from the checkpoint's bf16" \
	"$BIN/mgpu-train" --data d --resume part --dtype fp32 --max-steps 20
expect 2 "--dtype fp16: a cnn trains in fp32 or bf16" \
	"$BIN/mgpu-train" --data d --model "$res" --dtype fp16 -q
exit 0

# mgpu-train data parallelism: at the same global batch, 2 CPU ranks (ddp),
# 2 threads (dp), accumulation 2 x 32 and one rank of 64 give the same loss
# for the first 50 steps (1e-4 relative), as do 3 clipped ranks x 16 and
# one of 48; output comes from rank 0 only.
. tests/cli/lib.sh
mkidx d 4000 400 8 4
common="--data d --model mlp:64-48-32-4,act=gelu --epochs 1 --max-steps 50 --log-every 1 -q"
"$BIN/mgpu-train" $common --batch-size 64 --optimizer adamw --lr 0.002 >one.tsv
"$BIN/mgpu-train" $common --batch-size 32 --cpu-ranks 2 --optimizer adamw --lr 0.002 >ddp.tsv
"$BIN/mgpu-train" $common --global-batch-size 64 --cpu-ranks 2 --mode dp --optimizer adamw --lr 0.002 >dp.tsv
"$BIN/mgpu-train" $common --batch-size 32 --grad-accum-steps 2 --optimizer adamw --lr 0.002 >acc.tsv
# Clipping takes the other path (the update waits for the global norm); SGD.
"$BIN/mgpu-train" $common --batch-size 64 --clip-grad-norm 0.3 --nesterov >one-clip.tsv
"$BIN/mgpu-train" $common --batch-size 32 --cpu-ranks 2 --clip-grad-norm 0.3 --nesterov >ddp-clip.tsv
# 4 ranks: ranks 2 and 3 sum the slots into their own (once summed twice)
"$BIN/mgpu-train" $common --batch-size 16 --cpu-ranks 4 --clip-grad-norm 0.3 --nesterov >ddp4-clip.tsv
# 3 ranks, where averaging by 1/3 is not exact: against one rank of 48
"$BIN/mgpu-train" $common --batch-size 48 --clip-grad-norm 0.3 --nesterov >one48-clip.tsv
"$BIN/mgpu-train" $common --batch-size 16 --cpu-ranks 3 --clip-grad-norm 0.3 --nesterov >ddp3-clip.tsv
losses() { awk -F '\t' '$1 == "step" { print $2, $4 }' "$1"; }
for f in ddp dp acc ddp-clip ddp4-clip ddp3-clip; do
	ref=one.tsv
	case $f in ddp3-clip) ref=one48-clip.tsv ;; *-clip) ref=one-clip.tsv ;; esac
	[ "$(losses $f.tsv | wc -l)" = 50 ] || fail "$f: $(losses $f.tsv | wc -l) step records, want 50"
	paste -d ' ' <(losses $ref) <(losses $f.tsv) | awk -v f=$f '
		{ d = $2 - $4; if (d < 0) d = -d; r = d / ($2 > 0 ? $2 : 1)
		  if ($1 != $3 || r > 1e-4) { print f ": step " $1 ": " $2 " vs " $4; bad = 1 } }
		END { exit bad }' || fail "$f differs from one rank"
done
# The summary names the run's shape; per-device peaks are listed.
awk -F '\t' '$1 == "summary" { if ($14 != 64 || $15 != 2 || $16 != "ddp" || $17 != "cpu") exit 1
	if (split($18, p, ",") != 2 || split($19, q, ",") != 2) exit 1 }' ddp.tsv ||
	fail "ddp summary: $(grep summary ddp.tsv)"
awk -F '\t' '$1 == "summary" { if ($15 != 2 || $16 != "dp") exit 1
	split($18, p, ","); if (p[1] <= p[2]) exit 1 }' dp.tsv ||
	fail "dp summary (device 0 should be heavier): $(grep summary dp.tsv)"
[ "$(grep -c '^kind' ddp.tsv)" = 1 ] || fail "more than one header: ranks other than 0 wrote"
# The effective batch is announced once.
"$BIN/mgpu-train" --data d --model mlp:64-4 --max-steps 2 --cpu-ranks 2 --batch-size 16 \
	--grad-accum-steps 3 >/dev/null 2>err.txt
grep -q "effective batch 96 (16 per device x 3 accumulation steps x 2 devices)" err.txt ||
	fail "announcement: $(cat err.txt)"
[ "$(grep -c 'effective batch' err.txt)" = 1 ] || fail "announced by more than rank 0"
expect 2 "--global-batch-size 100 does not split evenly over 2 devices x 3 accumulation steps" \
	"$BIN/mgpu-train" --data d --model mlp:64-4 --cpu-ranks 2 --grad-accum-steps 3 --global-batch-size 100
# --uneven pad keeps the tail (4000 - 400 val = 3600 = 37.5 x 96).
"$BIN/mgpu-train" --data d --model mlp:64-4 --epochs 1 --cpu-ranks 2 --batch-size 48 --uneven pad -q >pad.tsv
grep -q '^summary	38	' pad.tsv || fail "pad: $(grep summary pad.tsv)"
"$BIN/mgpu-train" --data d --model mlp:64-4 --epochs 1 --cpu-ranks 2 --batch-size 48 -q >drop.tsv
grep -q '^summary	37	' drop.tsv || fail "drop: $(grep summary drop.tsv)"
exit 0

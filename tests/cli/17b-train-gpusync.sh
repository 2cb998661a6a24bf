# mgpu-train with a GPU listed more than once (ranks that share it, to test
# multi-rank training on one GPU) and --sync-backend cpu for GPU ranks:
# - NCCL refuses a repeated GPU, naming it, on any machine (exit 2);
# - the cpu backend, the default backend and mode dp accept it up to
#   whether the GPU exists (what mgpu-probe finds decides what to expect);
#   where it does, 2 ranks on GPU 0 match 1 rank at the same global batch
#   within 1e-4 over 50 steps, with a note that this is for testing;
# - everywhere, the staged strategy of GPU ranks runs on CPU ranks
#   (MGPU_SYNC_STAGED=1) and matches 1 rank the same way.
. tests/cli/lib.sh
mkidx d 4000 400 8 4
train() { "$BIN/mgpu-train" --data d --model mlp:64-48-32-4,act=gelu --epochs 1 \
	--max-steps 50 --log-every 1 --optimizer adamw --lr 0.002 -q "$@"; }
losses() { awk -F '\t' '$1 == "step" { print $2, $4 }' "$1"; }
# same REF FILE: 50 steps, losses within 1e-4 relative
same() {
	[ "$(losses "$2" | wc -l)" = 50 ] || fail "$2: $(losses "$2" | wc -l) step records, want 50"
	paste -d ' ' <(losses "$1") <(losses "$2") | awk -v f="$2" '
		{ d = $2 - $4; if (d < 0) d = -d; r = d / ($2 > 0 ? $2 : 1)
		  if ($1 != $3 || r > 1e-4) { print f ": step " $1 ": " $2 " vs " $4; bad = 1 } }
		END { exit bad }' || fail "$2 differs from $1"
}
# world_size, mode, sync_backend of the summary
shape() { awk -F '\t' '$1 == "summary" { print $15, $16, $17 }' "$1"; }

expect 2 "--gpus: GPU 0 listed twice: --sync-backend nccl needs a GPU of its own for each rank" \
	train --gpus 0,0 --sync-backend nccl
printf '1,0,1\n' | expect 2 "--gpus -: GPU 1 listed twice: --sync-backend nccl" \
	train --gpus - --sync-backend nccl

train --batch-size 64 >one.tsv
visible=$("$BIN/mgpu-probe" --min-memory 0 --include-display --ids 2>/dev/null || true)
if [ -z "$visible" ]; then
	for how in "--sync-backend cpu" "" "--mode dp"; do
		expect 1 "--gpus: GPU 0 requested but 0 GPUs are visible" \
			train --gpus 0,0 --batch-size 32 $how
	done
else
	train --gpus 0 --batch-size 64 >gpu1.tsv
	same one.tsv gpu1.tsv
	"$BIN/mgpu-train" --data d --model mlp:64-48-32-4,act=gelu --epochs 1 --max-steps 50 \
		--log-every 1 --optimizer adamw --lr 0.002 --gpus 0,0 --sync-backend cpu \
		--batch-size 32 >gpu2.tsv 2>gpu2.err || fail "--gpus 0,0: $(cat gpu2.err)"
	same gpu1.tsv gpu2.tsv
	[ "$(shape gpu2.tsv)" = "2 ddp cpu" ] || fail "--gpus 0,0: $(grep summary gpu2.tsv)"
	grep -q "GPU 0 is listed more than once: its ranks share it, which is for testing" \
		gpu2.err || fail "no note that a shared GPU is for testing: $(cat gpu2.err)"
	[ "$(grep -c 'listed more than once' gpu2.err)" = 1 ] || fail "the note came from every rank"
	# the default backend cannot be NCCL for a shared GPU: cpu
	train --gpus 0,0 --batch-size 32 >auto.tsv || fail "--gpus 0,0 without a backend"
	[ "$(shape auto.tsv)" = "2 ddp cpu" ] || fail "auto: $(grep summary auto.tsv)"
	train --gpus 0,0 --mode dp --global-batch-size 64 >dp.tsv || fail "--gpus 0,0 --mode dp"
	same gpu1.tsv dp.tsv
fi

# The staged strategy on CPU ranks: copies to the slots, rank-order sums,
# copies back, one optimizer per rank.
MGPU_SYNC_STAGED=1 train --cpu-ranks 2 --batch-size 32 >staged.tsv
same one.tsv staged.tsv
[ "$(shape staged.tsv)" = "2 ddp cpu" ] || fail "staged: $(grep summary staged.tsv)"
exit 0

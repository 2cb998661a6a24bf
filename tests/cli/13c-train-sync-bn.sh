# --sync-bn: a small conv net with BatchNorm (a stem bn and a res block's
# two) trained 2 CPU ranks x 8 with --sync-bn matches 1 rank x 16 within
# 1e-4 in fp32: every step's loss, and the checkpoint's weights and
# running statistics; so do the staged path of GPU ranks
# (MGPU_SYNC_STAGED=1), 4 ranks x 4 and mode dp. Without --sync-bn each
# rank normalises with its own 8 samples (torch DDP's default) and the run
# differs; a model without BatchNorm is a usage error. The sum on every
# sync strategy: tests/unit/test_sync_stats.c; two network-namespace
# nodes: tests/cli/50b-sync-bn-nodes.sh.
. tests/cli/lib.sh
mkidx d 800 100 8 4
M=$BIN/mgpu-train
run() { # run NAME ARGS...: 12 SGD steps, a checkpoint at the end in NAME/
	name=$1
	shift
	"$M" --data d --model "cnn:conv 4 k=3 p=1; bn; relu; res 6 s=2; gap; linear auto" \
		--epochs 1 --max-steps 12 --log-every 1 -q --lr 0.2 --save-dir "$name" \
		"$@" >"$name.tsv" 2>"$name.err" || fail "$name: $(cat "$name.err")"
}
losses() { awk -F '\t' '$1 == "step" { print $2, $4 }' "$1"; }
same() { # same REF RUN: per-step losses within 1e-4 and tensors within 1e-4
	[ "$(losses "$2.tsv" | wc -l)" = 12 ] || fail "$2: $(losses "$2.tsv" | wc -l) steps, want 12"
	paste -d ' ' <(losses "$1.tsv") <(losses "$2.tsv") | awk -v f="$2" '
		{ d = $2 - $4; if (d < 0) d = -d
		  if ($1 != $3 || d > 1e-4) { print f ": step " $1 ": " $2 " vs " $4; bad = 1 } }
		END { exit bad }' || fail "$2: the loss differs from one rank of 16"
	d=$(ckpt_maxdiff "$1" "$2" bn) || fail "$2: checkpoints: $d"
	awk -v d="$d" 'BEGIN { exit !(d <= 1e-4) }' || fail "$2: tensors differ by $d from $1"
}
run one --batch-size 16
run sbn --batch-size 8 --cpu-ranks 2 --sync-bn
same one sbn
MGPU_SYNC_STAGED=1 run staged --batch-size 8 --cpu-ranks 2 --sync-bn
same one staged
run sbn4 --batch-size 4 --cpu-ranks 4 --sync-bn
same one sbn4
run dp --global-batch-size 16 --cpu-ranks 2 --mode dp --sync-bn
same one dp
# without it, each rank its own batch: not the same training
run own --batch-size 8 --cpu-ranks 2
d=$(ckpt_maxdiff one own bn)
awk -v d="$d" 'BEGIN { exit !(d > 1e-3) }' ||
	fail "without --sync-bn 2 ranks x 8 match 1 x 16 (max diff $d): the sums were shared"
# a model without BatchNorm has nothing to sync: a usage error
expect 2 "--sync-bn: an mlp has no BatchNorm layer to sync" "$M" --data d --model mlp:64-4 \
	--cpu-ranks 2 --sync-bn
expect 2 "--sync-bn: a gpt has no BatchNorm layer to sync" "$M" --data d \
	--model gpt:layers=1,heads=1,dim=8,ctx=8 --sync-bn
expect 2 "--sync-bn: the conv net has no BatchNorm layer to sync (no bn line or res block)" \
	"$M" --data d --model "cnn:conv 4 k=3; gn 2; relu; gap; linear auto" --sync-bn
# one rank: nothing to sum, the same run
run one-sbn --batch-size 16 --sync-bn
same one one-sbn
exit 0

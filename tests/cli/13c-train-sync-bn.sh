# --sync-bn: BatchNorm's statistics summed over the ranks (its sum on every
# sync strategy: tests/unit/test_sync_stats.c; across two
# network-namespace nodes: tests/cli/50b-sync-bn-nodes.sh). A model
# without BatchNorm has nothing to sync: a usage error, before any rank
# starts.
. tests/cli/lib.sh
mkidx d 200 40 8 4
M=$BIN/mgpu-train
expect 2 "--sync-bn: an mlp has no BatchNorm layer to sync" "$M" --data d --model mlp:64-4 \
	--cpu-ranks 2 --sync-bn
expect 2 "--sync-bn: a gpt has no BatchNorm layer to sync" "$M" --data d \
	--model gpt:layers=1,heads=1,dim=8,ctx=8 --sync-bn
exit 0

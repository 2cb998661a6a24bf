# mgpu-train --gpus on machines with and without GPUs (what mgpu-probe
# finds decides what to expect): a GPU that is not there is an error.
. tests/cli/lib.sh
mkidx d 600 100 8 4
train() { "$BIN/mgpu-train" --data d --model mlp:64-4 --max-steps 2 -q "$@"; }
# world_size, sync_backend of the summary in $1
shape() { awk -F '\t' '$1 == "summary" { print $15, $17 }' "$1"; }
visible=$("$BIN/mgpu-probe" --min-memory 0 --include-display --ids 2>/dev/null || true)

if [ -z "$visible" ]; then
	expect 1 "--gpus: GPU 0 requested but 0 GPUs are visible" train --gpus 0
else
	train --gpus 0 >gpu.tsv || fail "--gpus 0 with GPUs $visible visible"
	[ "$(shape gpu.tsv)" = "1 none" ] || fail "--gpus 0: $(cat gpu.tsv)"
fi
expect 1 "--gpus: GPU 63 requested but" train --gpus 63
exit 0

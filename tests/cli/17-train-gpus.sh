# mgpu-train --gpus on machines with and without GPUs (what mgpu-probe
# finds decides what to expect): a GPU that is not there is an error; no
# GPU ids on standard input fail, or with --cpu-fallback N train on N CPU
# ranks after saying so; so does --gpus auto finding no eligible GPU.
. tests/cli/lib.sh
mkidx d 600 100 8 4
train() { "$BIN/mgpu-train" --data d --model mlp:64-4 --max-steps 2 -q "$@"; }
# world_size, sync_backend of the summary in $1
shape() { awk -F '\t' '$1 == "summary" { print $15, $17 }' "$1"; }
visible=$("$BIN/mgpu-probe" --min-memory 0 --include-display --ids 2>/dev/null || true)
eligible=$("$BIN/mgpu-probe" --ids 2>/dev/null || true)

if [ -z "$visible" ]; then
	expect 1 "--gpus: GPU 0 requested but 0 GPUs are visible" train --gpus 0
else
	train --gpus 0 >gpu.tsv || fail "--gpus 0 with GPUs $visible visible"
	[ "$(shape gpu.tsv)" = "1 none" ] || fail "--gpus 0: $(cat gpu.tsv)"
fi
expect 1 "--gpus: GPU 63 requested but" train --gpus 63

# Standard input without GPU ids: an error unless --cpu-fallback says what to do.
expect 1 "--gpus -: no GPU ids on standard input" train --gpus - </dev/null
printf '\n' | train --gpus - --cpu-fallback 2 >fb.tsv 2>fb.err || fail "--cpu-fallback: $(cat fb.err)"
[ "$(shape fb.tsv)" = "2 cpu" ] || fail "--cpu-fallback 2 did not train on 2 CPU ranks: $(cat fb.tsv)"
[ ! -s fb.err ] || fail "-q, yet: $(cat fb.err)"
printf '' | "$BIN/mgpu-train" --data d --model mlp:64-4 --max-steps 2 --gpus - --cpu-fallback 2 \
	2>fb.err >/dev/null || fail "--cpu-fallback: $(cat fb.err)"
grep -q "warning: --gpus -: no GPU ids on standard input: falling back to 2 CPU ranks" fb.err ||
	fail "the fallback is not said: $(cat fb.err)"
# Input that is not empty but wrong is still an error.
printf '0,x\n' | expect 1 "'0,x' is not a list of integers" train --gpus - --cpu-fallback 2
expect 2 "--cpu-fallback needs --gpus - or --gpus auto" train --cpu-fallback 2
expect 2 "--cpu-fallback needs --gpus - or --gpus auto" train --gpus 0 --cpu-fallback 2

# The pipe from mgpu-probe, and --gpus auto: GPUs where there are eligible
# ones, else the fallback.
"$BIN/mgpu-probe" --ids 2>/dev/null | train --gpus - --cpu-fallback 2 >pipe.tsv ||
	fail "mgpu-probe --ids | mgpu-train --gpus - --cpu-fallback 2"
train --gpus auto --cpu-fallback 2 >auto.tsv 2>auto.err || fail "--gpus auto: $(cat auto.err)"
if [ -z "$eligible" ]; then
	[ "$(shape pipe.tsv)" = "2 cpu" ] || fail "pipe: $(cat pipe.tsv)"
	[ "$(shape auto.tsv)" = "2 cpu" ] || fail "auto: $(cat auto.tsv)"
	expect 1 "--gpus auto: no" train --gpus auto
else
	n=$(echo "$eligible" | tr ',' '\n' | wc -l)
	[ "$(shape pipe.tsv | cut -d ' ' -f 1)" = "$n" ] || fail "pipe ($eligible): $(cat pipe.tsv)"
	[ "$(shape auto.tsv | cut -d ' ' -f 1)" = "$n" ] || fail "auto ($eligible): $(cat auto.tsv)"
fi
exit 0

#!/bin/sh
# gpu.sh BUILD - issue 11's GPU comparisons on GPU 0, side by side with
# PyTorch on the same GPU in one run (`make bench-gpu`; on a lent device:
# `bash .gpu/run.sh 'sh bench/gpu.sh build'`). Prints Markdown tables.
#
# 1. The MLP of mgpu-train's default job at large batches: mgpu-bench train
#    on 1 GPU per batch size, against bench/torch_mlp.py (PyTorch eager with
#    the training set resident on the GPU).
# 2. A GPT of about 100M parameters at context 1024
#    (gpt:layers=12,heads=12,dim=768,ctx=1024, 85M in the blocks plus the
#    tied 256-byte embedding), fp32 and bf16, against bench/torch_gpt.py
#    (eager fp32, eager with bf16 autocast, torch.compile of the bf16 model).
#
# PyTorch is the python3 on PATH when it imports torch, else PYTHON; without
# one the PyTorch rows are skipped, saying why. Environment: GPU_MLP_BATCHES,
# GPU_LM_MODEL, GPU_LM_BATCH, GPU_LM_STEPS, GPU_REPEAT.
set -eu
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
MLP_BATCHES=${GPU_MLP_BATCHES:-"512 1024 2048 4096"}
MODEL=${GPU_LM_MODEL:-gpt:layers=12,heads=12,dim=768,ctx=1024}
BATCH=${GPU_LM_BATCH:-8}
STEPS=${GPU_LM_STEPS:-40}
REPEAT=${GPU_REPEAT:-3}
TEXT="/usr/share/games/fortunes/fortunes /usr/share/games/fortunes/literature /usr/share/games/fortunes/riddles"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

PY=${PYTHON:-python3}
"$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
	{ echo "gpu.sh: $PY has no CUDA-enabled torch: PyTorch rows skipped" >&2; PY=; }
"$B/bin/mgpu-probe" -q >/dev/null 2>&1 ||
	{ echo "gpu.sh: mgpu-probe finds no eligible GPU" >&2; exit 1; }

echo "# MLP (mgpu-train's default job), 1 GPU, samples/s by batch size"
for bs in $MLP_BATCHES; do
	echo "## mgpu, batch $bs"
	"$B/bin/mgpu-bench" train -q --devices 1 --repeat "$REPEAT" --warmup-steps 50 \
		--format markdown -- --batch-size "$bs" --epochs 20 --max-steps 300 |
		sed '/^Commands:/,$d'
done
echo "## PyTorch eager, data resident on the GPU"
[ -z "$PY" ] || "$PY" "$SRC/bench/torch_mlp.py" --format markdown \
	--batch-sizes "$(echo $MLP_BATCHES | tr ' ' ',')"

ctx=${MODEL##*ctx=}
ctx=${ctx%%,*}
"$B/bin/mgpu-shard" -q --text --context "$ctx" -o "$W/lm/manifest.tsv" $TEXT
"$B/bin/mgpu-cache" -q -o "$W/lm/cache" "$W/lm/manifest.tsv" >/dev/null
echo "# $MODEL, batch $BATCH, AdamW, 1 GPU, fp32 and bf16"
"$B/bin/mgpu-bench" train -q --devices 1 --dtypes fp32,bf16 --repeat "$REPEAT" \
	--warmup-steps 10 --format markdown -- --data "$W/lm/cache" --model "$MODEL" \
	--optimizer adamw --lr 3e-4 --batch-size "$BATCH" --epochs 1000 \
	--max-steps "$STEPS" | sed '/^Commands:/,$d'
echo "## PyTorch (bench/torch_gpt.py): eager fp32, eager bf16 autocast, torch.compile bf16"
[ -z "$PY" ] || "$PY" "$SRC/bench/torch_gpt.py" --format markdown --model "$MODEL" \
	--batch-size "$BATCH" --steps "$STEPS" --warmup-steps 10 --ranks '' \
	--gpu-modes fp32,bf16,compile

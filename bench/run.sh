#!/bin/sh
# run.sh BUILD - the benchmarks (make bench). Speed targets live here, never
# in tests. Prints TSV tables on stdout.
set -eu
B=${1:-build}
echo "# framework overhead: full training step vs the same GEMMs alone (median of 300)"
"$B/bench/overhead" mlp:784-512-256-10 128 cpu 300
echo "# end-to-end: default model on Fashion-MNIST, 1 epoch, summary record"
"$B/bin/mgpu-train" -q --epochs 1 --log-every 100000 | awk -F '\t' 'NR == 1 || $1 == "summary"' |
	cut -f 1,6,12,13
echo "# shared-memory all-reduce between 2 ranks (nccl-tests definitions; busbw = algbw x 2(n-1)/n)"
"$B/bin/mgpu-bench" allreduce --ranks 2 --sizes 4K:64M
echo "# data parallelism: default MLP on Fashion-MNIST, batch 64 per rank; 1 and 2 CPU ranks, DDP and DP"
"$B/bin/mgpu-bench" train --cpu-ranks 1,2 --modes ddp,dp --repeat 3 -q |
	cut -f 1,3,4,8,11,12,13,14,16
echo "# a conv-net training step without data (bench/cnn_step.c): the U-Net of models/unet-pose.spec"
echo "# on 96x96 RGB frames, 2 maps, MSE, batch 32, fp32 and bf16, median of 20 steps; per wall and per CPU second"
for dtype in fp32 bf16; do
	"$B/bench/cnn_step" "$(dirname "$0")/../models/unet-pose.spec" 3x96x96 2 32 cpu 20 $dtype
done
sh "$(dirname "$0")/data.sh" "$B"

#!/bin/sh
# run.sh BUILD - the benchmarks (make bench). Speed targets live here, never
# in tests. Prints TSV tables on stdout.
set -eu
B=${1:-build}
echo "# framework overhead: full training step vs the same GEMMs alone (median of 300)"
"$B/bench/overhead" mlp:784-512-256-10 128 cpu 300
echo "# end-to-end: default model on Fashion-MNIST, 1 epoch, summary record"
"$B/bin/mgpu-train" -q --epochs 1 --log-every 100000 | head -n 1 | cut -f 1,6,12,13
"$B/bin/mgpu-train" -q --epochs 1 --log-every 100000 | grep '^summary' | cut -f 1,6,12,13

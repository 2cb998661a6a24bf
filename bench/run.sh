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
echo "# shared-memory all-reduce between 2 ranks (nccl-tests definitions; busbw = algbw x 2(n-1)/n)"
"$B/bench/allreduce" 2 4K 64M
echo "# data parallelism: mlp:784-512-256-10, batch 64 per rank, 2 epochs; step records of 1 and 2 CPU ranks"
for n in 1 2; do
	"$B/bin/mgpu-train" -q --epochs 2 --batch-size 64 --cpu-ranks $n --log-every 200 |
		awk -F '\t' -v n=$n '$1 == "summary" { print "ranks=" n, "samples_per_s=" $6, "peak_bytes=" $18, "rss_bytes=" $19 }
			$1 == "step" && $2 > 200 { s += $6; k++ } END { if (k) print "ranks=" n, "step_samples_per_s=" s / k }'
done
sh "$(dirname "$0")/data.sh" "$B"

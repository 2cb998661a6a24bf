#!/bin/sh
# data.sh BUILD - data pipeline benchmarks on Fashion-MNIST: shard, cache at
# zstd level 3 (and raw), decode throughput per core against bare zstd, the
# compression ratio, and (once mgpu-train has --prefetch) data_ms as a
# share of step time for 2 CPU ranks training from the cache.
set -eu
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
FM=${FMNIST:-/usr/share/datasets/fashion-mnist}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
"$B/bin/mgpu-shard" -q --val-fraction 0.1 -d sh "$FM" >m.tsv
"$B/bin/mgpu-cache" -q -o z3 --level 3 m.tsv >/dev/null
"$B/bin/mgpu-cache" -q -o raw --raw m.tsv >/dev/null
echo "# cache decode, one core, best of 10: mgpu (checksum + zstd) vs zstd alone; Fashion-MNIST u8, 1 MiB chunks, level 3"
"$B/bench/data" z3/mgpu.cache 10
echo "# data_ms share of step time: 2 CPU ranks, batch 128 per rank, 3 epochs, from the level-3 cache"
if [ -x "$B/bin/mgpu-train" ] && "$B/bin/mgpu-train" --help | grep -q -- --prefetch; then
	for p in 0 2; do
		"$B/bin/mgpu-train" -q --data z3 --cpu-ranks 2 --epochs 3 --prefetch $p --log-every 100 |
			awk -F '\t' -v p=$p '$1 == "step" && $2 > 100 { s += $7; d += $8; k++ }
				END { printf "prefetch=%d step_ms=%.3f data_ms=%.4f data_pct=%.2f\n", p, s / k, d / k, 100 * d / s }'
	done
else
	echo "mgpu-train has no --prefetch yet: skipped"
fi

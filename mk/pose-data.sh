#!/bin/sh
# pose-data.sh DIR [FRAMES] - the data of make demo-pose in DIR:
# examples/make_pose_data.py's FRAMES frames (96x96 PNG, keypoint JSON;
# seed 42) as DIR/pose-FRAMES.tar, split with seed 42 (10% validation,
# 10% test) into DIR/shards-FRAMES and cached as DIR/pose-FRAMES.cache,
# the cache's path printed last. What exists already is kept (mgpu-shard
# and mgpu-cache redo nothing that is current). The Python
# that draws the frames needs numpy and Pillow (make deps gives Debian's
# python3 both; PYTHON overrides).
set -eu
dir=${1:?usage: pose-data.sh DIR [FRAMES]}
frames=${2:-4000}
bin=${B:-build}/bin
py=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
	"$p" -c 'import numpy, PIL' >/dev/null 2>&1 && { py=$p; break; }
done
[ -n "$py" ] || { echo "pose-data: no Python with numpy and Pillow (run make deps, or set PYTHON)" >&2; exit 1; }
mkdir -p "$dir"
tar=$dir/pose-$frames.tar
if [ ! -s "$tar" ]; then
	"$py" examples/make_pose_data.py -o "$tar.tmp" --count "$frames"
	mv "$tar.tmp" "$tar"
fi
"$bin/mgpu-shard" --seed 42 --val-fraction 0.1 --test-fraction 0.1 -d "$dir/shards-$frames" \
	-o "$dir/shards-$frames/manifest.tsv" "$tar"
"$bin/mgpu-cache" -o "$dir/pose-$frames.cache" "$dir/shards-$frames/manifest.tsv" >&2
echo "$dir/pose-$frames.cache"

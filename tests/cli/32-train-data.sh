# mgpu-train --data with caches, manifests and shards: the same metrics as
# training on the IDX files, a flipped byte in a cache fails naming the
# chunk, and --prefetch changes nothing but the timing. SKIPs until
# mgpu-train has --prefetch (the loader wired into the trainer).
. tests/cli/lib.sh
TR=$BIN/mgpu-train S=$BIN/mgpu-shard C=$BIN/mgpu-cache
"$TR" --help | grep -q -- "--prefetch" || { echo "mgpu-train has no --prefetch yet"; exit 77; }
mkidx d 600 100 8 4
args="--model mlp:64-16-4 --epochs 2 --batch-size 32 --log-every 1000 -q"
"$TR" --data d $args | cut -f 1,9-12 | grep '^summary' >idx.txt
"$S" -q --val-fraction 0.1 -d sh d | "$C" -q -o c - >/dev/null
"$C" -q -o r --raw sh/*.tar >/dev/null
for p in 0 3; do
	"$TR" --data c --prefetch $p $args | cut -f 1,9-12 | grep '^summary' >c$p.txt
	cmp idx.txt c$p.txt || fail "cache, prefetch $p: $(cat c$p.txt) vs IDX $(cat idx.txt)"
done
"$TR" --data r --prefetch 1 --cpu-ranks 2 $args >/dev/null || fail "raw cache, 2 ranks"
"$S" -q --val-fraction 0.1 -o m/manifest.tsv d
"$TR" --data m/manifest.tsv $args | cut -f 1,9-12 | grep '^summary' >m.txt
cmp idx.txt m.txt || fail "manifest: $(cat m.txt) vs $(cat idx.txt)"
"$TR" --data m $args | cut -f 1,9-12 | grep '^summary' | cmp - idx.txt || fail "manifest dir"
python3 - c/mgpu.cache <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
ix = struct.unpack_from("<Q", b, 144)[0]
off, n = struct.unpack_from("<QQ", b, ix)
b[off + n // 2] ^= 1
open(sys.argv[1], "wb").write(b)
PY
expect 1 "'c/mgpu.cache': chunk 0 (train rows 0..539): checksum mismatch" "$TR" --data c --prefetch 2 $args
expect 1 "'nothing.tar': does not exist; want a cache" "$TR" --data nothing.tar $args
# A missing data path says so and lists the kinds of input, in mgpu-train
# and mgpu-bench data alike; so does a directory of something else.
kinds="a shard manifest (FILE or DIR/manifest.tsv), a WebDataset archive"
expect 1 "'cache/': does not exist; want a cache (DIR or DIR/mgpu.cache), $kinds" \
	"$TR" --data cache/ $args
expect 1 "'cache/': does not exist; want a cache" "$BIN/mgpu-bench" data cache/
mkdir other && touch other/notes.txt
expect 1 "'other': holds no data; want a cache" "$TR" --data other $args
exit 0

# mgpu-cache: the tool contract, a pipeline from mgpu-shard, tar streams on
# stdin, built once (a second run does nothing, a change rebuilds), one
# flipped byte caught by --verify naming the chunk, four concurrent builders
# leaving one valid cache, and bad inputs leaving nothing behind.
. tests/cli/lib.sh
C=$BIN/mgpu-cache S=$BIN/mgpu-shard
"$C" --help | grep -q "^usage: mgpu-cache" || fail "--help"
"$C" --version | grep -q "^mgpu-cache [0-9]" || fail "--version"
expect 2 "unknown or incomplete option '--frob'" "$C" --frob -o c x
expect 2 "no cache directory (-o DIR)" "$C" x
expect 2 "no INPUT given" "$C" -o c
expect 2 "--level: 30 is out of range" "$C" --level 30 -o c x
expect 2 "--dtype: 'f16' is not one of u8|f32" "$C" --dtype f16 -o c x
expect 2 "--verify takes one CACHE and no -o" "$C" --verify
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$SRC/man/mgpu-cache.1" || fail "man lint"
fi

mkidx d 300 60 6 4
"$S" -q --val-fraction 0.2 --shard-size 64 --ranks 2 -d sh d >m.tsv
"$S" -q --val-fraction 0.2 --shard-size 64 --ranks 2 -d sh d | "$C" -q -o c1 - >b1.tsv
grep -q "^train	240	1x6x6	u8	4	.*	built	" b1.tsv || fail "pipeline build: $(cat b1.tsv)"
grep -q "^val	60	" b1.tsv && grep -q "^test	60	" b1.tsv || fail "splits: $(cat b1.tsv)"

# Built once: the second run does nothing; an option or a source change rebuilds.
"$C" -o c2 --chunk-size 1K m.tsv >/dev/null 2>err.txt
t0=$(stat -c %Y.%N c2/mgpu.cache 2>/dev/null || stat -c %Y c2/mgpu.cache)
ino0=$(stat -c %i c2/mgpu.cache)
"$C" -o c2 --chunk-size 1K m.tsv >b2.tsv 2>err.txt
grep -q "'c2' is up to date" err.txt || fail "second build: $(cat err.txt)"
cut -f 13 b2.tsv | sort -u | grep -qx current || fail "status: $(cat b2.tsv)"
[ "$(stat -c %i c2/mgpu.cache)" = "$ino0" ] || fail "the second build rewrote the cache"
"$C" -q -o c2 --chunk-size 2K m.tsv | grep -q "	built	" || fail "a changed option did not rebuild"
"$C" -q -o c2 --chunk-size 2K m.tsv | grep -q "	current	" || fail "not current after rebuild"
touch -d '2001-01-01' sh/val-000001.tar
"$C" -q -o c2 --chunk-size 2K m.tsv | grep -q "	built	" || fail "a touched shard did not rebuild"
"$C" -q -o c2 --chunk-size 2K --force m.tsv | grep -q "	built	" || fail "--force"
ls -a c2 | grep -q tmp && fail "temporaries left: $(ls -a c2)"
# A temporary of a builder that was killed is removed by the next build.
dead=$(sh -c 'echo $$')
touch "c2/mgpu.cache.tmp.$dead"
"$C" -q -o c2 --chunk-size 2K --force m.tsv >/dev/null
[ ! -e "c2/mgpu.cache.tmp.$dead" ] || fail "a dead builder's temporary stays"

# Shard files by name, and a tar stream on stdin (all train).
"$C" -q -o c3 --raw sh/train-*.tar sh/val-*.tar | cut -f 1,2,8 >b3.tsv
printf 'split\tsamples\tcompression\ntrain\t240\traw\nval\t60\traw\n' | cmp - b3.tsv || fail "shard files: $(cat b3.tsv)"
cat sh/train-000000.tar | "$C" -q -o c4 - | cut -f 1,2 | grep -qx "$(printf 'train\t60')" ||
	fail "tar stream"
# A regular file on stdin is read once, from where the sniffing stopped
# (a manifest longer than the sniffed head, and a tar file).
[ "$(wc -c <m.tsv)" -gt 512 ] || fail "m.tsv too short to test stdin"
"$C" -q -o c8 - <m.tsv | cut -f 1,2 >b8.tsv || fail "manifest file on stdin"
cut -f 1,2 b1.tsv | cmp - b8.tsv || fail "manifest file on stdin: $(cat b8.tsv)"
"$C" -q -o c9 - <sh/train-000000.tar | cut -f 1,2 | grep -qx "$(printf 'train\t60')" ||
	fail "tar file on stdin"
# (.zst made with libzstd by a helper make builds: no zstd program needed)
ZST=$(dirname "$BIN")/tests/drv/zst_drv
[ -x "$ZST" ] || fail "$ZST is missing: make builds it"
"$ZST" <sh/train-000000.tar | "$C" -q -o c5 - | cut -f 1,2 |
	grep -qx "$(printf 'train\t60')" || fail "tar.zst stream"
"$C" --info --json c1 | grep -q '"split":"val","samples":60,"shape":"1x6x6","dtype":"u8"' ||
	fail "--info: $("$C" --info --json c1)"
"$C" -q --verify c1 | grep -q "	verified	" || fail "--verify of a good cache"

# One flipped byte: --verify fails naming the chunk, exit 1.
"$C" -q -o c6 --chunk-size 256 m.tsv >/dev/null
python3 - c6/mgpu.cache <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
ix = struct.unpack_from("<Q", b, 144)[0]
off, n = struct.unpack_from("<QQ", b, ix + 2 * 48)
b[off + n // 2] ^= 0x40
open(p, "wb").write(b)
PY
expect 1 "'c6/mgpu.cache': chunk 2 (train rows 14..20): checksum mismatch" "$C" --verify c6
cp c1/mgpu.cache hdr.cache && printf 'X' | dd of=hdr.cache bs=1 seek=70 conv=notrunc 2>/dev/null
expect 1 "'hdr.cache': header checksum mismatch" "$C" --verify hdr.cache

# Four concurrent builders: one builds, the others wait and find it built.
for i in 1 2 3 4; do "$C" -o c7 --level 5 m.tsv >par$i.tsv 2>par$i.err & done
wait
[ "$(cat par*.tsv | grep -c '	built	')" = 3 ] || fail "builders: $(cat par*.tsv par*.err)"
[ "$(cat par*.tsv | grep -c '	current	')" = 9 ] || fail "waiters: $(cat par*.tsv)"
"$C" -q --verify c7 >/dev/null || fail "concurrent build left a bad cache"
[ "$(ls -a c7 | wc -l)" = 4 ] || fail "c7 holds: $(ls -a c7)"

# SIGINT and SIGTERM stop a long build (zstd level 19): exit 130 or 143, no
# new cache directory left, and a cache being rebuilt keeps its old file.
mkidx_big big 8000
"$S" -q -o bigsh/m.tsv big
interrupted INT 1 130 "$C" -q --level 19 -o cbig bigsh/m.tsv
[ ! -e cbig ] || fail "SIGINT left cbig/: $(ls -a cbig)"
"$C" -q --level 1 -o cbig bigsh/m.tsv >/dev/null
cp cbig/mgpu.cache old.cache
interrupted TERM 1 143 "$C" -q --level 19 --force -o cbig bigsh/m.tsv
cmp -s old.cache cbig/mgpu.cache || fail "an interrupted rebuild changed the cache"
[ "$(ls -A cbig | sort | tr '\n' ' ')" = ".lock mgpu.cache " ] || fail "cbig holds: $(ls -A cbig)"
rm -rf big bigsh cbig old.cache

# Bad inputs: exit 1, one line naming the file, no cache directory left.
cp sh/train-000001.tar saved.tar
printf 'x' | dd of=sh/train-000001.tar bs=1 seek=700 conv=notrunc 2>/dev/null
expect 1 "'./sh/train-000001.tar': sha256 differs from the manifest's" "$C" -o bad m.tsv
cp saved.tar sh/train-000001.tar
head -c 5000 sh/train-000000.tar >cut.tar
expect 1 "'cut.tar': entry '" "$C" -o bad cut.tar
python3 - <<'PY'
import io, struct, tarfile
hdr = b"\x93NUMPY\x01\x00v\x00" + b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }".ljust(117) + b"\n"
with tarfile.open("nan.tar", "w") as t:
    for name, data in (("k.npy", hdr + struct.pack("<ff", 1.0, float("inf"))), ("k.cls", b"0")):
        m = tarfile.TarInfo(name); m.size = len(data); t.addfile(m, io.BytesIO(data))
PY
expect 1 "'nan.tar': entry 'k.npy': element 1 is inf; features must be finite" "$C" -o bad nan.tar
printf 'split\tpath\tsamples\tbytes\tsha256\ntrain\tnone.tar\t1\t1\t%064d\n' 0 >m2.tsv
expect 1 "none.tar" "$C" -o bad m2.tsv
# A shard listed twice, a wrong bytes column, no train split, and options
# that contradict each other are refused.
{ cat m.tsv; tail -n 1 m.tsv; } >dup.tsv
expect 1 "'dup.tsv': line $(($(wc -l <m.tsv) + 1)): shard './$(tail -n 1 m.tsv | cut -f 2)' is listed twice" \
	"$C" -o bad dup.tsv
awk -F '\t' -v OFS='\t' 'NR == 2 { want = $4; $4 = $4 + 1 } { print }
	END { print want > "want.txt" }' m.tsv >bytes.tsv
expect 1 "'./$(sed -n 2p m.tsv | cut -f 2)': $(cat want.txt) bytes, the manifest says $(($(cat want.txt) + 1))" \
	"$C" -o bad bytes.tsv
grep -v '^train' m.tsv >notrain.tsv
expect 1 "'notrain.tsv': no training samples to cache" "$C" -o bad notrain.tsv
: | expect 1 "'-': no training samples to cache" "$C" -o bad -
expect 2 "--normalize stores float32; it does not go with --dtype u8" \
	"$C" --normalize --dtype u8 -o bad m.tsv
printf 'split\tpath\n' >m3.tsv
expect 1 "'m3.tsv': line 1: not a shard manifest" "$C" -o bad m3.tsv
echo 'not a tar' | expect 1 "'-': not a readable tar or zip archive" "$C" -o bad -
[ ! -e bad ] || fail "a failed build left bad/: $(ls -a bad)"
exit 0

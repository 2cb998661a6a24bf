#!/bin/sh
# run.sh [SECONDS] [NAME...] - build and run the libFuzzer harnesses.
#
# Each tests/fuzz/fuzz_NAME.c is compiled with clang
# (-fsanitize=fuzzer,address,undefined) directly against the few lib/
# sources it needs and run for SECONDS (default 20) with -max_total_time,
# starting from a small seed corpus generated here. Builds, corpora and
# crash files go under build/fuzz/ (FUZZ_OUT overrides). Exits non-zero when
# a harness fails to build or finds a crash, leak or sanitizer error.
set -u
secs=${1:-20}
[ $# -gt 0 ] && shift
names=${*:-idx json safetensors csv npy wds cache smi text tokens bpe manifest conf ts png jpeg keypoints}
out=${FUZZ_OUT:-build/fuzz}
CLANG=${CLANG:-clang}
cd "$(dirname "$0")/../.." || exit 2
command -v "$CLANG" >/dev/null 2>&1 || { echo "fuzz: $CLANG not found" >&2; exit 2; }
mkdir -p "$out" || exit 2

srcs_for() {
	case $1 in
	idx) echo "lib/core/err.c lib/data/idx.c lib/data/decomp.c" ;;
	json) echo "lib/core/err.c lib/core/json.c" ;;
	safetensors) echo "lib/core/err.c lib/core/io.c lib/core/cancel.c lib/core/json.c lib/nn/safetensors.c" ;;
	csv) echo "lib/core/err.c lib/data/csv.c lib/data/samples.c lib/data/class_names.c lib/data/decomp.c" ;;
	npy) echo "lib/core/err.c lib/data/npy.c lib/data/netpbm.c lib/data/decomp.c" ;;
	wds) echo "lib/core/err.c lib/core/cancel.c lib/core/io.c lib/core/sha256.c lib/core/json.c lib/data/target.c lib/data/wds.c lib/data/image.c lib/data/image_decode.c lib/data/image_png.c lib/data/image_jpeg.c lib/data/npy.c lib/data/netpbm.c lib/data/samples.c lib/data/class_names.c lib/data/decomp.c" ;;
	cache) echo "lib/core/err.c lib/core/cancel.c lib/data/cache.c lib/data/xxh64.c lib/data/samples.c lib/data/class_names.c lib/data/split.c lib/core/rng.c" ;;
	smi) echo "lib/core/err.c lib/core/cli.c lib/gpu/gpu.c" ;;
	text) echo "lib/core/err.c lib/core/io.c lib/core/cancel.c lib/data/text.c lib/data/samples.c lib/data/class_names.c" ;;
	tokens) echo "lib/core/err.c lib/core/io.c lib/core/cancel.c lib/data/tokens.c lib/data/text.c lib/data/samples.c lib/data/class_names.c" ;;
	bpe) echo "lib/core/err.c lib/core/io.c lib/core/cancel.c lib/data/bpe.c" ;;
	manifest) echo "lib/core/err.c lib/core/cancel.c lib/core/io.c lib/core/json.c lib/core/table.c lib/core/sha256.c lib/core/rng.c lib/data/manifest.c lib/data/split.c lib/data/target.c lib/data/wds.c lib/data/image.c lib/data/image_decode.c lib/data/image_png.c lib/data/image_jpeg.c lib/data/npy.c lib/data/netpbm.c lib/data/samples.c lib/data/class_names.c lib/data/decomp.c" ;;
	png|jpeg) echo "lib/core/err.c lib/data/samples.c lib/data/class_names.c lib/data/image.c lib/data/image_decode.c lib/data/image_png.c lib/data/image_jpeg.c" ;;
	conf) echo "lib/core/err.c lib/core/io.c lib/core/cancel.c lib/core/cli.c lib/core/opt.c lib/core/conf.c" ;;
	keypoints) echo "lib/core/err.c lib/core/json.c lib/data/target.c lib/data/samples.c lib/data/class_names.c" ;;
	ts) echo "lib/core/err.c lib/data/ts.c lib/data/samples.c lib/data/class_names.c lib/data/decomp.c" ;;
	*) return 1 ;;
	esac
}

# A few valid inputs so the fuzzer starts past the magic numbers.
seed() {
	c=$out/corpus-$1
	mkdir -p "$c"
	case $1 in
	idx)
		printf '\0\0\10\1\0\0\0\3abc' >"$c/u8"
		printf '\0\0\13\2\0\0\0\1\0\0\0\2\1\2\3\4' >"$c/i16"
		printf '\0\0\16\1\0\0\0\1\77\360\0\0\0\0\0\0' >"$c/f64" ;;
	json)
		printf '{"a":[1,-2.5e3,true,false,null],"b":"x\\u00e9\\ud83d\\ude00"}' >"$c/obj"
		printf '[[[]],{},"\\n\\t\\"",0.1]' >"$c/arr" ;;
	safetensors)
		printf 'J{"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},"h":{"dtype":"F16","shape":[],"data_offsets":[8,10]}}\n12345678ab' >"$c/st"
		printf 'J{"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}\nxy' >"$c/st2" ;;
	smi)
		cp tests/data/smi/four.csv tests/data/smi/na.csv tests/data/smi/reordered.csv "$c/"
		cp tests/data/smi/four-noheader-nounits.csv "$c/noheader.csv" ;;
	csv)
		printf 'a,label,"b c"\n1.5,2,-3e2\r\n\n"4",0,5\n' >"$c/ok"
		printf 'x,y\n1,2\n3,4' >"$c/idx"
		printf 'a,b,y,label\n1,2,3,0\n4,5,6,1\n' >"$c/target" ;;
	manifest)
		printf 'split\tpath\tsamples\tbytes\tsha256\ntrain\ttrain-000000.tar\t5\t10240\t%064d\nval\t/a b/v.tar\t1\t2\t%064d\r\n' 0 1 >"$c/m" ;;
	conf)
		printf '# c\nbatch_size = 7 # x\nlr=0.5\nflag = yes\nname = "a # b \\"c\\"\\t"\n' >"$c/ok"
		printf 'name = x#y\nflag = off\nlr = 1\nlr = 2' >"$c/last" ;;
	ts)
		cp tests/data/ts/Tiny_TRAIN.ts "$c/tiny"
		printf '@problemName U\n@univariate true\n@classLabel true 1 2\n@data\n1,2,3:1\n4,5,6:2\n' >"$c/uni" ;;
	keypoints)
		printf '[[1.5, 2], null, [3, 4, 0], [5e1, -6, 2]]' >"$c/list"
		printf '{"image": "a.png", "keypoints": [[7, 8], null]}' >"$c/obj"
		printf '{"caption": "a cat"}' >"$c/meta" ;;
	text)
		printf '\3the cat sat on the mat\n' >"$c/t3"
		printf '\0ab' >"$c/t1" ;;
	png)
		# gray 8-bit, RGB 8-bit interlaced-free, 16-bit gray, palette (zlib + struct)
		python3 - "$c" <<'PY' || return 1
import struct, sys, zlib
def png(path, w, h, depth, ct, raw, extra=b""):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    d = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ct, 0, 0, 0))
    open(sys.argv[1] + "/" + path, "wb").write(d + extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return chunk
png("g8", 3, 2, 8, 0, b"\0\1\2\3\0\4\5\6")
png("rgb", 2, 2, 8, 2, b"\0" + bytes(range(6)) + b"\1" + bytes(range(6)))
png("g16", 2, 1, 16, 0, b"\0\1\2\3\4")
chunk = png("x", 1, 1, 8, 0, b"")
png("pal", 2, 1, 1, 3, b"\0\x40", chunk(b"PLTE", bytes(range(6))))
PY
		;;
	jpeg)
		cp tests/data/img/*.jpg "$c/" ;;
	bpe)
		printf 'mgpu-bpe 1 3\n116 104\n256 101\n32 257\n' >"$c/file"
		printf '\20the cat sat on the mat, the cat.\n' >"$c/learn" ;;
	tokens)
		printf '\2\0\1\0\2\0\3\0\4\0' >"$c/raw"
		{ printf '\103\0\110\327\64\1\1\0\0\0\3\0\0\0'; head -c 1012 /dev/zero; printf '\1\0\2\0\3\0'; } >"$c/llmc" ;;
	npy|wds)
		python3 - "$c" "$1" <<'PY' || return 1
import io, sys, tarfile
c, kind = sys.argv[1], sys.argv[2]
def npy(descr, shape, data):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h = h.ljust(64 * ((len(h) + 11) // 64 + 1) - 11) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + data
pgm = b"P5\n# c\n3 2\n255\n" + bytes(range(6))
if kind == "npy":
    open(c + "/u8", "wb").write(npy("|u1", "(2, 3)", bytes(6)))
    open(c + "/f8", "wb").write(npy("<f8", "(1,)", bytes(8)))
    open(c + "/pgm", "wb").write(pgm)
else:
    with tarfile.open(c + "/t", "w", format=tarfile.USTAR_FORMAT) as t:
        for name, d in (("a.npy", npy("|u1", "(2, 3)", bytes(6))), ("a.cls", b"3"),
                        ("b.x.pgm", pgm), ("b.cls", b"1")):
            m = tarfile.TarInfo(name); m.size = len(d); t.addfile(m, io.BytesIO(d))
    # targets: keypoint JSON, a mask, a regression vector
    for name, items in (("k", (("a.npy", npy("|u1", "(1, 2, 3)", bytes(6))),
                               ("a.json", b"[[1, 0.5], null]"),
                               ("b.npy", npy("|u1", "(1, 2, 3)", bytes(6))),
                               ("b.json", b'{"keypoints": [[2, 1], [0, 0, 0]]}'))),
                        ("m", (("a.npy", npy("|u1", "(1, 2, 3)", bytes(6))),
                               ("a.mask.npy", npy("|u1", "(2, 3)", bytes([0, 1, 2, 255, 1, 0]))),
                               ("a.cls", b"0"))),
                        ("v", (("a.npy", npy("<f4", "(2,)", bytes(8))),
                               ("a.target.npy", npy("<f8", "(3,)", bytes(24)))))):
        with tarfile.open(c + "/" + name, "w", format=tarfile.USTAR_FORMAT) as t:
            for n, d in items:
                m = tarfile.TarInfo(n); m.size = len(d); t.addfile(m, io.BytesIO(d))
PY
		;;
	cache)
		tools=${MGPU_BUILD:-build}/bin
		[ -f "$c/raw" ] && return 0
		[ -x "$tools/mgpu-cache" ] || { echo "fuzz: no $tools/mgpu-cache for seeds" >&2; return 0; }
		seed wds >/dev/null 2>&1
		"$tools/mgpu-cache" -q -o "$out/seedc" --chunk-size 8 "$out/corpus-wds/t" >/dev/null &&
			cp "$out/seedc/mgpu.cache" "$out/corpus-cache/z" &&
			"$tools/mgpu-cache" -q -o "$out/seedr" --raw --chunk-size 8 "$out/corpus-wds/t" \
				>/dev/null && cp "$out/seedr/mgpu.cache" "$out/corpus-cache/raw" ;;
	esac
}

fail=0
for name in $names; do
	srcs=$(srcs_for "$name") || { echo "fuzz: unknown harness '$name'" >&2; fail=1; continue; }
	bin=$out/fuzz_$name
	# shellcheck disable=SC2086
	if ! "$CLANG" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -Ilib -o "$bin" "tests/fuzz/fuzz_$name.c" $srcs \
		-larchive -lzstd -lpng -ljpeg -lpthread; then
		echo "fuzz: $name: build failed" >&2
		fail=1
		continue
	fi
	seed "$name"
	mkdir -p "$out/crash-$name"
	echo "fuzz: $name for ${secs}s" >&2
	if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
		-print_final_stats=1 -artifact_prefix="$out/crash-$name/" \
		"$out/corpus-$name" >"$out/$name.log" 2>&1; then
		echo "fuzz: $name: FAILED, see $out/$name.log and $out/crash-$name/" >&2
		tail -n 40 "$out/$name.log" >&2
		fail=1
		continue
	fi
	grep -E '^stat::number_of_executed_units|^#[0-9]+ *DONE' "$out/$name.log" | tail -n 2 >&2
done
exit $fail

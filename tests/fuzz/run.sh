#!/bin/sh
# run.sh [SECONDS] [NAME...] - build and run the libFuzzer harnesses.
#
# Each tests/fuzz/fuzz_NAME.c is compiled with clang
# (-fsanitize=fuzzer,address,undefined), linked against an archive of all
# of lib/ built with the same sanitizers, and run for SECONDS (default 20) with -max_total_time,
# starting from a small seed corpus generated here. Builds, corpora and
# crash files go under build/fuzz/ (FUZZ_OUT overrides). Exits non-zero when
# a harness fails to build or finds a crash, leak or sanitizer error.
set -u
secs=${1:-20}
[ $# -gt 0 ] && shift
out=${FUZZ_OUT:-build/fuzz}
CLANG=${CLANG:-clang}
cd "$(dirname "$0")/../.." || exit 2
names=${*:-$(for f in tests/fuzz/fuzz_*.c; do f=${f#tests/fuzz/fuzz_}; echo "${f%.c}"; done)}
command -v "$CLANG" >/dev/null 2>&1 || { echo "fuzz: $CLANG not found" >&2; exit 2; }
mkdir -p "$out" || exit 2

# Every harness links one archive of all of lib/, built by the Makefile
# with clang and the sanitizers (fuzzer-no-link: the coverage the fuzzer
# steers by) under $out/lib/san, so a harness needs no list of the sources
# its code reaches; make rebuilds only what changed, and the link takes the
# same libraries the tools do.
lib_build() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s CC="$CLANG" CFLAGS="-O1 -g" CUDA=0 MPI=0 WERROR= \
		SANITIZE=fuzzer-no-link,address,undefined B="$out/lib" "$@"
}
if ! lib_build "$out/lib/san/libmgpu.a" >"$out/lib.log" 2>&1; then
	echo "fuzz: building the instrumented lib/ failed, see $out/lib.log" >&2
	tail -n 20 "$out/lib.log" >&2
	exit 1
fi
ldlibs=$(lib_build print-ldlibs) || exit 1

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
		printf 'x,y\n1,2\n3,4' >"$c/idx" ;;
	manifest)
		printf 'split\tpath\tsamples\tbytes\tsha256\ntrain\ttrain-000000.tar\t5\t10240\t%064d\nval\t/a b/v.tar\t1\t2\t%064d\r\n' 0 1 >"$c/m" ;;
	conf)
		printf '# c\nbatch_size = 7 # x\nlr=0.5\nflag = yes\nname = "a # b \\"c\\"\\t"\n' >"$c/ok"
		printf 'name = x#y\nflag = off\nlr = 1\nlr = 2' >"$c/last" ;;
	ts)
		cp tests/data/ts/Tiny_TRAIN.ts "$c/tiny"
		printf '@problemName U\n@univariate true\n@classLabel true 1 2\n@data\n1,2,3:1\n4,5,6:2\n' >"$c/uni" ;;
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
	gpt2merges)
		cp tests/data/gpt2tok/vocab.bpe "$c/fixture"
		printf '#version: 0.2\n\304\240 t\nh e\n\304\240t he\n' >"$c/small" ;;
	gpt2enc)
		cp tests/data/gpt2tok/encoder.json "$c/fixture" ;;
	tiktoken)
		# the fixture's encoder.json as ranks (base64 bytes, rank = id)
		python3 - "$c" <<'PY' || return 1
import base64, json, sys
u = [c for c in range(256) if chr(c).isprintable() and chr(c) != " "]
cs = u + [256 + n for n in range(256 - len(u))]
dec = dict(zip(map(chr, cs), u + [b for b in range(256) if b not in u]))
enc = json.load(open("tests/data/gpt2tok/encoder.json", encoding="utf-8"))
with open(sys.argv[1] + "/fixture", "w") as f:
    for tok, i in sorted(enc.items(), key=lambda kv: kv[1]):
        if tok != "<|endoftext|>":
            f.write("%s %d\n" % (base64.b64encode(bytes(dec[c] for c in tok)).decode(), i))
PY
		;;
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
        # the .npy has the .pgm's shape (1x2x3), so the cache seeds build
        for name, d in (("a.npy", npy("|u1", "(1, 2, 3)", bytes(6))), ("a.cls", b"3"),
                        ("b.x.pgm", pgm), ("b.cls", b"1")):
            m = tarfile.TarInfo(name); m.size = len(d); t.addfile(m, io.BytesIO(d))
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
	[ -f "tests/fuzz/fuzz_$name.c" ] || { echo "fuzz: unknown harness '$name'" >&2; fail=1; continue; }
	bin=$out/fuzz_$name
	# shellcheck disable=SC2086
	if ! "$CLANG" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -Ilib -I"$out/lib/san" -o "$bin" "tests/fuzz/fuzz_$name.c" \
		"$out/lib/san/libmgpu.a" $ldlibs; then
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

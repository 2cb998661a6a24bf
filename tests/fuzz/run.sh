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
names=${*:-idx json safetensors}
out=${FUZZ_OUT:-build/fuzz}
CLANG=${CLANG:-clang}
cd "$(dirname "$0")/../.." || exit 2
command -v "$CLANG" >/dev/null 2>&1 || { echo "fuzz: $CLANG not found" >&2; exit 2; }
mkdir -p "$out" || exit 2

srcs_for() {
	case $1 in
	idx) echo "lib/core/err.c lib/data/idx.c lib/data/decomp.c" ;;
	json) echo "lib/core/err.c lib/core/json.c" ;;
	safetensors) echo "lib/core/err.c lib/core/io.c lib/core/json.c lib/nn/safetensors.c" ;;
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
	esac
}

fail=0
for name in $names; do
	srcs=$(srcs_for "$name") || { echo "fuzz: unknown harness '$name'" >&2; fail=1; continue; }
	bin=$out/fuzz_$name
	# shellcheck disable=SC2086
	if ! "$CLANG" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -Ilib -o "$bin" "tests/fuzz/fuzz_$name.c" $srcs \
		-larchive; then
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

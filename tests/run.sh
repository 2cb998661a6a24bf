#!/bin/sh
# run.sh BUILD [SAN_BUILD] - run every test: the C test binaries (one
# PASS/FAIL/SKIP line per test), the CLI scripts tests/cli/*.sh (one verdict
# each from their exit status: 0 pass, 77 skip, else fail; stdin is
# /dev/null, whatever run.sh got), the C test
# binaries of SAN_BUILD (sanitizer build) when given, and each libFuzzer
# harness for FUZZ_SECS seconds when FUZZ_SECS > 0. Ends with
# "N passed, N failed, N skipped"; exits non-zero when anything failed.
B=${1:-build}
SAN=${2:-}
export MGPU_BUILD=$B
pass=0 fail=0 skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count() { # count PREFIX RC: tally the lines of $log
	p=$(grep -c '^PASS ' "$log") f=$(grep -c '^FAIL ' "$log") s=$(grep -c '^SKIP ' "$log")
	sed "s|^\(PASS\|FAIL\|SKIP\) |\1 $1|" "$log"
	if [ "$2" != 0 ] && [ "$f" = 0 ]; then
		echo "FAIL $1: exited $2"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
}

binaries() { # binaries BUILD PREFIX
	for t in "$1"/tests/unit/* "$1"/tests/ops/*; do
		[ -x "$t" ] || continue
		"$t" >"$log" 2>&1 </dev/null
		count "$2" $?
	done
}

verdict() { # verdict NAME RC
	case $2 in
	0) echo "PASS $1"; pass=$((pass + 1)) ;;
	77) echo "SKIP $1: $(tail -n 1 "$log")"; skip=$((skip + 1)) ;;
	*) echo "FAIL $1 (exit $2):"; sed 's/^/    /' "$log" | tail -n 30
	   fail=$((fail + 1)) ;;
	esac
}

binaries "$B" ""
for t in tests/cli/*.sh; do
	[ -f "$t" ] || continue
	case $t in */lib.sh) continue ;; esac
	bash "$t" >"$log" 2>&1 </dev/null
	verdict "cli/$(basename "$t" .sh)" $?
done
[ -n "$SAN" ] && binaries "$SAN" "san/"
if [ "${FUZZ_SECS:-0}" -gt 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do
		name=$(basename "$f" .c)
		name=${name#fuzz_}
		FUZZ_OUT=$B/fuzz sh tests/fuzz/run.sh "$FUZZ_SECS" "$name" >"$log" 2>&1
		verdict "fuzz/$name" $?
	done
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]

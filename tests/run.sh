#!/bin/sh
# run.sh BUILD - run every test: the C test binaries (one PASS/FAIL/SKIP line
# per test) and the CLI scripts tests/cli/*.sh (one verdict each, from their
# exit status: 0 pass, 77 skip, else fail). Ends with "N passed, N failed,
# N skipped" and exits non-zero when anything failed.
B=${1:-build}
export MGPU_BUILD=$B
pass=0 fail=0 skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in "$B"/tests/unit/* "$B"/tests/ops/*; do
	[ -x "$t" ] || continue
	"$t" >"$log" 2>&1
	rc=$?
	cat "$log"
	p=$(grep -c '^PASS ' "$log") f=$(grep -c '^FAIL ' "$log") s=$(grep -c '^SKIP ' "$log")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "FAIL $t: exited $rc"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
done

for t in tests/cli/*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	bash "$t" >"$log" 2>&1
	rc=$?
	case $rc in
	0) echo "PASS cli/$name"; pass=$((pass + 1)) ;;
	77) echo "SKIP cli/$name: $(tail -n 1 "$log")"; skip=$((skip + 1)) ;;
	*) echo "FAIL cli/$name (exit $rc):"; sed 's/^/    /' "$log" | tail -n 30
	   fail=$((fail + 1)) ;;
	esac
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]

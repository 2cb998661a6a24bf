# make gpu-check (mk/gpu-check.sh): on a machine without an eligible GPU it
# fails with one line saying so; with one, every check must pass.
. tests/cli/lib.sh
if "$BIN/mgpu-probe" --ids >/dev/null 2>&1; then
	sh "$SRC/mk/gpu-check.sh" "${BIN%/bin}" >out.txt 2>&1 || fail "gpu-check: $(cat out.txt)"
	grep -q "^PASS selftest" out.txt && grep -q "^PASS conformance" out.txt &&
		grep -q "^PASS train" out.txt || fail "gpu-check lacks a check: $(cat out.txt)"
else
	expect 1 "gpu-check: error: no eligible GPU: " sh "$SRC/mk/gpu-check.sh" "${BIN%/bin}"
fi

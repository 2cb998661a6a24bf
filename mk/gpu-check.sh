#!/bin/sh
# gpu-check.sh BUILD - the check a user runs on a new GPU machine (make
# gpu-check): the selftest (every GPU op and 5 training steps against the CPU
# backend), the backend conformance suite with its cuda rows, when
# compute-sanitizer is installed a 30-step memcheck of the MLP, the
# conformance suite under memcheck, racecheck and synccheck and a memcheck
# of 5 bf16 steps of a small gpt, two ranks
# sharing the GPU through --sync-backend cpu against one rank (50 steps
# within 1e-4), and a 10-epoch training on Fashion-MNIST that must reach a
# test accuracy of 0.85.
# It uses the first GPU that mgpu-probe finds eligible. Prints one
# PASS/FAIL/SKIP line per check and "N passed, N failed, N skipped"; exits 1
# when a check failed or no GPU is eligible.
set -u
B=${1:-build}
log=$(mktemp -d) || exit 1
trap 'rm -rf "$log"' EXIT
pass=0 fail=0 skip=0

ok() { echo "PASS $1: $2"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

gpu=$("$B/bin/mgpu-probe" --ids 2>"$log/probe") && gpu=${gpu%%,*}
if [ -z "$gpu" ]; then
	echo "gpu-check: error: no eligible GPU: $(cat "$log/probe")" >&2
	exit 1
fi
echo "gpu-check: GPU $gpu: $("$B/bin/mgpu-probe" --json 2>/dev/null | grep -o '"name":"[^"]*"' | head -n 1)"

# selftest: must pass and must have compared the cuda backend
if "$B/bin/mgpu-train" --selftest --gpus "$gpu" >"$log/st" 2>"$log/st.err" &&
	grep -q "	cuda	" "$log/st"; then
	ok selftest "$(grep -c "	cuda	" "$log/st") cuda comparisons within tolerance"
else
	bad selftest "$(tail -n 2 "$log/st.err" | tr '\n' ' ')"
fi

# conformance: every op of every backend, and the cuda rows must have run
"$B/tests/ops/conformance" >"$log/conf" 2>&1
rc=$?
if [ "$rc" = 0 ] && ! grep -q "^SKIP cuda" "$log/conf"; then
	ok conformance "$(grep -c "^PASS cuda" "$log/conf") cuda cases"
else
	bad conformance "exit $rc: $(grep -E "^(FAIL|SKIP)" "$log/conf" | head -n 3 | tr '\n' ' ')"
fi

# memcheck of 5 steps of a small gpt in bf16 (emb, attention, the bf16
# GEMMs) on a text of its own, and of its generation
gpt_memcheck() {
	i=0
	while [ $i -lt 400 ]; do
		echo "line $i: the quick brown fox jumps over the lazy dog"
		i=$((i + 1))
	done >"$log/text.txt"
	"$B/bin/mgpu-shard" -q --text --context 32 -o "$log/lm/manifest.tsv" "$log/text.txt" &&
		"$B/bin/mgpu-cache" -q -o "$log/lm/cache" "$log/lm/manifest.tsv" >/dev/null ||
		{ bad gpt-memcheck "could not make the text cache"; return; }
	"$san" --tool memcheck --leak-check full --error-exitcode 3 "$B/bin/mgpu-train" \
		--gpus "$gpu" --data "$log/lm/cache" --model gpt:layers=2,heads=2,dim=64,ctx=32 \
		--dtype bf16 --optimizer adamw --lr 1e-3 --batch-size 4 --max-steps 5 \
		--sample 8 --prompt line -q >"$log/gmc" 2>&1
	rc=$?
	if [ "$rc" = 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$log/gmc"; then
		ok gpt-memcheck "5 bf16 steps and 8 sampled bytes, 0 errors"
	else
		bad gpt-memcheck "exit $rc: $(grep -E "SUMMARY|rror" "$log/gmc" | head -n 3 |
			tr '\n' ' ')"
	fi
}

san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
# compute-sanitizer reports on stdout, so the logs take stdout and stderr
if [ -n "$san" ]; then
	"$san" --tool memcheck --leak-check full --error-exitcode 3 \
		"$B/bin/mgpu-train" --gpus "$gpu" --epochs 1 --max-steps 30 -q >"$log/mc" 2>&1
	rc=$?
	if [ "$rc" = 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$log/mc"; then
		ok memcheck "30 steps: $(grep -o 'LEAK SUMMARY: .*' "$log/mc" | head -n 1), 0 errors"
	else
		bad memcheck "exit $rc: $(grep -E "SUMMARY|error" "$log/mc" | head -n 3 | tr '\n' ' ')"
	fi
	# the conformance suite's cuda rows (every op, the row kernels' edge
	# geometry) under each tool: the column kernels share memory across a
	# block, so racecheck and synccheck too; then a few gpt steps in bf16
	for tool in memcheck racecheck synccheck; do
		"$san" --tool "$tool" --error-exitcode 3 "$B/tests/ops/conformance" \
			>"$log/san" 2>&1
		rc=$?
		# racecheck sums up as "RACECHECK SUMMARY: 0 hazards", the others
		# as "ERROR SUMMARY: 0 errors"
		if [ "$rc" = 0 ] &&
			grep -q -E "(ERROR|RACECHECK) SUMMARY: 0 (errors|hazards)" "$log/san"; then
			ok "conformance-$tool" "0 errors"
		else
			bad "conformance-$tool" "exit $rc: $(grep -E "SUMMARY|rror" "$log/san" |
				head -n 3 | tr '\n' ' ')"
		fi
	done
	gpt_memcheck
else
	echo "SKIP memcheck: compute-sanitizer not found"
	skip=$((skip + 1))
fi

# two ranks on one GPU (--sync-backend cpu: buckets staged through shared
# memory) against one rank at the same global batch: 50 steps within 1e-4
steps="--epochs 1 --max-steps 50 --log-every 1 -q"
"$B/bin/mgpu-train" --gpus "$gpu" --batch-size 64 $steps >"$log/one" 2>"$log/one.err" &&
"$B/bin/mgpu-train" --gpus "$gpu,$gpu" --sync-backend cpu --batch-size 32 $steps \
	>"$log/two" 2>"$log/two.err"
rc=$?
worst=$(awk -F'\t' '$1 != "step" { next }
	FNR == NR { ref[$2] = $4; next }
	{ n++; d = $4 - ref[$2]; if (d < 0) d = -d; r = d / (ref[$2] > 0 ? ref[$2] : 1)
	  if (r > w) w = r }
	END { if (n != 50) print "NA"; else printf "%.3g\n", w }' "$log/one" "$log/two")
if [ "$rc" = 0 ] && [ "$worst" != NA ] && awk "BEGIN { exit !($worst <= 1e-4) }"; then
	ok shared-gpu "2 ranks on GPU $gpu (cpu sync) = 1 rank over 50 steps, worst relative loss difference $worst"
else
	bad shared-gpu "exit $rc, worst relative difference ${worst:-NA}: $(tail -n 1 "$log/two.err")"
fi

# training: the default MLP on Fashion-MNIST, 10 epochs
"$B/bin/mgpu-train" --gpus "$gpu" --epochs 10 -q >"$log/tr" 2>"$log/tr.err"
rc=$?
acc=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$1 == "summary" { print $c["test_acc"] " " $c["samples_per_s"] " " $c["wall_s"] }' "$log/tr")
set -- $acc
if [ "$rc" = 0 ] && [ -n "${1:-}" ] && awk "BEGIN { exit !($1 >= 0.85) }"; then
	ok train "test_acc $1, $2 samples/s, ${3}s of training"
else
	bad train "exit $rc, test_acc ${1:-NA}: $(tail -n 1 "$log/tr.err")"
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]

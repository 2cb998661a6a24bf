# mgpu-probe --ids | mgpu-train --gpus -: the ids line mgpu-probe prints
# reaches mgpu-train's GPU selection, which fails with a clear message on
# a machine without those GPUs, never hangs. Skips (77) while mgpu-train
# rejects --gpus - as a usage error.
. tests/cli/lib.sh
unset CUDA_VISIBLE_DEVICES
P=$BIN/mgpu-probe
D=$SRC/tests/data/smi
"$P" --from "$D/four.csv" --ids >ids.txt || fail "--ids exited $?"
[ "$(cat ids.txt)" = "2,1,3" ] || fail "ids line: $(cat ids.txt)"
[ "$(wc -l <ids.txt)" = 1 ] || fail "ids: more than one line"

mkidx d 300 50 8 4
set +e
"$P" --from "$D/four.csv" --ids |
	timeout 120 "$BIN/mgpu-train" --gpus - --data d --model mlp:64-4 --epochs 1 -q \
		>out.txt 2>err.txt
rc=$?
"$P" -q >/dev/null 2>&1
gpus_here=$?
set -e
[ "$rc" != 124 ] || fail "mgpu-train --gpus - hung"
if [ "$rc" = 2 ] && grep -q -- "--gpus" err.txt; then
	echo "mgpu-train does not take --gpus - yet: $(head -n 1 err.txt)"
	exit 77
fi
if [ "$gpus_here" = 1 ]; then
	[ "$rc" = 1 ] || fail "no GPU here but mgpu-train exited $rc: $(cat err.txt)"
	[ "$(wc -l <err.txt)" = 1 ] || fail "want one line: $(cat err.txt)"
	grep -q "GPU 2 requested but 0 GPUs are visible: " err.txt ||
		fail "unclear message: $(cat err.txt)"
	[ ! -s out.txt ] || fail "stdout: $(cat out.txt)"
elif [ "$rc" != 0 ]; then
	[ "$(wc -l <err.txt)" = 1 ] && grep -q "GPU" err.txt || fail "exit $rc: $(cat err.txt)"
fi
exit 0

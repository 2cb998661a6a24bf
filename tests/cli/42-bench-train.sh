# mgpu-bench train: the sweep's rows and arithmetic, the recorded commands
# (they run), --save / --compare (a planted regression is named and exits 1;
# an unchanged run passes; a table of other OpenBLAS kernels is named),
# --plot, Markdown, the BLAS and GPU-utilisation columns (NA for CPU ranks),
# and GPU configurations failing as row errors on a machine without GPUs.
# Timings are never asserted.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
mkidx d 1200 100 8 4
w="--data d --model mlp:64-16-4 --max-steps 24 --batch-size 16"
"$B" train --cpu-ranks 1,2 --modes ddp,dp --repeat 2 --warmup-steps 4 --save s.tsv \
	--plot p.svg -- $w >out.tsv 2>err.txt || fail "sweep: $(cat err.txt)"
grep -qx 'mgpu-bench: 3 configurations measured' err.txt || fail "stderr: $(cat err.txt)"
cmp -s out.tsv s.tsv || fail "--save differs from stdout"
python3 - out.tsv <<'PY' || fail "table: $(cat out.tsv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
assert [r["config"] for r in rows] == ["1 CPU rank", "2 CPU ranks (DDP)", "2 CPU ranks (DP)"], rows
base = float(rows[0]["samples_per_s"])
for r in rows:
    n, thr = int(r["devices"]), float(r["samples_per_s"])
    assert r["status"] == "ok" and r["error"] == "NA" and r["repeats"] == "2", r
    assert float(r["samples_per_s_min"]) <= thr <= float(r["samples_per_s_max"]), r
    assert abs(float(r["speedup"]) - thr / base) < 1e-3 * thr / base, r
    assert abs(float(r["efficiency"]) - thr / base / n) < 1e-3, r
    assert len(r["peak_bytes"].split(",")) == n and int(r["effective_batch"]) == 16 * n, r
    assert "--log-every 1" in r["command"] and "--max-steps 24" in r["command"], r
    assert r["blas_core"] not in ("", "NA") and r["blas_threads"] == "1", r
    assert r["gpu_util_pct"] == "NA" and r["gpu_mem_used_bytes"] == "NA", r  # CPU ranks
assert float(rows[0]["speedup"]) == 1
assert rows[1]["mode"] == "ddp" and rows[2]["mode"] == "dp" and rows[1]["sync_backend"] == "cpu"
dp = [int(x) for x in rows[2]["peak_bytes"].split(",")]
assert dp[0] > dp[1], "dp: device 0 holds the master weights"
PY
# the recorded command is the exact command: it runs as written
cmd=$(awk -F '\t' 'NR == 3 { print $20 }' out.tsv)
sh -c "$cmd" >rerun.json || fail "recorded command failed: $cmd"
grep -q '"kind":"summary".*"world_size":2,"mode":"ddp"' rerun.json || fail "rerun: $(tail -n 1 rerun.json)"
grep -q '^<svg' p.svg && grep -q 'stroke-dasharray' p.svg && grep -q '</svg>' p.svg || fail "plot"
# --compare. Runs of 20 timed steps of a tiny model are too short for their
# throughput to mean anything on a loaded machine, so the saved tables are
# made 1000x slower wherever a row must not be flagged: the checks test the
# comparison, never the timing. A run slower in nothing passes ...
awk -F '\t' 'BEGIN { OFS = "\t" } NR > 1 { $8 = $8 / 1000 } { print }' s.tsv >slow.tsv
"$B" train --compare slow.tsv --tolerance 95% --repeat 1 -o new.tsv 2>err.txt ||
	fail "unchanged run flagged: $(cat err.txt)"
grep -q 'no regression beyond the tolerance' err.txt || fail "compare: $(cat err.txt)"
[ "$(wc -l <new.tsv)" = 4 ] || fail "compare output: $(cat new.tsv)"
! grep -q 'OpenBLAS' err.txt || fail "same BLAS core warned: $(cat err.txt)"
# a table from a machine whose OpenBLAS chose other kernels: said, not failed
awk -F '\t' 'BEGIN { OFS = "\t" } NR > 1 { $21 = "Prescott" } { print }' slow.tsv >other.tsv
"$B" train --compare other.tsv --tolerance 95% --repeat 1 >/dev/null 2>err.txt ||
	fail "other BLAS core: $(cat err.txt)"
grep -q "^mgpu-bench: warning: 'other.tsv' was measured with OpenBLAS Prescott kernels, this run uses .*OPENBLAS_CORETYPE" err.txt ||
	fail "other BLAS core: $(cat err.txt)"
# ... a planted throughput regression (old a million times faster) and a memory one (old
# peak 1000 bytes) are each named, and exit 1
awk -F '\t' 'BEGIN { OFS = "\t" } NR == 3 { $8 = $8 * 1e9 } NR == 4 { $16 = "1000,1000" } { print }' \
	slow.tsv >planted.tsv
set +e
"$B" train --compare planted.tsv --tolerance 95% --repeat 1 >/dev/null 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] || fail "planted regression: exit $rc: $(cat err.txt)"
grep -q '^mgpu-bench: regression: 2 CPU ranks (DDP): samples_per_s .* -> ' err.txt || fail "$(cat err.txt)"
grep -q '^mgpu-bench: regression: 2 CPU ranks (DP): peak_bytes .* -> ' err.txt || fail "$(cat err.txt)"
[ "$(grep -c regression err.txt)" = 2 ] || fail "regressions: $(cat err.txt)"
# Markdown: the two tables and the commands
"$B" train --cpu-ranks 2 --modes dp --repeat 1 --warmup-steps 4 --format markdown -q -- $w >md.txt ||
	fail "markdown"
grep -q '^| Configuration ' md.txt && grep -q '^| 2 CPU ranks (DP) ' md.txt &&
	grep -q '^| Devices | Mode | dev 0 (MiB) | dev 1 (MiB) |' md.txt &&
	grep -q '^- 2 CPU ranks (DP): `.*mgpu-train ' md.txt &&
	grep -q '^OpenBLAS kernels: .*, 1 BLAS thread per CPU rank\.$' md.txt || fail "markdown: $(cat md.txt)"
# GPUs on a machine without any: a row error, exit 1, no hang
if ! "$BIN/mgpu-probe" --ids >/dev/null 2>&1; then
	set +e
	"$B" train --devices 2 --modes ddp --repeat 1 --timeout 120 -- $w >gpu.tsv 2>err.txt
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "gpu: exit $rc"
	[ "$(wc -l <err.txt)" = 1 ] && grep -qi '^mgpu-bench: error: 2 devices (DDP): .*\(gpu\|cuda\)' err.txt ||
		fail "gpu stderr: $(cat err.txt)"
	awk -F '\t' 'NR == 2 && $18 == "error" && $20 ~ /--gpus 0,1 --mode ddp/ { ok = 1 } END { exit !ok }' gpu.tsv ||
		fail "gpu row: $(cat gpu.tsv)"
fi
# a warm-up longer than the run is lowered to half the run, said once; a
# run of one step has nothing to time: a row error naming the fix
"$B" train --cpu-ranks 1 --repeat 1 --warmup-steps 50 -- $w >/dev/null 2>err.txt ||
	fail "warm-up: $(cat err.txt)"
grep -q 'only 24 steps ran, fewer than the 50 warm-up steps: the first 12 of each run left out' \
	err.txt || fail "warm-up: $(cat err.txt)"
set +e
"$B" train --cpu-ranks 1 --repeat 1 --warmup-steps 50 -- $w --max-steps 1 >/dev/null 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] && grep -q 'no step was timed after the 50 warm-up steps' err.txt || fail "warm-up: $(cat err.txt)"
exit 0

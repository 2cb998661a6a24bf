# mgpu-bench allreduce: the size sweep's table (nccl-tests definitions),
# the wrong-element check failing when one element is corrupted (test hook
# MGPU_BENCH_CORRUPT), and backends that cannot run here failing clearly.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
"$B" allreduce --ranks 2 --sizes 4K:32K --iters 3 >ar.tsv 2>err.txt || fail "2 ranks: $(cat err.txt)"
[ ! -s err.txt ] || fail "stderr when piped: $(cat err.txt)"
head -n 1 ar.tsv | grep -qx 'backend	ranks	size_bytes	count	time_us	algbw_gbps	busbw_gbps	wrong	blas_core	blas_threads' ||
	fail "header: $(head -n 1 ar.tsv)"
# every row names the machine's OpenBLAS kernels and a rank's BLAS threads
awk -F '\t' 'NR > 1 && ($9 == "" || $9 == "NA" || $10 != 1) { exit 1 }' ar.tsv ||
	fail "blas columns: $(cat ar.tsv)"
# 4K 8K 16K 32K, then the memcpy limit line
awk -F '\t' 'NR > 1 && $1 == "cpu" { n++; if ($2 != 2 || $4 * 4 != $3 || $8 != 0) exit 1
	a = $3 / $5 / 1000; if ((a - $6) / a > 0.01 || (a - $6) / a < -0.01) exit 1
	if ($6 != $7) exit 1 } END { exit n != 4 }' ar.tsv || fail "rows: $(cat ar.tsv)"
[ "$(awk -F '\t' 'NR > 1 { s = s " " $3 } END { print s }' ar.tsv)" = " 4096 8192 16384 32768 67108864" ] ||
	fail "sizes: $(cat ar.tsv)"
tail -n 1 ar.tsv | awk -F '\t' '$1 == "memcpy" && $6 > 0 { ok = 1 } END { exit !ok }' ||
	fail "memcpy line: $(tail -n 1 ar.tsv)"
# 4 ranks: busbw = algbw x 2(n-1)/n = 1.5 algbw
"$B" allreduce --ranks 4 --sizes 64K --iters 2 --json >ar4.json 2>err.txt || fail "4 ranks: $(cat err.txt)"
python3 - ar4.json <<'PY' || fail "4 ranks: $(cat ar4.json)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
r = rows[0]
assert r["backend"] == "cpu" and r["ranks"] == 4 and r["wrong"] == 0, r
assert abs(r["busbw_gbps"] - 1.5 * r["algbw_gbps"]) <= 1e-3 * r["busbw_gbps"], r
assert rows[-1]["backend"] == "memcpy" and "time_us" not in rows[-1], rows[-1]
PY
# one corrupted element of one rank's result: counted, exit 1
set +e
MGPU_BENCH_CORRUPT=1 "$B" allreduce --ranks 3 --sizes 4K:8K --iters 2 >bad.tsv 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] || fail "corrupt: exit $rc"
grep -qx 'mgpu-bench: error: allreduce: 2 wrong elements' err.txt || fail "corrupt: $(cat err.txt)"
[ "$(awk -F '\t' '$1 == "cpu" { print $8 }' bad.tsv | tr '\n' ' ')" = "1 1 " ] ||
	fail "wrong column: $(cat bad.tsv)"
MGPU_BENCH_CORRUPT=0 "$B" allreduce --ranks 2 --sizes 4K --iters 1 >/dev/null ||
	fail "MGPU_BENCH_CORRUPT=0 is not the hook"
# backends this machine cannot run: a clear error, the cpu rows still printed
if ! "$BIN/mgpu-probe" --ids >/dev/null 2>&1; then
	set +e
	"$B" allreduce --backends nccl,cpu --sizes 4K --iters 1 >nccl.tsv 2>err.txt
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "nccl without GPUs: exit $rc"
	grep -q 'mgpu-bench: error: allreduce nccl: needs 2 GPUs (one per rank), 0 found' err.txt ||
		fail "nccl: $(cat err.txt)"
	grep -q '^cpu	2	4096	' nccl.tsv || fail "cpu rows after nccl failed: $(cat nccl.tsv)"
fi
# mpi: MPI_Allreduce between processes of mpirun (this process runs it, or
# runs under it); a build without MPI says so
if "$BIN/mgpu-train" -V -v | grep -q 'mpi=1' && command -v mpirun >/dev/null; then
	"$B" allreduce --backends mpi,cpu --ranks 3 --sizes 4K:16K --iters 3 >mpi.tsv 2>err.txt ||
		fail "mpi: $(cat err.txt)"
	awk -F '\t' '$1 == "mpi" { n++; if ($2 != 3 || $4 * 4 != $3 || $8 != 0 || $5 <= 0) exit 1 }
		END { exit n != 3 }' mpi.tsv || fail "mpi rows: $(cat mpi.tsv)"
	grep -q '^cpu	3	16384	' mpi.tsv || fail "cpu rows after mpi: $(cat mpi.tsv)"
	set +e
	MGPU_BENCH_CORRUPT=1 "$B" allreduce --backends mpi --ranks 2 --sizes 4K:8K --iters 2 \
		>bad.tsv 2>err.txt
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "mpi corrupt: exit $rc"
	grep -qx 'mgpu-bench: error: allreduce: 2 wrong elements' err.txt ||
		fail "mpi corrupt: $(cat err.txt)"
	# run under mpirun by hand: rank 0 writes the table, no memcpy line
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe \
		"$B" allreduce --backends mpi --sizes 8K --iters 2 --json >under.json 2>err.txt ||
		fail "under mpirun: $(cat err.txt)"
	[ "$(wc -l <under.json)" = 1 ] && grep -q '"backend":"mpi","ranks":2,"size_bytes":8192' \
		under.json || fail "under mpirun: $(cat under.json)"
	expect 2 "under mpirun only --backends mpi runs" env OMPI_COMM_WORLD_SIZE=1 \
		"$B" allreduce --backends cpu --sizes 4K
else
	expect 1 "allreduce mpi: this build has no MPI" "$B" allreduce --backends mpi --sizes 4K \
		-o mpi.tsv
fi
exit 0

# --sync-bn's cross-rank sum (mgpu_sync_stats) across two nodes, hosts of
# network namespaces (tests/netns.sh, as root): 2 nodes x 2 CPU ranks
# whose leaders meet over TCP (torchrun's variables), then over MPI
# (mpirun onto both hosts, as 50-multinode.sh), each rank summing
# statistics of 1 to 1100 floats between its gradient buckets with node
# 1's second rank late at every bucket (tests/drv/stats_drv.c checks
# every sum exactly and the weights after each step). Every run is bounded
# by timeout(1) at 120 s (a rank that waits out --timeout fails as 124).
. tests/cli/lib.sh
D=$(dirname "$BIN")/tests/drv/stats_drv
[ -x "$D" ] || fail "no $D (make all builds it)"

. "$SRC/tests/netns.sh"
netns_up 2
export MASTER_ADDR=$(host_addr 1) MASTER_PORT=29521 MGPU_JOB_TOKEN=sbn-$$

# leaders over TCP: ranks 2, 3 on h2, ranks 0, 1 on h1
pids=
for r in 1 2 3; do
	on_host $((r / 2 + 1)) env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) \
		LOCAL_WORLD_SIZE=2 timeout 120 "$D" cpu 30 >o$r.txt 2>e$r.txt &
	pids="$pids $!"
done
on_host 1 env RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 \
	timeout 120 "$D" cpu 30 >o0.txt 2>e0.txt || fail "tcp rank 0: $(cat e0.txt)"
r=1
for p in $pids; do
	wait "$p" || fail "tcp rank $r: $(cat e$r.txt)"
	r=$((r + 1))
done
for r in 0 1 2 3; do
	grep -qx "rank $r of 4: 28 sums" o$r.txt || fail "tcp rank $r: $(cat o$r.txt e$r.txt)"
done

if "$BIN/mgpu-train" -V -v | grep -q 'mpi=1' && command -v mpirun >/dev/null; then
	export NETNS_PFX OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	net=$(host_addr 0)/24
	on_host 1 timeout 120 mpirun --host "$(host_addr 1):2,$(host_addr 2):2" \
		-np 4 --bind-to none --mca plm_rsh_agent "$SRC/tests/netns-rsh.sh" -x NETNS_PFX \
		--mca btl_tcp_if_include "$net" --mca oob_tcp_if_include "$net" \
		"$D" mpi 30 >mpi.txt 2>err.txt || fail "mpirun 2 nodes: $(tail -n 5 err.txt)"
	for r in 0 1 2 3; do
		grep -qx "rank $r of 4: 28 sums" mpi.txt || fail "mpi rank $r: $(cat mpi.txt err.txt)"
	done
else
	echo "note: no MPI in this build or no mpirun: the mpirun half did not run" >&2
fi
exit 0

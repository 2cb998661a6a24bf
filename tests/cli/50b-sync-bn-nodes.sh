# --sync-bn across two nodes, hosts of network namespaces (tests/netns.sh,
# as root). The cross-rank sum (mgpu_sync_stats): 2 nodes x 2 CPU ranks
# whose leaders meet over TCP (torchrun's variables), then over MPI
# (mpirun onto both hosts, as 50-multinode.sh), each rank summing
# statistics of 1 to 1100 floats between its gradient buckets with node
# 1's second rank late at every bucket (tests/drv/stats_drv.c checks
# every sum exactly and the weights after each step). Then mgpu-train: a
# conv net with BatchNorm on 2 nodes x 2 ranks x 4 with --sync-bn, through
# its own launcher and through mpirun, matches 1 rank x 16 within 1e-4
# (weights and running statistics), and without --sync-bn it does not
# (13c-train-sync-bn.sh does the same on one node). Every run is bounded
# by timeout(1) at 120 s (a rank that waits out --timeout fails as 124).
. tests/cli/lib.sh
D=$(dirname "$BIN")/tests/drv/stats_drv
[ -x "$D" ] || fail "no $D (make all builds it)"
M=$BIN/mgpu-train
mkidx d 800 100 8 4
# a file: mpirun's remote shell would split an inline spec at its blanks
printf 'cnn\nconv 4 k=3 p=1\nbn\nrelu\nres 6 s=2\ngap\nlinear auto\n' >net.spec
common="--data d --model net.spec --epochs 1 --max-steps 12 --log-every 1 -q --lr 0.2"
nodes="--cpu-ranks 2 --nnodes 2 --batch-size 4"
# within A B: the checkpoints of save dirs A and B agree within 1e-4
within() {
	d=$(ckpt_maxdiff "$1" "$2" bn) || fail "$2: checkpoints: $d"
	awk -v d="$d" 'BEGIN { exit !(d <= 1e-4) }' || fail "$2: tensors differ by $d from $1"
}

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

# mgpu-train: one rank x 16 on h1, then 2 nodes x 2 x 4 with and without --sync-bn
on_host 1 timeout 120 "$M" $common --batch-size 16 --save-dir one >one.tsv 2>err.txt ||
	fail "1 rank x 16: $(cat err.txt)"
for f in sbn own; do
	flag=--sync-bn
	[ $f = sbn ] || flag=
	on_host 2 timeout 120 "$M" $common $nodes --node-rank 1 $flag >/dev/null 2>n1.err &
	p1=$!
	on_host 1 timeout 120 "$M" $common $nodes --node-rank 0 $flag --save-dir $f >$f.tsv \
		2>err.txt || fail "2 nodes ($f): $(cat err.txt)"
	wait $p1 || fail "2 nodes ($f), node 1: $(cat n1.err)"
done
within one sbn
d=$(ckpt_maxdiff one own bn)
awk -v d="$d" 'BEGIN { exit !(d > 1e-3) }' ||
	fail "without --sync-bn 2 nodes x 2 x 4 match 1 x 16 (max diff $d)"

if "$M" -V -v | grep -q 'mpi=1' && command -v mpirun >/dev/null; then
	export NETNS_PFX OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	net=$(host_addr 0)/24
	mpi() { # mpi CMD...: 2 ranks on each of h1 and h2, started from h1
		on_host 1 timeout 120 mpirun --host "$(host_addr 1):2,$(host_addr 2):2" \
			-np 4 --bind-to none --mca plm_rsh_agent "$SRC/tests/netns-rsh.sh" \
			-x NETNS_PFX --mca btl_tcp_if_include "$net" \
			--mca oob_tcp_if_include "$net" "$@"
	}
	mpi "$D" mpi 30 >mpi.txt 2>err.txt || fail "mpirun 2 nodes: $(tail -n 5 err.txt)"
	for r in 0 1 2 3; do
		grep -qx "rank $r of 4: 28 sums" mpi.txt || fail "mpi rank $r: $(cat mpi.txt err.txt)"
	done
	mpi "$M" $common --batch-size 4 --sync-backend mpi --sync-bn --save-dir mpi-sbn \
		>mpi.tsv 2>err.txt || fail "mpirun --sync-bn: $(tail -n 5 err.txt)"
	within one mpi-sbn
else
	echo "note: no MPI in this build or no mpirun: the mpirun half did not run" >&2
fi
exit 0

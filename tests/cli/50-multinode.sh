# Multi-node training over network namespaces (tests/netns.sh: hosts h1,
# h2, h3 on one bridge, as root): 2 nodes x 2 CPU ranks, through
# mgpu-train's own launcher (--nnodes, --node-rank, MASTER_ADDR) and
# through mpirun, match 1 node x 4 ranks at the same global batch within
# 1e-4 (final weights in the checkpoints); a 2-node checkpoint resumes on
# one node; killing node 1's ranks stops the whole job within --timeout,
# node 0's launcher naming node 1 and its rank last (its own ranks only
# followed), and so when they only hang (after --timeout); the start-up line counts the nodes; another job's token from
# a third host is refused while the job goes on. NCCL_SOCKET_IFNAME
# reaches the ranks of node 1 through the own launcher and through mpirun
# -x (whose remote shell passes no environment, as ssh), each rank saying
# where it runs under -v; a rank of a job of several nodes without
# MASTER_ADDR stops at once, naming it.
. tests/cli/lib.sh
mkidx d 3000 300 8 4
M=$BIN/mgpu-train
common="--data d --model mlp:64-48-32-4,act=gelu --epochs 1 --log-every 1 -q --optimizer adamw
	--lr 0.002 --batch-size 16 --clip-grad-norm 1"

# before any namespace: node 1's first rank under torchrun-style variables
expect 1 "ranks of a job of 2 nodes meet at node 0's address, but MASTER_ADDR is not set" \
	env -u MASTER_ADDR RANK=2 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 \
	"$M" $common --max-steps 2 --cpu-ranks 2 --timeout 60

. "$SRC/tests/netns.sh"
netns_up 3
export MASTER_ADDR=$(host_addr 1) MASTER_PORT=29517 MGPU_JOB_TOKEN=job-$$

# same_weights A B: checkpoints A and B are of the same step and their
# model tensors agree within 1e-4
same_weights() {
	[ "$(cat "$1/latest")" = "$(cat "$2/latest")" ] ||
		{ echo "$1 is at $(cat "$1/latest"), $2 at $(cat "$2/latest")" >&2; return 1; }
	d=$(ckpt_maxdiff "$1" "$2") || { echo "$d" >&2; return 1; }
	awk -v d="$d" 'BEGIN { exit !(d <= 1e-4) }' || { echo "$1 vs $2: max diff $d" >&2; return 1; }
}
last_loss() { awk -F '\t' '$1 == "step" { l = $4 } END { print l }' "$1"; }

# the reference: one node, 4 ranks
on_host 1 "$M" $common --max-steps 30 --cpu-ranks 4 --save-dir ref >ref.tsv 2>err.txt ||
	fail "1 node x 4: $(cat err.txt)"

# own launcher: node 1 on h2, node 0 on h1
NCCL_SOCKET_IFNAME=eth0 on_host 2 "$M" $common -v --max-steps 30 --cpu-ranks 2 --nnodes 2 \
	--node-rank 1 >n1.tsv 2>n1.err &
n1=$!
on_host 1 "$M" $common --max-steps 30 --cpu-ranks 2 --nnodes 2 --node-rank 0 --save-dir own \
	>own.tsv 2>err.txt || fail "2 nodes, node 0: $(cat err.txt)"
wait $n1 || fail "2 nodes, node 1: $(cat n1.err)"
[ ! -s n1.tsv ] || fail "node 1 wrote metrics: $(head -n 3 n1.tsv)"
for r in 2 3; do
	grep -q "rank $r: node 1 of 2 (host h2), local rank $((r - 2)) of 2, started by mgpu-train; NCCL_SOCKET_IFNAME eth0" n1.err ||
		fail "own launcher: rank $r does not report NCCL_SOCKET_IFNAME: $(cat n1.err)"
done
same_weights ref own || fail "own launcher: weights differ from 1 node x 4"
awk -v a="$(last_loss ref.tsv)" -v b="$(last_loss own.tsv)" 'BEGIN { d = a - b
	exit !(a != "" && d <= 1e-4 && d >= -1e-4) }' || fail "loss $(last_loss own.tsv) vs $(last_loss ref.tsv)"

# mpirun from h1 onto h1 and h2 (its remote shell enters the namespaces)
if "$M" -V -v | grep -q 'mpi=1' && command -v mpirun >/dev/null; then
	export NETNS_PFX OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	net=$(host_addr 0)/24
	NCCL_SOCKET_IFNAME=eth0 on_host 1 mpirun --host "$(host_addr 1):2,$(host_addr 2):2" \
		-np 4 --bind-to none --mca plm_rsh_agent "$SRC/tests/netns-rsh.sh" \
		-x NETNS_PFX -x NCCL_SOCKET_IFNAME \
		--mca btl_tcp_if_include "$net" --mca oob_tcp_if_include "$net" \
		"$M" $common -v --max-steps 30 --sync-backend mpi --save-dir mpi >mpi.tsv 2>err.txt ||
		fail "mpirun 2 nodes: $(tail -n 5 err.txt)"
	same_weights ref mpi || fail "mpirun: weights differ from 1 node x 4"
	grep -q "rank 3: node 1 of 2 (host h2), local rank 1 of 2, started by openmpi; NCCL_SOCKET_IFNAME eth0" err.txt ||
		fail "mpirun -x: rank 3 does not report NCCL_SOCKET_IFNAME: $(cat err.txt)"
else
	echo "note: no MPI in this build or no mpirun: the mpirun half did not run" >&2
fi

# a 2-node checkpoint at step 20 (of a 30-step run: the schedule spans
# --max-steps) resumes on one node to step 30: as ref
on_host 2 "$M" $common --max-steps 30 --cpu-ranks 2 --nnodes 2 --node-rank 1 --save-every 20 \
	>/dev/null 2>n1.err &
n1=$!
on_host 1 "$M" $common --max-steps 30 --cpu-ranks 2 --nnodes 2 --node-rank 0 --save-dir half \
	--save-every 20 >/dev/null 2>err.txt || fail "2 nodes to step 30: $(cat err.txt)"
wait $n1 || fail "node 1 to step 30: $(cat n1.err)"
on_host 1 "$M" --resume half/step-00000020 --cpu-ranks 4 -q --save-dir resumed \
	>resumed.tsv 2>err.txt ||
	fail "resume on one node: $(cat err.txt)"
same_weights ref resumed || fail "2-node checkpoint resumed on one node differs from ref"

# another job's token from h3 is refused; the job goes on and ends well
on_host 1 "$M" $common --max-steps 5 --cpu-ranks 2 --nnodes 2 --node-rank 0 >/dev/null \
	2>n0.err &
n0=$!
set +e
MGPU_JOB_TOKEN=other on_host 3 "$M" $common --max-steps 5 --cpu-ranks 2 --nnodes 2 \
	--node-rank 1 --timeout 20 >/dev/null 2>intruder.err
rc=$?
set -e
[ "$rc" = 1 ] || fail "intruder: exit $rc: $(cat intruder.err)"
grep -q "refused rank 2: bad job token" intruder.err || fail "intruder: $(cat intruder.err)"
on_host 2 "$M" $common --max-steps 5 --cpu-ranks 2 --nnodes 2 --node-rank 1 >/dev/null \
	2>n1.err || fail "node 1 after the intruder: $(cat n1.err)"
wait $n0 || fail "node 0 after the intruder: $(cat n0.err)"

# node 1's ranks killed mid-run: node 0 stops within --timeout, naming it
long="--data d --model mlp:64-48-32-4 --epochs 1000 --batch-size 16 --timeout 10"
on_host 2 "$M" $long -q --cpu-ranks 2 --nnodes 2 --node-rank 1 >/dev/null 2>n1.err &
n1=$!
: >run.tsv # the wait below reads it before the background job may have made it
on_host 1 "$M" $long --cpu-ranks 2 --nnodes 2 --node-rank 0 --log-every 1 >run.tsv 2>n0.err &
n0=$!
i=0
while [ "$(grep -c '^step' run.tsv 2>/dev/null)" -lt 3 ] && [ $i -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ "$(grep -c '^step' run.tsv)" -ge 3 ] || fail "the long job did not start: $(cat n0.err)"
t0=$(date +%s)
# $n1 is the subshell of on_host; its child is node 1's launcher, whose
# children are the ranks: kill those, not the launcher
launcher=$(pgrep -P $n1)
kill -9 $(pgrep -P "$launcher")
set +e
wait $n0
rc0=$?
wait $n1
rc1=$?
set -e
dt=$(($(date +%s) - t0))
[ "$rc0" = 1 ] && [ "$rc1" = 1 ] || fail "after the kill: node 0 exit $rc0, node 1 exit $rc1"
[ "$dt" -le 12 ] || fail "node 0 took $dt s to stop (--timeout 10)"
grep -q "4 cpu devices on 2 nodes" n0.err || fail "start-up line: $(head -n 1 n0.err)"
tail -n 1 n0.err | grep -q "node 0's ranks stopped after a failure elsewhere: node 1 (rank 2)" ||
	fail "node 0's last line does not name node 1 and rank 2: $(cat n0.err)"
grep -q "rank [23] failed: killed by signal 9.* on node 1" n1.err ||
	fail "node 1 does not name the killed rank: $(cat n1.err)"

# node 1's ranks stopped (SIGSTOP), not dead: node 0 gives up after
# --timeout and its launcher's last line names node 1's leader
long="--data d --model mlp:64-48-32-4 --epochs 1000 -q --batch-size 16 --timeout 5"
on_host 2 "$M" $long --cpu-ranks 2 --nnodes 2 --node-rank 1 >/dev/null 2>n1.err &
n1=$!
: >run.tsv
on_host 1 "$M" $long --cpu-ranks 2 --nnodes 2 --node-rank 0 --log-every 1 >run.tsv 2>n0.err &
n0=$!
i=0
while [ "$(grep -c '^step' run.tsv 2>/dev/null)" -lt 3 ] && [ $i -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ "$(grep -c '^step' run.tsv)" -ge 3 ] || fail "the hang job did not start: $(cat n0.err)"
launcher=$(pgrep -P $n1)
stopped=$(pgrep -P "$launcher")
kill -STOP $stopped
t0=$(date +%s)
set +e
wait $n0
rc0=$?
set -e
dt=$(($(date +%s) - t0))
kill -KILL $stopped
wait $n1 || true
[ "$rc0" = 1 ] || fail "node 0 exit $rc0 after node 1 hung: $(cat n0.err)"
[ "$dt" -le 8 ] || fail "node 0 took $dt s to stop (--timeout 5)"
tail -n 1 n0.err | grep -q "node 0's ranks stopped after a failure elsewhere: node 1 (rank 2) did not answer" ||
	fail "node 0's last line does not name node 1's hung leader: $(cat n0.err)"
exit 0

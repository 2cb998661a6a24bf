# Ranks that would train different runs fail at the rendezvous, at once
# and on every side, naming the rank, its node and host, and the setting
# that differs (issue 19): torchrun-style ranks on one node (RANK,
# WORLD_SIZE on loopback), then two nodes over network namespaces
# (tests/netns.sh, as 50-multinode.sh): another --seed (which used to
# train on silently with different weights), another model shape or
# --max-steps (which used to deadlock until --timeout), and other data
# (the identity is the data's, targets included, not its path: a copy
# under another name joins); mpirun's ranks of --sync-backend mpi compare the same over MPI.
# Every run has --timeout 300 and is bounded by timeout(1) at 120 s,
# so a rank that waits for the timeout fails the test as 124.
. tests/cli/lib.sh
mkidx d 600 100 8 4
mkidx e 700 100 8 4
cp -r d d2
M=$BIN/mgpu-train
common="--model mlp:64-16-4 --epochs 1 --max-steps 5 -q --timeout 300"
export MGPU_JOB_TOKEN=job-$$

# pair WHAT PORT "NODE0 ARGS" "NODE1 ARGS" RUNNER0 RUNNER1: both sides exit 1
# with the message; a RUNNER is a command prefix ("on_host 1", "env RANK=0 ...")
# (node 1's ranks 2 and 3 race to the rendezvous: either may be named)
mismatch() {
	what=$1 a0=$2 a1=$3 r0=$4 r1=$5 want0=$6 want1=$7
	set +e
	$r1 timeout 120 "$M" $common $a1 >o1.txt 2>e1.txt &
	p1=$!
	$r0 timeout 120 "$M" $common $a0 >o0.txt 2>e0.txt
	rc0=$?
	wait $p1
	rc1=$?
	set -e
	[ "$rc0" = 1 ] && [ "$rc1" = 1 ] ||
		fail "$what: exit $rc0 and $rc1, want 1 and 1: $(cat e0.txt e1.txt)"
	grep -qF -- "$want0" e0.txt || fail "$what: rank 0's side lacks '$want0': $(cat e0.txt)"
	grep -qF -- "$want1" e1.txt || fail "$what: the other side lacks '$want1': $(cat e1.txt)"
	[ ! -s o0.txt ] || fail "$what: metrics written: $(cat o0.txt)"
}

# one node, ranks started as torchrun starts them
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + $$ % 20000))
tr0="env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2"
tr1="env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2"
mismatch "torchrun --lr" "--data d" "--data d --lr 0.5" "$tr0" "$tr1" \
	"rank 1 (node 0, host $(hostname)) does not run rank 0's job (host $(hostname)): --lr 0.5 against 0.05; every rank of a job needs the same settings and data" \
	"refused rank 1: rank 1 (node 0, host"
mismatch "torchrun --dtype" "--data d" "--data d --dtype bf16" "$tr0" "$tr1" \
	"--dtype bf16 against fp32" "--dtype bf16 against fp32"
mismatch "torchrun data" "--data d" "--data e" "$tr0" "$tr1" "data: 630 train" "data: 630 train"
# data that differ in their regression targets alone are other data too
for k in 1 2; do
	python3 -c 'import sys; print("a,b,y"); [print("%d,%d,%d" % (i % 7, i % 5, i % 3 + int(sys.argv[1]))) for i in range(120)]' $k >t$k.csv
	"$BIN/mgpu-shard" -q --val-fraction 0.1 --target-columns y -d ts$k -o ts$k/m.tsv t$k.csv
	"$BIN/mgpu-cache" -q -o tc$k ts$k/m.tsv >/dev/null
done
mismatch "torchrun targets" "--data tc1 --model mlp:auto-8-auto --batch-size 8" \
	"--data tc2 --model mlp:auto-8-auto --batch-size 8" \
	"$tr0" "$tr1" "data: 108 train" "data: 108 train"
# the same run under another data path trains
$tr1 "$M" $common --data d2 >/dev/null 2>e1.txt &
p1=$!
$tr0 "$M" $common --data d >run.tsv 2>e0.txt || fail "torchrun, same run: $(cat e0.txt)"
wait $p1 || fail "torchrun, same run, rank 1: $(cat e1.txt)"
grep -q '^summary' run.tsv || fail "torchrun, same run: no summary: $(cat run.tsv)"

# mpirun's ranks (--sync-backend mpi) compare theirs over MPI
if "$M" -V -v | grep -q 'mpi=1' && command -v mpirun >/dev/null; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	set +e
	timeout 120 mpirun --bind-to none --oversubscribe -np 1 "$M" $common --data d \
		--sync-backend mpi : -np 1 "$M" $common --data d2 --sync-backend mpi --seed 7 \
		>o0.txt 2>e0.txt
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "mpirun --seed: exit $rc: $(cat e0.txt)"
	for r in 0 1; do
		grep -q "rank $r: error: rank 1 (node 0, host $(hostname)) does not run rank 0's job (host $(hostname)): --seed 7 against 42" e0.txt ||
			fail "mpirun --seed: rank $r does not say: $(cat e0.txt)"
	done
else
	echo "note: no MPI in this build or no mpirun: the mpirun case did not run" >&2
fi

. "$SRC/tests/netns.sh"
netns_up 2
export MASTER_ADDR=$(host_addr 1) MASTER_PORT=29519
n0="--cpu-ranks 2 --nnodes 2 --node-rank 0 --data d"
n1="--cpu-ranks 2 --nnodes 2 --node-rank 1 --data d2"
# node 1's rank 2 or 3, whichever rank 0 hears first (both differ)
mismatch "nodes --seed" "$n0" "$n1 --seed 7" "on_host 1" "on_host 2" \
	"(node 1, host h2) does not run rank 0's job (host h1): --seed 7 against 42" \
	"(node 1, host h2) does not run rank 0's job (host h1): --seed 7 against 42"
mismatch "nodes model" "$n0" "$n1 --model mlp:64-24-4" "on_host 1" "on_host 2" \
	"--model mlp:64-24-4,act=relu against mlp:64-16-4,act=relu" "--model mlp:64-24-4"
mismatch "nodes --max-steps" "$n0" "$n1 --max-steps 6" "on_host 1" "on_host 2" \
	"--max-steps 6 against 5" "--max-steps 6 against 5"
mismatch "nodes data" "$n0" "$n1 --data e" "on_host 1" "on_host 2" \
	"(node 1, host h2) does not run rank 0's job (host h1): data: 630 train" "data: 630 train"
# the same run on both nodes, data under two names, trains
on_host 2 "$M" $common $n1 >/dev/null 2>e1.txt &
p1=$!
on_host 1 "$M" $common $n0 >run.tsv 2>e0.txt || fail "2 nodes, same run: $(cat e0.txt)"
wait $p1 || fail "2 nodes, same run, node 1: $(cat e1.txt)"
grep -q '^summary' run.tsv || fail "2 nodes, same run: no summary: $(cat run.tsv)"
exit 0

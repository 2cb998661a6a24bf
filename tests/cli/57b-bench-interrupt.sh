# mgpu-bench stopped mid-run: SIGTERM exits 143 and SIGINT 130 (128 + the
# signal, as every tool), saying it was interrupted, only after the
# processes it started are stopped and reaped (train: each run's mgpu-train
# launcher and ranks, with --nodes every node's; allreduce: its ranks), and
# it writes no table, --save file or plot (data neither). It used to exit
# 130 for both.
# A multi-node run whose node 0 fails stops the other nodes at once.
# Every mgpu-bench is bounded by timeout(1), so one that ignores the signal
# fails as 124.
. tests/cli/lib.sh
B=$BIN/mgpu-bench
mkidx d 1200 100 8 4
# the data's absolute path marks this test's mgpu-train processes
w="--data $PWD/d --model mlp:64-16-4 --max-steps 100000 --epochs 1000 --batch-size 16"
trains() { pgrep -f -- "bin/mgpu-train .*--data $PWD/d" || true; }

# await WHAT CMD...: until CMD succeeds (polled), else fail naming WHAT
await() {
	what=$1
	shift
	for _ in $(seq 1200); do
		"$@" && return 0
		sleep 0.05
	done
	fail "$what never happened: $(cat err.txt)"
}
# interrupt WHAT SIG: send SIG to the mgpu-bench that timeout(1) $p runs
# (kept in $bp); it exits 128 + SIG saying so, and writes nothing
interrupt() {
	bp=$(pgrep -P $p)
	kill -"$2" "$bp"
	set +e
	wait $p
	rc=$?
	set -e
	want=$((128 + $(kill -l "$2")))
	[ "$rc" = "$want" ] || fail "$1 after SIG$2: exit $rc, want $want: $(cat err.txt)"
	grep -q "^mgpu-bench: interrupted by SIG$2; partial output removed" err.txt ||
		fail "$1 after SIG$2: $(cat err.txt)"
	[ "$(ls -A | grep -v -e '^d$' -e '^err.txt$' -e '^big$')" = "" ] ||
		fail "$1 after SIG$2: files left: $(ls -A)"
	rm err.txt
}

# stop SIG N ARGS...: mgpu-bench train ARGS, sent SIG once N mgpu-train
# processes of its run are up, into training; none of them stays
enough() { [ "$(trains | wc -l)" -ge "$1" ]; }
stop() {
	sig=$1 n=$2
	shift 2
	timeout -k 5 120 "$B" train -o table.tsv --save saved.tsv --plot plot.svg "$@" \
		-- $w 2>err.txt &
	p=$!
	await "$n mgpu-train processes of train $*" enough "$n"
	sleep 0.5 # into training
	interrupt "train $*" "$sig"
	left=$(trains)
	[ -z "$left" ] || fail "train $* after SIG$sig: mgpu-train left running: $(ps -o pid,args -p "$(echo $left | tr ' ' ,)")"
}

# the launcher and its two ranks
stop TERM 3 --cpu-ranks 2 --repeat 1
stop INT 3 --cpu-ranks 2 --repeat 1

# mgpu-bench allreduce: its forked ranks (which a signal to it alone does
# not reach) stop with it, at once rather than at --timeout, and no table
# is written (it used to wait out the sweep, write the rows so far and
# exit 130)
timeout -k 5 120 "$B" allreduce --ranks 3 --sizes 1M:16M --iters 1000 -o ar.tsv 2>err.txt &
p=$!
two_ranks() { bp=$(pgrep -P $p) && [ "$(pgrep -P "$bp" | wc -l)" -ge 2 ]; }
await "allreduce's ranks" two_ranks
ranks=$(pgrep -P "$bp" | tr '\n' ' ')
sleep 0.5 # into the sweep
interrupt allreduce TERM
for r in $ranks; do
	! kill -0 "$r" 2>/dev/null || fail "allreduce: rank process $r left running"
done

# mgpu-bench data: stopped in the middle of its loader passes (its loader
# threads running), it writes no table either (it wrote the rows so far
# and exited 130)
mkidx_big big 60000
timeout -k 5 120 "$B" data --prefetch 2 --repeat 100 -o data.tsv big 2>err.txt &
p=$!
threads() { bp=$(pgrep -P $p) && [ "$(awk '/^Threads:/ {print $2}' /proc/"$bp"/status 2>/dev/null)" -ge 3 ]; }
await "data's loader threads" threads
interrupt data TERM
rm -r big

# two nodes, each a launcher and its rank, over the namespace hosts that
# mgpu-bench makes as root; none of them may stay
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v unshare >/dev/null &&
	ip netns add "mgpu-$$-probe" 2>/dev/null; then
	ip netns del "mgpu-$$-probe"
	stop TERM 4 --cpu-ranks 1 --nodes 2 --repeat 1
	[ -z "$(ip netns list | grep "^mgpub-$bp-")" ] || fail "namespaces left: $(ip netns list)"

	# node 0 fails at once: the other nodes have nobody to meet and are
	# stopped (SIGTERM) and reaped, not left to run their course (they used
	# to get 30 s). A stand-in mgpu-train beside a copy of mgpu-bench, which
	# runs the one in its own directory: node 0 fails, node 1 would run 10 s.
	mkdir fake
	cp "$B" fake/mgpu-bench
	cat >fake/mgpu-train <<-EOF
	#!/bin/sh
	case " \$* " in
	*" --node-rank 0 "*) echo "mgpu-train: error: node 0 cannot start" >&2; exit 1 ;;
	esac
	echo \$\$ >>"$PWD/others.pid"
	trap 'echo stopped >>"$PWD/others.how"; exit 143' TERM
	for i in \$(seq 100); do sleep 0.1; done
	echo ran >>"$PWD/others.how"
	EOF
	chmod +x fake/mgpu-train
	expect 1 "2 nodes x 1 CPU rank (DDP): mgpu-train: error: node 0 cannot start" \
		fake/mgpu-bench train -o /dev/null --cpu-ranks 1 --nodes 2 --repeat 1 -- --data d
	# (the SIGTERM may come before its trap is set: only "ran" tells)
	! grep -q ran others.how 2>/dev/null || fail "node 1 ran on after node 0 failed"
	for q in $(cat others.pid 2>/dev/null); do
		! kill -0 "$q" 2>/dev/null || fail "node 1 left running"
	done
else
	echo "note: --nodes not checked (needs root and network namespaces)"
fi
exit 0

# mgpu-train's -o file and the signals of a closed terminal (issue 19):
# SIGHUP and SIGQUIT stop a run as SIGINT does (the last step finished, a
# checkpoint, exit 130, the metrics file committed, no temporary left),
# for one rank and for the launcher of two; under mpirun the metrics are
# committed before mpirun kills the ranks; a temporary that rank 0
# killed with SIGKILL left behind goes at the next run writing that file.
. tests/cli/lib.sh
mkidx d 600 100 8 4
M=$BIN/mgpu-train
long="--data d --model mlp:64-16-4 --batch-size 16 --epochs 100000 -q --log-every 1
	--save-dir ck --save-every 5 -o run.tsv"

# stop SIG RANKS: a long run stopped by SIG once it has a checkpoint
stop() {
	rm -rf ck run.tsv
	"$M" $long --cpu-ranks $2 2>err.txt &
	p=$!
	for _ in $(seq 400); do [ -e ck/latest ] && break; sleep 0.05; done
	[ -e ck/latest ] || fail "$1: no checkpoint: $(cat err.txt)"
	kill -$1 $p
	set +e
	wait $p
	rc=$?
	set -e
	[ "$rc" = 130 ] || fail "$1, $2 ranks: exit $rc, want 130: $(cat err.txt)"
	grep -q '^step' run.tsv 2>/dev/null || fail "$1, $2 ranks: no metrics in run.tsv"
	[ -z "$(ls run.tsv.tmp.* 2>/dev/null)" ] || fail "$1: left $(ls run.tsv.tmp.*)"
}
stop HUP 1 # (before issue 19: killed, 129)
stop QUIT 1
stop HUP 2
stop QUIT 2

# rank 0 killed: its temporary stays, and the next run removes it
rm -rf ck run.tsv
"$M" $long --cpu-ranks 2 2>err.txt &
p=$!
for _ in $(seq 400); do [ -e ck/latest ] && break; sleep 0.05; done
tmp=$(ls run.tsv.tmp.* 2>/dev/null) || fail "no temporary of -o run.tsv: $(ls)"
kill -KILL "${tmp##*.}"
set +e
wait $p
set -e
[ -e "$tmp" ] || fail "the killed rank's $tmp is gone already: the test proves nothing"
rm -rf ck
"$M" --data d --model mlp:64-16-4 --batch-size 16 --max-steps 2 -q -o run.tsv
[ ! -e "$tmp" ] || fail "the next run left the dead $tmp"
grep -q '^summary' run.tsv || fail "the next run's run.tsv: $(cat run.tsv)"

# mpirun: SIGINT to mpirun, which sends SIGTERM to the ranks and SIGKILL a
# second later: rank 0 commits the metrics and the last checkpoint before
# it (mpirun's own exit status is its own); SIGTERM to the ranks (each in
# a process group of its own: a terminal's Ctrl-C reaches mpirun alone)
# ends the job with 130
if "$M" -V -v | grep -q 'mpi=1' && command -v mpirun >/dev/null; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	# mpi TARGET: a 2-rank mpirun job stopped by SIGINT to mpirun or its ranks
	mpi() {
		rm -rf ck run.tsv
		mpirun --bind-to none --oversubscribe -np 2 "$M" $long --sync-backend mpi \
			2>err.txt &
		p=$!
		for _ in $(seq 400); do [ -e ck/latest ] && break; sleep 0.05; done
		[ -e ck/latest ] || fail "mpirun: no checkpoint: $(cat err.txt)"
		if [ "$1" = mpirun ]; then kill -INT $p; else kill -TERM $(pgrep -P $p); fi
		set +e
		wait $p
		rc=$?
		set -e
		tail -n 1 run.tsv 2>/dev/null | grep -q '^checkpoint' ||
			fail "mpirun, signal to $1: run.tsv lacks the last checkpoint: $(ls)"
	}
	mpi mpirun
	mpi ranks
	[ "$rc" = 130 ] || fail "mpirun, SIGTERM to the ranks: exit $rc: $(cat err.txt)"
fi
exit 0

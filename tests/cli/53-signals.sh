# SIGINT and SIGTERM end the waits and loops that used to ignore them
# (issue 19): mgpu-shard reading a silent pipe or FIFO (it read on until
# the end of input) and a pipe that never ends (it read until memory ran
# out: now --text-limit), mgpu-train generating a long --sample (only
# SIGKILL ended it), and the rendezvous with --cpu-ranks 1 and with
# torchrun-style ranks whose peers never come (it waited out --timeout);
# a segment left by a node killed during the rendezvous is removed by the
# next job of its name (which failed 'File exists'); a node waiting for a
# node that hangs stops a second after SIGINT.
# Each interrupted command exits 130 (143 for SIGTERM); every command is
# bounded by timeout(1), so one that ignores the signal fails as 124.
. tests/cli/lib.sh
S=$BIN/mgpu-shard
M=$BIN/mgpu-train

# until_open PID PATH: until process PID (timeout(1)) or its child has PATH
# open (it is reading it)
until_open() {
	for _ in $(seq 400); do
		for q in $1 $(pgrep -P $1); do
			ls -l /proc/$q/fd 2>/dev/null | grep -qF -- "$2" && return 0
		done
		sleep 0.05
	done
	fail "process $1 never opened $2"
}
# sig SIG PID: send SIG to the command timeout(1) PID runs (an asynchronous
# command ignores SIGINT, so timeout would not pass it on; the tools set
# their own handlers)
sig() { kill -$1 $(pgrep -P $2); }
interrupted() { # interrupted WHAT RC SIG: RC is 128 + SIG
	[ "$2" = "$((128 + $3))" ] || fail "$1: exit $2, want $((128 + $3)): $(cat err.txt)"
}

# mgpu-shard on a FIFO whose writer stays silent
mkfifo fifo
sleep 300 >fifo &
writer=$!
set +e
timeout -k 5 60 "$S" --text --context 8 -o m.tsv fifo 2>err.txt &
p=$!
until_open $p fifo
sig INT $p
wait $p
rc=$?
set -e
kill $writer 2>/dev/null || true
interrupted "shard, silent FIFO" $rc 2
grep -q "interrupted by SIGINT" err.txt || fail "shard, FIFO: $(cat err.txt)"
[ ! -e m.tsv ] || fail "shard, FIFO: a manifest was left"

# ... and on standard input from a silent pipe, SIGTERM
set +e
# (fd 3: an asynchronous command's standard input would be /dev/null)
sleep 300 | { exec 3<&0; timeout -k 5 60 "$S" --text --context 8 -o m.tsv - <&3 2>err.txt & p=$!
	until_open $p pipe:; sig TERM $p; wait $p; echo $? >rc.txt
	pkill -P $$ -x sleep; } # the silent writer, or the pipeline waits for it
set -e
interrupted "shard, silent pipe" "$(cat rc.txt)" 15
# ... and an archive on standard input (libarchive's reads), SIGINT
set +e
sleep 300 | { exec 3<&0; timeout -k 5 60 "$S" -o m.tsv - <&3 2>err.txt & p=$!
	until_open $p pipe:; sig INT $p; wait $p; echo $? >rc.txt
	pkill -P $$ -x sleep; }
set -e
interrupted "shard, archive on a silent pipe" "$(cat rc.txt)" 2

# a pipe that never ends stops at --text-limit, not when memory runs out
set +e
yes | timeout -k 5 60 "$S" --text --context 8 --text-limit 100000 -o m.tsv - 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] || fail "yes | mgpu-shard: exit $rc: $(cat err.txt)"
grep -q "'-': more than 100000 bytes of text (--text-limit)" err.txt ||
	fail "yes | mgpu-shard: $(cat err.txt)"
expect 2 "--text-limit needs --text" "$S" --text-limit 5 -o m.tsv fifo

# mgpu-train: SIGINT during a long --sample ends it with 130
text_idx d 400 32 17 5
"$M" --data d --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=128 --batch-size 16 \
	--max-steps 2 -q --save-dir ck >/dev/null
set +e
timeout -k 5 60 "$M" --resume ck --sample 16777216 >run.tsv 2>err.txt &
p=$!
set -e
for _ in $(seq 400); do grep -q '^summary' run.tsv && break; sleep 0.05; done
grep -q '^summary' run.tsv || fail "--sample: no summary: $(cat err.txt)"
sig INT $p
set +e
wait $p
rc=$?
set -e
interrupted "--sample" $rc 2

# the rendezvous: a job of two nodes of one rank each whose node 1 never
# comes, and a torchrun-style rank 1 whose rank 0 never comes
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + $$ % 20000)) MGPU_JOB_TOKEN=sig-$$
mkidx m 200 20 8 4
set +e
timeout -k 5 60 "$M" --data m --model mlp:64-8-4 --batch-size 16 --cpu-ranks 1 --nnodes 2 --node-rank 0 \
	--timeout 300 -q >/dev/null 2>err.txt &
p=$!
set -e
for _ in $(seq 400); do ss -ltn | grep -q ":$MASTER_PORT " && break; sleep 0.05; done
ss -ltn | grep -q ":$MASTER_PORT " || fail "node 0 never listened: $(cat err.txt)"
sig INT $p
set +e
wait $p
rc=$?
set -e
interrupted "rendezvous, --cpu-ranks 1 --nnodes 2" $rc 2
# a "rank 0" that takes the connection and never answers
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); c = s.accept(); time.sleep(300)' \
	$MASTER_PORT &
holder=$!
for _ in $(seq 400); do ss -ltn | grep -q ":$MASTER_PORT " && break; sleep 0.05; done
set +e
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 timeout -k 5 60 "$M" --data m \
	--model mlp:64-8-4 --batch-size 16 --timeout 300 -q >/dev/null 2>err.txt &
p=$!
set -e
until_open $p socket:
sig TERM $p
set +e
wait $p
rc=$?
set -e
kill $holder 2>/dev/null || true
interrupted "rendezvous, rank 1 alone" $rc 2 # mgpu-train: 130 for both
ls /dev/shm | grep -q "mgpu-sig-$$" && fail "a segment was left: $(ls /dev/shm)"

# node 0 killed (SIGKILL) during the rendezvous leaves its segment; the
# next job of the same port and token removes it and runs
node() { "$M" --data m --model mlp:64-8-4 --batch-size 16 --max-steps 2 --cpu-ranks 1 \
	--nnodes 2 --timeout 300 -q --node-rank "$@"; }
set +e
timeout -k 5 60 "$M" --data m --model mlp:64-8-4 --batch-size 16 --cpu-ranks 1 --nnodes 2 \
	--node-rank 0 --timeout 300 -q >/dev/null 2>err.txt &
p=$!
set -e
seg=/dev/shm/mgpu-sig-$$-$MASTER_PORT-n0
for _ in $(seq 400); do [ -e $seg ] && break; sleep 0.05; done
[ -e $seg ] || fail "node 0 made no segment $seg: $(cat err.txt)"
kill -KILL $(pgrep -P $(pgrep -P $p)) # the rank: timeout > launcher > rank
set +e
wait $p
set -e
[ -e $seg ] || fail "the killed rank's segment is gone already: the test proves nothing"
node 1 >/dev/null 2>e1.txt &
p1=$!
node 0 >run.tsv 2>e0.txt || fail "the job after a stale segment: $(cat e0.txt)"
wait $p1 || fail "the job after a stale segment, node 1: $(cat e1.txt)"
[ ! -e $seg ] || fail "the segment stays after the job"

# two nodes on loopback, node 1's rank stopped (SIGSTOP) mid-run: SIGINT
# to node 0 ends its wait for node 1 (a second's grace, not --timeout)
node 1 --epochs 100000 --max-steps 0 >/dev/null 2>e1.txt &
p1=$!
set +e
timeout -k 5 60 "$M" --data m --model mlp:64-8-4 --batch-size 16 --epochs 100000 \
	--cpu-ranks 1 --nnodes 2 --timeout 300 --log-every 1 --node-rank 0 >run.tsv 2>err.txt &
p=$!
set -e
wait_for_step run.tsv
rank1=$(pgrep -P "$(pgrep -P $p1)") # $p1 is a subshell: its launcher's rank
kill -STOP $rank1
sig INT $p
set +e
wait $p
rc=$?
set -e
kill -KILL $rank1 2>/dev/null || true
interrupted "node 0 waiting for a stopped node 1" $rc 2
exit 0

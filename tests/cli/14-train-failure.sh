# mgpu-train ranks under failure: kill -9 of rank 1 makes the launcher exit 1
# within timeout + 5 s naming rank 1, leaving no process behind; SIGINT
# stops every rank after the same step with a checkpoint (exit 130) and the
# resumed 2-rank run ends bit-identical to an uninterrupted one; a port in
# use and a bad job token are refused; ranks started by hand with torchrun's
# variables train together.
. tests/cli/lib.sh
mkidx d 3000 300 8 4
ranks_of() { # the rank processes of launcher $1, as "pid rank" lines
	for p in $(pgrep -P "$1"); do
		r=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^RANK=//p')
		[ -n "$r" ] && echo "$p $r"
	done
}
long="--data d --model mlp:64-256-256-4 --epochs 400 --batch-size 32 --cpu-ranks 2 --log-every 1"

# kill -9 of rank 1.
"$BIN/mgpu-train" $long --timeout 5 -q >kill.tsv 2>kill.err &
L=$!
wait_for_step kill.tsv
R1=$(ranks_of $L | awk '$2 == 1 { print $1 }')
R0=$(ranks_of $L | awk '$2 == 0 { print $1 }')
[ -n "$R1" ] && [ -n "$R0" ] || fail "ranks not found under launcher $L"
t0=$(date +%s)
kill -9 "$R1"
set +e
wait $L
rc=$?
set -e
t1=$(date +%s)
[ "$rc" = 1 ] || fail "launcher exited $rc after rank 1 was killed: $(cat kill.err)"
[ $((t1 - t0)) -le 10 ] || fail "took $((t1 - t0)) s to notice"
grep -q "error: rank 1 failed: killed by signal 9" kill.err || fail "kill: $(cat kill.err)"
sleep 0.2
! kill -0 "$R0" 2>/dev/null || fail "rank 0 (pid $R0) outlived the launcher"

# SIGINT: every rank stops after the same step, rank 0 checkpoints, exit 130.
fixed="--data d --model mlp:64-256-256-4 --epochs 20 --batch-size 16 --cpu-ranks 2 --optimizer adamw --lr 0.003 -q"
"$BIN/mgpu-train" $fixed --save-dir full --keep 0 >full.tsv
"$BIN/mgpu-train" $fixed --save-dir part --log-every 1 >part1.tsv 2>part1.err &
L=$!
wait_for_step part1.tsv
kill -INT $L
set +e
wait $L
rc=$?
set -e
[ "$rc" = 130 ] || fail "interrupted run exited $rc: $(cat part1.err)"
ck=$(cat part/latest)
[ -n "$ck" ] && [ "$ck" != step-00001680 ] || fail "no mid-run checkpoint ($ck)"
"$BIN/mgpu-train" $fixed --save-dir part --resume part >part2.tsv
cmp full/step-00001680/model.safetensors part/step-00001680/model.safetensors ||
	fail "2-rank resume after SIGINT at $ck differs from the uninterrupted run"
cmp full/step-00001680/optim.safetensors part/step-00001680/optim.safetensors ||
	fail "optimizer state differs after resume"
# Resuming on another world size works when the global batch allows it.
"$BIN/mgpu-train" --data d --model mlp:64-256-256-4 --epochs 20 --global-batch-size 32 \
	--optimizer adamw --lr 0.003 -q --resume full/step-00000168 --max-steps 200 >one.tsv ||
	fail "resume of a 2-rank checkpoint on 1 rank at the same global batch"
expect 2 "ran with a global batch of 32 samples on 2 ranks; this run's is 48" \
	"$BIN/mgpu-train" --data d --model mlp:64-256-256-4 --epochs 20 --cpu-ranks 3 \
	--optimizer adamw --lr 0.003 -q --resume full/step-00000084

# A port in use, and a job token that does not match.
python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >port.txt &
P=$!
for _ in $(seq 100); do [ -s port.txt ] && break; sleep 0.05; done
port=$(cat port.txt)
RANK=0 WORLD_SIZE=2 MASTER_PORT=$port expect 1 "cannot listen on 127.0.0.1:$port: Address already in use" \
	"$BIN/mgpu-train" --data d --model mlp:64-4 --max-steps 2 -q
kill $P
port=$((20000 + $$ % 20000))
RANK=0 WORLD_SIZE=2 MASTER_PORT=$port MGPU_JOB_TOKEN=right "$BIN/mgpu-train" --data d \
	--model mlp:64-4 --max-steps 2 --timeout 3 -q >r0.out 2>r0.err &
R=$!
set +e
RANK=1 WORLD_SIZE=2 MASTER_PORT=$port MGPU_JOB_TOKEN=wrong "$BIN/mgpu-train" --data d \
	--model mlp:64-4 --max-steps 2 --timeout 3 -q >r1.out 2>r1.err
rc1=$?
wait $R
rc0=$?
set -e
[ "$rc1" = 1 ] && grep -q "refused rank 1: bad job token" r1.err || fail "bad token: $rc1 $(cat r1.err)"
[ "$rc0" = 1 ] && grep -q "1 of 2 ranks joined within 3 s" r0.err || fail "rank 0: $rc0 $(cat r0.err)"

# Ranks started by hand, as torchrun would: they train together.
port=$((port + 1))
for r in 1 0; do
	RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_PORT=$port MGPU_JOB_TOKEN=t "$BIN/mgpu-train" \
		--data d --model mlp:64-4 --max-steps 5 --batch-size 16 -q >tr$r.out 2>tr$r.err &
done
wait
grep -q '^summary	5	.*	32	2	ddp	cpu	' tr0.out || fail "torchrun-style rank 0: $(cat tr0.out tr0.err)"
[ ! -s tr1.out ] || fail "rank 1 wrote to stdout"
exit 0

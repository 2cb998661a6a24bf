# mgpu-train --port sets the rendezvous port as MASTER_PORT does (over the
# environment's value), and "--gpus 0 1" (space-separated, as TensorFlow
# users type it) is a usage error that says what to write.
. tests/cli/lib.sh
expect 2 "unexpected argument '1': --gpus takes one comma-separated list: write --gpus 0,1" \
	"$BIN/mgpu-train" --gpus 0 1 --epochs 2
expect 2 "write --gpus 2,3,5" "$BIN/mgpu-train" --epochs 2 --gpus 2 3 5
expect 2 "--port: 0 is out of range" "$BIN/mgpu-train" --port 0

# a port some other process holds: node 0 cannot listen there, and says so
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("0.0.0.0", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
time.sleep(60)' >port.txt &
holder=$!
trap 'kill $holder 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 50); do [ -s port.txt ] && break; sleep 0.1; done
P=$(cat port.txt)
[ -n "$P" ] || fail "no port held"
expect 1 "cannot listen on 0.0.0.0:$P: Address already in use" \
	env MASTER_ADDR=127.0.0.1 MASTER_PORT=1 "$BIN/mgpu-train" --nnodes 2 --node-rank 0 \
	--port "$P" --cpu-ranks 1 --timeout 5
expect 1 "cannot listen on 0.0.0.0:$P: Address already in use" \
	env MASTER_ADDR=127.0.0.1 MASTER_PORT="$P" "$BIN/mgpu-train" --nnodes 2 --node-rank 0 \
	--cpu-ranks 1 --timeout 5
exit 0

# mgpu-bench train --nodes: node rows run over network namespaces the bench
# makes (as root) and removes, through mgpu-train's own launcher and
# through mpirun, with each node's link rate-limited (tc tbf); a delay
# (tc netem) works or, on a kernel without netem, fails naming it; the
# options that need several nodes are usage errors without them; not root
# is a one-line error. Timings are never asserted.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
mkidx d 1200 100 8 4
w="--data d --model mlp:64-16-4 --max-steps 24 --batch-size 16"

expect 2 "--link-rate and --link-delay shape the links between nodes" \
	"$B" train --cpu-ranks 1 --link-rate 10mbit
expect 2 "--sync-backends mpi runs mpirun over the nodes" "$B" train --sync-backends mpi
expect 2 "--nodes runs CPU ranks" "$B" train --devices 1 --nodes 1,2
expect 2 "--link-rate: '10mb' is not a rate" "$B" train --nodes 2 --link-rate 10mb
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	expect 1 "--nodes 2 runs each node in a network namespace: making network namespaces needs root" \
		setpriv --reuid 65534 --regid 65534 --clear-groups "$B" train --nodes 2
fi

. "$SRC/tests/netns.sh"
netns_up 1 # skips (77) with the reason where namespaces cannot be made
# mgpu-bench, its pid kept: its hosts are mgpub-PID-*, and another test
# run on this machine may hold hosts of its own meanwhile
bench() { sh -c 'echo $$ >bench.pid; exec "$0" "$@"' "$B" "$@"; }
left() { ip netns list | grep "^mgpub-$(cat bench.pid)-" || true; }
mpi=cpu
"$BIN/mgpu-train" -V -v | grep -q 'mpi=1' && command -v mpirun >/dev/null && mpi=cpu,mpi
bench train --cpu-ranks 1 --nodes 1,2 --sync-backends $mpi --link-rate 50mbit --repeat 1 \
	--warmup-steps 4 -- $w >out.tsv 2>err.txt || fail "sweep: $(cat err.txt)"
python3 - out.tsv "$mpi" <<'PY' || fail "table: $(cat out.tsv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
# the sync backend is named in the label only when the sweep has several
if "mpi" in sys.argv[2]:
    want = ["1 CPU rank", "2 nodes x 1 CPU rank (DDP, cpu, 50mbit)",
            "2 nodes x 1 CPU rank (DDP, mpi, 50mbit)"]
else:
    want = ["1 CPU rank", "2 nodes x 1 CPU rank (DDP, 50mbit)"]
assert [r["config"] for r in rows] == want, [r["config"] for r in rows]
for r in rows:
    assert r["status"] == "ok", r
    n = int(r["nodes"])
    assert int(r["devices"]) == n and int(r["effective_batch"]) == 16 * n, r
    assert r["link_rate"] == ("50mbit" if n > 1 else "NA"), r
for r in rows[1:]:
    assert ("--nnodes 2" in r["command"]) == (r["sync_backend"] == "cpu"), r
    assert "--node-rank" not in r["command"], r
PY
[ -z "$(left)" ] || fail "namespaces left behind: $(left)"

# a delay: netem where the kernel has it, else an error saying so
if ip netns exec "$NETNS_PFX-h1" tc qdisc add dev lo root netem delay 1ms 2>/dev/null; then
	bench train --cpu-ranks 1 --nodes 2 --link-delay 2 --repeat 1 --warmup-steps 4 -- $w \
		>out.tsv 2>err.txt || fail "--link-delay: $(cat err.txt)"
	grep -q "2 nodes x 1 CPU rank (DDP, +2ms)" out.tsv || fail "delay row: $(cat out.tsv)"
else
	expect 1 "--link-delay: this kernel has no netem qdisc" \
		bench train --cpu-ranks 1 --nodes 2 --link-delay 2 -- $w
fi
[ -z "$(left)" ] || fail "namespaces left behind: $(left)"
exit 0

# netns.sh - test hosts as network namespaces (sourced by tests/cli/5x-*.sh
# after lib.sh; bash, as root).
#
# netns_up N makes hosts 1..N: namespace mgpu-PID-hI with address
# 10.250.0.I/24 on a veth whose other end sits on a bridge in a switch
# namespace (mgpu-PID-sw), so the hosts reach each other and nothing else,
# and the machine's own network is left alone. on_host I CMD... runs CMD on
# host I with its own host name hI (a UTS namespace), as two machines would
# have. Where namespaces cannot be made (not root, no iproute2, no veth) the
# test is skipped (exit 77) with the reason. The namespaces and every
# process still in them go on every exit: normal end, failure, signal.
NETNS_PFX=mgpu-$$
NETNS_N=0

netns_down() {
	i=1
	while [ "$i" -le "$NETNS_N" ]; do
		# the processes this test started there, then the namespace
		for p in $(ip netns pids "$NETNS_PFX-h$i" 2>/dev/null); do
			kill -9 "$p" 2>/dev/null || true
		done
		ip netns del "$NETNS_PFX-h$i" 2>/dev/null || true
		i=$((i + 1))
	done
	ip netns del "$NETNS_PFX-sw" 2>/dev/null || true
}

netns_skip() {
	netns_down
	echo "network namespaces cannot be made here: $*"
	exit 77
}

# host_addr I: host I's address
host_addr() { echo "10.250.0.$1"; }

netns_up() {
	[ "$(id -u)" = 0 ] || netns_skip "not root"
	command -v ip >/dev/null || netns_skip "no ip (iproute2)"
	command -v unshare >/dev/null || netns_skip "no unshare (util-linux)"
	trap 'netns_down; rm -rf "$T"' EXIT
	trap 'exit 130' INT TERM HUP
	ip netns add "$NETNS_PFX-sw" 2>/dev/null || netns_skip "ip netns add failed"
	ip -n "$NETNS_PFX-sw" link add br0 type bridge 2>/dev/null || netns_skip "no bridge"
	ip -n "$NETNS_PFX-sw" link set br0 up
	i=1
	while [ "$i" -le "$1" ]; do
		ns=$NETNS_PFX-h$i
		ip netns add "$ns" || netns_skip "ip netns add $ns failed"
		NETNS_N=$i
		ip -n "$ns" link add eth0 type veth peer name p$i netns "$NETNS_PFX-sw" \
			2>/dev/null || netns_skip "no veth pairs"
		ip -n "$NETNS_PFX-sw" link set p$i master br0 up
		ip -n "$ns" addr add "$(host_addr "$i")/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" link set lo up
		i=$((i + 1))
	done
}

# on_host I CMD...: CMD in host I's namespace, with host name hI
on_host() {
	h=$1
	shift
	ip netns exec "$NETNS_PFX-h$h" unshare --uts sh -c 'hostname "$0"; exec "$@"' "h$h" "$@"
}

# netns_rate I RATE: limit host I's outgoing traffic to RATE (tc tbf, "100mbit")
netns_rate() {
	ip netns exec "$NETNS_PFX-h$1" tc qdisc replace dev eth0 root tbf rate "$2" \
		burst 64kb latency 50ms
}

# netns_delay I MS: delay host I's outgoing packets (tc netem); 1 when this
# kernel has no netem
netns_delay() {
	ip netns exec "$NETNS_PFX-h$1" tc qdisc replace dev eth0 root netem delay "${2}ms" \
		2>/dev/null
}

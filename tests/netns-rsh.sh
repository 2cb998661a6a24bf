#!/bin/sh
# netns-rsh.sh HOST CMD... - Open MPI's remote shell (plm_rsh_agent) for
# the test hosts of tests/netns.sh: "ssh" into host 10.250.0.I is running
# CMD in namespace $NETNS_PFX-hI with host name hI. Options before HOST
# (ssh's, which Open MPI may pass) are skipped. Like ssh, it passes none of
# the caller's environment but PATH (and HOME): what the ranks there get
# of it is what mpirun forwards (-x).
while [ $# -gt 0 ]; do
	case $1 in
	-*) shift ;;
	*) break ;;
	esac
done
i=${1##*.}
shift
exec env -i PATH="$PATH" HOME="${HOME:-/}" ip netns exec "$NETNS_PFX-h$i" \
	unshare --uts sh -c 'hostname "$0"; exec sh -c "$*"' "h$i" "$@"

/*
 * netns.h - the hosts of a multi-node benchmark on one machine: network
 * namespaces joined by veth pairs on a bridge, as tests/netns.sh makes
 * them, so that `mgpu-bench train --nodes` runs each node's ranks with a
 * network stack of their own and the nodes talk over (virtual) Ethernet.
 *
 * Host i (1..n) is namespace PREFIX-hi with address 10.250.0.i/24 on its
 * eth0; the bridge lives in PREFIX-sw, so the hosts reach each other and
 * nothing else, and the machine's own network is left alone. Commands run
 * there with host name hi (a UTS namespace of their own), as on two
 * machines. Optionally each host's outgoing link is shaped: a rate limit
 * (tc tbf, or netem's rate when a delay is asked too) and a delay (tc
 * netem; kernels without the netem qdisc get an error saying so).
 *
 * Making namespaces needs root, ip (iproute2) and unshare (util-linux);
 * mgpu_netns_usable() says why not. Everything is made by running those
 * programs (bench/spawn.h); mgpu_netns_down() kills what still runs in
 * the namespaces and removes them, and is safe to call twice.
 */
#ifndef MGPU_BENCH_NETNS_H
#define MGPU_BENCH_NETNS_H

#include <stddef.h> /* size_t */

#define MGPU_NETNS_MAX_HOSTS 16

struct mgpu_netns {
	char prefix[32];       /* "mgpub-PID" */
	int nhosts;            /* hosts made: 1..nhosts */
	int sw;                /* the switch namespace exists */
	char ip[256], unshare[256], sh[256], env[256]; /* the programs, by path */
	char dir[64];          /* a temporary directory (the remote shell), or "" */
	char rsh[96];          /* mpirun's remote shell into the hosts, or "" */
};

/* name's path on PATH (and the sbin directories) in buf, or an error. */
int mgpu_netns_which(const char *name, char *buf, size_t cap);
/* 0 when namespaces can be made here, else an error saying why not. */
int mgpu_netns_usable(void);
/* Make hosts 1..n (n <= MGPU_NETNS_MAX_HOSTS); on failure what was made
 * is removed. */
int mgpu_netns_up(struct mgpu_netns *ns, int n);
/* Shape every host's outgoing link: rate as tc takes it ("100mbit"; NULL:
 * none) and delay_ms (0: none). */
int mgpu_netns_shape(struct mgpu_netns *ns, const char *rate, double delay_ms);
void mgpu_netns_down(struct mgpu_netns *ns);

/* Host i's address, "10.250.0.i". */
void mgpu_netns_addr(int host, char *buf, size_t cap);
/* The network of the hosts, "10.250.0.0/24" (for mpirun's MCA options). */
const char *mgpu_netns_net(void);

/* Words that run a command on host i with host name hi and the variables
 * env ("NAME=VALUE", NULL-terminated; may be NULL): out[0..] gets the
 * wrapper, then env's words, then argv's, NULL-terminated. store keeps the
 * words made here and must live as long as out. */
struct mgpu_netns_cmd {
	char store[4][64];
	char *argv[320];
};
int mgpu_netns_wrap(const struct mgpu_netns *ns, int host, char *const *env,
		    char *const *argv, struct mgpu_netns_cmd *c);

/* A script for mpirun's --mca plm_rsh_agent: "ssh HOST CMD" runs CMD on
 * that host with no environment but PATH and HOME (as ssh does; mpirun's
 * -x passes the rest). Made once, in a temporary directory that
 * mgpu_netns_down removes; *path points into ns. */
int mgpu_netns_rsh(struct mgpu_netns *ns, const char **path);

#endif

/*
 * netns.c - the hosts of a multi-node benchmark as network namespaces
 * (see netns.h). Every change goes through ip and tc, run as children.
 */
#include "bench/netns.h"

#include <stdint.h>    /* uintptr_t */
#include <signal.h>    /* kill, SIGKILL */
#include <stdio.h>     /* snprintf, fopen */
#include <stdlib.h>    /* getenv, free, strtol, mkdtemp */
#include <string.h>    /* strchr, strstr */
#include <sys/stat.h>  /* chmod */
#include <unistd.h>    /* access, geteuid, getpid, unlink, rmdir */

#include "bench/spawn.h" /* mgpu_spawn_capture */
#include "core/err.h"    /* mgpu_err */
#include "core/io.h"     /* mgpu_tmp_template */

#define NET "10.250.0.0/24"

/* name's path on PATH (and the sbin directories root's PATH may lack). */
int mgpu_netns_which(const char *name, char *buf, size_t cap)
{
	const char *path = getenv("PATH"), *p, *e;
	char dirs[4096];

	snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin:/usr/bin:/bin", path ? path : "");
	for (p = dirs; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if (e > p && snprintf(buf, cap, "%.*s/%s", (int)(e - p), p, name) < (int)cap &&
		    access(buf, X_OK) == 0)
			return 0;
	}
	return mgpu_err(MGPU_EUNSUP, "no '%s' on PATH", name);
}

int mgpu_netns_usable(void)
{
	char buf[256];

	if (geteuid() != 0)
		return mgpu_err(MGPU_EUNSUP, "making network namespaces needs root");
	if (mgpu_netns_which("ip", buf, sizeof buf) < 0)
		return mgpu_err(MGPU_EUNSUP, "making network namespaces needs ip (iproute2)");
	if (mgpu_netns_which("unshare", buf, sizeof buf) < 0)
		return mgpu_err(MGPU_EUNSUP, "running on a namespace host needs unshare "
				"(util-linux)");
	return 0;
}

/* Run argv (argv[0] a path); a failure says what and tc's or ip's words. */
static int run(char *const *argv, const char *what, struct mgpu_spawn_result *res)
{
	char line[300];

	MGPU_TRY(mgpu_spawn_capture(argv, 20000, NULL, res));
	if (res->exited && res->status == 0 && !res->timed_out)
		return 0;
	mgpu_spawn_err_line(res, line, sizeof line);
	free(res->out);
	res->out = NULL;
	return mgpu_err(MGPU_EIO, "%s failed: %s", what, line[0] ? line : "no message");
}

/* ip with up to 12 more words (NULL-terminated). */
static int ip(const struct mgpu_netns *ns, const char *what, const char *const *words)
{
	struct mgpu_spawn_result res;
	char *argv[16];
	int i;

	argv[0] = (char *)(uintptr_t)ns->ip;
	for (i = 0; words[i] && i < 14; i++)
		argv[i + 1] = (char *)(uintptr_t)words[i];
	argv[i + 1] = NULL;
	MGPU_TRY(run(argv, what, &res));
	free(res.out);
	return 0;
}

static void name_of(const struct mgpu_netns *ns, int host, char *buf, size_t cap)
{
	if (host == 0)
		snprintf(buf, cap, "%s-sw", ns->prefix);
	else
		snprintf(buf, cap, "%s-h%d", ns->prefix, host);
}

/* Host i: its namespace, a veth into the switch, address, links up. */
static int add_host(struct mgpu_netns *ns, int i)
{
	char h[48], sw[48], peer[16], addr[32], cidr[40];

	name_of(ns, i, h, sizeof h);
	name_of(ns, 0, sw, sizeof sw);
	snprintf(peer, sizeof peer, "p%d", i);
	mgpu_netns_addr(i, addr, sizeof addr);
	snprintf(cidr, sizeof cidr, "%s/24", addr);
	MGPU_TRY(ip(ns, "ip netns add", (const char *[]){ "netns", "add", h, NULL }));
	ns->nhosts = i;
	MGPU_TRY(ip(ns, "ip link add (veth)", (const char *[]){ "-n", h, "link", "add", "eth0",
			"type", "veth", "peer", "name", peer, "netns", sw, NULL }));
	MGPU_TRY(ip(ns, "ip link set (bridge port)", (const char *[]){ "-n", sw, "link", "set",
			peer, "master", "br0", "up", NULL }));
	MGPU_TRY(ip(ns, "ip addr add", (const char *[]){ "-n", h, "addr", "add", cidr, "dev",
			"eth0", NULL }));
	MGPU_TRY(ip(ns, "ip link set eth0 up", (const char *[]){ "-n", h, "link", "set",
			"eth0", "up", NULL }));
	return ip(ns, "ip link set lo up", (const char *[]){ "-n", h, "link", "set", "lo", "up",
			NULL });
}

static int up(struct mgpu_netns *ns, int n)
{
	char sw[48];
	int i;

	MGPU_TRY(mgpu_netns_usable());
	if (n < 1 || n > MGPU_NETNS_MAX_HOSTS)
		return mgpu_err(MGPU_EINVAL, "%d namespace hosts: 1 to %d", n,
				MGPU_NETNS_MAX_HOSTS);
	MGPU_TRY(mgpu_netns_which("ip", ns->ip, sizeof ns->ip));
	MGPU_TRY(mgpu_netns_which("unshare", ns->unshare, sizeof ns->unshare));
	MGPU_TRY(mgpu_netns_which("sh", ns->sh, sizeof ns->sh));
	MGPU_TRY(mgpu_netns_which("env", ns->env, sizeof ns->env));
	name_of(ns, 0, sw, sizeof sw);
	MGPU_TRY(ip(ns, "ip netns add", (const char *[]){ "netns", "add", sw, NULL }));
	ns->sw = 1;
	MGPU_TRY(ip(ns, "ip link add (bridge)", (const char *[]){ "-n", sw, "link", "add", "br0",
			"type", "bridge", NULL }));
	MGPU_TRY(ip(ns, "ip link set br0 up", (const char *[]){ "-n", sw, "link", "set", "br0",
			"up", NULL }));
	for (i = 1; i <= n; i++)
		MGPU_TRY(add_host(ns, i));
	return 0;
}

int mgpu_netns_up(struct mgpu_netns *ns, int n)
{
	int rc;

	memset(ns, 0, sizeof *ns);
	snprintf(ns->prefix, sizeof ns->prefix, "mgpub-%d", (int)getpid());
	rc = up(ns, n);
	if (rc < 0)
		mgpu_netns_down(ns);
	return rc;
}

/* tc on host i: root qdisc of eth0 replaced by words. */
static int tc(const struct mgpu_netns *ns, int i, const char *what, const char *const *words)
{
	struct mgpu_spawn_result res;
	char h[48], tcp[256], *argv[24];
	int k = 0, j, rc;

	name_of(ns, i, h, sizeof h);
	MGPU_TRY(mgpu_netns_which("tc", tcp, sizeof tcp));
	argv[k++] = (char *)(uintptr_t)ns->ip;
	argv[k++] = (char *)(uintptr_t)"netns";
	argv[k++] = (char *)(uintptr_t)"exec";
	argv[k++] = h;
	argv[k++] = tcp;
	for (j = 0; words[j] && k < 23; j++)
		argv[k++] = (char *)(uintptr_t)words[j];
	argv[k] = NULL;
	rc = run(argv, what, &res);
	free(res.out);
	return rc;
}

int mgpu_netns_shape(struct mgpu_netns *ns, const char *rate, double delay_ms)
{
	char delay[32];
	int i, rc;

	snprintf(delay, sizeof delay, "%gms", delay_ms);
	for (i = 1; i <= ns->nhosts; i++) {
		if (delay_ms > 0) /* netem does both: one root qdisc */
			rc = tc(ns, i, "tc qdisc netem", (const char *[]){ "qdisc", "replace", "dev",
				"eth0", "root", "netem", "delay", delay, rate ? "rate" : NULL, rate,
				NULL });
		else if (rate)
			rc = tc(ns, i, "tc qdisc tbf", (const char *[]){ "qdisc", "replace", "dev",
				"eth0", "root", "tbf", "rate", rate, "burst", "256kb", "latency",
				"50ms", NULL });
		else
			return 0;
		if (rc < 0 && delay_ms > 0 && strstr(mgpu_errmsg(), "unknown")) {
			char tcsays[200];
			snprintf(tcsays, sizeof tcsays, "%s", mgpu_errmsg());
			return mgpu_err(MGPU_EUNSUP, "this kernel has no netem qdisc (%s), so no "
					"delay can be added; a rate limit alone works (tc tbf)",
					tcsays);
		}
		MGPU_TRY(rc);
	}
	return 0;
}

/* Kill what still runs in namespace name. */
static void kill_in(const struct mgpu_netns *ns, const char *name)
{
	struct mgpu_spawn_result res;
	char *argv[] = { (char *)(uintptr_t)ns->ip, (char *)(uintptr_t)"netns",
			 (char *)(uintptr_t)"pids", (char *)(uintptr_t)name, NULL };
	char *p, *end;
	long pid;

	if (mgpu_spawn_capture(argv, 10000, NULL, &res) < 0)
		return;
	for (p = res.out; p && *p; p = end) {
		pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 1)
			kill((pid_t)pid, SIGKILL);
	}
	free(res.out);
}

void mgpu_netns_down(struct mgpu_netns *ns)
{
	char name[48];
	int i;

	for (i = ns->nhosts; i >= 0; i--) {
		if (i == 0 && !ns->sw)
			break;
		name_of(ns, i, name, sizeof name);
		kill_in(ns, name);
		ip(ns, "ip netns del", (const char *[]){ "netns", "del", name, NULL });
	}
	ns->nhosts = ns->sw = 0;
	if (ns->rsh[0])
		unlink(ns->rsh);
	if (ns->dir[0])
		rmdir(ns->dir);
	ns->rsh[0] = ns->dir[0] = '\0';
}

void mgpu_netns_addr(int host, char *buf, size_t cap)
{
	snprintf(buf, cap, "10.250.0.%d", host);
}

const char *mgpu_netns_net(void)
{
	return NET;
}

int mgpu_netns_wrap(const struct mgpu_netns *ns, int host, char *const *env,
		    char *const *argv, struct mgpu_netns_cmd *c)
{
	const int max = (int)(sizeof c->argv / sizeof c->argv[0]) - 1;
	int k = 0, i;

	if (host < 1 || host > ns->nhosts)
		return mgpu_err(MGPU_EINVAL, "no namespace host %d (%d made)", host, ns->nhosts);
	name_of(ns, host, c->store[0], sizeof c->store[0]);
	snprintf(c->store[1], sizeof c->store[1], "h%d", host);
	c->argv[k++] = (char *)(uintptr_t)ns->ip;
	c->argv[k++] = (char *)(uintptr_t)"netns";
	c->argv[k++] = (char *)(uintptr_t)"exec";
	c->argv[k++] = c->store[0];
	c->argv[k++] = (char *)(uintptr_t)ns->unshare;
	c->argv[k++] = (char *)(uintptr_t)"--uts";
	c->argv[k++] = (char *)(uintptr_t)ns->sh;
	c->argv[k++] = (char *)(uintptr_t)"-c";
	c->argv[k++] = (char *)(uintptr_t)"hostname \"$0\" && exec \"$@\"";
	c->argv[k++] = c->store[1];
	c->argv[k++] = (char *)(uintptr_t)ns->env;
	for (i = 0; env && env[i]; i++)
		if (k < max)
			c->argv[k++] = env[i];
	for (i = 0; argv[i]; i++)
		if (k < max)
			c->argv[k++] = argv[i];
	if (k >= max)
		return mgpu_err(MGPU_EINVAL, "command of more than %d words", max);
	c->argv[k] = NULL;
	return 0;
}

/* The remote shell: skip ssh's options, take host 10.250.0.I as PREFIX-hI. */
static const char rsh_script[] =
	"#!/bin/sh\n"
	"# mgpu-bench: mpirun's remote shell into the namespace hosts (as ssh: no\n"
	"# environment but PATH and HOME)\n"
	"while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done\n"
	"i=${1##*.}\n"
	"shift\n"
	"exec env -i PATH=\"$PATH\" HOME=\"${HOME:-/}\" ip netns exec \"%s-h$i\" \\\n"
	"\tunshare --uts sh -c 'hostname \"$0\"; exec sh -c \"$*\"' \"h$i\" \"$@\"\n";

int mgpu_netns_rsh(struct mgpu_netns *ns, const char **path)
{
	FILE *fp;
	int bad;

	if (!ns->rsh[0]) {
		MGPU_TRY(mgpu_tmp_template(ns->dir, sizeof ns->dir, "/tmp/mgpu-bench-"));
		if (!mkdtemp(ns->dir)) {
			ns->dir[0] = '\0';
			return mgpu_err_errno(MGPU_EIO, "cannot make a temporary directory in /tmp");
		}
		snprintf(ns->rsh, sizeof ns->rsh, "%s/rsh", ns->dir);
		fp = fopen(ns->rsh, "w");
		bad = !fp || fprintf(fp, rsh_script, ns->prefix) < 0;
		if ((fp && fclose(fp) != 0) || bad || chmod(ns->rsh, 0755) != 0)
			return mgpu_err_errno(MGPU_EIO, "'%s': cannot write", ns->rsh);
	}
	*path = ns->rsh;
	return 0;
}

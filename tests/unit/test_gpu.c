/*
 * test_gpu.c - unit tests of lib/gpu through gpu.h: the nvidia-smi CSV
 * parser (every format and every documented error), CUDA_VISIBLE_DEVICES,
 * the selection policy, --gpus resolution, enumeration and the system
 * report on whatever machine runs them (no GPU here: zero GPUs with a
 * reason, never a crash), the GPU-code fit rule, and the OpenBLAS kernel
 * check (CPU flags, core tiers, the verdict).
 *
 * CSV inputs are built in memory in nvidia-smi's documented formats; the
 * CLI tests run the same rules on the fixture files in tests/data/smi/.
 */
#include <arpa/inet.h>  /* htons */
#include <netinet/in.h> /* struct sockaddr_in */
#include <stdio.h>      /* fmemopen */
#include <stdlib.h>     /* setenv */
#include <string.h>     /* strlen, strstr */
#include <sys/socket.h> /* socket, bind, listen */
#include <unistd.h>     /* close */

#include "core/err.h" /* mgpu_errmsg, MGPU_E* */
#include "gpu/gpu.h"  /* mgpu_gpu_* */
#include "../t.h"     /* T_RUN, T_CHECK, T_OK, T_FAILS */

#define HEADER "index, uuid, name, memory.total [MiB], memory.used [MiB], display_active, " \
	       "pci.bus_id, compute_cap\n"
/* Four GPUs: a display GPU, two 40 GB ones (a tie), one 80 GB. */
#define FOUR                                                                              \
	HEADER                                                                            \
	"0, GPU-3a1f9e02-5b7c-4d1e-9f00-1c2d3e4f5a60, NVIDIA GeForce RTX 3060, 12288 MiB, " \
	"512 MiB, Enabled, 00000000:01:00.0, 8.6\n"                                       \
	"1, GPU-aaaa1111-0000-4000-8000-000000000001, NVIDIA A100-SXM4-40GB, 40960 MiB, " \
	"0 MiB, Disabled, 00000000:07:00.0, 8.0\n"                                        \
	"2, GPU-bbbb2222-0000-4000-8000-000000000002, NVIDIA A100-SXM4-80GB, 81920 MiB, " \
	"1024 MiB, Disabled, 00000000:0F:00.0, 8.0\n"                                     \
	"3, GPU-aaaa3333-0000-4000-8000-000000000003, NVIDIA A100-SXM4-40GB, 40960 MiB, " \
	"30000 MiB, Disabled, 00000000:47:00.0, 8.0\n"

static struct mgpu_gpu_list L;
static struct mgpu_gpu_selection S;

static int parse(const char *csv)
{
	return mgpu_gpu_parse_smi_csv(csv, strlen(csv), "t.csv", &L);
}

/* The kept ordinals as "2,1,3". */
static const char *picked(void)
{
	static char buf[256];
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < S.n; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%d", i ? "," : "",
				      L.gpu[S.pick[i]].index);
	return buf;
}

static const char *select_with(double min_gb, int display, double max_used, int count)
{
	struct mgpu_gpu_policy p;

	mgpu_gpu_policy_init(&p);
	p.min_memory_gb = min_gb;
	p.include_display = display;
	p.max_used_pct = max_used;
	p.count = count;
	if (mgpu_gpu_select(&L, &p, &S) < 0)
		return "error";
	return picked();
}

static void test_parse_header_units(void)
{
	const struct mgpu_gpu *g;

	T_OK(parse(FOUR));
	T_CHECK(L.n == 4 && L.nvisible == 4, "n %d visible %d", L.n, L.nvisible);
	g = &L.gpu[0];
	T_CHECK(g->index == 0 && g->smi_index == 0, "index %d/%d", g->index, g->smi_index);
	T_CHECK(strcmp(g->name, "NVIDIA GeForce RTX 3060") == 0, "name '%s'", g->name);
	T_CHECK(strcmp(g->uuid, "GPU-3a1f9e02-5b7c-4d1e-9f00-1c2d3e4f5a60") == 0, "uuid %s", g->uuid);
	T_CHECK(strcmp(g->pci_bus_id, "00000000:01:00.0") == 0, "pci %s", g->pci_bus_id);
	T_CHECK(g->mem_total_bytes == 12288LL << 20, "total %lld", (long long)g->mem_total_bytes);
	T_CHECK(g->mem_used_bytes == 512LL << 20, "used %lld", (long long)g->mem_used_bytes);
	T_CHECK(g->mem_free_bytes == (12288LL - 512) << 20, "free %lld",
		(long long)g->mem_free_bytes);
	T_CHECK(g->display_active == 1 && L.gpu[1].display_active == 0, "display %d %d",
		g->display_active, L.gpu[1].display_active);
	T_CHECK(g->cc_major == 8 && g->cc_minor == 6, "cc %d.%d", g->cc_major, g->cc_minor);
	T_CHECK(g->sm_count == -1 && g->util_pct == -1 && g->watchdog == -1, "unknowns set");
}

static void test_parse_noheader_nounits(void)
{
	const char *csv =
		"1, GPU-b, Tesla T4, 15360, 0, Disabled, 00000000:3B:00.0, 7.5\r\n"
		"0, GPU-a, Tesla T4, 15360, 100, Disabled, 00000000:1A:00.0, 7.5\r\n\n";

	T_OK(parse(csv));
	T_CHECK(L.n == 2, "n %d", L.n);
	/* sorted into index (PCI) order and numbered */
	T_CHECK(L.gpu[0].smi_index == 0 && L.gpu[0].index == 0 &&
		strcmp(L.gpu[0].uuid, "GPU-a") == 0, "first is %s", L.gpu[0].uuid);
	T_CHECK(L.gpu[1].mem_total_bytes == 15360LL << 20, "total");
	T_CHECK(strcmp(L.gpu[1].pci_bus_id, "00000000:3B:00.0") == 0, "CR stripped: '%s'",
		L.gpu[1].pci_bus_id);
}

static void test_parse_header_by_name(void)
{
	const char *csv = "name, memory.total, index, utilization.gpu [%], memory.free [MiB]\n"
			  "H100, 81559, 1, 3 %, 81000 MiB\n"
			  "H100, 81559, 0, [N/A], 1000\n";

	T_OK(parse(csv));
	T_CHECK(L.n == 2 && L.gpu[1].util_pct == 3 && L.gpu[0].util_pct == -1, "util %d %d",
		L.gpu[0].util_pct, L.gpu[1].util_pct);
	T_CHECK(L.gpu[0].mem_free_bytes == 1000LL << 20, "free");
	T_CHECK(L.gpu[0].uuid[0] == '\0' && L.gpu[0].display_active == -1, "absent columns");
}

static void test_parse_unknown_values(void)
{
	const char *csv = HEADER
		"0, [N/A], Tesla V100, 16384 MiB, [N/A], [N/A], 00000000:1A:00.0, [N/A]\n"
		"1, GPU-x, Tesla V100, [Not Supported], [N/A], Disabled, [N/A], 7.0\n";

	T_OK(parse(csv));
	T_CHECK(L.gpu[0].uuid[0] == '\0' && L.gpu[0].mem_used_bytes == -1 &&
		L.gpu[0].display_active == -1 && L.gpu[0].cc_major == -1, "N/A is unknown");
	T_CHECK(L.gpu[1].mem_total_bytes == -1 && L.gpu[1].pci_bus_id[0] == '\0', "N/A total");
}

static void test_parse_no_devices(void)
{
	T_OK(parse("No devices were found\n"));
	T_CHECK(L.n == 0 && L.nvisible == 0, "n %d", L.n);
	T_CHECK(strstr(L.why, "No devices were found") != NULL, "why '%s'", L.why);
	T_OK(parse(HEADER));
	T_CHECK(L.n == 0 && strstr(L.why, "lists no GPU"), "header only: '%s'", L.why);
}

static void test_parse_errors(void)
{
	static const char nul[] = "index, memory.total\n0,\0 1\n";
	char big[64 * 80 + 200];
	size_t o;
	int i;

	T_FAILS(parse(""), MGPU_EFORMAT, "'t.csv': empty input");
	T_FAILS(parse("\n  \n"), MGPU_EFORMAT, "empty input");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 15360 MiB, 0 MiB, Disabled, 00000000:1A:00.0\n"),
		MGPU_EFORMAT, "line 2: 7 fields, the header has 8");
	T_FAILS(parse("0, GPU-a, T4, 15360, 0, Disabled, 00000000:1A:00.0\n"), MGPU_EFORMAT,
		"line 1: 7 fields, expected 8 (index, uuid");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 15x MiB, 0 MiB, Disabled, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "line 2: memory.total '15x MiB' is not a number of MiB");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 15 GiB, 0 MiB, Disabled, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "memory.total '15 GiB' is not a number of MiB");
	T_FAILS(parse(HEADER "0, GPU-a, T4, -15 MiB, 0 MiB, Disabled, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "memory.total '-15 MiB'");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 309200000300000 MiB, 0, Disabled, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "'309200000300000 MiB' is not a plausible number of MiB");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 1234567890123456 MiB, 0, Disabled, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "is not a number of MiB");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 15 MiB, lots, Disabled, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "memory.used 'lots'");
	T_FAILS(parse(HEADER "x, GPU-a, T4, 15 MiB, 0 MiB, Disabled, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "index 'x' is not a GPU index");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 15 MiB, 0 MiB, Maybe, 0:1:0.0, 7.5\n"),
		MGPU_EFORMAT, "display_active 'Maybe' is not Enabled or Disabled");
	T_FAILS(parse(HEADER "0, GPU-a, T4, 15 MiB, 0 MiB, Disabled, 0:1:0.0, 7\n"),
		MGPU_EFORMAT, "compute_cap '7' is not a compute capability");
	T_FAILS(parse("index, name\n0, T4\n"), MGPU_EFORMAT, "missing column 'memory.total'");
	T_FAILS(parse("memory.total, name\n1, T4\n"), MGPU_EFORMAT, "missing column 'index'");
	T_FAILS(parse("index, index, memory.total\n"), MGPU_EFORMAT, "'index' appears twice");
	T_FAILS(parse("index, memory.total\n0, 1\n0, 2\n"), MGPU_EFORMAT, "GPU index 0 listed twice");
	T_FAILS(parse("index, memory.total\n0, 1\n\x01\n"), MGPU_EFORMAT,
		"line 3: control character 0x01");
	T_FAILS(mgpu_gpu_parse_smi_csv(nul, sizeof nul - 1, "t.csv", &L), MGPU_EFORMAT,
		"control character 0x00");
	T_FAILS(parse("No devices were found\n0, 1\n"), MGPU_EFORMAT, "text after");
	o = (size_t)snprintf(big, sizeof big, "index, memory.total\n");
	for (i = 0; i <= MGPU_GPU_MAX; i++)
		o += (size_t)snprintf(big + o, sizeof big - o, "%d, 1\n", i);
	T_FAILS(parse(big), MGPU_EFORMAT, "more than 64 GPUs");
}

static void test_select_defaults(void)
{
	T_OK(parse(FOUR));
	/* display GPU 0 out; 80 GB first; the 40 GB tie by lowest ordinal */
	T_CHECK(strcmp(select_with(8, 0, -1, 0), "2,1,3") == 0, "got %s", picked());
	T_CHECK(S.neligible == 3 && S.order[2] == 1 && S.order[1] == 2 && S.order[0] == 0,
		"order");
	T_CHECK(strstr(S.reason[0], "drives a display") != NULL, "reason '%s'", S.reason[0]);
	T_CHECK(S.reason[2][0] == '\0', "kept GPU has a reason");
}

static void test_select_rules(void)
{
	T_OK(parse(FOUR));
	T_CHECK(strcmp(select_with(8, 1, -1, 0), "2,1,3,0") == 0, "display included: %s", picked());
	T_CHECK(strcmp(select_with(43, 1, -1, 0), "2") == 0, "min 43 GB: %s", picked());
	T_CHECK(strstr(S.reason[1], "42.94 GB memory < 43 GB (--min-memory)") != NULL, "'%s'",
		S.reason[1]);
	T_CHECK(strcmp(select_with(8, 0, 50, 0), "2,1") == 0, "max used 50: %s", picked());
	T_CHECK(strstr(S.reason[3], "73% memory in use > 50%") != NULL, "'%s'", S.reason[3]);
	T_CHECK(strcmp(select_with(8, 0, -1, 2), "2,1") == 0, "count 2: %s", picked());
	T_CHECK(S.neligible == 3 && strstr(S.reason[3], "best 2") != NULL, "'%s'", S.reason[3]);
	T_CHECK(strcmp(select_with(8, 0, -1, 1), "2") == 0, "single: %s", picked());
	T_CHECK(strcmp(select_with(8, 0, -1, 9), "2,1,3") == 0, "count 9: %s", picked());
	T_CHECK(strcmp(select_with(100, 1, -1, 0), "") == 0 && S.n == 0, "none: %s", picked());
	T_CHECK(strcmp(select_with(-1, 0, -1, 0), "error") == 0, "negative min accepted");
	T_CHECK(strcmp(select_with(8, 0, 101, 0), "error") == 0, "max used 101 accepted");
	T_CHECK(strcmp(select_with(8, 0, -1, -2), "error") == 0, "count -2 accepted");
}

/* 8 GB means 8 x 10^9 bytes: 7630 MiB passes, 7629 MiB does not. */
static void test_select_memory_edge(void)
{
	T_OK(parse("index, memory.total [MiB]\n0, 7629 MiB\n1, 7630 MiB\n2, [N/A]\n"));
	T_CHECK(strcmp(select_with(8, 0, -1, 0), "1") == 0, "got %s", picked());
	T_CHECK(strstr(S.reason[0], "7.99 GB memory < 8 GB") != NULL, "'%s'", S.reason[0]);
	T_CHECK(strstr(S.reason[2], "total memory unknown") != NULL, "'%s'", S.reason[2]);
	T_CHECK(strcmp(select_with(0, 0, -1, 0), "1,0") == 0, "min 0: %s", picked());
}

static void test_select_watchdog(void)
{
	T_OK(parse("index, memory.total\n0, 20000\n1, 10000\n"));
	L.gpu[0].watchdog = 1; /* what the CUDA runtime reports for a display GPU */
	T_CHECK(strcmp(select_with(8, 0, -1, 0), "1") == 0, "got %s", picked());
	T_CHECK(strstr(S.reason[0], "display watchdog") != NULL, "'%s'", S.reason[0]);
	T_CHECK(strcmp(select_with(8, 1, -1, 0), "0,1") == 0, "included: %s", picked());
}

static void test_visible_indices(void)
{
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, NULL));
	T_CHECK(L.nvisible == 4 && L.gpu[3].index == 3, "NULL changed the list");
	T_OK(mgpu_gpu_apply_visible(&L, "3,1"));
	T_CHECK(L.nvisible == 2 && L.n == 4, "visible %d n %d", L.nvisible, L.n);
	T_CHECK(L.gpu[0].smi_index == 3 && L.gpu[0].index == 0, "ordinal 0 is GPU %d",
		L.gpu[0].smi_index);
	T_CHECK(L.gpu[1].smi_index == 1 && L.gpu[1].index == 1, "ordinal 1 is GPU %d",
		L.gpu[1].smi_index);
	T_CHECK(L.gpu[2].index == -1 && L.gpu[3].index == -1, "hidden keep index -1");
	T_CHECK(L.note[0] == '\0', "note '%s'", L.note);
	/* ordinal 0 (40 GB, 73% used) and 1 (40 GB): tie by ordinal */
	T_CHECK(strcmp(select_with(8, 0, -1, 0), "0,1") == 0, "got %s", picked());
	T_CHECK(strstr(S.reason[2], "hidden by CUDA_VISIBLE_DEVICES") != NULL, "'%s'",
		S.reason[2]);
}

static void test_visible_uuids(void)
{
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "GPU-bbbb,gpu-3A1F9E02"));
	T_CHECK(L.nvisible == 2 && L.gpu[0].smi_index == 2 && L.gpu[1].smi_index == 0,
		"visible %d: %d %d", L.nvisible, L.gpu[0].smi_index, L.gpu[1].smi_index);
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "GPU-aaaa3333-0000-4000-8000-000000000003"));
	T_CHECK(L.nvisible == 1 && L.gpu[0].smi_index == 3, "full uuid");
	/* ambiguous prefix ends the list, as CUDA does */
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "2,GPU-aaaa,1"));
	T_CHECK(L.nvisible == 1 && L.gpu[0].smi_index == 2, "visible %d", L.nvisible);
	T_CHECK(strstr(L.note, "'GPU-aaaa' is ambiguous (2 GPUs match)") != NULL, "'%s'", L.note);
}

static void test_visible_invalid(void)
{
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "0,2,-1,1"));
	T_CHECK(L.nvisible == 2 && L.gpu[1].smi_index == 2, "stops at -1: %d", L.nvisible);
	T_CHECK(strstr(L.note, "entry '-1' is not a GPU ordinal") != NULL, "'%s'", L.note);
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "1,7"));
	T_CHECK(L.nvisible == 1 && strstr(L.note, "'7' is not a GPU ordinal (4 visible)"), "'%s'",
		L.note);
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "1,1"));
	T_CHECK(L.nvisible == 1 && strstr(L.note, "a second time"), "'%s'", L.note);
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "GPU-ffff"));
	T_CHECK(L.nvisible == 0 && strstr(L.note, "matches no GPU UUID"), "'%s'", L.note);
	T_CHECK(strstr(L.why, "hides all 4 GPUs") != NULL, "why '%s'", L.why);
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, "MIG-GPU-aaaa1111/1/0"));
	T_CHECK(L.nvisible == 0 && strstr(L.note, "MIG"), "'%s'", L.note);
	T_OK(parse(FOUR));
	T_OK(mgpu_gpu_apply_visible(&L, ""));
	T_CHECK(L.nvisible == 0 && L.n == 4, "empty hides all: %d", L.nvisible);
	T_CHECK(strcmp(select_with(8, 1, -1, 0), "") == 0, "hidden selected: %s", picked());
}

/* Resolve arg with input (NULL: no stream) as the stream read by "-";
 * repeats refused unless repeat_ok. */
static const char *no_repeat = "ranks need a GPU each";

static int resolve(const char *arg, const char *input, int *ids, int *n)
{
	static char buf[256];
	FILE *in = NULL;
	int rc;

	if (input && input[0]) {
		snprintf(buf, sizeof buf, "%s", input);
		in = fmemopen(buf, strlen(buf), "r");
	} else if (input) {
		in = fopen("/dev/null", "r");
	}
	rc = mgpu_gpu_resolve(arg, in, &L, NULL, no_repeat, ids, MGPU_GPU_MAX, n);
	if (in)
		fclose(in);
	return rc;
}

static void test_resolve_lists(void)
{
	int ids[MGPU_GPU_MAX], n;

	T_OK(parse(FOUR));
	T_OK(resolve("3,0", NULL, ids, &n));
	T_CHECK(n == 2 && ids[0] == 3 && ids[1] == 0, "n %d", n);
	T_OK(resolve("all", NULL, ids, &n));
	T_CHECK(n == 4 && ids[3] == 3, "all: n %d", n);
	T_OK(resolve("auto", NULL, ids, &n));
	T_CHECK(n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 3, "auto: n %d", n);
	T_FAILS(resolve("4", NULL, ids, &n), MGPU_ERANGE,
		"--gpus: GPU 4 requested but 4 GPUs are visible (ordinals 0-3)");
	T_FAILS(resolve("1,1", NULL, ids, &n), MGPU_EINVAL,
		"--gpus: GPU 1 listed twice: ranks need a GPU each");
	T_FAILS(resolve("1x", NULL, ids, &n), MGPU_EINVAL, "is not a list of GPU ordinals, all");
	T_FAILS(resolve("", NULL, ids, &n), MGPU_EINVAL, "--gpus: empty");
	T_FAILS(resolve("-", NULL, ids, &n), MGPU_EINVAL, "no input stream");
}

static void test_resolve_stdin(void)
{
	int ids[MGPU_GPU_MAX], n;

	T_OK(parse(FOUR));
	T_OK(resolve("-", "2,1,3\n", ids, &n));
	T_CHECK(n == 3 && ids[0] == 2 && ids[2] == 3, "n %d", n);
	T_OK(resolve("-", "0", ids, &n));
	T_CHECK(n == 1 && ids[0] == 0, "no newline: n %d", n);
	T_FAILS(resolve("-", "", ids, &n), MGPU_EFORMAT, "--gpus -: no GPU ids on standard input");
	T_FAILS(resolve("-", "\n", ids, &n), MGPU_EFORMAT, "no GPU ids");
	T_FAILS(resolve("-", "0\n1\n", ids, &n), MGPU_EFORMAT, "not one line");
	T_FAILS(resolve("-", "0, 1\n", ids, &n), MGPU_EFORMAT, "is not a list of integers");
	T_FAILS(resolve("-", "auto\n", ids, &n), MGPU_EFORMAT, "is not a list of integers");
	T_FAILS(resolve("-", "9\n", ids, &n), MGPU_ERANGE,
		"--gpus -: GPU 9 requested but 4 GPUs are visible");
	T_CHECK(n == 0, "n %d after a failure", n);
}

/* A GPU listed more than once: ranks sharing it (cpu sync, for tests). */
static void test_resolve_repeats(void)
{
	int ids[MGPU_GPU_MAX], n;

	T_OK(parse(FOUR));
	no_repeat = NULL;
	T_OK(resolve("1,1,0,1", NULL, ids, &n));
	T_CHECK(n == 4 && ids[0] == 1 && ids[1] == 1 && ids[3] == 1, "n %d", n);
	T_CHECK(mgpu_gpu_repeated(ids, n) == 1, "repeated %d", mgpu_gpu_repeated(ids, n));
	T_OK(resolve("-", "2,2\n", ids, &n));
	T_CHECK(n == 2 && ids[1] == 2, "stdin: n %d", n);
	T_FAILS(resolve("3,3,4", NULL, ids, &n), MGPU_ERANGE, "GPU 4 requested");
	T_CHECK(mgpu_gpu_repeated(ids, 0) == -1, "an empty list repeats nothing");
	no_repeat = "ranks need a GPU each";
	T_FAILS(resolve("-", "2,0,2\n", ids, &n), MGPU_EINVAL,
		"--gpus -: GPU 2 listed twice: ranks need a GPU each");
	T_OK(resolve("0,3", NULL, ids, &n));
	T_CHECK(mgpu_gpu_repeated(ids, n) == -1, "0,3 repeats %d", mgpu_gpu_repeated(ids, n));
	/* refused before the GPUs are looked for: the same without any */
	T_OK(parse("No devices were found\n"));
	T_FAILS(resolve("0,0", NULL, ids, &n), MGPU_EINVAL, "GPU 0 listed twice");
	no_repeat = NULL;
	T_FAILS(resolve("0,0", NULL, ids, &n), MGPU_ERANGE, "GPU 0 requested but 0 GPUs");
	no_repeat = "ranks need a GPU each";
}

static void test_resolve_no_gpus(void)
{
	int ids[MGPU_GPU_MAX], n;

	T_OK(parse("No devices were found\n"));
	snprintf(L.why, sizeof L.why, "no CUDA driver");
	T_FAILS(resolve("3", NULL, ids, &n), MGPU_ERANGE,
		"--gpus: GPU 3 requested but 0 GPUs are visible: no CUDA driver");
	T_FAILS(resolve("all", NULL, ids, &n), MGPU_ERANGE, "--gpus all: no GPU is visible");
	T_FAILS(resolve("auto", NULL, ids, &n), MGPU_ERANGE, "--gpus auto: no GPU is visible");
	T_OK(parse("index, memory.total\n0, 1000\n1, 2000\n"));
	T_FAILS(resolve("auto", NULL, ids, &n), MGPU_ERANGE,
		"none of the 2 visible GPUs is eligible: GPU 0 1.04 GB memory < 8 GB");
}

/* The code-fit rule: "SASS sm_86", "PTX compute_120" or "none" for cc under archs. */
static const char *fit_of(int major, int minor, const char *archs)
{
	static char buf[64];
	struct mgpu_gpu_fit f;

	if (mgpu_gpu_code_fit(major, minor, archs, &f) < 0)
		return "error";
	if (f.code == MGPU_GPU_CODE_SASS)
		snprintf(buf, sizeof buf, "SASS sm_%d%s", f.arch, f.exact ? "" : " compatible");
	else if (f.code == MGPU_GPU_CODE_PTX)
		snprintf(buf, sizeof buf, "PTX compute_%d", f.arch);
	else
		snprintf(buf, sizeof buf, "none");
	return buf;
}

#define T_FIT(major, minor, archs, want)                                             \
	T_CHECK(strcmp(fit_of(major, minor, archs), want) == 0, "cc %d.%d on '%s': %s, want %s", \
		major, minor, archs, fit_of(major, minor, archs), want)

static void test_code_fit(void)
{
	const char *def = "sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120 compute_120";
	const char *old = "sm_80 sm_90 compute_90"; /* the build before issue 13 */

	T_FIT(7, 5, def, "SASS sm_75");
	T_FIT(8, 9, def, "SASS sm_89");
	T_FIT(8, 7, def, "SASS sm_86 compatible");  /* newest cubin of the major */
	T_FIT(10, 3, def, "SASS sm_100 compatible");
	T_FIT(12, 1, def, "SASS sm_120 compatible");
	T_FIT(13, 0, def, "PTX compute_120");       /* newer than the list: JIT */
	T_FIT(11, 0, def, "none");                  /* PTX 12.0 cannot run on 11.0 */
	T_FIT(7, 0, def, "none");
	T_FIT(8, 6, old, "SASS sm_80 compatible");
	T_FIT(7, 5, old, "none");
	T_FIT(10, 0, old, "PTX compute_90");        /* Blackwell ran only on PTX */
	T_FIT(12, 0, old, "PTX compute_90");
	T_FIT(9, 0, "sm_90a,compute_80", "SASS sm_90");
	T_FIT(9, 2, "sm_90a compute_80", "PTX compute_80"); /* 'a' code: 9.0 only */
	T_FIT(9, 0, "", "none");                     /* built without CUDA */
	T_FIT(8, 0, " , sm_80 ,", "SASS sm_80");
	T_FAILS(mgpu_gpu_code_fit(8, 0, "sm_80 sm80", &(struct mgpu_gpu_fit){ 0 }), MGPU_EINVAL,
		"'sm80' is not sm_XY or compute_XY");
	T_FAILS(mgpu_gpu_code_fit(8, 0, "compute_8", &(struct mgpu_gpu_fit){ 0 }), MGPU_EINVAL,
		"'compute_8'");
	T_FAILS(mgpu_gpu_code_fit(8, 0, "sm_80x", &(struct mgpu_gpu_fit){ 0 }), MGPU_EINVAL,
		"'sm_80x'");
	T_FAILS(mgpu_gpu_code_fit(-1, 0, def, &(struct mgpu_gpu_fit){ 0 }), MGPU_EINVAL,
		"compute capability -1.0 is not valid");
}

/* The list this binary was built with parses and, with CUDA, ends in PTX. */
static void test_build_archs(void)
{
	const char *a = mgpu_gpu_build_archs();
	struct mgpu_gpu_fit f;

	T_OK(mgpu_gpu_code_fit(9, 0, a, &f));
	if (!a[0])
		return;
	T_CHECK(strstr(a, "compute_") != NULL, "no PTX in '%s'", a);
	T_CHECK(f.code != MGPU_GPU_CODE_NONE || !strstr(a, "sm_"), "no code for cc 9.0 in '%s'", a);
}

/* /proc/cpuinfo flags lines of real machines (trimmed to what matters). */
#define F_SSE "fpu vme sse sse2 ssse3 sse4_1 sse4_2 popcnt"
#define F_AVX F_SSE " xsave avx"
#define F_AVX2 F_AVX " fma avx2 bmi2"
#define F_AVX512 F_AVX2 " avx512f avx512dq avx512cd avx512bw avx512vl"

static void test_cpu_simd(void)
{
	char names[160];

	T_CHECK(mgpu_gpu_cpu_simd(F_SSE, names, sizeof names) == MGPU_SIMD_SSE, "sse");
	T_CHECK(strcmp(names, "sse4_2") == 0, "names '%s'", names);
	T_CHECK(mgpu_gpu_cpu_simd(F_AVX, names, sizeof names) == MGPU_SIMD_AVX, "avx");
	T_CHECK(mgpu_gpu_cpu_simd(F_AVX2, names, sizeof names) == MGPU_SIMD_AVX2, "avx2");
	T_CHECK(strcmp(names, "sse4_2 avx avx2 fma") == 0, "names '%s'", names);
	T_CHECK(mgpu_gpu_cpu_simd(F_AVX512 " avx512_bf16", names, sizeof names) ==
		MGPU_SIMD_AVX512, "avx512");
	T_CHECK(strstr(names, "avx512f avx512bw avx512vl avx512dq avx512_bf16") != NULL,
		"names '%s'", names);
	/* avx2 without fma, or avx512f alone (Knights Landing lacks bw/vl), is the tier below */
	T_CHECK(mgpu_gpu_cpu_simd(F_AVX " avx2", names, sizeof names) == MGPU_SIMD_AVX, "no fma");
	T_CHECK(mgpu_gpu_cpu_simd(F_AVX2 " avx512f avx512cd", names, sizeof names) ==
		MGPU_SIMD_AVX2, "avx512f only");
	/* words, not substrings: "avx512_vnni" is not "avx", "xavx" is nothing */
	T_CHECK(mgpu_gpu_cpu_simd("sse2 avx512_vnni xavx", names, sizeof names) == MGPU_SIMD_SSE,
		"substring matched");
	T_CHECK(mgpu_gpu_cpu_simd("", names, sizeof names) == MGPU_SIMD_SSE && !names[0], "empty");
}

static void test_blas_core_simd(void)
{
	T_CHECK(mgpu_gpu_blas_core_simd("SkylakeX") == MGPU_SIMD_AVX512, "SkylakeX");
	T_CHECK(mgpu_gpu_blas_core_simd("COOPERLAKE") == MGPU_SIMD_AVX512, "COOPERLAKE");
	T_CHECK(mgpu_gpu_blas_core_simd("Haswell") == MGPU_SIMD_AVX2, "Haswell");
	T_CHECK(mgpu_gpu_blas_core_simd("Zen") == MGPU_SIMD_AVX2, "Zen");
	T_CHECK(mgpu_gpu_blas_core_simd("Sandybridge") == MGPU_SIMD_AVX, "Sandybridge");
	T_CHECK(mgpu_gpu_blas_core_simd("Prescott") == MGPU_SIMD_SSE, "Prescott");
	T_CHECK(mgpu_gpu_blas_core_simd("NEOVERSEN1") == MGPU_SIMD_UNKNOWN, "arm");
	T_CHECK(mgpu_gpu_blas_core_simd("") == MGPU_SIMD_UNKNOWN, "empty");
}

static void test_blas_verdict(void)
{
	char m[320];

	/* the case: AVX-512 Xeon, OpenBLAS fell back to Haswell kernels */
	T_CHECK(mgpu_gpu_blas_verdict("Haswell", F_AVX512, m, sizeof m) == 0, "%s", m);
	T_CHECK(strstr(m, "chose Haswell kernels (AVX2 and FMA) but the CPU has AVX-512") &&
		strstr(m, "set OPENBLAS_CORETYPE=SkylakeX"), "%s", m);
	T_CHECK(mgpu_gpu_blas_verdict("Prescott", F_AVX2, m, sizeof m) == 0, "%s", m);
	T_CHECK(strstr(m, "set OPENBLAS_CORETYPE=Haswell") != NULL, "%s", m);
	T_CHECK(mgpu_gpu_blas_verdict("Sandybridge", F_AVX512, m, sizeof m) == 0, "%s", m);
	T_CHECK(mgpu_gpu_blas_verdict("Nehalem", F_AVX, m, sizeof m) == 0, "%s", m);
	T_CHECK(strstr(m, "OPENBLAS_CORETYPE=Sandybridge") != NULL, "%s", m);
	/* kernels above the CPU: forced by OPENBLAS_CORETYPE, will crash */
	T_CHECK(mgpu_gpu_blas_verdict("SkylakeX", F_AVX2, m, sizeof m) == 0, "%s", m);
	T_CHECK(strstr(m, "illegal instructions; unset OPENBLAS_CORETYPE or set it to Haswell"),
		"%s", m);
	/* agreement */
	T_CHECK(mgpu_gpu_blas_verdict("SkylakeX", F_AVX512, m, sizeof m) == 1, "%s", m);
	T_CHECK(mgpu_gpu_blas_verdict("COOPERLAKE", F_AVX512 " avx512_bf16", m, sizeof m) == 1,
		"%s", m);
	T_CHECK(mgpu_gpu_blas_verdict("Zen", F_AVX2, m, sizeof m) == 1, "%s", m);
	T_CHECK(strstr(m, "OPENBLAS_CORETYPE") == NULL, "a fit names the fix: %s", m);
	T_CHECK(mgpu_gpu_blas_verdict("Prescott", F_SSE, m, sizeof m) == 1, "%s", m);
	/* another architecture: not judged */
	T_CHECK(mgpu_gpu_blas_verdict("NEOVERSEN1", "fp asimd", m, sizeof m) == -1, "%s", m);
	T_CHECK(strstr(m, "not judged") != NULL, "%s", m);
}

/* This host: the facts are there, whatever they are. */
static void test_blas_host(void)
{
	struct mgpu_gpu_blas b;

	mgpu_gpu_blas_host(&b);
	T_CHECK(b.core[0] && b.config[0], "core '%s' config '%s'", b.core, b.config);
	T_CHECK(b.threads >= 1, "threads %d", b.threads);
	T_CHECK(b.rank_threads == 1, "a CPU rank uses %d BLAS threads", b.rank_threads);
	T_CHECK(mgpu_gpu_blas_threads() == b.threads, "the count was not restored");
	T_CHECK(b.fits >= -1 && b.fits <= 1 && b.verdict[0], "fits %d '%s'", b.fits, b.verdict);
}

/* Whatever this machine has: a list, never an error or a crash. */
static void test_enumerate_here(void)
{
	static struct mgpu_gpu_list e;
	int i;

	T_OK(mgpu_gpu_enumerate(&e));
	T_CHECK(getenv("CUDA_DEVICE_ORDER") != NULL, "CUDA_DEVICE_ORDER not set");
	T_CHECK(e.n == e.nvisible && e.n >= 0 && e.n <= MGPU_GPU_MAX, "n %d", e.n);
	if (e.n == 0)
		T_CHECK(e.why[0] != '\0', "zero GPUs without a reason");
	for (i = 0; i < e.n; i++)
		T_CHECK(e.gpu[i].index == i && e.gpu[i].mem_total_bytes > 0, "GPU %d", i);
}

static void test_system_here(void)
{
	static struct mgpu_gpu_list e;
	static struct mgpu_gpu_system s;

	T_OK(mgpu_gpu_enumerate(&e));
	T_OK(mgpu_gpu_system(&e, &s));
	T_CHECK(s.cpu_cores >= 1, "cores %d", s.cpu_cores);
	T_CHECK(s.cpu_model[0] != '\0', "no CPU model");
	T_CHECK(s.mem_total_bytes > 0 && s.mem_avail_bytes > 0, "memory");
	T_CHECK(s.port == MGPU_GPU_RENDEZVOUS_PORT || getenv("MASTER_PORT"), "port %d", s.port);
	T_CHECK(s.ngpus == e.nvisible, "ngpus %d", s.ngpus);
	T_CHECK(s.nccl_version > 0 || s.nccl_why[0], "nccl neither loaded nor explained");
	T_CHECK(s.nvml_gpus >= 0 || s.nvml_why[0], "nvml neither loaded nor explained");
}

static void test_port_free(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	char why[160];
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		if (fd >= 0)
			close(fd);
		T_SKIP("cannot listen on a loopback port here");
	}
	port = ntohs(a.sin_port);
	T_CHECK(mgpu_gpu_port_free(port, why, sizeof why) == 0, "a listened port is free");
	T_CHECK(strstr(why, "cannot bind 127.0.0.1:") != NULL, "why '%s'", why);
	close(fd);
	T_CHECK(mgpu_gpu_port_free(port, why, sizeof why) == 1, "closed port busy: %s", why);
}

int main(void)
{
	T_RUN(test_parse_header_units);
	T_RUN(test_parse_noheader_nounits);
	T_RUN(test_parse_header_by_name);
	T_RUN(test_parse_unknown_values);
	T_RUN(test_parse_no_devices);
	T_RUN(test_parse_errors);
	T_RUN(test_select_defaults);
	T_RUN(test_select_rules);
	T_RUN(test_select_memory_edge);
	T_RUN(test_select_watchdog);
	T_RUN(test_visible_indices);
	T_RUN(test_visible_uuids);
	T_RUN(test_visible_invalid);
	T_RUN(test_resolve_lists);
	T_RUN(test_resolve_stdin);
	T_RUN(test_resolve_repeats);
	T_RUN(test_resolve_no_gpus);
	T_RUN(test_enumerate_here);
	T_RUN(test_system_here);
	T_RUN(test_port_free);
	T_RUN(test_code_fit);
	T_RUN(test_build_archs);
	T_RUN(test_cpu_simd);
	T_RUN(test_blas_core_simd);
	T_RUN(test_blas_verdict);
	T_RUN(test_blas_host);
	return T_DONE();
}

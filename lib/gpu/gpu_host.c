/*
 * gpu_host.c - the system report of `mgpu-probe --system` (see gpu.h):
 * the host's side (CPU, memory, /dev/shm, the rendezvous port, whether
 * NCCL loads) and the assembly of the CUDA and NVML parts.
 *
 * Provides mgpu_gpu_system and mgpu_gpu_port_free. Linux interfaces only
 * (/proc, sysconf, statvfs, a loopback socket). NCCL is opened with dlopen
 * under its soname, the question a user's job asks when it starts: in a
 * CUDA build it is already linked, so this finds the same copy.
 *
 * Invariants: nothing here fails; what cannot be read stays -1 or "".
 */
#include <arpa/inet.h>   /* htons, htonl */
#include <dlfcn.h>       /* dlopen, dlsym */
#include <errno.h>       /* errno */
#include <netinet/in.h>  /* struct sockaddr_in, INADDR_LOOPBACK */
#include <stdio.h>       /* fopen, fgets */
#include <stdlib.h>      /* getenv, strtol */
#include <string.h>      /* memset, strncmp */
#include <sys/socket.h>  /* socket, bind */
#include <sys/statvfs.h> /* statvfs */
#include <sys/utsname.h> /* uname */
#include <unistd.h>      /* sysconf, close */

#include "core/err.h"    /* MGPU_OK */
#include "gpu/gpu_int.h" /* mgpu_gpu_cuda_system, mgpu_gpu_nvml_system */

int mgpu_gpu_port_free(int port, char *why, size_t whylen)
{
	struct sockaddr_in a;
	int fd, one = 1, ok;

	if (whylen)
		why[0] = '\0';
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, whylen, "cannot create a socket: %s", strerror(errno));
		return 0;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
	if (!ok)
		snprintf(why, whylen, "cannot bind 127.0.0.1:%d: %s", port, strerror(errno));
	close(fd);
	return ok;
}

/* The value after "key<spaces>:" on a line of /proc/cpuinfo, or NULL. */
static const char *cpuinfo_value(const char *line, const char *key)
{
	size_t k = strlen(key);

	if (strncmp(line, key, k) != 0)
		return NULL;
	line += k;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line != ':')
		return NULL;
	line++;
	while (*line == ' ')
		line++;
	return line;
}

static void cpu_model(struct mgpu_gpu_system *s)
{
	static const char *const keys[] = { "model name", "Hardware", "cpu model", "Processor" };
	char line[512];
	const char *v;
	struct utsname u;
	size_t k, n;
	FILE *fp = fopen("/proc/cpuinfo", "r");

	while (fp && !s->cpu_model[0] && fgets(line, sizeof line, fp))
		for (k = 0; k < sizeof keys / sizeof keys[0] && !s->cpu_model[0]; k++)
			if ((v = cpuinfo_value(line, keys[k])) != NULL && *v != '\n') {
				snprintf(s->cpu_model, sizeof s->cpu_model, "%s", v);
				n = strlen(s->cpu_model);
				if (n && s->cpu_model[n - 1] == '\n')
					s->cpu_model[n - 1] = '\0';
			}
	if (fp)
		fclose(fp);
	if (!s->cpu_model[0] && uname(&u) == 0)
		snprintf(s->cpu_model, sizeof s->cpu_model, "%s", u.machine);
}

static void memory(struct mgpu_gpu_system *s)
{
	char line[256];
	long long kb;
	FILE *fp = fopen("/proc/meminfo", "r");

	while (fp && fgets(line, sizeof line, fp)) {
		if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
			s->mem_total_bytes = (int64_t)kb * 1024;
		else if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
			s->mem_avail_bytes = (int64_t)kb * 1024;
	}
	if (fp)
		fclose(fp);
}

static void shm(struct mgpu_gpu_system *s)
{
	struct statvfs v;

	if (statvfs("/dev/shm", &v) != 0)
		return;
	s->shm_total_bytes = (int64_t)v.f_blocks * (int64_t)v.f_frsize;
	s->shm_free_bytes = (int64_t)v.f_bavail * (int64_t)v.f_frsize;
}

static void nccl(struct mgpu_gpu_system *s)
{
	int (*get_version)(int *);
	void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL), *p;
	const char *err;
	int v = -1;

	if (!lib) {
		err = dlerror();
		snprintf(s->nccl_why, sizeof s->nccl_why, "libnccl.so.2 is not loadable: %s",
			 err ? err : "unknown reason");
		return;
	}
	p = dlsym(lib, "ncclGetVersion");
	memcpy(&get_version, &p, sizeof p);
	if (!get_version || get_version(&v) != 0)
		snprintf(s->nccl_why, sizeof s->nccl_why, "libnccl.so.2 loads but ncclGetVersion "
			 "failed");
	else
		s->nccl_version = v;
	/* kept open: unloading NCCL while the process runs is not supported */
}

/* MASTER_PORT when it is a valid port, else torchrun's default. */
static int rendezvous_port(void)
{
	const char *e = getenv("MASTER_PORT");
	char *end;
	long v;

	if (!e || !*e)
		return MGPU_GPU_RENDEZVOUS_PORT;
	v = strtol(e, &end, 10);
	return *end == '\0' && v > 0 && v < 65536 ? (int)v : MGPU_GPU_RENDEZVOUS_PORT;
}

static void system_blank(struct mgpu_gpu_system *s)
{
	memset(s, 0, sizeof *s);
	s->cuda_driver_version = s->cuda_runtime_version = -1;
	s->cublas_version[0] = s->cublas_version[1] = s->cublas_version[2] = -1;
	s->nccl_version = s->nvml_gpus = s->cpu_cores = -1;
	s->mem_total_bytes = s->mem_avail_bytes = -1;
	s->shm_total_bytes = s->shm_free_bytes = -1;
	memset(s->p2p, -1, sizeof s->p2p);
	memset(s->nvlink, -1, sizeof s->nvlink);
}

int mgpu_gpu_system(const struct mgpu_gpu_list *list, struct mgpu_gpu_system *s)
{
	long n;

	system_blank(s);
	s->ngpus = list->nvisible < MGPU_GPU_MAX ? list->nvisible : MGPU_GPU_MAX;
	mgpu_gpu_cuda_system(list, s);
	mgpu_gpu_nvml_system(list, s);
	nccl(s);
	cpu_model(s);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	s->cpu_cores = n > 0 ? (int)n : -1;
	memory(s);
	shm(s);
	s->port = rendezvous_port();
	s->port_free = mgpu_gpu_port_free(s->port, s->port_why, sizeof s->port_why);
	return MGPU_OK;
}

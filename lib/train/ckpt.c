/*
 * ckpt.c - checkpoint save, resolve and load (see ckpt.h).
 */
#include "train/ckpt.h"

#include <dirent.h>   /* opendir, readdir */
#include <errno.h>    /* errno, EWOULDBLOCK */
#include <fcntl.h>    /* open, O_CLOEXEC */
#include <inttypes.h> /* PRId64 */
#include <math.h>     /* isfinite */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* malloc, free, qsort */
#include <string.h>   /* strcmp, strncmp */
#include <sys/file.h> /* flock */
#include <sys/stat.h> /* stat */
#include <unistd.h>   /* getpid, rmdir, unlink, pread, pwrite, ftruncate */

#include "core/err.h"        /* mgpu_err */
#include "core/io.h"         /* mgpu_afile, mgpu_read_file */
#include "core/json.h"       /* mgpu_json_parse */
#include "model/safetensors.h"  /* mgpu_st_write, mgpu_st_load */

/* The state.json layout written here; a reader refuses any other, since
 * it cannot know what a newer one means. */
#define STATE_VERSION 1

static const char *const state_names[2][2] = {
	{ "momentum", NULL },          /* SGD */
	{ "exp_avg", "exp_avg_sq" },   /* AdamW */
};

static int is_dir(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Remove a checkpoint directory: its files, then itself. */
static void remove_ckpt_dir(const char *dir)
{
	static const char *const files[] = { "model.safetensors", "optim.safetensors",
					     "state.json" };
	char p[MGPU_CKPT_PATH];
	size_t i;

	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		if (mgpu_path_join(p, sizeof p, dir, files[i]) == 0)
			unlink(p);
	}
	rmdir(dir);
}

/* The tensor name of parameter p, with ".suffix" for optimizer state. */
static void param_name(char *buf, size_t len, const struct mgpu_param *p, const char *suffix)
{
	snprintf(buf, len, "%s%s%s", p->name, suffix ? "." : "", suffix ? suffix : "");
}

/* One entry per tensor of ps[0..n) (a model's parameters or buffers) over
 * the host vector h; returns the count. */
static int add_entries(struct mgpu_st_entry *e, char (*names)[80], const struct mgpu_param *ps,
		       int n, const float *h, const char *suffix)
{
	int i;

	for (i = 0; i < n; i++) {
		const struct mgpu_param *p = &ps[i];
		param_name(names[i], sizeof names[i], p, suffix);
		e[i] = (struct mgpu_st_entry){ .name = names[i], .data = h + p->off,
					       .ndim = p->ndim,
					       .shape = { p->shape[0], p->shape[1], p->shape[2],
							  p->shape[3] } };
	}
	return n;
}

/* A diverged model is no checkpoint: it would replace the last good one
 * as latest. The training loop stops on a non-finite loss or gradient;
 * this catches an update that overflowed the weights in between. */
static int check_finite(const struct mgpu_model *m, const float *host, int64_t step)
{
	size_t i;
	int k;

	for (k = 0; k < m->nparam; k++) {
		const struct mgpu_param *p = &m->params[k];
		for (i = 0; i < p->count; i++)
			if (!isfinite(host[p->off + i]))
				return mgpu_err(MGPU_ERANGE, "step %" PRId64 ": weight '%s' is not "
						"finite: training diverged; no checkpoint written "
						"for this step", step, p->name);
	}
	return 0;
}

/* ["a", "b"]: names as a JSON list. */
static void put_json_list(FILE *fp, char *const *names, int n)
{
	int k;

	putc('[', fp);
	for (k = 0; k < n; k++) {
		fputs(k ? ", " : "", fp);
		mgpu_json_escape(fp, names[k]);
	}
	putc(']', fp);
}

static int write_model(const char *dir, struct mgpu_model *m, const struct mgpu_ckpt_state *st,
		       float *host)
{
	/* The inputs' normalisation travels with the weights: a program that
	 * loads only this file feeds (x - mean) / std, x the raw sample values
	 * (bytes as 0..255); scale and shift are the exact float32 transform
	 * x * scale + shift the trainer applied. The class names, when the
	 * labels were words, come last. */
	char scale[32], shift[32], mean[32], sd[32];
	const char *meta[] = { "format", "pt", "mgpu_spec", st->spec,
			       "mgpu_input_mean", mean, "mgpu_input_std", sd,
			       "mgpu_norm_scale", scale, "mgpu_norm_shift", shift,
			       "mgpu_classes", NULL };
	struct mgpu_st_entry e[MGPU_MAX_PARAMS + MGPU_MAX_BUFFERS];
	char names[MGPU_MAX_PARAMS + MGPU_MAX_BUFFERS][80], path[MGPU_CKPT_PATH];
	char *classes = NULL;
	float *hb = NULL; /* the buffers, after the parameters */
	size_t len = 0;
	FILE *fp;
	int n, rc;

	snprintf(scale, sizeof scale, "%.9g", (double)(float)st->norm_scale);
	snprintf(shift, sizeof shift, "%.9g", (double)(float)st->norm_shift);
	snprintf(sd, sizeof sd, "%.17g", 1.0 / (double)(float)st->norm_scale);
	snprintf(mean, sizeof mean, "%.17g", -(double)(float)st->norm_shift /
					     (double)(float)st->norm_scale);

	MGPU_TRY(mgpu_path_join(path, sizeof path, dir, "model.safetensors"));
	MGPU_TRY(mgpu_model_get(m, host));
	MGPU_TRY(check_finite(m, host, st->step));
	n = add_entries(e, names, m->params, m->nparam, host, NULL);
	if (m->nbuffer) {
		if (!(hb = malloc(m->nbufvals * sizeof *hb)))
			return mgpu_err(MGPU_ENOMEM, "out of memory");
		rc = mgpu_model_get_buffers(m, hb);
		if (rc < 0)
			goto out;
		n += add_entries(e + n, names + n, m->buffers, m->nbuffer, hb, NULL);
	}
	if (st->names) {
		rc = mgpu_err(MGPU_ENOMEM, "out of memory");
		if (!(fp = open_memstream(&classes, &len)))
			goto out;
		put_json_list(fp, st->names, st->nnames);
		if (fclose(fp) != 0 || !classes)
			goto out;
		meta[13] = classes;
	}
	rc = mgpu_st_write(path, e, n, meta, classes ? 7 : 6);
out:
	free(classes);
	free(hb);
	return rc;
}

static int write_optim(const char *dir, struct mgpu_model *m, struct mgpu_optim *o,
		       float *host)
{
	struct mgpu_st_entry e[2 * MGPU_MAX_PARAMS];
	char names[2 * MGPU_MAX_PARAMS][80], path[MGPU_CKPT_PATH];
	size_t nb = m->nparams * sizeof(float);
	int s, n = 0;

	MGPU_TRY(mgpu_path_join(path, sizeof path, dir, "optim.safetensors"));
	for (s = 0; s < mgpu_optim_nstate(o); s++) {
		float *h = host + (size_t)s * m->nparams;
		MGPU_TRY(mgpu_dev_to_host(m->dev, h, mgpu_optim_state(o, s), nb));
		n += add_entries(e + n, names + n, m->params, m->nparam, h,
				 state_names[o->cfg.kind][s]);
	}
	return mgpu_st_write(path, e, n, NULL, 0);
}

static void put_json_str(FILE *fp, const char *key, const char *v)
{
	fprintf(fp, ",\n  \"%s\": ", key);
	mgpu_json_escape(fp, v);
}

static int write_state(const char *dir, const struct mgpu_ckpt_state *st,
		       const char *const *argv, int argc)
{
	struct mgpu_afile af;
	char path[MGPU_CKPT_PATH];
	int i;

	MGPU_TRY(mgpu_path_join(path, sizeof path, dir, "state.json"));
	MGPU_TRY(mgpu_afile_open(&af, path));
	fprintf(af.fp, "{\n  \"format\": \"mgpu-checkpoint\",\n  \"version\": %d",
		STATE_VERSION);
	fprintf(af.fp, ",\n  \"step\": %" PRId64 ",\n  \"epoch\": %d", st->step, st->epoch);
	fprintf(af.fp, ",\n  \"epoch_pos\": %" PRId64 ",\n  \"optim_t\": %" PRId64,
		st->epoch_pos, st->optim_t);
	fprintf(af.fp, ",\n  \"seed\": \"%llu\",\n  \"world_size\": %d",
		(unsigned long long)st->seed, st->world_size);
	fprintf(af.fp, ",\n  \"global_batch\": %" PRId64, st->global_batch);
	fprintf(af.fp, ",\n  \"norm_scale\": ");
	mgpu_json_num(af.fp, st->norm_scale, 17);
	fprintf(af.fp, ",\n  \"norm_shift\": ");
	mgpu_json_num(af.fp, st->norm_shift, 17);
	put_json_str(af.fp, "spec", st->spec);
	if (st->loss_scale > 0) {
		fprintf(af.fp, ",\n  \"loss_scale\": ");
		mgpu_json_num(af.fp, st->loss_scale, 17);
		fprintf(af.fp, ",\n  \"loss_scale_clean\": %" PRId64 ",\n  \"skipped_steps\": %" PRId64,
			st->loss_scale_clean, st->skipped_steps);
	}
	if (st->names) {
		fprintf(af.fp, ",\n  \"classes\": ");
		put_json_list(af.fp, st->names, st->nnames);
	}
	fprintf(af.fp, ",\n  \"argv\": [");
	for (i = 0; i < argc; i++) {
		fprintf(af.fp, "%s", i ? ", " : "");
		mgpu_json_escape(af.fp, argv[i]);
	}
	fprintf(af.fp, "]\n}\n");
	return mgpu_afile_commit(&af);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keep the newest `keep` step-* directories (names sort by step), and
 * always `current`, the one latest names (a resumed run may write a step
 * older than ones already there). */
static void prune(const char *save_dir, int keep, const char *current)
{
	char *names[4096], p[MGPU_CKPT_PATH];
	struct dirent *de;
	int n = 0, i;
	DIR *d;

	if (keep <= 0 || !(d = opendir(save_dir)))
		return;
	while ((de = readdir(d)) && n < 4096)
		if (strncmp(de->d_name, "step-", 5) == 0 && (names[n] = strdup(de->d_name)))
			n++;
	closedir(d);
	qsort(names, (size_t)n, sizeof names[0], cmp_str);
	for (i = 0; i < n; i++) {
		if (i < n - keep && strcmp(names[i], current) != 0) {
			if (mgpu_path_join(p, sizeof p, save_dir, names[i]) == 0)
				remove_ckpt_dir(p);
		}
		free(names[i]);
	}
}

static int write_all(const char *tmp, const struct mgpu_ckpt_state *st,
		     struct mgpu_model *m, struct mgpu_optim *o, const char *const *argv,
		     int argc)
{
	float *host = malloc(2 * m->nparams * sizeof(float) + 1);
	int rc;

	if (!host)
		return mgpu_err(MGPU_ENOMEM, "checkpoint: out of host memory");
	rc = write_model(tmp, m, st, host);
	if (rc == 0)
		rc = write_optim(tmp, m, o, host);
	if (rc == 0)
		rc = write_state(tmp, st, argv, argc);
	free(host);
	return rc;
}

int mgpu_ckpt_save(const char *save_dir, int keep, const struct mgpu_ckpt_state *st,
		   struct mgpu_model *m, struct mgpu_optim *o, const char *const *argv,
		   int argc, char *out_dir, size_t out_len)
{
	char tmp[MGPU_CKPT_PATH], dst[MGPU_CKPT_PATH], latest[MGPU_CKPT_PATH], name[32];
	int rc;

	MGPU_TRY(mgpu_mkdirs(save_dir));
	snprintf(name, sizeof name, "step-%08" PRId64, st->step);
	snprintf(latest, sizeof latest, ".%s.tmp.%ld", name, (long)getpid());
	MGPU_TRY(mgpu_path_join(tmp, sizeof tmp, save_dir, latest));
	MGPU_TRY(mgpu_path_join(dst, sizeof dst, save_dir, name));
	remove_ckpt_dir(tmp);
	if (mkdir(tmp, 0777) != 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot create checkpoint directory",
				      save_dir);
	rc = write_all(tmp, st, m, o, argv, argc);
	if (rc == 0) {
		rc = mgpu_fsync_dir(tmp);
		if (rc == 0)
			remove_ckpt_dir(dst);
		if (rc == 0 && rename(tmp, dst) != 0)
			rc = mgpu_err_errno(MGPU_EIO, "'%s': cannot rename checkpoint", dst);
	}
	if (rc < 0) {
		remove_ckpt_dir(tmp);
		return rc;
	}
	MGPU_TRY(mgpu_path_join(latest, sizeof latest, save_dir, "latest"));
	snprintf(name + strlen(name), sizeof name - strlen(name), "\n");
	MGPU_TRY(mgpu_write_file_atomic(latest, name, strlen(name)));
	name[strcspn(name, "\n")] = '\0';
	prune(save_dir, keep, name);
	snprintf(out_dir, out_len, "%s", dst);
	return 0;
}

/* Remove path and its parents down to the made prefix, deepest first;
 * stop at the first that is not empty. */
static void remove_made(const char *path, size_t made)
{
	char buf[MGPU_CKPT_PATH];
	size_t n = strlen(path);

	if (made == 0 || n >= sizeof buf)
		return;
	memcpy(buf, path, n + 1);
	while (n >= made && rmdir(buf) == 0) {
		while (n > 0 && buf[n - 1] == '/')
			n--;
		while (n > 0 && buf[n - 1] != '/')
			n--;
		while (n > 0 && buf[n - 1] == '/')
			n--;
		buf[n] = '\0';
	}
}

/* Why the lock is taken: "pid N", or less when the file does not say. */
static int busy(const char *save_dir, int fd)
{
	char buf[32] = "";
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	long pid = n > 0 ? strtol(buf, NULL, 10) : 0;

	if (pid > 0)
		return mgpu_err(MGPU_EIO, "'%s' is in use by another run (pid %ld)", save_dir,
				pid);
	return mgpu_err(MGPU_EIO, "'%s' is in use by another run", save_dir);
}

/* Lock the lock file at path and write our pid in it; *fd stays -1 when
 * the file was replaced meanwhile (its holder removed it on the way out),
 * so the caller tries again. */
static int lock_file(const char *save_dir, const char *path, int *fd)
{
	struct stat a, b;
	char pid[32];
	int rc = 0, n;

	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (*fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot create", path);
	if (flock(*fd, LOCK_EX | LOCK_NB) != 0)
		rc = errno == EWOULDBLOCK ? busy(save_dir, *fd) :
					    mgpu_err_errno(MGPU_EIO, "'%s': cannot lock", path);
	if (rc < 0 || fstat(*fd, &a) != 0 || stat(path, &b) != 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(*fd);
		*fd = -1;
		return rc;
	}
	n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(*fd, 0) != 0 || pwrite(*fd, pid, (size_t)n, 0) != n) {
		rc = mgpu_err_errno(MGPU_EIO, "'%s': cannot write", path);
		unlink(path); /* ours: locked */
		close(*fd);
		*fd = -1;
	}
	return rc;
}

int mgpu_ckpt_dir_open(struct mgpu_ckpt_dir *d, const char *save_dir)
{
	char lock[MGPU_CKPT_PATH];
	int rc, tries;

	memset(d, 0, sizeof *d);
	d->fd = -1;
	if (strlen(save_dir) >= sizeof d->path)
		return mgpu_err(MGPU_EINVAL, "'%s': path too long", save_dir);
	rc = mgpu_mkdirs_made(save_dir, &d->made);
	if (rc == 0 && access(save_dir, W_OK) != 0)
		rc = mgpu_err_errno(MGPU_EIO, "'%s' is not writable", save_dir);
	if (rc == 0)
		rc = mgpu_path_join(lock, sizeof lock, save_dir, "lock");
	for (tries = 0; rc == 0 && d->fd < 0 && tries < 10; tries++)
		rc = lock_file(save_dir, lock, &d->fd);
	if (rc == 0 && d->fd < 0)
		rc = mgpu_err(MGPU_EIO, "'%s': the lock file keeps being replaced", lock);
	if (rc < 0) {
		remove_made(save_dir, d->made);
		return rc;
	}
	snprintf(d->path, sizeof d->path, "%s", save_dir);
	return 0;
}

void mgpu_ckpt_dir_close(struct mgpu_ckpt_dir *d)
{
	char lock[MGPU_CKPT_PATH];

	if (!d->path[0])
		return;
	/* Unlinked while still locked: a run that opened it meanwhile sees
	 * the file replaced and tries again (lock_file). */
	if (mgpu_path_join(lock, sizeof lock, d->path, "lock") == 0)
		unlink(lock);
	close(d->fd);
	remove_made(d->path, d->made);
	d->path[0] = '\0';
	d->fd = -1;
}

int mgpu_ckpt_resolve(const char *path, char *dir, size_t len)
{
	char p[MGPU_CKPT_PATH];
	unsigned char *data;
	size_t n;
	int rc;

	MGPU_TRY(mgpu_path_join(p, sizeof p, path, "state.json"));
	if (is_file(p)) {
		snprintf(dir, len, "%s", path);
		return 0;
	}
	MGPU_TRY(mgpu_path_join(p, sizeof p, path, "latest"));
	if (!is_dir(path))
		return mgpu_err(MGPU_EIO, "'%s': no such checkpoint directory", path);
	if (!is_file(p))
		return mgpu_err(MGPU_EFORMAT, "'%s': neither a checkpoint nor a save directory "
				"(no state.json, no latest)", path);
	MGPU_TRY(mgpu_read_file(p, &data, &n));
	data[strcspn((char *)data, "\n")] = '\0';
	if (strncmp((char *)data, "step-", 5) != 0 || strchr((char *)data, '/')) {
		free(data);
		return mgpu_err(MGPU_EFORMAT, "'%s': does not name a checkpoint", p);
	}
	rc = mgpu_path_join(dir, len, path, (char *)data);
	free(data);
	MGPU_TRY(rc);
	if (!is_dir(dir))
		return mgpu_err(MGPU_EIO, "'%s': latest checkpoint is missing", dir);
	return 0;
}

void mgpu_ckpt_free_argv(char **argv, int argc)
{
	int i;

	for (i = 0; argv && i < argc; i++)
		free(argv[i]);
	free(argv);
}

static int get_i64(const struct mgpu_json *root, const char *key, int64_t lo, int64_t hi,
		   int64_t *out, const char *path)
{
	const struct mgpu_json *v = mgpu_json_get(root, key);

	if (!v || mgpu_json_i64(v, lo, hi, out) < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': missing or bad \"%s\"", path, key);
	return 0;
}

static int get_f64(const struct mgpu_json *root, const char *key, double *out,
		   const char *path)
{
	const struct mgpu_json *v = mgpu_json_get(root, key);

	if (!v || mgpu_json_f64(v, out) < 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': missing or bad \"%s\"", path, key);
	return 0;
}

static int get_argv(const struct mgpu_json *root, char ***argv, int *argc, const char *path)
{
	const struct mgpu_json *a = mgpu_json_get(root, "argv");
	size_t i;

	if (!a || a->type != MGPU_JSON_ARRAY || a->count > 1000)
		return mgpu_err(MGPU_EFORMAT, "'%s': missing or bad \"argv\"", path);
	*argv = calloc(a->count + 1, sizeof(char *));
	if (!*argv)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	for (*argc = 0, i = 0; i < a->count; i++) {
		const char *s = mgpu_json_str(&a->items[i]);
		if (!s || !((*argv)[i] = strdup(s))) {
			mgpu_ckpt_free_argv(*argv, *argc);
			*argv = NULL;
			return mgpu_err(MGPU_EFORMAT, "'%s': bad \"argv\" entry %zu", path, i);
		}
		(*argc)++;
	}
	return 0;
}

static int parse_state(const struct mgpu_json *r, struct mgpu_ckpt_state *st,
		       const char *path)
{
	const struct mgpu_json *v;
	int64_t x;
	char *end;

	v = mgpu_json_get(r, "format");
	if (!v || !mgpu_json_str(v) || strcmp(mgpu_json_str(v), "mgpu-checkpoint") != 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': not an mgpu checkpoint state", path);
	MGPU_TRY(get_i64(r, "version", 0, INT64_MAX, &x, path));
	if (x != STATE_VERSION)
		return mgpu_err(MGPU_EFORMAT, "'%s': checkpoint format version %lld is not "
				"supported (this build reads version %d)", path, (long long)x,
				STATE_VERSION);
	MGPU_TRY(get_i64(r, "step", 0, INT64_MAX, &st->step, path));
	MGPU_TRY(get_i64(r, "epoch", 0, 1 << 30, &x, path));
	st->epoch = (int)x;
	MGPU_TRY(get_i64(r, "epoch_pos", 0, INT64_MAX, &st->epoch_pos, path));
	MGPU_TRY(get_i64(r, "optim_t", 0, INT64_MAX, &st->optim_t, path));
	MGPU_TRY(get_i64(r, "world_size", 1, 1 << 20, &x, path));
	st->world_size = (int)x;
	MGPU_TRY(get_i64(r, "global_batch", 1, INT64_MAX, &st->global_batch, path));
	MGPU_TRY(get_f64(r, "norm_scale", &st->norm_scale, path));
	MGPU_TRY(get_f64(r, "norm_shift", &st->norm_shift, path));
	v = mgpu_json_get(r, "seed");
	if (!v || !mgpu_json_str(v) || *mgpu_json_str(v) == '\0')
		return mgpu_err(MGPU_EFORMAT, "'%s': missing or bad \"seed\"", path);
	st->seed = strtoull(mgpu_json_str(v), &end, 10);
	if (*end != '\0')
		return mgpu_err(MGPU_EFORMAT, "'%s': bad \"seed\"", path);
	v = mgpu_json_get(r, "spec");
	if (!v || !mgpu_json_str(v) || strlen(mgpu_json_str(v)) >= sizeof st->spec)
		return mgpu_err(MGPU_EFORMAT, "'%s': missing or bad \"spec\"", path);
	snprintf(st->spec, sizeof st->spec, "%s", mgpu_json_str(v));
	st->loss_scale = 0; /* optional: only fp16 runs save the scaler */
	st->loss_scale_clean = st->skipped_steps = 0;
	if (mgpu_json_get(r, "loss_scale")) {
		MGPU_TRY(get_f64(r, "loss_scale", &st->loss_scale, path));
		MGPU_TRY(get_i64(r, "loss_scale_clean", 0, INT64_MAX, &st->loss_scale_clean, path));
		MGPU_TRY(get_i64(r, "skipped_steps", 0, INT64_MAX, &st->skipped_steps, path));
		if (!(st->loss_scale > 0) || !isfinite(st->loss_scale))
			return mgpu_err(MGPU_EFORMAT, "'%s': bad \"loss_scale\"", path);
	}
	return 0;
}

int mgpu_ckpt_load_state(const char *dir, struct mgpu_ckpt_state *st, char ***argv,
			 int *argc)
{
	struct mgpu_json_doc doc = { 0 };
	char path[MGPU_CKPT_PATH];
	unsigned char *data = NULL;
	size_t len;
	int rc;

	memset(st, 0, sizeof *st);
	MGPU_CHECK(mgpu_path_join(path, sizeof path, dir, "state.json"));
	MGPU_CHECK(mgpu_read_file(path, &data, &len));
	MGPU_CHECK(mgpu_json_parse((char *)data, len, path, &doc));
	if (doc.root->type != MGPU_JSON_OBJECT) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': not a JSON object", path);
		goto out;
	}
	MGPU_CHECK(parse_state(doc.root, st, path));
	if (argv)
		MGPU_CHECK(get_argv(doc.root, argv, argc, path));
out:
	mgpu_json_free(&doc);
	free(data);
	return rc;
}

static int load_into(const struct mgpu_st *st, const char *path, const struct mgpu_param *ps,
		     int n, float *host, const char *suffix)
{
	char name[96];
	int i, d;

	for (i = 0; i < n; i++) {
		const struct mgpu_param *p = &ps[i];
		const struct mgpu_st_tensor *t;
		param_name(name, sizeof name, p, suffix);
		t = mgpu_st_find(st, name);
		if (!t)
			return mgpu_err(MGPU_EFORMAT, "'%s': no tensor '%s'", path, name);
		for (d = 0; d < p->ndim; d++)
			if (t->ndim != p->ndim || t->shape[d] != p->shape[d])
				return mgpu_err(MGPU_EFORMAT,
						"'%s': tensor '%s' has the wrong shape for the model",
						path, name);
		MGPU_TRY(mgpu_st_read_f32(t, host + p->off, p->count));
	}
	return 0;
}

/* The spec the weights were saved with (their mgpu_spec metadata) is the
 * model's: state.json edited to another spec of the same tensor shapes
 * (heads 2 -> 4) would load the weights into another computation. */
static int same_spec(const struct mgpu_st *st, const char *path, const struct mgpu_model *m)
{
	const char *saved = mgpu_st_meta(st, "mgpu_spec");
	char spec[MGPU_SPEC_TEXT_MAX];

	if (!saved) /* weights from elsewhere: their shapes are checked */
		return 0;
	MGPU_TRY(mgpu_spec_format(&m->spec, spec, sizeof spec));
	if (strcmp(saved, spec) != 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': the weights were saved for model '%s', not "
				"'%s' (was state.json edited?)", path, saved, spec);
	return 0;
}

static int load_buffers(const struct mgpu_st *st, const char *path, struct mgpu_model *m)
{
	float *hb = malloc(m->nbufvals * sizeof *hb);
	int rc;

	if (!hb)
		return mgpu_err(MGPU_ENOMEM, "checkpoint: out of host memory");
	rc = load_into(st, path, m->buffers, m->nbuffer, hb, NULL);
	if (rc == 0)
		rc = mgpu_model_set_buffers(m, hb);
	free(hb);
	return rc;
}

static int load_file(const char *dir, const char *file, struct mgpu_model *m, float *dst,
		     const char *suffix, float *host)
{
	struct mgpu_st st = { 0 };
	char path[MGPU_CKPT_PATH];
	int rc;

	MGPU_TRY(mgpu_path_join(path, sizeof path, dir, file));
	rc = mgpu_st_load(path, &st);
	if (rc == 0 && !suffix)
		rc = same_spec(&st, path, m);
	if (rc == 0)
		rc = load_into(&st, path, m->params, m->nparam, host, suffix);
	if (rc == 0)
		rc = mgpu_dev_from_host(m->dev, dst, host, m->nparams * sizeof(float));
	if (rc == 0 && !suffix && m->nbuffer) /* the buffers beside the weights */
		rc = load_buffers(&st, path, m);
	mgpu_st_free(&st);
	return rc;
}

int mgpu_ckpt_load_tensors(const char *dir, struct mgpu_model *m, struct mgpu_optim *o)
{
	float *host = malloc(m->nparams * sizeof(float) + 1);
	int s, rc;

	if (!host)
		return mgpu_err(MGPU_ENOMEM, "checkpoint: out of host memory");
	rc = load_file(dir, "model.safetensors", m, m->w, NULL, host);
	for (s = 0; rc == 0 && s < mgpu_optim_nstate(o); s++)
		rc = load_file(dir, "optim.safetensors", m, mgpu_optim_state(o, s),
			       state_names[o->cfg.kind][s], host);
	free(host);
	return rc;
}

/*
 * imgdir.c - ImageFolder directories (see imgdir.h).
 */
#include "data/imgdir.h"

#include <dirent.h>   /* opendir, readdir */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* malloc, realloc, free, qsort */
#include <string.h>   /* strcmp, strdup */
#include <sys/stat.h> /* stat, S_ISDIR, S_ISREG */

#include "core/cancel.h" /* mgpu_cancel_check */
#include "core/err.h"    /* mgpu_err */
#include "core/io.h"     /* mgpu_read_file */
#include "data/image.h"  /* mgpu_image_* */

/* A growing list of malloc'ed strings. */
struct list {
	char **v;
	size_t n, cap;
};

static int list_add(struct list *l, const char *s)
{
	char **nv;

	if (l->n == l->cap) {
		nv = realloc(l->v, (l->cap * 2 + 16) * sizeof *nv);
		if (!nv)
			return mgpu_err(MGPU_ENOMEM, "out of memory listing files");
		l->v = nv;
		l->cap = l->cap * 2 + 16;
	}
	if (!(l->v[l->n] = strdup(s)))
		return mgpu_err(MGPU_ENOMEM, "out of memory listing files");
	l->n++;
	return 0;
}

static void list_free(struct list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Entries of dir that are folders (want_dirs) or image files; with
 * recurse, image files of sub-folders too. Paths are dir/NAME. */
static int scan(const char *dir, int want_dirs, int recurse, struct list *out, int depth)
{
	char p[4200];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if (depth > 32)
		return mgpu_err(MGPU_EFORMAT, "'%s': folders nested too deep (a loop?)", dir);
	if (!(d = opendir(dir)))
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", dir);
	while (rc == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p) {
			rc = mgpu_err(MGPU_EINVAL, "'%s/%s': path too long", dir, de->d_name);
			break;
		}
		if (stat(p, &st) != 0)
			continue; /* a dangling link */
		if (want_dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode) && mgpu_image_name(p))
			rc = list_add(out, p);
		else if (recurse && S_ISDIR(st.st_mode))
			rc = scan(p, 0, 1, out, depth + 1);
	}
	closedir(d);
	return rc;
}

int mgpu_imgdir_is(const char *dir)
{
	struct list l = { 0 };
	char p[4200];
	struct stat st;
	int yes;

	snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", dir);
	if (stat(p, &st) == 0)
		return 0;
	snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", dir);
	if (stat(p, &st) == 0)
		return 0;
	yes = scan(dir, 1, 0, &l, 0) == 0 && l.n > 0;
	mgpu_err_clear();
	list_free(&l);
	return yes;
}

/* One image file as the next sample of class k. */
static int add(const char *path, int k, const uint32_t *resize, struct mgpu_samples *out)
{
	struct mgpu_image im = { 0 };
	unsigned char *buf = NULL;
	uint32_t shape[3];
	size_t len;
	int rc;

	rc = mgpu_read_file(path, &buf, &len);
	if (rc == 0)
		rc = mgpu_image_decode(buf, len, &im);
	free(buf);
	if (rc == 0 && resize)
		rc = mgpu_image_resize(&im, resize[0], resize[1]);
	if (rc < 0 && rc != MGPU_EIO)
		rc = mgpu_err_prefix(rc, "'%s': ", path);
	shape[0] = im.channels;
	shape[1] = im.height;
	shape[2] = im.width;
	if (rc == 0 && !out->dtype)
		rc = mgpu_samples_init(out, im.dtype, 3, shape);
	if (rc == 0 && (out->dtype != im.dtype || !mgpu_samples_same_shape(out, 3, shape)))
		rc = mgpu_err(MGPU_EFORMAT, "'%s': a %s %ux%ux%u image (CxHxW), the first was "
			      "%s %ux%ux%u%s", path, mgpu_dtype_name(im.dtype), shape[0],
			      shape[1], shape[2], mgpu_dtype_name(out->dtype), out->shape[0],
			      out->shape[1], out->shape[2], resize || out->shape[0] != shape[0] ||
			      out->dtype != im.dtype ? "" : " (--resize HxW makes them one size)");
	if (rc == 0)
		rc = mgpu_samples_push(out, im.data, k);
	mgpu_image_free(&im);
	return rc;
}

static int load(const char *dir, const uint32_t *resize, struct mgpu_samples *out,
		struct list *cls)
{
	struct list files = { 0 };
	char *names[MGPU_SAMPLES_MAX_CLASSES];
	size_t i, k;
	int rc;

	MGPU_TRY(scan(dir, 1, 0, cls, 0));
	if (cls->n == 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': no class folders (root/CLASS/*.png)", dir);
	if (cls->n > MGPU_SAMPLES_MAX_CLASSES)
		return mgpu_err(MGPU_ERANGE, "'%s': %zu class folders, more than %d", dir,
				cls->n, MGPU_SAMPLES_MAX_CLASSES);
	qsort(cls->v, cls->n, sizeof *cls->v, by_str);
	for (k = 0; k < cls->n; k++) /* the folder names, without dir/ */
		names[k] = cls->v[k] + strlen(dir) + 1;
	MGPU_TRY(mgpu_class_names_check(names, (int)cls->n, dir));
	for (k = 0, rc = 0; rc == 0 && k < cls->n; k++) {
		list_free(&files);
		rc = scan(cls->v[k], 0, 1, &files, 0);
		if (rc == 0 && files.n == 0)
			rc = mgpu_err(MGPU_EFORMAT, "'%s': a class folder without .png, .jpg or "
				      ".jpeg files", cls->v[k]);
		if (rc == 0)
			qsort(files.v, files.n, sizeof *files.v, by_str);
		for (i = 0; rc == 0 && i < files.n; i++) {
			rc = add(files.v[i], (int)k, resize, out);
			if (rc == 0 && i % 64 == 63) /* SIGINT: a big folder stops too */
				rc = mgpu_cancel_check();
		}
	}
	list_free(&files);
	MGPU_TRY(rc);
	out->classes = (int)cls->n;
	return mgpu_class_names_copy(&out->names, &out->nnames, names, (int)cls->n);
}

int mgpu_imgdir_load(const char *dir, const uint32_t *resize, struct mgpu_samples *out)
{
	struct list cls = { 0 };
	int rc;

	memset(out, 0, sizeof *out);
	rc = load(dir, resize, out, &cls);
	list_free(&cls);
	if (rc < 0)
		mgpu_samples_free(out);
	return rc;
}

/*
 * wds.c - WebDataset samples from archives (see wds.h).
 *
 * libarchive reads through our own client callbacks so that the bytes can
 * be hashed on the way (the manifest's sha256, the cache key of a stream)
 * and a stream's sniffed prefix can be handed back. Members are grouped by
 * key as they come; a sample is complete when the key changes or the
 * archive ends.
 */
#include "data/wds.h"

#include <archive.h>       /* archive_read_* */
#include <archive_entry.h> /* archive_entry_pathname, _filetype */
#include <errno.h>         /* errno, EINTR */
#include <fcntl.h>         /* open */
#include <stdlib.h>        /* malloc, realloc, free, strtol */
#include <string.h>        /* strcmp, strrchr, memcpy */
#include <strings.h>       /* strcasecmp */
#include <sys/stat.h>      /* fstat, S_ISREG */
#include <unistd.h>        /* read, lseek, close */

#include "core/cancel.h" /* mgpu_cancel_check, mgpu_cancel_signal */
#include "core/err.h"    /* mgpu_err, MGPU_E* */
#include "core/io.h"     /* mgpu_wait_input */
#include "data/image.h"  /* mgpu_image_decode, mgpu_image_resize */
#include "data/netpbm.h" /* mgpu_netpbm_parse */
#include "data/npy.h"    /* mgpu_npy_parse */
#include "data/target.h" /* mgpu_keypoints_parse, MGPU_TARGET_* */

#define IOBUF_NBYTES ((size_t)1 << 17)

/* The libarchive client: a prefix, then an fd; hashing what it returns. */
struct src {
	int fd;
	const unsigned char *prefix;
	size_t plen, ppos;
	unsigned char *buf;
	struct mgpu_sha256 sha;
	int hash_ok;        /* no seek yet: sha covers the bytes in order */
	int eof;
};

static la_ssize_t src_read(struct archive *a, void *ud, const void **out)
{
	struct src *s = ud;
	ssize_t got;

	if (s->ppos < s->plen) {
		*out = s->prefix + s->ppos;
		got = (ssize_t)(s->plen - s->ppos);
		s->ppos = s->plen;
	} else {
		if (mgpu_wait_input(s->fd) < 0) { /* SIGINT on a silent pipe */
			archive_set_error(a, EINTR, "%s", mgpu_errmsg());
			return -1;
		}
		do
			got = read(s->fd, s->buf, IOBUF_NBYTES);
		while (got < 0 && errno == EINTR);
		if (got < 0) {
			archive_set_error(a, errno, "read failed");
			return -1;
		}
		*out = s->buf;
		s->eof = got == 0;
	}
	if (s->hash_ok)
		mgpu_sha256_update(&s->sha, *out, (size_t)got);
	return got;
}

static la_int64_t src_seek(struct archive *a, void *ud, la_int64_t off, int whence)
{
	struct src *s = ud;
	off_t r;

	(void)a;
	s->hash_ok = 0;
	s->ppos = s->plen;
	r = lseek(s->fd, (off_t)off, whence);
	return r < 0 ? ARCHIVE_FATAL : (la_int64_t)r;
}

/* The sample being assembled and the member being read. */
struct rd {
	const char *name;
	struct mgpu_samples *out;
	char key[1024];
	int have_key, have_input, have_label;
	char entry[1024];           /* current member path, for messages */
	unsigned char *data;        /* current member's bytes */
	size_t cap, len;
	unsigned char *row;         /* the pending sample's input */
	size_t row_cap;
	int dtype, ndim;
	uint32_t shape[MGPU_SAMPLES_MAX_DIM];
	int32_t label;
	int have_target;            /* the pending sample's target: */
	int tkind, tndim;
	uint32_t tshape[MGPU_SAMPLES_MAX_DIM];
	unsigned char *trow;
	size_t trow_cap;
	char tentry[1024];          /* its member, for messages */
	uint32_t img_h, img_w;      /* a PNG/JPEG input's size before resizing */
	const uint32_t *resize;     /* images to H x W, or NULL */
	mgpu_wds_progress_fn progress; /* or NULL */
	void *progress_ctx;
	size_t members;
};

static int fail(struct rd *r, int code, const char *what)
{
	return mgpu_err(code, "'%s': entry '%s': %s", r->name, r->entry, what);
}

void mgpu_wds_split_name(const char *path, size_t *key_len, const char **ext)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strchr(base, '.');
	*key_len = dot ? (size_t)(dot - path) : strlen(path);
	*ext = dot ? dot + 1 : "";
}

static int read_member(struct archive *a, struct rd *r, struct archive_entry *e)
{
	la_ssize_t got;
	unsigned char *nb;

	r->len = 0;
	if (archive_entry_size_is_set(e) && archive_entry_size(e) > (la_int64_t)MGPU_WDS_MEMBER_MAX)
		return fail(r, MGPU_ERANGE, "member larger than 1 GiB");
	for (;;) {
		if (r->cap - r->len < 65536) {
			if (r->cap > MGPU_WDS_MEMBER_MAX)
				return fail(r, MGPU_ERANGE, "member larger than 1 GiB");
			nb = realloc(r->data, r->cap * 2 + 65536);
			if (!nb)
				return fail(r, MGPU_ENOMEM, "out of memory");
			r->data = nb;
			r->cap = r->cap * 2 + 65536;
		}
		got = archive_read_data(a, r->data + r->len, r->cap - r->len);
		if (got < 0)
			return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': truncated or corrupt: %s",
					r->name, r->entry, archive_error_string(a) ?
					archive_error_string(a) : "read error");
		if (got == 0)
			return 0;
		r->len += (size_t)got;
	}
}

static int set_label(struct rd *r)
{
	char text[64], *p = text, *end;
	size_t n = r->len < sizeof text - 1 ? r->len : sizeof text - 1;
	long v;

	memcpy(text, r->data, n);
	text[n] = '\0';
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	errno = 0;
	v = strtol(p, &end, 10);
	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	if (r->len == 0 || p == end || *end || r->len >= sizeof text - 1 || errno ||
	    (*p < '0' && *p != '-') || *p > '9') {
		for (p = text; *p; p++)
			if (*p < ' ' || *p > '~')
				*p = '?';
		return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': label '%s' is not a decimal "
				"integer", r->name, r->entry, r->len ? text : "");
	}
	if (v < 0 || v >= MGPU_SAMPLES_MAX_CLASSES)
		return mgpu_err(MGPU_ERANGE, "'%s': entry '%s': label %ld out of range [0,%d)",
				r->name, r->entry, v, MGPU_SAMPLES_MAX_CLASSES);
	r->label = (int32_t)v;
	r->have_label = 1;
	return 0;
}

/* Make *buf, of *cap bytes, hold nbytes (a row's or a target's). */
static int grow(struct rd *r, unsigned char **buf, size_t *cap, size_t nbytes)
{
	unsigned char *nb;

	if (nbytes <= *cap)
		return 0;
	nb = realloc(*buf, nbytes);
	if (!nb)
		return fail(r, MGPU_ENOMEM, "out of memory");
	*buf = nb;
	*cap = nbytes;
	return 0;
}

/* An .npy input: u1, u2, u4 stay as they are (u8 features, u16 and u32
 * tokens), f4/f8 become f32. */
static int npy_input(struct rd *r)
{
	struct mgpu_npy a;
	float *f;
	size_t i;
	int rc, k;

	rc = mgpu_npy_parse(r->data, r->len, &a);
	if (rc < 0)
		return mgpu_err_prefix(rc, "'%s': entry '%s': ", r->name, r->entry);
	if (!mgpu_dtype_from_npy(a.kind, a.elem_nbytes))
		return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': npy dtype '%s' is not a "
				"sample type (want |u1, <u2, <u4, <f4 or <f8)", r->name, r->entry,
				mgpu_npy_descr(&a));
	if (a.ndim < 1 || a.ndim > MGPU_SAMPLES_MAX_DIM || a.count == 0 ||
	    a.count >= MGPU_SAMPLES_MAX_D)
		return fail(r, MGPU_EFORMAT, "npy sample must have 1 to 4 dimensions and "
			    "at least one element");
	r->ndim = a.ndim;
	for (k = 0; k < a.ndim; k++)
		r->shape[k] = (uint32_t)a.dims[k];
	r->dtype = mgpu_dtype_from_npy(a.kind, a.elem_nbytes);
	MGPU_TRY(grow(r, &r->row, &r->row_cap, a.count * mgpu_dtype_nbytes(r->dtype)));
	f = (float *)(void *)r->row;
	if (a.kind == 'u' || a.elem_nbytes == 4)
		memcpy(r->row, a.data, a.count * a.elem_nbytes);
	else
		for (i = 0; i < a.count; i++)
			f[i] = (float)mgpu_npy_value(&a, i);
	i = a.kind == 'u' ? a.count : mgpu_f32_first_nonfinite(f, a.count);
	if (i < a.count)
		return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': element %zu is %g; features "
				"must be finite", r->name, r->entry, i, (double)f[i]);
	return 0;
}

static int pbm_input(struct rd *r)
{
	struct mgpu_netpbm im;
	size_t hw, i;
	int c, rc;

	rc = mgpu_netpbm_parse(r->data, r->len, &im);
	if (rc < 0)
		return mgpu_err_prefix(rc, "'%s': entry '%s': ", r->name, r->entry);
	/* channels first, planar: the (C,H,W) a conv net reads */
	hw = (size_t)im.height * im.width;
	r->dtype = MGPU_DTYPE_U8;
	r->ndim = 3;
	r->shape[0] = (uint32_t)im.channels;
	r->shape[1] = im.height;
	r->shape[2] = im.width;
	MGPU_TRY(grow(r, &r->row, &r->row_cap, hw * (size_t)im.channels));
	for (c = 0; c < im.channels; c++)
		for (i = 0; i < hw; i++)
			r->row[(size_t)c * hw + i] = im.data[i * (size_t)im.channels + (size_t)c];
	return 0;
}

/* A PNG or JPEG input: C x H x W, resized when asked; without --resize a
 * size that differs from the first image's is an error saying so. */
static int image_input(struct rd *r)
{
	struct mgpu_image im;
	int rc;

	rc = mgpu_image_decode(r->data, r->len, &im);
	r->img_h = im.height;
	r->img_w = im.width;
	if (rc == 0 && r->resize)
		rc = mgpu_image_resize(&im, r->resize[0], r->resize[1]);
	if (rc < 0) {
		mgpu_image_free(&im);
		return mgpu_err_prefix(rc, "'%s': entry '%s': ", r->name, r->entry);
	}
	if (!r->resize && r->out->dtype && r->out->ndim == 3 &&
	    (r->out->shape[1] != im.height || r->out->shape[2] != im.width)) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': a %ux%u image, the first was "
			      "%ux%u (--resize HxW makes them one size)", r->name, r->entry,
			      im.height, im.width, r->out->shape[1], r->out->shape[2]);
		mgpu_image_free(&im);
		return rc;
	}
	r->dtype = im.dtype;
	r->ndim = 3;
	r->shape[0] = im.channels;
	r->shape[1] = im.height;
	r->shape[2] = im.width;
	rc = grow(r, &r->row, &r->row_cap, (size_t)im.channels * im.height * im.width *
						   mgpu_dtype_nbytes(im.dtype));
	if (rc == 0)
		memcpy(r->row, im.data, (size_t)im.channels * im.height * im.width *
		       mgpu_dtype_nbytes(im.dtype));
	mgpu_image_free(&im);
	return rc;
}

/* The input must match the set's dtype and shape once it has one. */
static int check_input(struct rd *r)
{
	char a[64], b[64];

	if (!r->out->dtype)
		return 0;
	if (r->dtype != r->out->dtype)
		return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': dtype %s differs from the "
				"first sample's %s", r->name, r->entry,
				mgpu_dtype_name(r->dtype), mgpu_dtype_name(r->out->dtype));
	if (!mgpu_samples_same_shape(r->out, r->ndim, r->shape)) {
		mgpu_samples_shape_str(r->ndim, r->shape, a, sizeof a);
		mgpu_samples_shape_str(r->out->ndim, r->out->shape, b, sizeof b);
		return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': shape %s differs from the "
				"first sample's %s", r->name, r->entry, a, b);
	}
	return 0;
}

/* KEY.json: keypoints, (P,2) float32 with NaN for missing parts. */
static int keypoints_target(struct rd *r)
{
	float kp[2 * MGPU_TARGET_MAX_PARTS];
	char name[2100];
	int np, rc;

	snprintf(name, sizeof name, "%s': entry '%s", r->name, r->entry);
	MGPU_TRY(rc = mgpu_keypoints_parse((const char *)r->data, r->len, name, kp,
					   MGPU_TARGET_MAX_PARTS, &np));
	if (rc == 1)
		return 1; /* other metadata */
	r->tkind = MGPU_TARGET_KEYPOINTS;
	r->tndim = 2;
	r->tshape[0] = (uint32_t)np;
	r->tshape[1] = 2;
	MGPU_TRY(grow(r, &r->trow, &r->trow_cap, (size_t)np * 2 * sizeof(float)));
	memcpy(r->trow, kp, (size_t)np * 2 * sizeof(float));
	return 0;
}

/* KEY.target.npy: a regression vector, any numeric npy flattened to
 * float32 (K), finite. */
static int vector_target(struct rd *r)
{
	struct mgpu_npy a;
	float *f;
	size_t i;
	int rc;

	rc = mgpu_npy_parse(r->data, r->len, &a);
	if (rc < 0)
		return mgpu_err_prefix(rc, "'%s': entry '%s': ", r->name, r->entry);
	if (a.count == 0 || a.count > MGPU_TARGET_MAX_VECTOR)
		return fail(r, MGPU_EFORMAT, "a target vector must hold 1 to 65536 values");
	MGPU_TRY(grow(r, &r->trow, &r->trow_cap, a.count * sizeof(float)));
	f = (float *)(void *)r->trow;
	for (i = 0; i < a.count; i++)
		f[i] = (float)mgpu_npy_value(&a, i);
	i = mgpu_f32_first_nonfinite(f, a.count);
	if (i < a.count)
		return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': target element %zu is %g; "
				"targets must be finite", r->name, r->entry, i, (double)f[i]);
	r->tkind = MGPU_TARGET_VECTOR;
	r->tndim = 1;
	r->tshape[0] = (uint32_t)a.count;
	return 0;
}

/* KEY.mask.png (8-bit gray), KEY.seg.png or KEY.mask.npy (uint8 (H,W)):
 * a class id per pixel. */
static int mask_target(struct rd *r, int png)
{
	struct mgpu_image im;
	struct mgpu_npy a;
	int rc;

	memset(&im, 0, sizeof im);
	memset(&a, 0, sizeof a);
	if (png) {
		rc = mgpu_image_decode(r->data, r->len, &im);
		if (rc == 0 && (im.channels != 1 || im.dtype != MGPU_DTYPE_U8))
			rc = mgpu_err(MGPU_EFORMAT, "a mask must be an 8-bit grayscale PNG of class "
				      "ids (this one has %u channels%s)", im.channels,
				      im.dtype == MGPU_DTYPE_U8 ? "" : ", 16 bits");
		if (rc < 0) {
			mgpu_image_free(&im);
			return mgpu_err_prefix(rc, "'%s': entry '%s': ", r->name, r->entry);
		}
		r->tshape[0] = im.height;
		r->tshape[1] = im.width;
	} else {
		rc = mgpu_npy_parse(r->data, r->len, &a);
		if (rc < 0)
			return mgpu_err_prefix(rc, "'%s': entry '%s': ", r->name, r->entry);
		if (a.kind != 'u' || a.elem_nbytes != 1 || a.ndim != 2 || a.count == 0)
			return fail(r, MGPU_EFORMAT, "a mask .npy must be uint8 (|u1) of shape (H, W)");
		r->tshape[0] = (uint32_t)a.dims[0];
		r->tshape[1] = (uint32_t)a.dims[1];
	}
	r->tkind = MGPU_TARGET_MASK;
	r->tndim = 2;
	rc = grow(r, &r->trow, &r->trow_cap, (size_t)r->tshape[0] * r->tshape[1]);
	if (rc == 0)
		memcpy(r->trow, png ? im.data : a.data, (size_t)r->tshape[0] * r->tshape[1]);
	mgpu_image_free(&im);
	return rc;
}

/* Which target a member is by its whole extension, or 0. */
static int target_member(const char *ext, const char *last)
{
	if (strcasecmp(last, "json") == 0)
		return 1;
	if (strcasecmp(ext, "target.npy") == 0)
		return 2;
	if (strcasecmp(ext, "mask.png") == 0 || strcasecmp(ext, "seg.png") == 0)
		return 3;
	if (strcasecmp(ext, "mask.npy") == 0)
		return 4;
	return 0;
}

static int member(struct archive *a, struct rd *r, struct archive_entry *e, const char *ext)
{
	const char *last = strrchr(ext, '.'), *x = last ? last + 1 : ext;
	int is_cls = strcmp(x, "cls") == 0, is_npy = strcmp(x, "npy") == 0;
	int is_pbm = strcmp(x, "pgm") == 0 || strcmp(x, "ppm") == 0;
	int is_img = strcasecmp(x, "png") == 0 || strcasecmp(x, "jpg") == 0 ||
		     strcasecmp(x, "jpeg") == 0;
	int tgt = target_member(ext, x), rc;

	/* the last part decides: "input.npy" is an npy input too; but
	 * "target.npy", "mask.png", "seg.png", "mask.npy" and ".json" are targets */
	if (tgt) {
		if (r->have_target)
			return fail(r, MGPU_EFORMAT, "a second target for the key");
		MGPU_TRY(read_member(a, r, e));
		MGPU_TRY(rc = tgt == 1 ? keypoints_target(r) : tgt == 2 ? vector_target(r) :
			 mask_target(r, tgt == 3));
		if (rc == 1)
			return 0;
		snprintf(r->tentry, sizeof r->tentry, "%s", r->entry);
		r->have_target = 1;
		return 0;
	}

	if (!is_cls && !is_npy && !is_pbm && !is_img)
		return 0;
	if ((is_cls && r->have_label) || (!is_cls && r->have_input))
		return fail(r, MGPU_EFORMAT, is_cls ? "a second label for the key" :
			    "a second input for the key");
	MGPU_TRY(read_member(a, r, e));
	if (is_cls)
		return set_label(r);
	MGPU_TRY(is_npy ? npy_input(r) : is_pbm ? pbm_input(r) : image_input(r));
	MGPU_TRY(check_input(r));
	r->have_input = 1;
	return 0;
}

/* A mask resized with the image: nearest pixel, centres aligned as the
 * image's bilinear resize aligns them. */
static int resize_mask(struct rd *r, uint32_t h, uint32_t w)
{
	uint32_t H = r->tshape[0], W = r->tshape[1], i, j, si, sj;
	unsigned char *m = malloc((size_t)h * w);

	if (!m)
		return fail(r, MGPU_ENOMEM, "out of memory");
	for (i = 0; i < h; i++) {
		si = (uint32_t)(((double)i + 0.5) * H / h);
		si = si < H ? si : H - 1;
		for (j = 0; j < w; j++) {
			sj = (uint32_t)(((double)j + 0.5) * W / w);
			m[(size_t)i * w + j] = r->trow[(size_t)si * W + (sj < W ? sj : W - 1)];
		}
	}
	free(r->trow);
	r->trow = m;
	r->trow_cap = (size_t)h * w;
	r->tshape[0] = h;
	r->tshape[1] = w;
	return 0;
}

/* The target fits the input: a mask is the image's size (resized with
 * it), keypoints scale with a resized image. */
static int fit_target(struct rd *r)
{
	float *kp = (float *)(void *)r->trow, sx, sy;
	uint32_t p;

	if (r->tkind == MGPU_TARGET_MASK && r->ndim == 3) {
		if (r->resize && r->img_h == r->tshape[0] && r->img_w == r->tshape[1])
			MGPU_TRY(resize_mask(r, r->shape[1], r->shape[2]));
		if (r->tshape[0] != r->shape[1] || r->tshape[1] != r->shape[2])
			return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': a %ux%u mask for a %ux%u "
					"image", r->name, r->tentry, r->tshape[0], r->tshape[1],
					r->shape[1], r->shape[2]);
	}
	if (r->tkind == MGPU_TARGET_KEYPOINTS && r->resize && r->img_h && r->img_w) {
		sx = (float)r->shape[2] / (float)r->img_w;
		sy = (float)r->shape[1] / (float)r->img_h;
		for (p = 0; p < r->tshape[0]; p++) { /* NaN stays NaN */
			kp[2 * p] = (kp[2 * p] + 0.5f) * sx - 0.5f;
			kp[2 * p + 1] = (kp[2 * p + 1] + 0.5f) * sy - 0.5f;
		}
	}
	return 0;
}

/* The target must be the first sample's kind and shape. */
static int check_target(struct rd *r)
{
	struct mgpu_samples t;
	char a[80], b[80];

	memset(&t, 0, sizeof t);
	t.tkind = r->have_target ? r->tkind : 0;
	t.tndim = r->have_target ? r->tndim : 0;
	memcpy(t.tshape, r->tshape, sizeof t.tshape);
	if (mgpu_samples_same_target(&t, r->out))
		return 0;
	mgpu_samples_target_str(&t, a, sizeof a);
	mgpu_samples_target_str(r->out, b, sizeof b);
	return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': target %s differs from the first "
			"sample's %s", r->name, r->key, a, b);
}

static int finish(struct rd *r)
{
	int rc;

	snprintf(r->entry, sizeof r->entry, "%s", r->key);
	if (!r->have_input)
		return fail(r, MGPU_EFORMAT, "no .npy, .pgm, .ppm, .png or .jpg input");
	if (!r->have_label && !r->have_target)
		return fail(r, MGPU_EFORMAT, "no .cls label (or target)");
	if (!r->have_label)
		r->label = 0; /* a sample of a target alone: one class */
	if (r->have_target)
		MGPU_TRY(fit_target(r));
	if (!r->out->dtype) {
		MGPU_TRY(mgpu_samples_init(r->out, r->dtype, r->ndim, r->shape));
		if (r->have_target)
			MGPU_TRY(mgpu_samples_set_target(r->out, r->tkind, r->tndim, r->tshape));
	}
	MGPU_TRY(check_target(r));
	rc = mgpu_samples_push_t(r->out, r->row, r->label, r->have_target ? r->trow : NULL);
	if (rc < 0)
		return mgpu_err_prefix(rc, "'%s': entry '%s': ", r->name, r->key);
	r->have_input = r->have_label = r->have_target = 0;
	r->img_h = r->img_w = 0;
	return 0;
}

static int next(struct archive *a, struct rd *r, struct archive_entry **e)
{
	int st = archive_read_next_header(a, e);

	if (st == ARCHIVE_OK || st == ARCHIVE_WARN || st == ARCHIVE_EOF)
		return st == ARCHIVE_EOF ? 1 : 0;
	if (r->entry[0])
		return mgpu_err(MGPU_EFORMAT, "'%s': entry '%s': truncated or corrupt "
				"archive after it: %s", r->name, r->entry,
				archive_error_string(a) ? archive_error_string(a) : "read error");
	return mgpu_err(MGPU_EFORMAT, "'%s': not a readable tar or zip archive: %s", r->name,
			archive_error_string(a) ? archive_error_string(a) : "read error");
}

static int walk(struct archive *a, struct rd *r)
{
	struct archive_entry *e;
	const char *path, *ext;
	size_t klen;
	int end;

	for (;;) {
		MGPU_TRY(end = next(a, r, &e));
		if (end)
			break;
		if (archive_entry_filetype(e) != AE_IFREG)
			continue;
		path = archive_entry_pathname(e);
		if (!path)
			return mgpu_err(MGPU_EFORMAT, "'%s': a member without a name", r->name);
		mgpu_wds_split_name(path, &klen, &ext);
		if (klen >= sizeof r->key)
			return mgpu_err(MGPU_EFORMAT, "'%s': member name too long", r->name);
		if (r->have_key && (strlen(r->key) != klen || memcmp(r->key, path, klen) != 0))
			MGPU_TRY(finish(r));
		snprintf(r->entry, sizeof r->entry, "%s", path);
		memcpy(r->key, path, klen);
		r->key[klen] = '\0';
		r->have_key = 1;
		MGPU_TRY(member(a, r, e, ext));
		if (++r->members % 64 == 0) /* SIGINT: a long archive stops too */
			MGPU_TRY(mgpu_cancel_check());
		if (r->progress)
			r->progress(r->progress_ctx, (uint64_t)archive_filter_bytes(a, -1),
				    r->out->n);
	}
	return r->have_key && (r->have_input || r->have_label || r->have_target) ? finish(r) : 0;
}

static struct archive *reader(void)
{
	struct archive *a = archive_read_new();

	if (!a)
		return NULL;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	archive_read_support_format_zip(a);
	archive_read_support_format_empty(a);
	return a;
}

static void rd_free(struct rd *r)
{
	free(r->data);
	free(r->row);
	free(r->trow);
}

/* Hash what is left of the stream (tar padding) so sha covers all of it. */
static int drain(struct src *s, const char *name)
{
	ssize_t got;

	while (!s->eof && s->hash_ok) {
		got = read(s->fd, s->buf, IOBUF_NBYTES);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return mgpu_err_errno(MGPU_EIO, "'%s': read failed", name);
		mgpu_sha256_update(&s->sha, s->buf, (size_t)got);
		s->eof = got == 0;
	}
	return 0;
}

static int hash_file(const char *path, char *hex)
{
	struct src s = { .hash_ok = 1 };
	uint8_t dig[MGPU_SHA256_NBYTES];
	int rc;

	s.fd = open(path, O_RDONLY);
	if (s.fd < 0)
		return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	s.buf = malloc(IOBUF_NBYTES);
	mgpu_sha256_init(&s.sha);
	rc = s.buf ? drain(&s, path) : mgpu_err(MGPU_ENOMEM, "out of memory");
	mgpu_sha256_final(&s.sha, dig);
	mgpu_sha256_hex(dig, hex);
	free(s.buf);
	close(s.fd);
	return rc;
}

static int read_fd(int fd, const char *name, const unsigned char *prefix, size_t plen,
		   struct mgpu_samples *out, char *sha_hex, mgpu_wds_progress_fn fn, void *ctx,
		   const uint32_t *resize)
{
	struct src s = { .fd = fd, .prefix = prefix, .plen = plen, .hash_ok = 1 };
	struct rd r = { .name = name, .out = out, .progress = fn, .progress_ctx = ctx,
			.resize = resize };
	struct archive *a = reader();
	struct stat st;
	uint8_t dig[MGPU_SHA256_NBYTES];
	int rc = 0;

	s.buf = malloc(IOBUF_NBYTES);
	if (!a || !s.buf) {
		rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", name);
		goto out;
	}
	mgpu_sha256_init(&s.sha);
	archive_read_set_callback_data(a, &s);
	archive_read_set_read_callback(a, src_read);
	if (plen == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		archive_read_set_seek_callback(a, src_seek);
	if (archive_read_open1(a) != ARCHIVE_OK) {
		rc = mgpu_cancel_signal() ? mgpu_cancel_check() : /* src_read stopped */
		     mgpu_err(MGPU_EFORMAT, "'%s': not a readable tar or zip archive: %s", name,
			      archive_error_string(a) ? archive_error_string(a) : "?");
		goto out;
	}
	rc = walk(a, &r);
	if (rc < 0 && mgpu_cancel_signal())
		rc = mgpu_cancel_check();
	if (rc < 0)
		goto out;
	MGPU_CHECK(drain(&s, name));
	if (sha_hex && s.hash_ok) {
		mgpu_sha256_final(&s.sha, dig);
		mgpu_sha256_hex(dig, sha_hex);
	} else if (sha_hex) {
		sha_hex[0] = '\0';
	}
out:
	if (a)
		archive_read_free(a);
	free(s.buf);
	rd_free(&r);
	return rc;
}

int mgpu_wds_read_fd(int fd, const char *name, const unsigned char *prefix, size_t plen,
		     struct mgpu_samples *out, char *sha_hex)
{
	return read_fd(fd, name, prefix, plen, out, sha_hex, NULL, NULL, NULL);
}

int mgpu_wds_read(const char *path, struct mgpu_samples *out, char *sha_hex)
{
	return mgpu_wds_read_watched(path, out, sha_hex, NULL, NULL);
}

int mgpu_wds_read_watched(const char *path, struct mgpu_samples *out, char *sha_hex,
			  mgpu_wds_progress_fn fn, void *ctx)
{
	return mgpu_wds_read_resized(path, out, sha_hex, fn, ctx, NULL);
}

int mgpu_wds_read_resized(const char *path, struct mgpu_samples *out, char *sha_hex,
			  mgpu_wds_progress_fn fn, void *ctx, const uint32_t *resize)
{
	int fd = 0, rc;

	if (strcmp(path, "-") != 0) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return mgpu_err_errno(MGPU_EIO, "'%s': cannot open", path);
	}
	rc = read_fd(fd, path, NULL, 0, out, sha_hex, fn, ctx, resize);
	if (fd != 0)
		close(fd);
	if (rc == 0 && sha_hex && !sha_hex[0] && fd != 0)
		rc = hash_file(path, sha_hex);
	return rc;
}

int mgpu_wds_read_mem(const void *buf, size_t len, const char *name,
		      struct mgpu_samples *out)
{
	struct rd r = { .name = name, .out = out };
	struct archive *a = reader();
	int rc = 0;

	if (!a)
		return mgpu_err(MGPU_ENOMEM, "out of memory");
	if (archive_read_open_memory(a, buf, len) != ARCHIVE_OK) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': not a readable tar or zip archive: %s", name,
			      archive_error_string(a) ? archive_error_string(a) : "?");
		goto out;
	}
	MGPU_CHECK(walk(a, &r));
out:
	archive_read_free(a);
	rd_free(&r);
	return rc;
}

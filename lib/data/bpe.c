/*
 * bpe.c - the byte-level BPE of mgpu-shard --bpe (see bpe.h).
 *
 * Learning works on the distinct words of the text with their counts: each
 * merge recounts the pairs of every distinct word (a hash of 64-bit pair
 * keys, cleared slot by slot) and rewrites the words that hold the winner.
 * That is O(merges x distinct-word bytes): seconds for megabytes of text
 * and thousands of merges.
 */
#include "data/bpe.h"

#include <stdio.h>  /* fprintf, snprintf */
#include <stdlib.h> /* malloc, calloc, realloc, free, strtol */
#include <string.h> /* memcpy, memset */

#include "core/cancel.h" /* mgpu_cancel_check */
#include "core/err.h" /* mgpu_err */
#include "core/io.h"  /* mgpu_afile_*, mgpu_read_file */

/* ---- words ----------------------------------------------------------------- */

enum { C_SPACE, C_LETTER, C_DIGIT, C_OTHER };

static int cls(unsigned char c)
{
	if (c == ' ' || (c >= '\t' && c <= '\r'))
		return C_SPACE;
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
		return C_LETTER;
	if (c >= 128)
		return C_LETTER;
	return c >= '0' && c <= '9' ? C_DIGIT : C_OTHER;
}

/* The end of the word that starts at i < len. */
static size_t word_end(const unsigned char *t, size_t len, size_t i)
{
	size_t j = i;
	int c;

	if (t[j] == ' ' && j + 1 < len && cls(t[j + 1]) != C_SPACE)
		j++;
	c = cls(t[j]);
	for (j++; j < len && cls(t[j]) == c; j++)
		;
	/* a whitespace run leaves its last space to the word after it */
	if (c == C_SPACE && j < len && j - i > 1 && t[j - 1] == ' ')
		j--;
	return j;
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/* ---- the rank hash: pair -> merge rank ------------------------------------- */

static uint64_t key(int32_t a, int32_t b)
{
	return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static int rank_of(const struct mgpu_bpe *b, int32_t x, int32_t y)
{
	uint64_t k = key(x, y) + 1; /* 0 marks an empty slot */
	size_t i;

	if (!b->cap)
		return -1;
	for (i = mix(k) & (b->cap - 1); b->keys[i]; i = (i + 1) & (b->cap - 1))
		if (b->keys[i] == k)
			return b->ranks[i];
	return -1;
}

/* The rank hash and each token's bytes, from b->pair. */
static int build(struct mgpu_bpe *b)
{
	size_t V = 256 + (size_t)b->nmerges, total = 256, i, s;
	int32_t x, y;

	b->cap = 16;
	while (b->cap < 2 * (size_t)b->nmerges)
		b->cap *= 2;
	b->keys = calloc(b->cap, sizeof *b->keys);
	b->ranks = calloc(b->cap, sizeof *b->ranks);
	b->off = malloc(V * sizeof *b->off);
	b->len = malloc(V * sizeof *b->len);
	if (!b->keys || !b->ranks || !b->off || !b->len)
		return mgpu_err(MGPU_ENOMEM, "bpe: out of memory");
	for (i = 0; i < 256; i++) {
		b->off[i] = (uint32_t)i;
		b->len[i] = 1;
	}
	for (i = 0; i < (size_t)b->nmerges; i++) {
		x = b->pair[i][0];
		y = b->pair[i][1];
		b->len[256 + i] = b->len[x] + b->len[y];
		if (total + b->len[256 + i] > UINT32_MAX)
			return mgpu_err(MGPU_ERANGE, "bpe: tokens too long");
		b->off[256 + i] = (uint32_t)total;
		total += b->len[256 + i];
		for (s = mix(key(x, y) + 1) & (b->cap - 1); b->keys[s]; s = (s + 1) & (b->cap - 1))
			;
		b->keys[s] = key(x, y) + 1;
		b->ranks[s] = (int32_t)i;
	}
	b->bytes = malloc(total);
	if (!b->bytes)
		return mgpu_err(MGPU_ENOMEM, "bpe: out of memory for %zu token bytes", total);
	for (i = 0; i < 256; i++)
		b->bytes[i] = (unsigned char)i;
	for (i = 0; i < (size_t)b->nmerges; i++) {
		x = b->pair[i][0];
		y = b->pair[i][1];
		memcpy(b->bytes + b->off[256 + i], b->bytes + b->off[x], b->len[x]);
		memcpy(b->bytes + b->off[256 + i] + b->len[x], b->bytes + b->off[y], b->len[y]);
	}
	return 0;
}

int mgpu_bpe_vocab(const struct mgpu_bpe *b)
{
	return 256 + b->nmerges;
}

void mgpu_bpe_free(struct mgpu_bpe *b)
{
	free(b->pair);
	free(b->keys);
	free(b->ranks);
	free(b->off);
	free(b->len);
	free(b->bytes);
	memset(b, 0, sizeof *b);
}

/* ---- learning ----------------------------------------------------------------- */

struct word {
	int32_t *tok;
	size_t n;
	uint64_t count;
};

struct words {
	struct word *w;
	size_t n, cap;
	/* distinct words by their bytes: slot -> index + 1 */
	size_t *slot, nslot;
	const unsigned char *text;
	size_t *start, *blen;      /* each word's bytes in text */
};

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return mix(h);
}

static int grow_slots(struct words *ws)
{
	size_t ncap = ws->nslot ? ws->nslot * 2 : 1024, i, s;
	size_t *ns = calloc(ncap, sizeof *ns);

	if (!ns)
		return mgpu_err(MGPU_ENOMEM, "bpe: out of memory");
	for (i = 0; i < ws->n; i++) {
		s = hash_bytes(ws->text + ws->start[i], ws->blen[i]) & (ncap - 1);
		while (ns[s])
			s = (s + 1) & (ncap - 1);
		ns[s] = i + 1;
	}
	free(ws->slot);
	ws->slot = ns;
	ws->nslot = ncap;
	return 0;
}

static int add_word(struct words *ws, size_t at, size_t n)
{
	const unsigned char *p = ws->text + at;
	size_t s, k, j;

	if (2 * (ws->n + 1) > ws->nslot)
		MGPU_TRY(grow_slots(ws));
	for (s = hash_bytes(p, n) & (ws->nslot - 1); ws->slot[s]; s = (s + 1) & (ws->nslot - 1)) {
		k = ws->slot[s] - 1;
		if (ws->blen[k] == n && memcmp(ws->text + ws->start[k], p, n) == 0) {
			ws->w[k].count++;
			return 0;
		}
	}
	if (ws->n == ws->cap) {
		size_t nc = ws->cap ? ws->cap * 2 : 1024;
		struct word *nw = realloc(ws->w, nc * sizeof *nw);
		size_t *a = nw ? realloc(ws->start, nc * sizeof *a) : NULL;
		size_t *l = a ? (ws->start = a, realloc(ws->blen, nc * sizeof *l)) : NULL;
		if (nw)
			ws->w = nw;
		if (!nw || !a || !l)
			return mgpu_err(MGPU_ENOMEM, "bpe: out of memory for words");
		ws->blen = l;
		ws->cap = nc;
	}
	k = ws->n++;
	ws->start[k] = at;
	ws->blen[k] = n;
	ws->slot[s] = k + 1;
	ws->w[k].tok = malloc(n * sizeof *ws->w[k].tok);
	ws->w[k].n = n;
	ws->w[k].count = 1;
	if (!ws->w[k].tok)
		return mgpu_err(MGPU_ENOMEM, "bpe: out of memory for words");
	for (j = 0; j < n; j++)
		ws->w[k].tok[j] = p[j];
	return 0;
}

static void words_free(struct words *ws)
{
	size_t i;

	for (i = 0; i < ws->n; i++)
		free(ws->w[i].tok);
	free(ws->w);
	free(ws->slot);
	free(ws->start);
	free(ws->blen);
}

/* Pair counts of one merge round: open addressing, cleared by used slots. */
struct pairs {
	uint64_t *key;       /* pair key + 1; 0 empty */
	uint64_t *count;
	size_t *used, nused, cap;
};

static void pair_add(struct pairs *p, uint64_t k, uint64_t c)
{
	size_t s;

	for (s = mix(k + 1) & (p->cap - 1); p->key[s]; s = (s + 1) & (p->cap - 1))
		if (p->key[s] == k + 1) {
			p->count[s] += c;
			return;
		}
	p->key[s] = k + 1;
	p->count[s] = c;
	p->used[p->nused++] = s;
}

/* Merge pair (x, y) into token t in every word that holds it. */
static void apply(struct words *ws, int32_t x, int32_t y, int32_t t)
{
	size_t i, r, w;

	for (i = 0; i < ws->n; i++) {
		struct word *wd = &ws->w[i];
		for (r = w = 0; r < wd->n; r++, w++) {
			if (r + 1 < wd->n && wd->tok[r] == x && wd->tok[r + 1] == y) {
				wd->tok[w] = t;
				r++;
			} else {
				wd->tok[w] = wd->tok[r];
			}
		}
		wd->n = w;
	}
}

static int learn_words(struct mgpu_bpe *b, struct words *ws, int nmerges)
{
	struct pairs p = { 0 };
	size_t total = 0, i, j, best;
	int m, rc = 0;

	for (i = 0; i < ws->n; i++)
		total += ws->w[i].n;
	for (p.cap = 16; p.cap < 2 * total; p.cap *= 2)
		;
	p.key = calloc(p.cap, sizeof *p.key);
	p.count = malloc(p.cap * sizeof *p.count);
	p.used = malloc(p.cap * sizeof *p.used);
	b->pair = malloc(((size_t)nmerges + 1) * sizeof *b->pair);
	if (!p.key || !p.count || !p.used || !b->pair) {
		rc = mgpu_err(MGPU_ENOMEM, "bpe: out of memory for pair counts");
		goto out;
	}
	for (m = 0; m < nmerges; m++) {
		MGPU_CHECK(mgpu_cancel_check());
		for (i = 0; i < p.nused; i++)
			p.key[p.used[i]] = 0;
		p.nused = 0;
		for (i = 0; i < ws->n; i++)
			for (j = 0; j + 1 < ws->w[i].n; j++)
				pair_add(&p, key(ws->w[i].tok[j], ws->w[i].tok[j + 1]),
					 ws->w[i].count);
		best = p.cap;
		for (i = 0; i < p.nused; i++) {
			size_t s = p.used[i];
			if (best == p.cap || p.count[s] > p.count[best] ||
			    (p.count[s] == p.count[best] && p.key[s] < p.key[best]))
				best = s;
		}
		if (best == p.cap || p.count[best] < 2)
			break; /* nothing left that occurs twice */
		b->pair[m][0] = (int32_t)((p.key[best] - 1) >> 32);
		b->pair[m][1] = (int32_t)(uint32_t)(p.key[best] - 1);
		apply(ws, b->pair[m][0], b->pair[m][1], 256 + m);
	}
	b->nmerges = m;
	rc = build(b);
out:
	free(p.key);
	free(p.count);
	free(p.used);
	return rc;
}

int mgpu_bpe_learn(struct mgpu_bpe *b, const unsigned char *text, size_t len, int nmerges)
{
	struct words ws = { 0 };
	size_t i, e;
	int rc = 0;

	memset(b, 0, sizeof *b);
	if (nmerges < 0 || nmerges > MGPU_BPE_MAX_MERGES)
		return mgpu_err(MGPU_EINVAL, "bpe: %d merges out of range [0,%d]", nmerges,
				MGPU_BPE_MAX_MERGES);
	ws.text = text;
	for (i = 0; i < len && rc == 0; i = e) {
		e = word_end(text, len, i);
		rc = add_word(&ws, i, e - i);
	}
	if (rc == 0)
		rc = learn_words(b, &ws, nmerges);
	words_free(&ws);
	if (rc < 0)
		mgpu_bpe_free(b);
	return rc;
}

/* ---- encoding and decoding ---------------------------------------------------- */

/* Merge the word's tokens t[0..*n) by rank, lowest first. */
static void encode_word(const struct mgpu_bpe *b, int32_t *t, size_t *n)
{
	size_t i, r, w;
	int best, rk, a, c;

	for (;;) {
		best = -1;
		for (i = 0; i + 1 < *n; i++)
			if ((rk = rank_of(b, t[i], t[i + 1])) >= 0 && (best < 0 || rk < best))
				best = rk;
		if (best < 0)
			return;
		a = b->pair[best][0];
		c = b->pair[best][1];
		for (r = w = 0; r < *n; r++, w++) {
			if (r + 1 < *n && t[r] == a && t[r + 1] == c) {
				t[w] = 256 + best;
				r++;
			} else {
				t[w] = t[r];
			}
		}
		*n = w;
	}
}

int mgpu_bpe_encode(const struct mgpu_bpe *b, const unsigned char *text, size_t len,
		    int32_t **ids, size_t *n)
{
	size_t i, e, k, wn;
	int32_t *out = malloc((len ? len : 1) * sizeof *out);

	*ids = NULL;
	*n = 0;
	if (!out)
		return mgpu_err(MGPU_ENOMEM, "bpe: out of memory to encode %zu bytes", len);
	/* a word's tokens never outnumber its bytes: encode in place */
	for (i = 0; i < len; i = e) {
		e = word_end(text, len, i);
		for (k = 0; k < e - i; k++)
			out[*n + k] = text[i + k];
		wn = e - i;
		encode_word(b, out + *n, &wn);
		*n += wn;
	}
	*ids = out;
	return 0;
}

int mgpu_bpe_join(const unsigned char *pool, const uint32_t *off, const uint32_t *len,
		  int vocab, const int32_t *ids, size_t n, const char *who, unsigned char **text,
		  size_t *nbytes)
{
	size_t i, total = 0;
	unsigned char *out;

	*text = NULL;
	*nbytes = 0;
	for (i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= vocab)
			return mgpu_err(MGPU_ERANGE, "%s: token %d at position %zu is not below its "
					"vocab %d", who, (int)ids[i], i, vocab);
		total += len[ids[i]];
	}
	out = malloc(total + 1);
	if (!out)
		return mgpu_err(MGPU_ENOMEM, "%s: out of memory to decode", who);
	for (i = 0; i < n; i++) {
		memcpy(out + *nbytes, pool + off[ids[i]], len[ids[i]]);
		*nbytes += len[ids[i]];
	}
	out[*nbytes] = '\0';
	*text = out;
	return 0;
}

int mgpu_bpe_decode(const struct mgpu_bpe *b, const int32_t *ids, size_t n,
		    unsigned char **text, size_t *len)
{
	return mgpu_bpe_join(b->bytes, b->off, b->len, mgpu_bpe_vocab(b), ids, n, "bpe", text,
			     len);
}

/* ---- the file -------------------------------------------------------------------- */

int mgpu_bpe_save(const struct mgpu_bpe *b, const char *path)
{
	struct mgpu_afile af;
	int i;

	MGPU_TRY(mgpu_afile_open(&af, path));
	fprintf(af.fp, "mgpu-bpe 1 %d\n", b->nmerges);
	for (i = 0; i < b->nmerges; i++)
		fprintf(af.fp, "%d %d\n", (int)b->pair[i][0], (int)b->pair[i][1]);
	return mgpu_afile_commit(&af);
}

int mgpu_bpe_parse(struct mgpu_bpe *b, const char *text, const char *path)
{
	const char *p = text;
	char *e;
	long n, v[2];
	int i, k, rc = 0;

	memset(b, 0, sizeof *b);
	if (strncmp(p, "mgpu-bpe 1 ", 11) != 0)
		return mgpu_err(MGPU_EFORMAT, "'%s': not an mgpu BPE file (want 'mgpu-bpe 1 N')",
				path);
	n = strtol(p + 11, &e, 10);
	if (e == p + 11 || *e != '\n' || n < 0 || n > MGPU_BPE_MAX_MERGES)
		return mgpu_err(MGPU_EFORMAT, "'%s': line 1: bad merge count", path);
	b->pair = malloc(((size_t)n + 1) * sizeof *b->pair);
	if (!b->pair)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
	p = e + 1;
	for (i = 0; i < n; i++) {
		for (k = 0; k < 2; k++) {
			v[k] = strtol(p, &e, 10);
			if (e == p || *p == ' ' || *p == '-' || *p == '+' || v[k] < 0 ||
			    v[k] >= 256 + i || *e != (k ? '\n' : ' ')) {
				rc = mgpu_err(MGPU_EFORMAT, "'%s': line %d: want two token ids below "
					      "%d (merge %d)", path, i + 2, 256 + i, i);
				goto out;
			}
			p = e + 1;
		}
		b->pair[i][0] = (int32_t)v[0];
		b->pair[i][1] = (int32_t)v[1];
	}
	if (*p) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': line %ld: more than the %ld merges of its "
			      "header", path, n + 2, n);
		goto out;
	}
	b->nmerges = (int)n;
	rc = build(b);
out:
	if (rc < 0)
		mgpu_bpe_free(b);
	return rc;
}

int mgpu_bpe_load(struct mgpu_bpe *b, const char *path)
{
	unsigned char *buf = NULL;
	size_t len;
	int rc;

	memset(b, 0, sizeof *b);
	MGPU_TRY(mgpu_read_file(path, &buf, &len));
	/* mgpu_read_file ends the buffer with a NUL; one inside is no text */
	if (strlen((char *)buf) != len)
		rc = mgpu_err(MGPU_EFORMAT, "'%s': a NUL byte in a text file", path);
	else
		rc = mgpu_bpe_parse(b, (const char *)buf, path);
	free(buf);
	return rc;
}

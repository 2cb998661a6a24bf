/*
 * gpt2tok.c - GPT-2's tokenizer from encoder.json and vocab.bpe or from a
 * tiktoken ranks file (see gpt2tok.h): the byte alphabet of encoder.py's
 * bytes_to_unicode, two hashes over byte strings (token -> id, merge pair
 * -> rank), base64, and GPT-2's pre-tokenizer pattern through PCRE2.
 */
#include "data/gpt2tok.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>  /* pcre2_compile, pcre2_match */
#include <stdio.h>  /* snprintf */
#include <stdint.h> /* INT32_MAX */
#include <stdlib.h> /* malloc, calloc, realloc, free */
#include <string.h> /* memchr, memcmp, memcpy, memmove, memset, strchr */

#include "core/err.h"  /* mgpu_err */
#include "core/io.h"   /* mgpu_read_file */
#include "core/json.h" /* mgpu_json_* */
#include "data/bpe.h"  /* mgpu_bpe_join */

static const char pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---- the byte alphabet: encoder.py's bytes_to_unicode, inverted ------------ */

/* dec[c]: the byte that character c stands for, or -1 (c < 324). */
static void byte_decoder(int dec[324])
{
	int b, n = 0;

	for (b = 0; b < 324; b++)
		dec[b] = -1;
	for (b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
				(b >= 0xAE && b <= 0xFF);
		dec[printable ? b : 256 + n++] = b;
	}
}

/* The bytes a token string (UTF-8 in GPT-2's alphabet) stands for, into
 * out (at most len bytes: one per character); -1 for a character outside
 * the alphabet. */
static long to_bytes(const int dec[324], const char *s, size_t len, unsigned char *out)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	long n = 0;
	unsigned c;

	while (p < end) {
		if (*p < 0x80) {
			c = *p++;
		} else if ((*p & 0xE0) == 0xC0 && p + 1 < end) {
			c = (unsigned)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
			p += 2;
		} else {
			return -1; /* three-byte characters are above 323 */
		}
		if (c >= 324 || dec[c] < 0)
			return -1;
		out[n++] = (unsigned char)dec[c];
	}
	return n;
}

/* ---- hashes ------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static size_t pow2_above(size_t n)
{
	size_t c = 16;

	while (c < 2 * n)
		c *= 2;
	return c;
}

static int find_id(const struct mgpu_gpt2tok *t, const unsigned char *p, size_t n)
{
	size_t s;
	int32_t id;

	for (s = mix(fnv(1469598103934665603ULL, p, n)) & (t->ids_cap - 1);
	     (id = t->ids_slot[s]) != 0; s = (s + 1) & (t->ids_cap - 1))
		if (t->len[id - 1] == n && memcmp(t->pool + t->off[id - 1], p, n) == 0)
			return id - 1;
	return -1;
}

static uint64_t pair_hash(const unsigned char *a, size_t la, const unsigned char *b, size_t lb)
{
	return mix(fnv(fnv(1469598103934665603ULL, a, la) ^ la, b, lb));
}

static int find_rank(const struct mgpu_gpt2tok *t, const unsigned char *a, size_t la,
		     const unsigned char *b, size_t lb)
{
	size_t s;
	int32_t r;
	const uint32_t *m;

	for (s = pair_hash(a, la, b, lb) & (t->merge_cap - 1); (r = t->merge_slot[s]) != 0;
	     s = (s + 1) & (t->merge_cap - 1)) {
		m = t->merge[r - 1];
		if (m[1] == la && m[3] == lb && memcmp(t->pool + m[0], a, la) == 0 &&
		    memcmp(t->pool + m[2], b, lb) == 0)
			return r - 1;
	}
	return -1;
}

/* Append n bytes to the pool; their offset. */
static int pool_add(struct mgpu_gpt2tok *t, const unsigned char *p, size_t n, size_t *cap,
		    uint32_t *off)
{
	unsigned char *np;

	if (t->npool + n > *cap) {
		*cap = (*cap + n) * 2;
		np = realloc(t->pool, *cap);
		if (!np)
			return mgpu_err(MGPU_ENOMEM, "gpt-2 tokenizer: out of memory");
		t->pool = np;
	}
	memcpy(t->pool + t->npool, p, n);
	*off = (uint32_t)t->npool;
	t->npool += n;
	return 0;
}

/* ---- loading -------------------------------------------------------------------- */

/* Enter id under its bytes (pool[off[id]], len[id]) in the id hash. */
static void put_id(struct mgpu_gpt2tok *t, const unsigned char *p, size_t n, int32_t id)
{
	size_t s;

	for (s = mix(fnv(1469598103934665603ULL, p, n)) & (t->ids_cap - 1); t->ids_slot[s];
	     s = (s + 1) & (t->ids_cap - 1))
		;
	t->ids_slot[s] = id + 1;
}

/* Every byte must be a token of its own, or some text has no encoding. */
static int check_bytes(const struct mgpu_gpt2tok *t, const char *path)
{
	unsigned char b;
	int i;

	for (i = 0; i < 256; i++) {
		b = (unsigned char)i;
		if (find_id(t, &b, 1) < 0)
			return mgpu_err(MGPU_EFORMAT, "'%s': no token for byte %d", path, i);
	}
	return 0;
}

static int load_encoder(struct mgpu_gpt2tok *t, const char *buf, size_t len, const char *path,
			const int dec[324], size_t *cap)
{
	struct mgpu_json_doc doc = { 0 };
	unsigned char tmp[1024];
	const struct mgpu_json *root, *m;
	size_t i;
	int64_t id;
	long n;
	int rc;

	MGPU_TRY(mgpu_json_parse(buf, len, path, &doc));
	root = doc.root;
	if (root->type != MGPU_JSON_OBJECT || root->count < 256 || root->count > (1u << 30)) {
		rc = mgpu_err(MGPU_EFORMAT, "'%s': want an object of token strings and ids (256 "
			      "at least)", path);
		goto out;
	}
	t->vocab = (int)root->count;
	t->off = calloc(root->count, sizeof *t->off);
	t->len = calloc(root->count, sizeof *t->len);
	t->ids_cap = pow2_above(root->count);
	t->ids_slot = calloc(t->ids_cap, sizeof *t->ids_slot);
	if (!t->off || !t->len || !t->ids_slot) {
		rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
		goto out;
	}
	for (i = 0; i < root->count; i++) {
		m = &root->items[i];
		if (mgpu_json_i64(m, 0, (int64_t)root->count - 1, &id) < 0) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': token '%.40s': want an id in [0,%zu)",
				      path, m->key, root->count);
			goto out;
		}
		if (t->len[id] || m->key_len == 0 || m->key_len > sizeof tmp ||
		    (n = to_bytes(dec, m->key, m->key_len, tmp)) <= 0) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': token '%.40s' (id %lld): %s", path, m->key,
				      (long long)id, t->len[id] ? "its id is taken already" :
				      "not a string of GPT-2's byte alphabet");
			goto out;
		}
		MGPU_CHECK(pool_add(t, tmp, (size_t)n, cap, &t->off[id]));
		t->len[id] = (uint32_t)n;
		if (find_id(t, tmp, (size_t)n) >= 0) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': token '%.40s': two ids for its bytes",
				      path, m->key);
			goto out;
		}
		put_id(t, tmp, (size_t)n, (int32_t)id);
	}
	rc = check_bytes(t, path);
out:
	mgpu_json_free(&doc);
	return rc;
}

/* buf: the file's text, NUL-terminated; its lines are cut in place. */
static int load_merges(struct mgpu_gpt2tok *t, char *buf, const char *path, const int dec[324],
		       size_t *cap)
{
	unsigned char a[1024], b[1024];
	char *line, *next, *sp;
	size_t nlines = 0, s;
	long na, nb;
	int lineno = 0, rc = 0;

	for (s = 0; buf[s]; s++)
		nlines += buf[s] == '\n';
	t->merge = malloc((nlines + 1) * sizeof *t->merge);
	t->merge_cap = pow2_above(nlines + 1);
	t->merge_slot = calloc(t->merge_cap, sizeof *t->merge_slot);
	if (!t->merge || !t->merge_slot) {
		rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
		goto out;
	}
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if ((lineno == 1 && strncmp(line, "#version", 8) == 0) || !*line)
			continue;
		sp = strchr(line, ' ');
		if (sp && ((size_t)(sp - line) > sizeof a || strlen(sp + 1) > sizeof b)) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %d: a token string of over %zu "
				      "characters", path, lineno, sizeof a);
			goto out;
		}
		if (!sp || strchr(sp + 1, ' ') ||
		    (na = to_bytes(dec, line, (size_t)(sp - line), a)) <= 0 ||
		    (nb = to_bytes(dec, sp + 1, strlen(sp + 1), b)) <= 0) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %d: want two token strings of "
				      "GPT-2's byte alphabet, a space apart", path, lineno);
			goto out;
		}
		if (find_rank(t, a, (size_t)na, b, (size_t)nb) >= 0)
			continue; /* a repeated merge keeps its first rank */
		{
			uint32_t *m = t->merge[t->nmerges];
			MGPU_CHECK(pool_add(t, a, (size_t)na, cap, &m[0]));
			MGPU_CHECK(pool_add(t, b, (size_t)nb, cap, &m[2]));
			m[1] = (uint32_t)na;
			m[3] = (uint32_t)nb;
		}
		for (s = pair_hash(a, (size_t)na, b, (size_t)nb) & (t->merge_cap - 1);
		     t->merge_slot[s]; s = (s + 1) & (t->merge_cap - 1))
			;
		t->merge_slot[s] = ++t->nmerges;
	}
out:
	return rc;
}

static int compile_pattern(struct mgpu_gpt2tok *t)
{
	PCRE2_SIZE eoff;
	int err;

	t->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
			      &err, &eoff, NULL);
	if (!t->re)
		return mgpu_err(MGPU_EINVAL, "gpt-2 tokenizer: PCRE2 error %d compiling its "
				"pattern", err);
	return 0;
}

int mgpu_gpt2tok_parse(struct mgpu_gpt2tok *t, const char *enc, size_t enc_len,
		       const char *enc_path, const char *merges, size_t merges_len,
		       const char *merges_path)
{
	char *m = malloc(merges_len + 1);
	size_t cap = 0;
	int dec[324], rc;

	memset(t, 0, sizeof *t);
	if (!m)
		return mgpu_err(MGPU_ENOMEM, "'%s': out of memory", merges_path);
	memcpy(m, merges, merges_len);
	m[merges_len] = '\0';
	byte_decoder(dec);
	rc = load_encoder(t, enc, enc_len, enc_path, dec, &cap);
	if (rc == 0)
		rc = load_merges(t, m, merges_path, dec, &cap);
	if (rc == 0)
		rc = compile_pattern(t);
	free(m);
	if (rc < 0)
		mgpu_gpt2tok_free(t);
	return rc;
}

int mgpu_gpt2tok_load(struct mgpu_gpt2tok *t, const char *dir)
{
	char enc[4200], bpe[4200];
	unsigned char *ebuf = NULL, *bbuf = NULL;
	size_t elen, blen;
	int rc;

	memset(t, 0, sizeof *t);
	snprintf(enc, sizeof enc, "%s/encoder.json", dir);
	snprintf(bpe, sizeof bpe, "%s/vocab.bpe", dir);
	rc = mgpu_read_file(enc, &ebuf, &elen);
	if (rc == 0)
		rc = mgpu_read_file(bpe, &bbuf, &blen);
	if (rc == 0)
		rc = mgpu_gpt2tok_parse(t, (const char *)ebuf, elen, enc, (const char *)bbuf, blen,
					bpe);
	free(ebuf);
	free(bbuf);
	return rc;
}

/* ---- a tiktoken ranks file ----------------------------------------------------------- */

static int b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (padded) of n characters into out (3 n / 4 bytes at
 * most); the bytes, or -1 where it is not base64. */
static long b64_decode(const char *s, size_t n, unsigned char *out)
{
	size_t i, pad = 0;
	long o = 0;
	int k, v[4];

	if (n == 0 || n % 4)
		return -1;
	if (s[n - 1] == '=')
		pad = s[n - 2] == '=' ? 2 : 1;
	for (i = 0; i < n; i += 4) {
		for (k = 0; k < 4; k++) {
			int last = i + 4 == n;
			if (last && k >= 4 - (int)pad)
				v[k] = 0;
			else if ((v[k] = b64_value((unsigned char)s[i + k])) < 0)
				return -1;
		}
		out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	}
	return o - (long)pad;
}

/* tiktoken's load_tiktoken_bpe: a line per token, its bytes in base64, a
 * space, its rank; the ranks must be the ids 0..N-1, each once. */
int mgpu_gpt2tok_parse_ranks(struct mgpu_gpt2tok *t, const char *text, size_t len,
			     const char *path)
{
	static const char eot[] = "<|endoftext|>";
	const char *line = text, *end = text + len, *nl, *sp, *e;
	unsigned char tmp[768];
	size_t nlines = 1, i, cap = 0;
	long n, rank;
	int lineno = 0, rc = 0;

	memset(t, 0, sizeof *t);
	for (i = 0; i < len; i++)
		nlines += text[i] == '\n';
	t->off = calloc(nlines + 1, sizeof *t->off);
	t->len = calloc(nlines + 1, sizeof *t->len);
	t->ids_cap = pow2_above(nlines + 1);
	t->ids_slot = calloc(t->ids_cap, sizeof *t->ids_slot);
	if (!t->off || !t->len || !t->ids_slot) {
		rc = mgpu_err(MGPU_ENOMEM, "'%s': out of memory", path);
		goto out;
	}
	for (; line < end; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl)
			nl = end;
		lineno++;
		e = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
		if (e == line)
			continue;
		sp = memchr(line, ' ', (size_t)(e - line));
		rank = -1;
		if (sp && sp + 1 < e && sp + 1 + 10 >= e) {
			const char *d;
			for (rank = 0, d = sp + 1; d < e && *d >= '0' && *d <= '9'; d++)
				rank = rank * 10 + (*d - '0');
			if (d != e)
				rank = -1;
		}
		if (!sp || (size_t)(sp - line) > 4 * sizeof tmp / 3 ||
		    (n = b64_decode(line, (size_t)(sp - line), tmp)) <= 0 || rank < 0) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %d: want a token's bytes in base64, a "
				      "space and its rank", path, lineno);
			goto out;
		}
		if ((size_t)rank >= nlines || t->len[rank]) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %d: rank %ld %s", path, lineno, rank,
				      (size_t)rank >= nlines ? "is beyond the file's lines" :
				      "is taken already");
			goto out;
		}
		if (find_id(t, tmp, (size_t)n) >= 0) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': line %d: two ranks for one token's bytes",
				      path, lineno);
			goto out;
		}
		MGPU_CHECK(pool_add(t, tmp, (size_t)n, &cap, &t->off[rank]));
		t->len[rank] = (uint32_t)n;
		put_id(t, tmp, (size_t)n, (int32_t)rank);
		t->vocab++;
	}
	for (i = 0; i < (size_t)t->vocab; i++)
		if (!t->len[i]) {
			rc = mgpu_err(MGPU_EFORMAT, "'%s': no token of rank %zu (ranks must be the "
				      "ids 0..%d)", path, i, t->vocab - 1);
			goto out;
		}
	MGPU_CHECK(check_bytes(t, path));
	/* GPT-2's one special token comes after the ranks, as tiktoken's gpt2
	 * encoding adds it; it decodes to its name and no text encodes to it. */
	MGPU_CHECK(pool_add(t, (const unsigned char *)eot, sizeof eot - 1, &cap,
			    &t->off[t->vocab]));
	t->len[t->vocab++] = sizeof eot - 1;
	t->by_rank = 1;
	rc = compile_pattern(t);
out:
	if (rc < 0)
		mgpu_gpt2tok_free(t);
	return rc;
}

int mgpu_gpt2tok_load_ranks(struct mgpu_gpt2tok *t, const char *path)
{
	unsigned char *buf;
	size_t len;
	int rc;

	memset(t, 0, sizeof *t);
	MGPU_TRY(mgpu_read_file(path, &buf, &len));
	rc = mgpu_gpt2tok_parse_ranks(t, (const char *)buf, len, path);
	free(buf);
	return rc;
}

void mgpu_gpt2tok_free(struct mgpu_gpt2tok *t)
{
	free(t->off);
	free(t->len);
	free(t->pool);
	free(t->ids_slot);
	free(t->merge);
	free(t->merge_slot);
	if (t->re)
		pcre2_code_free((pcre2_code *)t->re);
	memset(t, 0, sizeof *t);
}

/* ---- encoding ---------------------------------------------------------------------- */

/* encoder.py's bpe() on one piece: its parts (po, pl, *np of them), merged
 * by rank, lowest first, every occurrence left to right. */
static void bpe_piece(const struct mgpu_gpt2tok *t, const unsigned char *p, size_t *po,
		      size_t *pl, size_t *np)
{
	size_t i, r, w;
	int best, rk;
	const uint32_t *m;

	for (;;) {
		best = -1;
		for (i = 0; i + 1 < *np; i++) {
			rk = find_rank(t, p + po[i], pl[i], p + po[i + 1], pl[i + 1]);
			if (rk >= 0 && (best < 0 || rk < best))
				best = rk;
		}
		if (best < 0)
			return;
		m = t->merge[best];
		for (r = w = 0; r < *np; r++, w++) {
			po[w] = po[r];
			pl[w] = pl[r];
			if (r + 1 < *np && pl[r] == m[1] && pl[r + 1] == m[3] &&
			    memcmp(p + po[r], t->pool + m[0], m[1]) == 0 &&
			    memcmp(p + po[r + 1], t->pool + m[2], m[3]) == 0) {
				pl[w] += pl[r + 1];
				r++;
			}
		}
		*np = w;
	}
}

/* tiktoken's byte_pair_merge on one piece: while some adjacent pair's
 * bytes are a token, merge the pair of the lowest rank (the leftmost on a
 * tie). pr[i]: the rank of parts i and i + 1 together, or INT32_MAX. */
static void rank_piece(const struct mgpu_gpt2tok *t, const unsigned char *p, size_t *po,
		       size_t *pl, int32_t *pr, size_t *np)
{
	size_t i, best;
	int r;

	for (i = 0; i + 1 < *np; i++)
		pr[i] = (r = find_id(t, p + po[i], pl[i] + pl[i + 1])) < 0 ? INT32_MAX : r;
	while (*np > 1) {
		for (best = 0, i = 1; i + 1 < *np; i++)
			if (pr[i] < pr[best])
				best = i;
		if (pr[best] == INT32_MAX)
			return;
		pl[best] += pl[best + 1];
		memmove(po + best + 1, po + best + 2, (*np - best - 2) * sizeof *po);
		memmove(pl + best + 1, pl + best + 2, (*np - best - 2) * sizeof *pl);
		memmove(pr + best + 1, pr + best + 2, (*np - best - 2) * sizeof *pr);
		(*np)--;
		if (best + 1 < *np)
			pr[best] = (r = find_id(t, p + po[best], pl[best] + pl[best + 1])) < 0 ?
				   INT32_MAX : r;
		if (best > 0)
			pr[best - 1] = (r = find_id(t, p + po[best - 1],
						    pl[best - 1] + pl[best])) < 0 ? INT32_MAX : r;
	}
}

int mgpu_gpt2tok_encode(const struct mgpu_gpt2tok *t, const unsigned char *text, size_t len,
			int32_t **ids, size_t *n)
{
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	int32_t *out = malloc((len ? len : 1) * sizeof *out);
	size_t *po = malloc((len ? len : 1) * sizeof *po), *pl = malloc((len ? len : 1) * sizeof *pl);
	int32_t *pr = t->by_rank ? malloc((len ? len : 1) * sizeof *pr) : NULL;
	size_t off = 0, a, e, np, i;
	PCRE2_SIZE *ov;
	int rc = 0, m, id;

	*ids = NULL;
	*n = 0;
	if (!md || !out || !po || !pl || (t->by_rank && !pr)) {
		rc = mgpu_err(MGPU_ENOMEM, "gpt-2 tokenizer: out of memory for %zu bytes", len);
		goto out;
	}
	while (off < len) {
		m = pcre2_match((const pcre2_code *)t->re, text, len, off, 0, md, NULL);
		if (m <= PCRE2_ERROR_UTF8_ERR1 && m >= PCRE2_ERROR_UTF8_ERR21) {
			rc = mgpu_err(MGPU_EFORMAT, "text is not UTF-8 at byte %zu",
				      (size_t)pcre2_get_startchar(md));
			goto out;
		}
		ov = pcre2_get_ovector_pointer(md);
		if (m < 0 || ov[0] != off || ov[1] <= off) {
			rc = mgpu_err(MGPU_EFORMAT, "gpt-2 tokenizer: no piece at byte %zu (PCRE2 "
				      "%d)", off, m);
			goto out;
		}
		a = ov[0];
		e = ov[1];
		if (t->by_rank && find_id(t, text + a, e - a) >= 0) {
			np = 1; /* tiktoken takes a piece that is a token whole */
			po[0] = 0;
			pl[0] = e - a;
		} else {
			for (np = 0; np < e - a; np++) {
				po[np] = np;
				pl[np] = 1;
			}
			if (t->by_rank)
				rank_piece(t, text + a, po, pl, pr, &np);
			else
				bpe_piece(t, text + a, po, pl, &np);
		}
		for (i = 0; i < np; i++) {
			id = find_id(t, text + a + po[i], pl[i]);
			if (id < 0) {
				rc = mgpu_err(MGPU_EFORMAT, "gpt-2 tokenizer: encoder.json has no id "
					      "for the merged bytes at %zu (its merges and tokens "
					      "disagree)", a + po[i]);
				goto out;
			}
			out[(*n)++] = id;
		}
		off = e;
	}
	*ids = out;
	out = NULL;
out:
	free(out);
	free(po);
	free(pl);
	free(pr);
	pcre2_match_data_free(md);
	return rc;
}

int mgpu_gpt2tok_decode(const struct mgpu_gpt2tok *t, const int32_t *ids, size_t n,
			unsigned char **text, size_t *len)
{
	return mgpu_bpe_join(t->pool, t->off, t->len, t->vocab, ids, n, "gpt-2 tokenizer", text,
			     len);
}

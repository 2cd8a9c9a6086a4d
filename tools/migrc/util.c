// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - small helpers: allocation, messages, file reading, counter lists.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrc.h"

#define READ_FILE_MAX (64UL << 20)

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "migrc: out of memory\n");
		exit(EXIT_SYSERR);
	}
	return p;
}

void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p) {
		fprintf(stderr, "migrc: out of memory\n");
		exit(EXIT_SYSERR);
	}
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "migrc: out of memory\n");
		exit(EXIT_SYSERR);
	}
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

void errmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("migrc: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void warnmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("migrc: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Read a whole file.  /proc files report size 0, so read until EOF.
 * The result is NUL-terminated; embedded NULs are refused because every
 * file we read is text.
 */
char *read_file(const char *path, size_t *lenp, char *err, size_t errlen)
{
	size_t len = 0, cap = 4096;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	buf = xmalloc(cap);
	for (;;) {
		ssize_t r;

		if (len + 1 >= cap) {
			if (cap >= READ_FILE_MAX) {
				snprintf(err, errlen, "%s: file too large", path);
				goto fail;
			}
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	buf[len] = '\0';
	if (strlen(buf) != len) {
		snprintf(err, errlen, "%s: contains NUL bytes (not a text file)", path);
		free(buf);
		return NULL;
	}
	if (lenp)
		*lenp = len;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

const char *proc_root(void)
{
	const char *p = getenv("MIGRC_PROC");

	return (p && *p) ? p : "/proc";
}

const char *proc_path(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", proc_root(), rel);
	return buf;
}

/* Strict unsigned decimal: at least one digit, no sign, no overflow. */
bool parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p)) {
		unsigned int d = *p - '0';

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		p++;
	}
	*out = v;
	if (end)
		*end = p;
	return true;
}

bool parse_i64(const char *s, const char **end, int64_t *out)
{
	bool neg = false;
	uint64_t u;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (!parse_u64(s, end, &u))
		return false;
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return false;
		*out = (int64_t)(0 - u);
	} else {
		if (u > INT64_MAX)
			return false;
		*out = (int64_t)u;
	}
	return true;
}

double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- samples, for medians ---- */

static uint64_t samples_rand(struct samples *s)
{
	uint64_t x = s->rng ? s->rng : 0x9e3779b97f4a7c15ULL;	/* xorshift64 */

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	s->rng = x;
	return x;
}

void samples_add(struct samples *s, uint64_t v)
{
	size_t max = s->max ? s->max : SAMPLES_MAX;
	uint64_t j;

	s->seen++;
	if (s->n < max) {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 64;
			if (s->cap > max)
				s->cap = max;
			s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
		}
		s->v[s->n++] = v;
		return;
	}
	/* Full: keep each of the values seen with the same probability. */
	j = samples_rand(s) % s->seen;
	if (j < s->n)
		s->v[j] = v;
}

bool samples_exact(const struct samples *s)
{
	return s->seen == s->n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The median; of an even count, the mean of the middle two, rounded down. */
bool samples_median(const struct samples *s, uint64_t *out)
{
	uint64_t *v, lo, hi;

	if (!s->n)
		return false;
	v = xmalloc(s->n * sizeof(*v));
	memcpy(v, s->v, s->n * sizeof(*v));
	qsort(v, s->n, sizeof(*v), cmp_u64);
	hi = v[s->n / 2];
	lo = s->n % 2 ? hi : v[s->n / 2 - 1];
	free(v);
	*out = lo + (hi - lo) / 2;
	return true;
}

void samples_free(struct samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void ctrlist_init(struct ctrlist *l)
{
	memset(l, 0, sizeof(*l));
}

void ctrlist_free(struct ctrlist *l)
{
	free(l->v);
	ctrlist_init(l);
}

struct ctr *ctrlist_add(struct ctrlist *l, const char *name, int64_t val, bool valid)
{
	struct ctr *c;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 32;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	c = &l->v[l->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->val = val;
	c->valid = valid;
	return c;
}

struct ctr *ctrlist_find(const struct ctrlist *l, const char *name)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].name, name))
			return &l->v[i];
	return NULL;
}

void ctrlist_copy(struct ctrlist *dst, const struct ctrlist *src)
{
	int i;

	ctrlist_init(dst);
	for (i = 0; i < src->n; i++)
		ctrlist_add(dst, src->v[i].name, src->v[i].val, src->v[i].valid);
}

void strlist_add(struct strlist *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = xstrdup(s);
}

void strlist_addf(struct strlist *l, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strlist_add(l, buf);
}

void strlist_free(struct strlist *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

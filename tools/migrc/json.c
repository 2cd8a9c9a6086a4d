// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - a minimal JSON writer and a strict recursive-descent parser
 * (RFC 8259 subset large enough for our own files: no duplicate-key checks,
 * depth limited, integers kept exact as int64).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "migrc.h"

#define JSON_MAX_DEPTH 64

/* ---- writer ---- */

void jb_init(struct jbuf *b)
{
	memset(b, 0, sizeof(*b));
	b->cap = 4096;
	b->s = xmalloc(b->cap);
	b->s[0] = '\0';
}

void jb_raw(struct jbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len + n + 1 > b->cap) {
		while (b->len + n + 1 > b->cap)
			b->cap *= 2;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

static void jb_escaped(struct jbuf *b, const char *s)
{
	char tmp[8];

	jb_raw(b, "\"");
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = c;
			tmp[2] = '\0';
		} else if (c < 0x20) {
			snprintf(tmp, sizeof(tmp), "\\u%04x", c);
		} else {
			tmp[0] = c;
			tmp[1] = '\0';
		}
		jb_raw(b, tmp);
	}
	jb_raw(b, "\"");
}

/* Object members of the first levels and containers in arrays get a line. */
static void jb_key_c(struct jbuf *b, const char *key, bool container)
{
	if (b->need_comma[b->depth])
		jb_raw(b, ",");
	b->need_comma[b->depth] = true;
	if (b->depth > 0 && ((key && b->depth < 3) || (!key && container))) {
		jb_raw(b, "\n");
		for (int i = 0; i < b->depth; i++)
			jb_raw(b, "  ");
	}
	if (key) {
		jb_escaped(b, key);
		jb_raw(b, ": ");
	}
}

static void jb_key(struct jbuf *b, const char *key)
{
	jb_key_c(b, key, false);
}

void jb_obj_begin(struct jbuf *b, const char *key)
{
	jb_key_c(b, key, true);
	jb_raw(b, "{");
	b->need_comma[++b->depth] = false;
}

void jb_obj_end(struct jbuf *b)
{
	b->depth--;
	if (b->depth < 2)
		jb_raw(b, "\n");
	for (int i = 0; b->depth < 2 && i < b->depth; i++)
		jb_raw(b, "  ");
	jb_raw(b, "}");
}

void jb_arr_begin(struct jbuf *b, const char *key)
{
	jb_key_c(b, key, true);
	jb_raw(b, "[");
	b->need_comma[++b->depth] = false;
}

void jb_arr_end(struct jbuf *b)
{
	b->depth--;
	jb_raw(b, "]");
}

void jb_str(struct jbuf *b, const char *key, const char *val)
{
	jb_key(b, key);
	if (val)
		jb_escaped(b, val);
	else
		jb_raw(b, "null");
}

void jb_i64(struct jbuf *b, const char *key, int64_t v)
{
	char tmp[32];

	jb_key(b, key);
	snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
	jb_raw(b, tmp);
}

void jb_u64(struct jbuf *b, const char *key, uint64_t v)
{
	char tmp[32];

	jb_key(b, key);
	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	jb_raw(b, tmp);
}

void jb_dbl(struct jbuf *b, const char *key, double v)
{
	char tmp[64];

	jb_key(b, key);
	if (!isfinite(v)) {
		jb_raw(b, "null");
		return;
	}
	snprintf(tmp, sizeof(tmp), "%.6f", v);
	jb_raw(b, tmp);
}

void jb_null(struct jbuf *b, const char *key)
{
	jb_key(b, key);
	jb_raw(b, "null");
}

/* ---- parser ---- */

struct jparser {
	const char *s;
	const char *p;
	char *err;
	size_t errlen;
	bool failed;
};

static void jfail(struct jparser *jp, const char *what)
{
	int line = 1, col = 1;
	const char *q;

	if (jp->failed)
		return;
	for (q = jp->s; q < jp->p; q++) {
		if (*q == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	snprintf(jp->err, jp->errlen, "invalid JSON at line %d column %d: %s",
		 line, col, what);
	jp->failed = true;
}

static void jskip(struct jparser *jp)
{
	while (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r')
		jp->p++;
}

static struct jval *jnew(enum jtype t)
{
	struct jval *v = xcalloc(1, sizeof(*v));

	v->type = t;
	return v;
}

static void put_utf8(char **out, unsigned int cp)
{
	char *o = *out;

	if (cp < 0x80) {
		*o++ = cp;
	} else if (cp < 0x800) {
		*o++ = 0xc0 | (cp >> 6);
		*o++ = 0x80 | (cp & 0x3f);
	} else if (cp < 0x10000) {
		*o++ = 0xe0 | (cp >> 12);
		*o++ = 0x80 | ((cp >> 6) & 0x3f);
		*o++ = 0x80 | (cp & 0x3f);
	} else {
		*o++ = 0xf0 | (cp >> 18);
		*o++ = 0x80 | ((cp >> 12) & 0x3f);
		*o++ = 0x80 | ((cp >> 6) & 0x3f);
		*o++ = 0x80 | (cp & 0x3f);
	}
	*out = o;
}

static bool hex4(const char *p, unsigned int *out)
{
	unsigned int v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		int c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return false;
	}
	*out = v;
	return true;
}

static bool jescape(struct jparser *jp, char **o)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e = strchr(from, *jp->p);
	unsigned int cp, lo;

	if (*jp->p && e) {
		*(*o)++ = to[e - from];
		jp->p++;
		return true;
	}
	if (*jp->p != 'u' || !hex4(jp->p + 1, &cp))
		return false;
	jp->p += 5;
	if (cp >= 0xd800 && cp < 0xdc00) {
		if (jp->p[0] != '\\' || jp->p[1] != 'u' || !hex4(jp->p + 2, &lo) ||
		    lo < 0xdc00 || lo > 0xdfff)
			return false;
		jp->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	} else if (cp >= 0xdc00 && cp < 0xe000) {
		return false;
	}
	put_utf8(o, cp);
	return true;
}

static char *jstring(struct jparser *jp)
{
	const char *start;
	char *out, *o;

	if (*jp->p != '"') {
		jfail(jp, "expected a string");
		return NULL;
	}
	start = ++jp->p;
	/* The decoded string is never longer than the encoded one. */
	while (*jp->p && *jp->p != '"')
		jp->p += (*jp->p == '\\' && jp->p[1]) ? 2 : 1;
	out = xmalloc(jp->p - start + 1);
	o = out;
	for (jp->p = start; *jp->p != '"'; ) {
		unsigned char c = *jp->p;

		if (!c) {
			jfail(jp, "unterminated string");
			goto fail;
		}
		if (c < 0x20) {
			jfail(jp, "control character in string");
			goto fail;
		}
		jp->p++;
		if (c != '\\') {
			*o++ = c;
		} else if (!jescape(jp, &o)) {
			jfail(jp, "bad escape in string");
			goto fail;
		}
	}
	jp->p++;
	*o = '\0';
	return out;
fail:
	free(out);
	return NULL;
}

static struct jval *jnumber(struct jparser *jp)
{
	const char *start = jp->p;
	bool is_int = true;
	struct jval *v;

	if (*jp->p == '-')
		jp->p++;
	if (*jp->p == '0') {
		jp->p++;
	} else if (isdigit((unsigned char)*jp->p)) {
		while (isdigit((unsigned char)*jp->p))
			jp->p++;
	} else {
		jfail(jp, "bad number");
		return NULL;
	}
	if (*jp->p == '.') {
		is_int = false;
		jp->p++;
		if (!isdigit((unsigned char)*jp->p)) {
			jfail(jp, "bad number (digit expected after '.')");
			return NULL;
		}
		while (isdigit((unsigned char)*jp->p))
			jp->p++;
	}
	if (*jp->p == 'e' || *jp->p == 'E') {
		is_int = false;
		jp->p++;
		if (*jp->p == '+' || *jp->p == '-')
			jp->p++;
		if (!isdigit((unsigned char)*jp->p)) {
			jfail(jp, "bad number (digit expected in exponent)");
			return NULL;
		}
		while (isdigit((unsigned char)*jp->p))
			jp->p++;
	}
	v = jnew(J_NUM);
	v->num = strtod(start, NULL);
	if (is_int && parse_i64(start, NULL, &v->i))
		v->is_int = true;
	return v;
}

static struct jval *jvalue(struct jparser *jp, int depth);

static void jadd(struct jval *c, char *key, struct jval *kid)
{
	if ((c->n & (c->n - 1)) == 0) {
		size_t cap = c->n ? c->n * 2 : 1;

		c->kids = xrealloc(c->kids, cap * sizeof(*c->kids));
		if (c->type == J_OBJ)
			c->keys = xrealloc(c->keys, cap * sizeof(*c->keys));
	}
	if (c->type == J_OBJ)
		c->keys[c->n] = key;
	c->kids[c->n++] = kid;
}

static struct jval *jcontainer(struct jparser *jp, int depth, bool obj)
{
	struct jval *c = jnew(obj ? J_OBJ : J_ARR);
	char close = obj ? '}' : ']';

	jp->p++;
	jskip(jp);
	if (*jp->p == close) {
		jp->p++;
		return c;
	}
	for (;;) {
		char *key = NULL;
		struct jval *kid;

		jskip(jp);
		if (obj) {
			key = jstring(jp);
			if (!key)
				goto fail;
			jskip(jp);
			if (*jp->p != ':') {
				free(key);
				jfail(jp, "expected ':'");
				goto fail;
			}
			jp->p++;
		}
		kid = jvalue(jp, depth + 1);
		if (!kid) {
			free(key);
			goto fail;
		}
		jadd(c, key, kid);
		jskip(jp);
		if (*jp->p == close) {
			jp->p++;
			return c;
		}
		if (*jp->p != ',') {
			jfail(jp, obj ? "expected ',' or '}'" : "expected ',' or ']'");
			goto fail;
		}
		jp->p++;
	}
fail:
	json_free(c);
	return NULL;
}

static struct jval *jliteral(struct jparser *jp)
{
	struct jval *v;

	if (!strncmp(jp->p, "true", 4) || !strncmp(jp->p, "false", 5)) {
		v = jnew(J_BOOL);
		v->b = *jp->p == 't';
		jp->p += v->b ? 4 : 5;
		return v;
	}
	if (!strncmp(jp->p, "null", 4)) {
		jp->p += 4;
		return jnew(J_NULL);
	}
	jfail(jp, *jp->p ? "unexpected character" : "unexpected end of input");
	return NULL;
}

static struct jval *jvalue(struct jparser *jp, int depth)
{
	struct jval *v;
	char *s;

	if (depth > JSON_MAX_DEPTH) {
		jfail(jp, "nesting too deep");
		return NULL;
	}
	jskip(jp);
	switch (*jp->p) {
	case '{':
		return jcontainer(jp, depth, true);
	case '[':
		return jcontainer(jp, depth, false);
	case '"':
		s = jstring(jp);
		if (!s)
			return NULL;
		v = jnew(J_STR);
		v->str = s;
		return v;
	default:
		if (*jp->p == '-' || isdigit((unsigned char)*jp->p))
			return jnumber(jp);
		return jliteral(jp);
	}
}

struct jval *json_parse(const char *text, char *err, size_t errlen)
{
	struct jparser jp = { .s = text, .p = text, .err = err, .errlen = errlen };
	struct jval *v = jvalue(&jp, 0);

	if (!v)
		return NULL;
	jskip(&jp);
	if (*jp.p) {
		jfail(&jp, "trailing characters after the top-level value");
		json_free(v);
		return NULL;
	}
	return v;
}

void json_free(struct jval *v)
{
	int i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		if (v->type == J_OBJ)
			free(v->keys[i]);
		json_free(v->kids[i]);
	}
	free(v->keys);
	free(v->kids);
	free(v->str);
	free(v);
}

struct jval *json_get(const struct jval *obj, const char *key)
{
	int i;

	if (!obj || obj->type != J_OBJ)
		return NULL;
	for (i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return obj->kids[i];
	return NULL;
}

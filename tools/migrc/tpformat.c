// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - parse tracefs "format" files: event id, field names and the
 * __print_symbolic() table of a field (used for the tlb_flush reasons).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "migrc.h"

void tp_format_free(struct tp_format *f)
{
	free(f->print_fmt);
	memset(f, 0, sizeof(*f));
	f->id = -1;
}

bool tp_has_field(const struct tp_format *f, const char *name)
{
	int i;

	for (i = 0; i < f->nfields; i++)
		if (!strcmp(f->fields[i], name))
			return true;
	return false;
}

/* "unsigned long pages" -> "pages"; "char comm[16]" -> "comm". */
static int field_name(const char *decl, size_t len, char *out, size_t outlen)
{
	const char *end = decl + len, *start = end, *br;

	while (start > decl && start[-1] != ' ' && start[-1] != '\t')
		start--;
	br = memchr(start, '[', end - start);
	if (br)
		end = br;
	if (start == end || (size_t)(end - start) >= outlen)
		return -1;
	memcpy(out, start, end - start);
	out[end - start] = '\0';
	return 0;
}

static int parse_field_line(const char *p, struct tp_format *out, char *err, size_t errlen)
{
	const char *semi = strchr(p, ';');

	if (!semi) {
		snprintf(err, errlen, "format: field line without ';'");
		return -1;
	}
	if (out->nfields == MAX_FIELDS)
		return 0;
	if (field_name(p, semi - p, out->fields[out->nfields], NAMELEN)) {
		snprintf(err, errlen, "format: cannot find the field name in \"%.*s\"",
			 (int)(semi - p), p);
		return -1;
	}
	out->nfields++;
	return 0;
}

int parse_tp_format(const char *buf, struct tp_format *out, char *err, size_t errlen)
{
	const char *p = buf;

	memset(out, 0, sizeof(*out));
	out->id = -1;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		if (!strncmp(q, "name: ", 6)) {
			snprintf(out->name, sizeof(out->name), "%.*s",
				 (int)(len - (q + 6 - p)), q + 6);
		} else if (!strncmp(q, "ID: ", 4)) {
			uint64_t id;

			if (!parse_u64(q + 4, NULL, &id)) {
				snprintf(err, errlen, "format: malformed ID line");
				goto fail;
			}
			out->id = (long long)id;
		} else if (!strncmp(q, "field:", 6)) {
			if (parse_field_line(q + 6, out, err, errlen))
				goto fail;
		} else if (!strncmp(q, "print fmt: ", 11)) {
			size_t n = len - (q + 11 - p);

			free(out->print_fmt);
			out->print_fmt = xmalloc(n + 1);
			memcpy(out->print_fmt, q + 11, n);
			out->print_fmt[n] = '\0';
		}
		p = nl ? nl + 1 : p + len;
	}
	if (out->nfields == 0) {
		snprintf(err, errlen, "format: no fields found");
		goto fail;
	}
	return 0;
fail:
	tp_format_free(out);
	return -1;
}

static const char *skip_ws(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* Parse one "{ 3, "text" }" entry; returns pointer after it or NULL. */
static const char *parse_sym(const char *p, struct tp_sym *s, bool *numeric)
{
	char *end;
	size_t n = 0;

	p = skip_ws(p);
	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	s->value = strtoll(p, &end, 0);
	*numeric = end != p;
	if (!*numeric) {
		while (isalnum((unsigned char)*p) || *p == '_')
			p++;
		end = (char *)p;
	}
	p = skip_ws(end);
	if (*p != ',')
		return NULL;
	p = skip_ws(p + 1);
	if (*p != '"')
		return NULL;
	for (p++; *p && *p != '"'; p++)
		if (n < sizeof(s->str) - 1)
			s->str[n++] = *p;
	s->str[n] = '\0';
	if (*p != '"')
		return NULL;
	p = skip_ws(p + 1);
	return *p == '}' ? p + 1 : NULL;
}

/*
 * Find __print_symbolic(REC->field, { v, "s" }, ...) and return the number
 * of entries, 0 if there is none, or -1 if it exists but its values are
 * not numbers (an enum the kernel did not resolve) or it is malformed.
 */
int parse_print_symbolic(const char *print_fmt, const char *field,
			 struct tp_sym *syms, int max)
{
	char needle[NAMELEN + 32];
	const char *p;
	int n = 0;

	if (!print_fmt)
		return 0;
	snprintf(needle, sizeof(needle), "__print_symbolic(REC->%s,", field);
	p = strstr(print_fmt, needle);
	if (!p)
		return 0;
	p += strlen(needle);
	for (;;) {
		struct tp_sym s;
		bool numeric;

		memset(&s, 0, sizeof(s));
		p = parse_sym(p, &s, &numeric);
		if (!p || !numeric)
			return -1;
		if (n < max)
			syms[n++] = s;
		p = skip_ws(p);
		if (*p == ')')
			return n;
		if (*p != ',')
			return -1;
		p++;
	}
}

/*
 * Map the tlb_flush print string to the kernel's enum name so that the
 * JSON keys are stable across kernels.  Unknown strings are upper-cased.
 */
const char *tlb_reason_name(const char *str, char *buf, size_t len)
{
	static const char *const map[][2] = {
		{ "flush on task switch", "TLB_FLUSH_ON_TASK_SWITCH" },
		{ "remote shootdown", "TLB_REMOTE_SHOOTDOWN" },
		{ "local shootdown", "TLB_LOCAL_SHOOTDOWN" },
		{ "local mm shootdown", "TLB_LOCAL_MM_SHOOTDOWN" },
		{ "remote ipi send", "TLB_REMOTE_SEND_IPI" },
	};
	size_t i, n = 0;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (!strcasecmp(str, map[i][0])) {
			snprintf(buf, len, "%s", map[i][1]);
			return buf;
		}
	}
	n = snprintf(buf, len, "TLB_");
	for (i = 0; str[i] && n < len - 1; i++)
		buf[n++] = isalnum((unsigned char)str[i]) ? toupper((unsigned char)str[i]) : '_';
	buf[n] = '\0';
	return buf;
}

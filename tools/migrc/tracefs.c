// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - the tracing side, through libtracefs and libtraceevent: locate
 * tracefs, load event formats, read the __print_symbolic() table of a field
 * (the tlb_flush and migrc_flush reasons).
 *
 * Formats are loaded one event at a time with tep_parse_format() rather than
 * with tracefs_local_events_system(), which also parses /proc/kallsyms: that
 * took 0.3 s on a 2-CPU host, on every "migrc stat", for nothing migrc uses.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "migrc.h"

static char why[512] = "tracefs not found (mount it on /sys/kernel/tracing, or set MIGRC_TRACEFS)";

const char *tracing_why(void)
{
	return why;
}

static bool has_events_dir(const char *root)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events", root);
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return true;
	if (errno == EACCES || errno == EPERM)
		snprintf(why, sizeof(why), "tracefs %s is not accessible (%s): needs root",
			 root, strerror(errno));
	return false;
}

/*
 * MIGRC_TRACEFS wins (tests) and becomes libtracefs' tracing directory.
 * Otherwise libtracefs finds the mount; as root, it mounts tracefs if
 * nothing is mounted yet (minimal guests often boot without it).
 */
const char *tracing_root(bool try_mount)
{
	const char *env = getenv("MIGRC_TRACEFS");
	const char *path = NULL;

	if (env && *env) {
		if (!has_events_dir(env))
			return NULL;
		if (tracefs_set_tracing_dir((char *)env)) {
			snprintf(why, sizeof(why), "libtracefs refused %s", env);
			return NULL;
		}
		return env;
	}
	if (tracefs_tracing_dir_is_mounted(false, &path) > 0 && path)
		return has_events_dir(path) ? path : NULL;
	if (!try_mount || geteuid() != 0)
		return NULL;
	/* 1: it was mounted after all, 0: this call mounted it, < 0: failed */
	errno = 0;
	if (tracefs_tracing_dir_is_mounted(true, &path) < 0 || !path) {
		snprintf(why, sizeof(why), "tracefs is not mounted and mounting it failed: %s",
			 errno ? strerror(errno) : "unknown error");
		return NULL;
	}
	warnmsg("mounted tracefs on %s (it was not mounted)", path);
	return has_events_dir(path) ? path : NULL;
}

/*
 * A parser handle.  With @headers, the ring buffer page header is loaded
 * too: reading raw trace buffers needs it.
 */
struct tep_handle *tp_open(bool headers, char *err, size_t errlen)
{
	struct tep_handle *tep = tep_alloc();
	char *buf;
	int len = 0;

	if (!tep) {
		snprintf(err, errlen, "tep_alloc: out of memory");
		return NULL;
	}
	if (!headers)
		return tep;
	buf = tracefs_instance_file_read(NULL, "events/header_page", &len);
	if (!buf || len <= 0 || tep_parse_header_page(tep, buf, len, sizeof(long))) {
		snprintf(err, errlen, "cannot read the ring buffer header (events/header_page)");
		free(buf);
		tep_free(tep);
		return NULL;
	}
	free(buf);
	tep_set_long_size(tep, tep_get_header_page_size(tep));
	return tep;
}

/* Parse one "format" file.  An event without fields is of no use here. */
struct tep_event *tp_parse(struct tep_handle *tep, const char *buf, size_t len,
			   const char *system, char *err, size_t errlen)
{
	struct tep_event *ev = NULL;
	char msg[ERRLEN];
	enum tep_errno ret;

	ret = tep_parse_format(tep, &ev, buf, len, system);
	if (ret) {
		tep_strerror(tep, ret, msg, sizeof(msg));
		snprintf(err, errlen, "libtraceevent cannot parse it: %s", msg);
		return NULL;
	}
	if (!ev || !ev->format.nr_fields) {
		snprintf(err, errlen, "no fields found");
		return NULL;
	}
	return ev;
}

/* Load system:name from the tracing directory into @tep. */
struct tep_event *tp_load(struct tep_handle *tep, const char *system, const char *name,
			  char *err, size_t errlen)
{
	char *path = tracefs_event_get_file(NULL, system, name, "format");
	struct tep_event *ev = NULL;
	char msg[ERRLEN];
	char *buf;
	int len = 0;

	errno = 0;
	buf = tracefs_event_file_read(NULL, system, name, "format", &len);
	if (!buf || len <= 0) {
		snprintf(err, errlen, "tracepoint not available (cannot read %s: %s)",
			 path ? path : name, errno ? strerror(errno) : "empty");
	} else {
		ev = tp_parse(tep, buf, len, system, msg, sizeof(msg));
		if (!ev)
			snprintf(err, errlen, "unusable format file %s (%s)",
				 path ? path : name, msg);
	}
	free(buf);
	tracefs_put_tracing_file(path);
	return ev;
}

static bool is_field(const struct tep_print_arg *a, const char *name)
{
	while (a && a->type == TEP_PRINT_TYPE)
		a = a->typecast.item;
	return a && a->type == TEP_PRINT_FIELD && !strcmp(a->field.name, name);
}

static const struct tep_print_arg *find_symbolic(const struct tep_print_arg *a,
						 const char *field)
{
	const struct tep_print_arg *r;

	for (; a; a = a->next) {
		if (a->type == TEP_PRINT_SYMBOL && is_field(a->symbol.field, field))
			return a;
		if (a->type == TEP_PRINT_OP) {
			r = find_symbolic(a->op.left, field);
			if (!r)
				r = find_symbolic(a->op.right, field);
			if (r)
				return r;
		}
	}
	return NULL;
}

/*
 * The __print_symbolic(REC->field, { v, "s" }, ...) table of the event's
 * print format, as libtraceevent parsed it: the number of entries, 0 if
 * there is none, or -1 if a value is not a number (an enum the kernel did
 * not resolve).
 */
int tp_symbols(struct tep_event *ev, const char *field, struct tp_sym *syms, int max)
{
	const struct tep_print_arg *a = find_symbolic(ev->print_fmt.args, field);
	const struct tep_print_flag_sym *s;
	int n = 0;

	if (!a)
		return 0;
	for (s = a->symbol.symbols; s; s = s->next) {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(s->value, &end, 0);
		if (end == s->value || *end || errno)
			return -1;
		if (n < max) {
			syms[n].value = v;
			snprintf(syms[n].str, sizeof(syms[n].str), "%s", s->str);
			n++;
		}
	}
	return n;
}

/* The string of @value, or "0x..." as the kernel prints an unknown value. */
const char *tp_sym_str(const struct tp_sym *syms, int n, long long value,
		       char *buf, size_t len)
{
	int i;

	for (i = 0; i < n; i++)
		if (syms[i].value == value)
			return syms[i].str;
	snprintf(buf, len, "0x%llx", (unsigned long long)value);
	return buf;
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

	for (i = 0; i < ARRAY_SIZE(map); i++) {
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

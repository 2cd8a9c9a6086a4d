// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - parsers for /proc/interrupts, /proc/vmstat, /proc/stat and CPU
 * lists, and the snapshot taken before and after a measured run.
 *
 * Every parser refuses input it does not fully understand: a number that is
 * wrong is worse than no number.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "migrc.h"

static const char *skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');

	return nl ? nl + 1 : p + strlen(p);
}

static bool ends_with_newline(const char *buf)
{
	size_t len = strlen(buf);

	return len > 0 && buf[len - 1] == '\n';
}

void irq_snap_free(struct irq_snap *s)
{
	free(s->cpu_ids);
	free(s->tlb);
	memset(s, 0, sizeof(*s));
}

/* Header: "           CPU0       CPU1  ..." (only online CPUs are listed). */
static int parse_irq_header(const char *line, struct irq_snap *out, char *err, size_t errlen)
{
	const char *p = skip_blank(line);
	int cap = 16;

	out->cpu_ids = xmalloc(cap * sizeof(int));
	out->ncpus = 0;
	while (*p && *p != '\n') {
		uint64_t id;

		if (strncmp(p, "CPU", 3) || !parse_u64(p + 3, &p, &id) || id >= MAX_CPUS ||
		    (*p != ' ' && *p != '\t' && *p != '\n' && *p)) {
			snprintf(err, errlen,
				 "interrupts: malformed header line (expected \"CPU<n>\" columns)");
			return -1;
		}
		if (out->ncpus && (int)id <= out->cpu_ids[out->ncpus - 1]) {
			snprintf(err, errlen, "interrupts: CPU numbers in header not increasing");
			return -1;
		}
		if (out->ncpus == cap) {
			cap *= 2;
			out->cpu_ids = xrealloc(out->cpu_ids, cap * sizeof(int));
		}
		out->cpu_ids[out->ncpus++] = (int)id;
		p = skip_blank(p);
	}
	if (out->ncpus == 0) {
		snprintf(err, errlen, "interrupts: no CPU columns in header (unknown CPU count)");
		return -1;
	}
	return 0;
}

/* "TLB:  n0  n1 ... TLB shootdowns": exactly ncpus numbers, then text. */
static int parse_tlb_line(const char *p, struct irq_snap *out, int lineno,
			  char *err, size_t errlen)
{
	int i;

	out->tlb = xcalloc(out->ncpus, sizeof(uint64_t));
	for (i = 0; i < out->ncpus; i++) {
		p = skip_blank(p);
		if (!parse_u64(p, &p, &out->tlb[i]) ||
		    (*p != ' ' && *p != '\t' && *p != '\n' && *p)) {
			snprintf(err, errlen,
				 "interrupts line %d: TLB line has %d valid value(s), header has %d CPUs (truncated or malformed)",
				 lineno, i, out->ncpus);
			return -1;
		}
	}
	p = skip_blank(p);
	if (isdigit((unsigned char)*p)) {
		snprintf(err, errlen,
			 "interrupts line %d: TLB line has more values than the %d CPUs in the header",
			 lineno, out->ncpus);
		return -1;
	}
	out->has_tlb = true;
	return 0;
}

int parse_interrupts(const char *buf, struct irq_snap *out, char *err, size_t errlen)
{
	const char *p;
	int lineno = 1;

	memset(out, 0, sizeof(*out));
	if (!*buf) {
		snprintf(err, errlen, "interrupts: empty file");
		return -1;
	}
	if (!ends_with_newline(buf)) {
		snprintf(err, errlen, "interrupts: truncated (no newline at end of file)");
		return -1;
	}
	if (parse_irq_header(buf, out, err, errlen))
		goto fail;
	for (p = next_line(buf); *p; p = next_line(p)) {
		const char *q = skip_blank(p);

		lineno++;
		if (strncmp(q, "TLB:", 4))
			continue;
		if (out->has_tlb) {
			snprintf(err, errlen, "interrupts line %d: duplicate TLB line", lineno);
			goto fail;
		}
		if (parse_tlb_line(q + 4, out, lineno, err, errlen))
			goto fail;
	}
	return 0;
fail:
	irq_snap_free(out);
	return -1;
}

/* Per-CPU difference b - a; the CPU set must be the same. */
int irq_delta(const struct irq_snap *a, const struct irq_snap *b, uint64_t *out,
	      char *err, size_t errlen)
{
	int i;

	if (a->ncpus != b->ncpus ||
	    memcmp(a->cpu_ids, b->cpu_ids, a->ncpus * sizeof(int))) {
		snprintf(err, errlen,
			 "the set of online CPUs changed during the measurement (%d -> %d CPUs in /proc/interrupts; CPU hotplug?): per-CPU TLB shootdowns cannot be compared",
			 a->ncpus, b->ncpus);
		return -1;
	}
	if (a->has_tlb != b->has_tlb) {
		snprintf(err, errlen,
			 "the TLB line of /proc/interrupts appeared or disappeared during the measurement");
		return -1;
	}
	for (i = 0; a->has_tlb && i < a->ncpus; i++) {
		if (b->tlb[i] < a->tlb[i]) {
			snprintf(err, errlen,
				 "TLB shootdowns of CPU%d went backwards (%llu -> %llu; CPU hotplug?)",
				 a->cpu_ids[i],
				 (unsigned long long)a->tlb[i],
				 (unsigned long long)b->tlb[i]);
			return -1;
		}
		out[i] = b->tlb[i] - a->tlb[i];
	}
	return 0;
}

/* "name value" per line, every line. */
int parse_vmstat(const char *buf, struct ctrlist *out, char *err, size_t errlen)
{
	const char *p;
	int lineno = 0;

	ctrlist_init(out);
	if (!*buf) {
		snprintf(err, errlen, "vmstat: empty file");
		return -1;
	}
	if (!ends_with_newline(buf)) {
		snprintf(err, errlen, "vmstat: truncated (no newline at end of file)");
		return -1;
	}
	for (p = buf; *p; p = next_line(p)) {
		char name[NAMELEN];
		const char *q = p;
		size_t n = 0;
		int64_t v;

		lineno++;
		while (*q && !isspace((unsigned char)*q) && n < sizeof(name) - 1)
			name[n++] = *q++;
		name[n] = '\0';
		if (n == 0 || (*q != ' ' && *q != '\t')) {
			snprintf(err, errlen, "vmstat line %d: expected \"name value\"", lineno);
			goto fail;
		}
		q = skip_blank(q);
		if (!parse_i64(q, &q, &v) || *skip_blank(q) != '\n') {
			snprintf(err, errlen, "vmstat line %d (%s): value is not an integer",
				 lineno, name);
			goto fail;
		}
		if (ctrlist_find(out, name)) {
			snprintf(err, errlen, "vmstat line %d: duplicate counter %s", lineno, name);
			goto fail;
		}
		ctrlist_add(out, name, v, true);
	}
	return 0;
fail:
	ctrlist_free(out);
	return -1;
}

bool vmstat_interesting(const char *name)
{
	static const char *const prefixes[] = {
		"nr_tlb_", "pgmigrate_", "pgdemote_", "pgpromote_", "numa_", "migrc_",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* Deltas of the interesting counters, in the order of the first snapshot. */
int vmstat_delta(const struct ctrlist *a, const struct ctrlist *b, struct ctrlist *out,
		 char *err, size_t errlen)
{
	int i;

	ctrlist_init(out);
	for (i = 0; i < a->n; i++) {
		const struct ctr *cb;

		if (!vmstat_interesting(a->v[i].name))
			continue;
		cb = ctrlist_find(b, a->v[i].name);
		if (!cb) {
			snprintf(err, errlen,
				 "vmstat counter %s disappeared during the measurement",
				 a->v[i].name);
			ctrlist_free(out);
			return -1;
		}
		ctrlist_add(out, a->v[i].name, cb->val - a->v[i].val, true);
	}
	return 0;
}

/* First line of /proc/stat: "cpu  user nice system idle iowait irq softirq ..." */
int parse_proc_stat(const char *buf, struct cpu_times *out, char *err, size_t errlen)
{
	uint64_t v[7];
	const char *p = buf;
	int i;

	if (strncmp(p, "cpu ", 4)) {
		snprintf(err, errlen, "stat: first line does not start with \"cpu \"");
		return -1;
	}
	p += 4;
	for (i = 0; i < 7; i++) {
		p = skip_blank(p);
		if (!parse_u64(p, &p, &v[i])) {
			snprintf(err, errlen, "stat: \"cpu\" line has only %d valid fields", i);
			return -1;
		}
	}
	out->user = v[0] + v[1];
	out->sys = v[2] + v[5] + v[6];
	return 0;
}

/* "0-3,8,10-11\n" -> ids.  Used for /sys/devices/system/cpu/online. */
int parse_cpu_list(const char *s, int **ids, int *n, char *err, size_t errlen)
{
	const char *p = s;
	int cap = 16;

	*ids = xmalloc(cap * sizeof(int));
	*n = 0;
	while (*p && *p != '\n') {
		uint64_t lo, hi;

		if (!parse_u64(p, &p, &lo))
			goto bad;
		hi = lo;
		if (*p == '-' && !parse_u64(p + 1, &p, &hi))
			goto bad;
		if (hi < lo || hi >= MAX_CPUS)
			goto bad;
		for (; lo <= hi; lo++) {
			if (*n && (int)lo <= (*ids)[*n - 1])
				goto bad;
			if (*n == cap) {
				cap *= 2;
				*ids = xrealloc(*ids, cap * sizeof(int));
			}
			(*ids)[(*n)++] = (int)lo;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	if (*n == 0)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "malformed CPU list \"%.40s\"", s);
	free(*ids);
	*ids = NULL;
	*n = 0;
	return -1;
}

static int load_and_parse(const char *rel, char *err, size_t errlen, char **bufp)
{
	char path[4096];

	*bufp = read_file(proc_path(rel, path, sizeof(path)), NULL, err, errlen);
	return *bufp ? 0 : -1;
}

int snapshot_take(struct snapshot *s, char *err, size_t errlen)
{
	char sub[ERRLEN];
	char *buf;
	int ret;

	memset(s, 0, sizeof(*s));
	s->t = now_mono();
	if (load_and_parse("interrupts", err, errlen, &buf))
		return -1;
	ret = parse_interrupts(buf, &s->irq, sub, sizeof(sub));
	free(buf);
	if (ret)
		goto bad;
	if (load_and_parse("vmstat", err, errlen, &buf))
		goto fail;
	ret = parse_vmstat(buf, &s->vmstat, sub, sizeof(sub));
	free(buf);
	if (ret)
		goto bad;
	/* /proc/stat is only used for system-wide CPU time; optional. */
	if (!load_and_parse("stat", sub, sizeof(sub), &buf)) {
		s->has_times = !parse_proc_stat(buf, &s->times, sub, sizeof(sub));
		free(buf);
	}
	return 0;
bad:
	snprintf(err, errlen, "%s/%s", proc_root(), sub);
fail:
	snapshot_free(s);
	return -1;
}

void snapshot_free(struct snapshot *s)
{
	irq_snap_free(&s->irq);
	ctrlist_free(&s->vmstat);
	memset(s, 0, sizeof(*s));
}

// SPDX-License-Identifier: GPL-2.0
/*
 * migrc trace - record the migrc tracepoints (migrc:migrc_defer and
 * migrc:migrc_flush) in a private tracefs instance while a command runs,
 * then print the flush reasons and a log2 histogram of how long pages stayed
 * deferred (the flush event's age_us field).  Where the kernel has it,
 * migrate:mm_migrate_batch is recorded too: where each migration batch
 * spent its time (unmap, TLB flush, batched copy, move), per reason.
 *
 * Recording goes through libtracefs (instance, events, raw per-CPU buffers)
 * and libtraceevent (fields of each record, the reason names from the
 * format's __print_symbolic() table), as tools/tracing/rtla does.
 *
 * Saved text traces (-i) are parsed generically: "... <ts>: <event>:
 * key=value ...", which matches tracefs "trace"/"trace_pipe", "trace-cmd
 * report" and what -o writes.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "migrc.h"

#define MAX_KV 32
#define BAR "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"	/* 40: a full histogram bar */

/* Overridable at build time only to exercise the live path on other events. */
#ifndef TP_SYSTEM
#define TP_SYSTEM	"migrc"
#endif
#ifndef TP_FLUSH
#define TP_FLUSH	"migrc_flush"
#endif
#ifndef TP_DEFER
#define TP_DEFER	"migrc_defer"
#endif
#ifndef TP_BATCH_SYSTEM
#define TP_BATCH_SYSTEM	"migrate"
#endif
#ifndef TP_BATCH
#define TP_BATCH	"mm_migrate_batch"
#endif

struct trace_opts {
	const char *raw_out;
	const char *json_out;
	const char *input;
	char **cmd;
	int ncmd;
};

static void trace_usage(FILE *f)
{
	fputs("usage: migrc trace [-o RAW.txt] [--json FILE.json] -- COMMAND [ARGS...]\n"
	      "       migrc trace -i TRACE.txt [--json FILE.json]\n"
	      "\n"
	      "Record the migrc tracepoints (events/migrc/migrc_defer, migrc_flush) in a\n"
	      "private tracefs instance while COMMAND runs, then print the flush reasons\n"
	      "and a log2 histogram of the flush age (age_us: how long pages stayed\n"
	      "deferred).  -i analyses a saved text trace (tracefs \"trace\" file,\n"
	      "trace_pipe output, or 'trace-cmd report' output) instead.\n"
	      "\n"
	      "migrate:mm_migrate_batch is recorded too if the kernel has it: then the\n"
	      "migration batches are summed up (folios, bytes, time and median per batch\n"
	      "of the unmap, flush, copy and move phases, how soon the first folio was\n"
	      "usable, batch sizes), per migration reason if there are several.\n"
	      "\n"
	      "  -o, --output FILE    save the raw trace text (can be re-read with -i)\n"
	      "  -j, --json FILE      write the summary as JSON\n"
	      "  -i, --input FILE     analyse FILE instead of recording\n"
	      "  -h, --help           this help\n"
	      "\n"
	      "Exit: 0 ok (the command's own status is printed), 1 usage, 2 system error\n"
	      "(e.g. not root: a tracefs instance cannot be created), 3 tracefs or the\n"
	      "migrc tracepoints are absent (kernel without migrc).\n"
	      "Environment: MIGRC_TRACEFS overrides the tracefs mount point.\n", f);
}

/* ---- line parsing ---- */

static bool is_timestamp_colon(const char *line, const char *colon)
{
	const char *p = colon;
	bool dot = false, digits = false;

	while (p > line && (isdigit((unsigned char)p[-1]) || p[-1] == '.')) {
		p--;
		if (*p == '.')
			dot = true;
		else
			digits = true;
	}
	return dot && digits && (p == line || isspace((unsigned char)p[-1]));
}

static const char *parse_value(const char *p, char *val, size_t len)
{
	size_t n = 0;

	if (*p == '"') {
		for (p++; *p && *p != '"'; p++)
			if (n < len - 1)
				val[n++] = *p;
		if (*p == '"')
			p++;
	} else {
		for (; *p && !isspace((unsigned char)*p); p++)
			if (n < len - 1)
				val[n++] = *p;
	}
	val[n] = '\0';
	return p;
}

static int parse_kvs(const char *p, struct trace_kv *kv, int maxkv)
{
	int n = 0;

	while (*p) {
		char junk[NAMELEN];
		const char *eq;
		size_t klen;

		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		eq = p;
		while (*eq && *eq != '=' && !isspace((unsigned char)*eq))
			eq++;
		if (*eq != '=') {
			p = eq;		/* a word without '=': skip it */
			continue;
		}
		klen = eq - p;
		if (n < maxkv && klen > 0 && klen < NAMELEN) {
			memcpy(kv[n].key, p, klen);
			kv[n].key[klen] = '\0';
			p = parse_value(eq + 1, kv[n].val, NAMELEN);
			n++;
		} else {
			p = parse_value(eq + 1, junk, sizeof(junk));
		}
	}
	return n;
}

/*
 * Returns the number of key=value pairs, or -1 if the line is not an event
 * line (comment, header, garbage).
 */
int parse_trace_line(const char *line, char *event, size_t evlen,
		     struct trace_kv *kv, int maxkv)
{
	const char *c, *ev, *end;

	if (*line == '#')
		return -1;
	for (c = strchr(line, ':'); c; c = strchr(c + 1, ':'))
		if (c[1] == ' ' && is_timestamp_colon(line, c))
			break;
	if (!c)
		return -1;
	ev = c + 1;
	while (*ev == ' ')
		ev++;
	end = ev;
	while (*end && *end != ':' && !isspace((unsigned char)*end))
		end++;
	if (*end != ':' || end == ev || (size_t)(end - ev) >= evlen)
		return -1;
	memcpy(event, ev, end - ev);
	event[end - ev] = '\0';
	return parse_kvs(end + 1, kv, maxkv);
}

static const char *kv_get(const struct trace_kv *kv, int n, const char *key)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key))
			return kv[i].val;
	return NULL;
}

static bool kv_u64(const struct trace_kv *kv, int n, const char *key, uint64_t *out)
{
	const char *v = kv_get(kv, n, key);
	const char *end;

	return v && parse_u64(v, &end, out) && *end == '\0';
}

int age_bucket(uint64_t us)
{
	int b = 0;

	while (us) {
		us >>= 1;
		b++;
	}
	return b < NR_AGE_BUCKETS ? b : NR_AGE_BUCKETS - 1;
}

static struct trace_reason *reason_slot(struct trace_stats *st, const char *name)
{
	int i;

	for (i = 0; i < st->nreasons; i++)
		if (!strcmp(st->reasons[i].name, name))
			return &st->reasons[i];
	if (st->nreasons == (int)ARRAY_SIZE(st->reasons))
		return &st->reasons[st->nreasons - 1];	/* overflow bucket */
	snprintf(st->reasons[st->nreasons].name, NAMELEN, "%s", name);
	return &st->reasons[st->nreasons++];
}

static void account_flush(struct trace_stats *st, const char *reason, uint64_t pages,
			  uint64_t cpus, bool has_age, uint64_t age)
{
	struct trace_reason *r = reason_slot(st, reason ? reason : "(no reason field)");

	st->flush_events++;
	st->flush_pages += pages;
	r->count++;
	r->pages += pages;
	r->cpus += cpus;
	if (!has_age) {
		st->no_age++;
		return;
	}
	st->age_count[age_bucket(age)]++;
	st->age_pages[age_bucket(age)] += pages;
}

static void account_flush_kv(struct trace_stats *st, const struct trace_kv *kv, int n)
{
	uint64_t pages = 0, cpus = 0, age = 0;
	bool has_age;

	kv_u64(kv, n, "nr_pages", &pages);
	kv_u64(kv, n, "nr_cpus", &cpus);
	has_age = kv_u64(kv, n, "age_us", &age);
	account_flush(st, kv_get(kv, n, "reason"), pages, cpus, has_age, age);
}

/* ---- migration batches ---- */

/* The name of each enum batch_field: its key in text and its field in a record. */
static const char *const batch_keys[NR_BATCH_FIELDS] = {
	[BF_FOLIOS] = "nr_folios",
	[BF_MOVED] = "nr_moved",
	[BF_BYTES] = "bytes",
	[BF_COPIED] = "batch_copied",
	[BF_UNMAP] = "unmap_ns",
	[BF_FLUSH] = "flush_ns",
	[BF_COPY] = "copy_ns",
	[BF_MOVE] = "move_ns",
	[BF_FIRST_USABLE] = "first_usable_ns",
};

static const char *const phase_names[NR_BATCH_PHASES] = {
	[BATCH_UNMAP] = "unmap",
	[BATCH_FLUSH] = "flush",
	[BATCH_COPY] = "copy",
	[BATCH_MOVE] = "move",
};

/* log2 bucket of a batch size, as age_bucket(): 0, 1, 2-3, 4-7, ... */
int batch_bucket(uint64_t folios)
{
	int b = age_bucket(folios);

	return b < NR_BATCH_BUCKETS ? b : NR_BATCH_BUCKETS - 1;
}

static struct batch_reason *batch_reason_slot(struct batch_stats *b, const char *name)
{
	struct batch_reason *r;
	int i;

	for (i = 0; i < b->nreasons; i++)
		if (!strcmp(b->reasons[i].name, name))
			return &b->reasons[i];
	if (b->nreasons == NR_BATCH_REASONS) {
		r = &b->reasons[NR_BATCH_REASONS - 1];	/* overflow bucket */
		snprintf(r->name, NAMELEN, "(other)");
		return r;
	}
	r = &b->reasons[b->nreasons++];
	snprintf(r->name, NAMELEN, "%s", name);
	return r;
}

static void batch_totals_add(struct batch_totals *t, const uint64_t *v)
{
	int p;

	t->batches++;
	t->folios += v[BF_FOLIOS];
	t->moved += v[BF_MOVED];
	t->bytes += v[BF_BYTES];
	for (p = 0; p < NR_BATCH_PHASES; p++)
		t->phase_ns[p] += v[BF_UNMAP + p];
}

/* One batch, @v indexed by enum batch_field; no @reason: it lacked a field. */
static void account_batch(struct batch_stats *b, const char *reason, const uint64_t *v)
{
	int p;

	if (!reason || !*reason) {
		b->skipped++;
		return;
	}
	batch_totals_add(&b->all, v);
	batch_totals_add(&batch_reason_slot(b, reason)->t, v);
	if (v[BF_COPIED])
		b->copied++;
	b->size_count[batch_bucket(v[BF_FOLIOS])]++;
	for (p = 0; p < NR_BATCH_PHASES; p++)
		samples_add(&b->phase[p], v[BF_UNMAP + p]);
	if (!v[BF_MOVED])
		return;		/* first_usable_ns is 0: nothing became usable */
	samples_add(&b->first_usable, v[BF_FIRST_USABLE]);
	if (v[BF_FIRST_USABLE] > b->first_usable_max)
		b->first_usable_max = v[BF_FIRST_USABLE];
}

static void account_batch_kv(struct batch_stats *b, const struct trace_kv *kv, int n)
{
	const char *reason = kv_get(kv, n, "reason");
	uint64_t v[NR_BATCH_FIELDS] = { 0 };
	int i;

	for (i = 0; i < NR_BATCH_FIELDS; i++)
		if (!kv_u64(kv, n, batch_keys[i], &v[i]))
			reason = NULL;
	account_batch(b, reason, v);
}

void batch_medians(const struct batch_stats *b, struct batch_medians *out)
{
	int p;

	memset(out, 0, sizeof(*out));
	out->exact = samples_exact(&b->first_usable);
	for (p = 0; p < NR_BATCH_PHASES; p++) {
		out->has_phase = samples_median(&b->phase[p], &out->phase_ns[p]);
		out->exact &= samples_exact(&b->phase[p]);
	}
	out->has_first_usable = samples_median(&b->first_usable, &out->first_usable_ns);
}

void trace_stats_free(struct trace_stats *st)
{
	int p;

	for (p = 0; p < NR_BATCH_PHASES; p++)
		samples_free(&st->batch.phase[p]);
	samples_free(&st->batch.first_usable);
}

void trace_account_line(struct trace_stats *st, const char *line)
{
	struct trace_kv kv[MAX_KV];
	char event[NAMELEN];
	uint64_t pages;
	int n;

	if (!*line || *line == '#')
		return;
	st->lines++;
	n = parse_trace_line(line, event, sizeof(event), kv, MAX_KV);
	if (n < 0) {
		st->unparsed++;
		return;
	}
	if (!strcmp(event, TP_DEFER)) {
		st->defer_events++;
		if (kv_u64(kv, n, "nr_pages", &pages))
			st->defer_pages += pages;
	} else if (!strcmp(event, TP_FLUSH)) {
		account_flush_kv(st, kv, n);
	} else if (!strcmp(event, TP_BATCH)) {
		account_batch_kv(&st->batch, kv, n);
	}
}

/* ---- records (libtraceevent) ---- */

/* Its fields, and te->batch = @ev only if none is missing. */
static void batch_fields_init(struct trace_events *te, struct tep_event *ev)
{
	struct tep_format_field *f;
	int i;

	te->batch_reason = tep_find_field(ev, "reason");
	if (!te->batch_reason)
		return;
	for (i = 0; i < NR_BATCH_FIELDS; i++) {
		f = tep_find_field(ev, batch_keys[i]);
		if (!f)
			return;
		te->batch_fields[i] = f;
	}
	if (!(te->batch_reason->flags & TEP_FIELD_IS_STRING))
		te->batch_nsyms = tp_symbols(ev, "reason", te->batch_syms, MAX_SYMS);
	te->batch = ev;
}

/* Find the recorded events and the fields accounting reads, in @tep. */
void trace_events_init(struct trace_events *te, struct tep_handle *tep)
{
	struct tep_event *batch;

	memset(te, 0, sizeof(*te));
	batch = tep_find_event_by_name(tep, TP_BATCH_SYSTEM, TP_BATCH);
	if (batch)
		batch_fields_init(te, batch);
	te->flush = tep_find_event_by_name(tep, TP_SYSTEM, TP_FLUSH);
	te->defer = tep_find_event_by_name(tep, TP_SYSTEM, TP_DEFER);
	if (te->defer)
		te->defer_pages = tep_find_field(te->defer, "nr_pages");
	if (!te->flush)
		return;
	te->reason = tep_find_field(te->flush, "reason");
	te->pages = tep_find_field(te->flush, "nr_pages");
	te->cpus = tep_find_field(te->flush, "nr_cpus");
	te->age = tep_find_field(te->flush, "age_us");
	if (te->reason && !(te->reason->flags & TEP_FIELD_IS_STRING))
		te->nsyms = tp_symbols(te->flush, "reason", te->syms, MAX_SYMS);
}

static bool field_u64(struct tep_format_field *f, struct tep_record *rec, uint64_t *out)
{
	unsigned long long v;

	if (!f || tep_read_number_field(f, rec->data, &v))
		return false;
	*out = v;
	return true;
}

/*
 * The name of a reason field @f of @ev: the string itself, or the integer's
 * name from the __print_symbolic() table @syms, else its number.
 */
static const char *reason_name(struct tep_event *ev, struct tep_format_field *f,
			       const struct tp_sym *syms, int nsyms,
			       struct tep_record *rec, char *buf, size_t len)
{
	uint64_t v;
	char *str;
	int n = 0;

	if (!f)
		return NULL;
	if (f->flags & TEP_FIELD_IS_STRING) {
		str = tep_get_field_raw(NULL, ev, f->name, rec, &n, 0);
		snprintf(buf, len, "%.*s", str ? n : 0, str ? str : "");
		return buf;
	}
	if (!field_u64(f, rec, &v))
		return NULL;
	if (f->size == 4 && (f->flags & TEP_FIELD_IS_SIGNED))
		v = (int32_t)v;		/* the kernel's "int reason" */
	if (nsyms > 0)
		return tp_sym_str(syms, nsyms, (long long)v, buf, len);
	snprintf(buf, len, "%lld", (long long)v);
	return buf;
}

/* The migrc_flush reason's name. */
const char *trace_flush_reason(const struct trace_events *te, struct tep_record *rec,
			       char *buf, size_t len)
{
	return reason_name(te->flush, te->reason, te->syms, te->nsyms, rec, buf, len);
}

static void account_batch_record(struct batch_stats *b, const struct trace_events *te,
				 struct tep_record *rec)
{
	uint64_t v[NR_BATCH_FIELDS] = { 0 };
	const char *reason;
	char buf[NAMELEN];
	int i;

	reason = reason_name(te->batch, te->batch_reason, te->batch_syms, te->batch_nsyms,
			     rec, buf, sizeof(buf));
	for (i = 0; i < NR_BATCH_FIELDS; i++)
		if (!field_u64(te->batch_fields[i], rec, &v[i]))
			reason = NULL;
	account_batch(b, reason, v);
}

void trace_account_record(struct trace_stats *st, const struct trace_events *te,
			  struct tep_event *ev, struct tep_record *rec)
{
	uint64_t pages = 0, cpus = 0, age = 0;
	char buf[NAMELEN];
	bool has_age;

	if (te->batch && ev == te->batch) {
		account_batch_record(&st->batch, te, rec);
		return;
	}
	if (ev == te->defer) {
		st->defer_events++;
		if (field_u64(te->defer_pages, rec, &pages))
			st->defer_pages += pages;
		return;
	}
	if (ev != te->flush)
		return;
	field_u64(te->pages, rec, &pages);
	field_u64(te->cpus, rec, &cpus);
	has_age = field_u64(te->age, rec, &age);
	account_flush(st, trace_flush_reason(te, rec, buf, sizeof(buf)), pages, cpus,
		      has_age, age);
}

/* A record as a line of the tracefs "trace" file, which -i reads back. */
void trace_record_text(struct trace_seq *s, struct tep_event *ev, struct tep_record *rec)
{
	tep_print_event(ev->tep, s, rec, "%16s-%-7d [%03d] %s %6.1000d: %s: %s\n",
			TEP_PRINT_COMM, TEP_PRINT_PID, TEP_PRINT_CPU, TEP_PRINT_LATENCY,
			TEP_PRINT_TIME, TEP_PRINT_NAME, TEP_PRINT_INFO);
}

/* ---- output ---- */

static const char *us_str(uint64_t us, char *buf, size_t len)
{
	if (us < 1000)
		snprintf(buf, len, "%lluus", (unsigned long long)us);
	else if (us < 1000000)
		snprintf(buf, len, "%.3gms", us / 1e3);
	else
		snprintf(buf, len, "%.3gs", us / 1e6);
	return buf;
}

static void bucket_range(int b, char *buf, size_t len)
{
	char lo[32], hi[32];

	if (b == 0) {
		snprintf(buf, len, "[0]");
		return;
	}
	us_str(1ULL << (b - 1), lo, sizeof(lo));
	if (b == NR_AGE_BUCKETS - 1)
		snprintf(buf, len, "[%s, ...)", lo);
	else
		snprintf(buf, len, "[%s, %s)", lo, us_str(1ULL << b, hi, sizeof(hi)));
}

static void print_histogram(FILE *f, const struct trace_stats *st)
{
	uint64_t max = 0;
	int b, lo = -1, hi = -1;
	char range[64];

	for (b = 0; b < NR_AGE_BUCKETS; b++) {
		if (!st->age_count[b])
			continue;
		if (lo < 0)
			lo = b;
		hi = b;
		if (st->age_count[b] > max)
			max = st->age_count[b];
	}
	fprintf(f, "\nflush age (age_us: how long pages stayed deferred), log2 buckets:\n");
	if (lo < 0) {
		fprintf(f, "  (no migrc_flush events with an age_us field)\n");
		return;
	}
	fprintf(f, "  %-20s %10s %12s\n", "age", "flushes", "pages");
	for (b = lo; b <= hi; b++) {
		int w = (int)(40 * st->age_count[b] / max);

		bucket_range(b, range, sizeof(range));
		fprintf(f, "  %-20s %10llu %12llu |%-40.*s|\n", range,
			(unsigned long long)st->age_count[b],
			(unsigned long long)st->age_pages[b], w,
			BAR);
	}
	if (st->no_age)
		fprintf(f, "  (%llu flush events without age_us)\n",
			(unsigned long long)st->no_age);
}

static const char *bytes_str(uint64_t bytes, char *buf, size_t len)
{
	if (bytes < (1ULL << 20))
		snprintf(buf, len, "%.1f KiB", bytes / 1024.0);
	else if (bytes < (1ULL << 30))
		snprintf(buf, len, "%.1f MiB", bytes / (double)(1ULL << 20));
	else
		snprintf(buf, len, "%.1f GiB", bytes / (double)(1ULL << 30));
	return buf;
}

/* "1", "2-3", "4-7", ...: the batch sizes of a batch_bucket(). */
static void batch_range(int b, char *buf, size_t len)
{
	unsigned long long lo = b ? 1ULL << (b - 1) : 0;

	if (b <= 1)
		snprintf(buf, len, "%llu", lo);
	else if (b == NR_BATCH_BUCKETS - 1)
		snprintf(buf, len, "%llu+", lo);
	else
		snprintf(buf, len, "%llu-%llu", lo, (1ULL << b) - 1);
}

static void print_batch_phases(FILE *f, const struct batch_stats *b,
			       const struct batch_medians *m)
{
	uint64_t sum = 0;
	int p;

	for (p = 0; p < NR_BATCH_PHASES; p++)
		sum += b->all.phase_ns[p];
	fprintf(f, "  %-8s %12s %7s %16s\n", "phase", "total ms", "share", "median us/batch");
	for (p = 0; p < NR_BATCH_PHASES; p++) {
		uint64_t ns = b->all.phase_ns[p];

		fprintf(f, "  %-8s %12.3f %6.1f%% %16.1f", phase_names[p], ns / 1e6,
			sum ? 100.0 * ns / sum : 0.0, m->phase_ns[p] / 1e3);
		if (p == BATCH_COPY)
			fprintf(f, "   (batched copy ran in %llu of %llu batches)",
				(unsigned long long)b->copied,
				(unsigned long long)b->all.batches);
		fputc('\n', f);
	}
}

static void print_first_usable(FILE *f, const struct batch_stats *b,
			       const struct batch_medians *m)
{
	if (!m->has_first_usable) {
		fprintf(f, "  first folio usable: - (no batch moved a folio)\n");
		return;
	}
	fprintf(f, "  first folio usable: median %.1f us, max %.1f us",
		m->first_usable_ns / 1e3, b->first_usable_max / 1e3);
	fprintf(f, " (%llu batches moved folios)\n", (unsigned long long)b->first_usable.seen);
}

static void print_batch_sizes(FILE *f, const struct batch_stats *b)
{
	uint64_t max = 0;
	char range[64];
	int i;

	for (i = 0; i < NR_BATCH_BUCKETS; i++)
		if (b->size_count[i] > max)
			max = b->size_count[i];
	fprintf(f, "  %-20s %10s\n", "batch size (folios)", "batches");
	for (i = 0; i < NR_BATCH_BUCKETS; i++) {
		if (!b->size_count[i])
			continue;
		batch_range(i, range, sizeof(range));
		fprintf(f, "  %-20s %10llu |%-40.*s|\n", range,
			(unsigned long long)b->size_count[i],
			(int)(40 * b->size_count[i] / max), BAR);
	}
}

static void print_batch_reasons(FILE *f, const struct batch_stats *b)
{
	int i, p;

	fprintf(f, "  %-20s %8s %9s", "reason", "batches", "folios");
	for (p = 0; p < NR_BATCH_PHASES; p++)
		fprintf(f, " %6s ms", phase_names[p]);
	fputc('\n', f);
	for (i = 0; i < b->nreasons; i++) {
		const struct batch_totals *t = &b->reasons[i].t;

		fprintf(f, "  %-20s %8llu %9llu", b->reasons[i].name,
			(unsigned long long)t->batches, (unsigned long long)t->folios);
		for (p = 0; p < NR_BATCH_PHASES; p++)
			fprintf(f, " %9.3f", t->phase_ns[p] / 1e6);
		fputc('\n', f);
	}
}

/* The mm_migrate_batch section, if there was such an event. */
static void print_batches(FILE *f, const struct batch_stats *b)
{
	struct batch_medians m;
	char bytes[32];

	if (!b->all.batches && !b->skipped)
		return;
	fprintf(f, "\nmigration batches (%s): %llu (%llu folios, %llu moved, %s)\n", TP_BATCH,
		(unsigned long long)b->all.batches, (unsigned long long)b->all.folios,
		(unsigned long long)b->all.moved, bytes_str(b->all.bytes, bytes, sizeof(bytes)));
	if (b->skipped)
		fprintf(f, "  (%llu %s events with a missing or malformed field ignored)\n",
			(unsigned long long)b->skipped, TP_BATCH);
	if (!b->all.batches)
		return;
	batch_medians(b, &m);
	print_batch_phases(f, b, &m);
	if (!m.exact)
		fprintf(f, "  (medians of a random sample of %llu batches)\n",
			(unsigned long long)b->phase[0].n);
	print_first_usable(f, b, &m);
	print_batch_sizes(f, b);
	if (b->nreasons > 1)
		print_batch_reasons(f, b);
}

void trace_print(FILE *f, const struct trace_stats *st)
{
	int i;

	fprintf(f, "migrc_defer: %llu events, %llu pages\n",
		(unsigned long long)st->defer_events, (unsigned long long)st->defer_pages);
	fprintf(f, "migrc_flush: %llu events, %llu pages\n",
		(unsigned long long)st->flush_events, (unsigned long long)st->flush_pages);
	if (st->unparsed)
		fprintf(f, "(%llu of %llu lines were not event lines)\n",
			(unsigned long long)st->unparsed, (unsigned long long)st->lines);
	fprintf(f, "\nflush reasons:\n  %-24s %10s %12s %12s\n", "reason", "flushes", "pages",
		"mean_cpus");
	for (i = 0; i < st->nreasons; i++) {
		const struct trace_reason *r = &st->reasons[i];

		fprintf(f, "  %-24s %10llu %12llu %12.2f\n", r->name,
			(unsigned long long)r->count, (unsigned long long)r->pages,
			r->count ? (double)r->cpus / r->count : 0.0);
	}
	if (!st->nreasons)
		fprintf(f, "  (none)\n");
	print_histogram(f, st);
	print_batches(f, &st->batch);
}

static void json_phases(struct jbuf *j, const char *key, const uint64_t *ns)
{
	int p;

	jb_obj_begin(j, key);
	for (p = 0; p < NR_BATCH_PHASES; p++)
		jb_u64(j, phase_names[p], ns[p]);
	jb_obj_end(j);
}

static void json_batch_totals(struct jbuf *j, const struct batch_totals *t)
{
	jb_u64(j, "batches", t->batches);
	jb_u64(j, "folios", t->folios);
	jb_u64(j, "moved", t->moved);
	jb_u64(j, "bytes", t->bytes);
	json_phases(j, "totals_ns", t->phase_ns);
}

static void json_batch_sizes(struct jbuf *j, const struct batch_stats *b)
{
	int i;

	jb_arr_begin(j, "size_log2");
	for (i = 0; i < NR_BATCH_BUCKETS; i++) {
		if (!b->size_count[i])
			continue;
		jb_obj_begin(j, NULL);
		jb_u64(j, "lo", i ? 1ULL << (i - 1) : 0);
		if (i == NR_BATCH_BUCKETS - 1)
			jb_null(j, "hi");
		else
			jb_u64(j, "hi", i ? 1ULL << i : 1);
		jb_u64(j, "batches", b->size_count[i]);
		jb_obj_end(j);
	}
	jb_arr_end(j);
}

/* "batches": null if there was no mm_migrate_batch event. */
static void json_batches(struct jbuf *j, const struct batch_stats *b)
{
	struct batch_medians m;
	int i;

	if (!b->all.batches && !b->skipped) {
		jb_null(j, "batches");
		return;
	}
	batch_medians(b, &m);
	jb_obj_begin(j, "batches");
	json_batch_totals(j, &b->all);
	jb_u64(j, "batched_copy", b->copied);
	if (m.has_phase)
		json_phases(j, "medians_ns", m.phase_ns);
	else
		jb_null(j, "medians_ns");
	jb_u64(j, "median_batches", b->phase[0].n);	/* < batches: a sample */
	jb_obj_begin(j, "first_usable_ns");
	jb_u64(j, "batches", b->first_usable.seen);
	if (m.has_first_usable) {
		jb_u64(j, "median", m.first_usable_ns);
		jb_u64(j, "max", b->first_usable_max);
	} else {
		jb_null(j, "median");
		jb_null(j, "max");
	}
	jb_obj_end(j);
	json_batch_sizes(j, b);
	jb_obj_begin(j, "reasons");
	for (i = 0; i < b->nreasons; i++) {
		jb_obj_begin(j, b->reasons[i].name);
		json_batch_totals(j, &b->reasons[i].t);
		jb_obj_end(j);
	}
	jb_obj_end(j);
	jb_u64(j, "skipped", b->skipped);
	jb_obj_end(j);
}

static char *trace_json(const struct trace_stats *st, const struct trace_opts *o,
			int exit_status)
{
	struct jbuf b;
	int i;

	jb_init(&b);
	jb_obj_begin(&b, NULL);
	jb_str(&b, "tool", "migrc");
	jb_str(&b, "kind", "trace");
	jb_i64(&b, "version", MIGRC_VERSION);
	jb_arr_begin(&b, "command");
	for (i = 0; i < o->ncmd; i++)
		jb_str(&b, NULL, o->cmd[i]);
	jb_arr_end(&b);
	if (o->ncmd)
		jb_i64(&b, "exit_status", exit_status);
	else
		jb_null(&b, "exit_status");
	jb_u64(&b, "defer_events", st->defer_events);
	jb_u64(&b, "defer_pages", st->defer_pages);
	jb_u64(&b, "flush_events", st->flush_events);
	jb_u64(&b, "flush_pages", st->flush_pages);
	jb_obj_begin(&b, "flush_reasons");
	for (i = 0; i < st->nreasons; i++) {
		jb_obj_begin(&b, st->reasons[i].name);
		jb_u64(&b, "flushes", st->reasons[i].count);
		jb_u64(&b, "pages", st->reasons[i].pages);
		jb_obj_end(&b);
	}
	jb_obj_end(&b);
	jb_arr_begin(&b, "age_us_log2");
	for (i = 0; i < NR_AGE_BUCKETS; i++) {
		if (!st->age_count[i])
			continue;
		jb_obj_begin(&b, NULL);
		jb_u64(&b, "lo", i ? 1ULL << (i - 1) : 0);
		if (i == NR_AGE_BUCKETS - 1)
			jb_null(&b, "hi");
		else
			jb_u64(&b, "hi", i ? 1ULL << i : 1);
		jb_u64(&b, "flushes", st->age_count[i]);
		jb_u64(&b, "pages", st->age_pages[i]);
		jb_obj_end(&b);
	}
	jb_arr_end(&b);
	json_batches(&b, &st->batch);
	jb_u64(&b, "unparsed_lines", st->unparsed);
	jb_obj_end(&b);
	jb_raw(&b, "\n");
	return b.s;
}

/* ---- feeding text ---- */

struct linebuf {
	char *s;
	size_t len, cap;
	FILE *raw;
};

static void feed(struct linebuf *lb, struct trace_stats *st, const char *data, size_t n)
{
	size_t i;

	if (lb->raw)
		fwrite(data, 1, n, lb->raw);
	for (i = 0; i < n; i++) {
		if (lb->len + 1 >= lb->cap) {
			lb->cap = lb->cap ? lb->cap * 2 : 4096;
			lb->s = xrealloc(lb->s, lb->cap);
		}
		if (data[i] != '\n') {
			lb->s[lb->len++] = data[i];
			continue;
		}
		lb->s[lb->len] = '\0';
		trace_account_line(st, lb->s);
		lb->len = 0;
	}
}

static void feed_flush(struct linebuf *lb, struct trace_stats *st)
{
	if (lb->len) {
		lb->s[lb->len] = '\0';
		trace_account_line(st, lb->s);
		lb->len = 0;
	}
}

/* ---- live recording (libtracefs) ---- */

struct live {
	const char *root;
	struct tep_handle *tep;
	struct tracefs_instance *inst;
	char name[64];
	struct trace_events te;
	struct trace_stats *st;
	FILE *raw;
	struct trace_seq seq;
	uint64_t lost;
	bool lost_unknown;
	bool read_failed;
};

static int on_record(struct tep_event *ev, struct tep_record *rec, int cpu, void *data)
{
	struct live *l = data;

	(void)cpu;
	if (rec->missed_events > 0)
		l->lost += rec->missed_events;
	else if (rec->missed_events < 0)
		l->lost_unknown = true;
	trace_account_record(l->st, &l->te, ev, rec);
	if (l->raw) {
		trace_seq_reset(&l->seq);
		trace_record_text(&l->seq, ev, rec);
		trace_seq_do_fprintf(&l->seq, l->raw);
	}
	return 0;
}

static void drain(struct live *l)
{
	if (l->raw)
		tracefs_load_cmdlines(NULL, l->tep);	/* task names for -o */
	if (tracefs_iterate_raw_events(l->tep, l->inst, NULL, 0, on_record, l) &&
	    !l->read_failed) {
		errmsg("cannot read the trace buffers of %s/instances/%s", l->root, l->name);
		l->read_failed = true;
	}
}

static bool event_exists(struct live *l, const char *system, const char *event)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events/%s/%s", l->root, system, event);
	return !stat(path, &st);
}

/* mm_migrate_batch is optional: a kernel without it records without it. */
static void load_batch_event(struct live *l)
{
	char err[ERRLEN];

	if (!event_exists(l, TP_BATCH_SYSTEM, TP_BATCH))
		return;
	if (!tp_load(l->tep, TP_BATCH_SYSTEM, TP_BATCH, err, sizeof(err)))
		warnmsg("%s:%s: %s; migration batches not recorded", TP_BATCH_SYSTEM, TP_BATCH,
			err);
}

/* Parse the formats of the events to record; 0 or an exit code. */
static int load_events(struct live *l)
{
	char err[ERRLEN];

	if (!event_exists(l, TP_SYSTEM, TP_FLUSH)) {
		errmsg("the migrc tracepoints are absent: %s/events/%s/%s not found (%s)",
		       l->root, TP_SYSTEM, TP_FLUSH, "kernel without migrc, or CONFIG_MIGRC off");
		return EXIT_ABSENT;
	}
	l->tep = tp_open(true, err, sizeof(err));
	if (!l->tep || !tp_load(l->tep, TP_SYSTEM, TP_FLUSH, err, sizeof(err))) {
		errmsg("%s:%s: %s", TP_SYSTEM, TP_FLUSH, err);
		return EXIT_SYSERR;
	}
	if (!event_exists(l, TP_SYSTEM, TP_DEFER))
		warnmsg("%s/events/%s/%s not found; only %s will be recorded",
			l->root, TP_SYSTEM, TP_DEFER, TP_FLUSH);
	else if (!tp_load(l->tep, TP_SYSTEM, TP_DEFER, err, sizeof(err)))
		warnmsg("%s:%s: %s; only %s will be recorded", TP_SYSTEM, TP_DEFER, err, TP_FLUSH);
	load_batch_event(l);
	trace_events_init(&l->te, l->tep);
	if (!l->te.batch && tep_find_event_by_name(l->tep, TP_BATCH_SYSTEM, TP_BATCH))
		warnmsg("%s:%s lacks a field migrc reads; migration batches not recorded",
			TP_BATCH_SYSTEM, TP_BATCH);
	if (!l->te.age)
		warnmsg("%s has no age_us field: no age histogram", TP_FLUSH);
	if (!l->te.reason)
		warnmsg("%s has no reason field", TP_FLUSH);
	return 0;
}

/* 0, or EXIT_SYSERR if a required event cannot be enabled. */
static int enable_event(struct live *l, const char *system, const char *event,
			bool optional)
{
	char msg[ERRLEN + 256];

	errno = 0;
	if (!tracefs_event_enable(l->inst, system, event))
		return 0;
	snprintf(msg, sizeof(msg), "cannot enable %s:%s in tracefs instance %s/instances/%s%s%s",
		 system, event, l->root, l->name, errno ? ": " : "", errno ? strerror(errno) : "");
	if (!optional) {
		errmsg("%s", msg);
		return EXIT_SYSERR;
	}
	warnmsg("%s; not recorded", msg);
	return 0;
}

static void disable_events(struct live *l)
{
	tracefs_event_disable(l->inst, TP_SYSTEM, NULL);
	if (l->te.batch)
		tracefs_event_disable(l->inst, TP_BATCH_SYSTEM, TP_BATCH);
}

/* A private instance, so that the user's own tracing is undisturbed. */
static int instance_create(struct live *l)
{
	snprintf(l->name, sizeof(l->name), "migrc-%d", (int)getpid());
	errno = 0;
	l->inst = tracefs_instance_create(l->name);
	if (!l->inst || !tracefs_instance_is_new(l->inst)) {
		errmsg("cannot create tracefs instance %s/instances/%s: %s%s", l->root, l->name,
		       l->inst ? "it exists already" : strerror(errno),
		       (errno == EACCES || errno == EPERM) ? " (needs root)" : "");
		tracefs_instance_free(l->inst);
		l->inst = NULL;
		return EXIT_SYSERR;
	}
	if (tracefs_instance_set_buffer_size(l->inst, 8192, -1))
		warnmsg("cannot set buffer_size_kb of tracefs instance %s/instances/%s",
			l->root, l->name);
	if (enable_event(l, TP_SYSTEM, TP_FLUSH, false))
		return EXIT_SYSERR;
	if (l->te.defer && enable_event(l, TP_SYSTEM, TP_DEFER, false))
		return EXIT_SYSERR;
	if (l->te.batch)
		enable_event(l, TP_BATCH_SYSTEM, TP_BATCH, true);
	return 0;
}

static void instance_destroy(struct live *l)
{
	if (!l->inst)
		return;
	disable_events(l);
	if (tracefs_instance_destroy(l->inst))
		warnmsg("could not remove tracefs instance %s/instances/%s: %s", l->root, l->name,
			strerror(errno));
	tracefs_instance_free(l->inst);
	l->inst = NULL;
}

static pid_t spawn(char **cmd, const sigset_t *mask)
{
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigprocmask(SIG_SETMASK, mask, NULL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "migrc: error: cannot execute '%s': %s\n", cmd[0],
			strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
	}
	return pid;
}

/*
 * Read the buffers every 200 ms while the command runs.  SIGCHLD and
 * SIGTERM stay blocked and are taken with sigtimedwait(): the first ends
 * the wait early when the command exits, the second is passed on to it.
 */
static int record(struct live *l, char **cmd, int *exit_status)
{
	const struct timespec tick = { 0, 200 * 1000 * 1000 };
	sigset_t block, old;
	int status;
	pid_t pid, w;

	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);	/* not SIG_IGN: waitpid() needs the child */
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = spawn(cmd, &old);
	if (pid < 0) {
		errmsg("fork: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return EXIT_SYSERR;
	}
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			errmsg("waitpid: %s", strerror(errno));
			sigprocmask(SIG_SETMASK, &old, NULL);
			return EXIT_SYSERR;
		}
		drain(l);
		if (sigtimedwait(&block, NULL, &tick) == SIGTERM)
			kill(pid, SIGTERM);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	disable_events(l);
	drain(l);
	if (l->lost || l->lost_unknown)
		warnmsg("the trace buffers overflowed: %s%llu events lost",
			l->lost_unknown ? "at least " : "", (unsigned long long)l->lost);
	*exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return l->read_failed ? EXIT_SYSERR : 0;
}

static int trace_live(const struct trace_opts *o, FILE *raw, struct trace_stats *st,
		      int *exit_status)
{
	struct live l = { .st = st, .raw = raw };
	int ret;

	l.root = tracing_root(true);
	if (!l.root) {
		errmsg("%s; migrc trace needs tracefs", tracing_why());
		return strstr(tracing_why(), "accessible") ? EXIT_SYSERR : EXIT_ABSENT;
	}
	trace_seq_init(&l.seq);
	ret = load_events(&l);
	if (!ret)
		ret = instance_create(&l);
	if (!ret)
		ret = record(&l, o->cmd, exit_status);
	instance_destroy(&l);
	trace_seq_destroy(&l.seq);
	tep_free(l.tep);
	return ret;
}

static int trace_file(const char *path, struct linebuf *lb, struct trace_stats *st)
{
	char err[ERRLEN];
	size_t len;
	char *buf = read_file(path, &len, err, sizeof(err));

	if (!buf) {
		errmsg("%s", err);
		return EXIT_SYSERR;
	}
	feed(lb, st, buf, len);
	free(buf);
	return 0;
}

static int parse_trace_args(int argc, char **argv, struct trace_opts *o)
{
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "json", required_argument, NULL, 'j' },
		{ "input", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:j:i:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->raw_out = optarg;
			break;
		case 'j':
			o->json_out = optarg;
			break;
		case 'i':
			o->input = optarg;
			break;
		case 'h':
			trace_usage(stdout);
			return -1;
		default:
			trace_usage(stderr);
			return EXIT_USAGE;
		}
	}
	o->cmd = argv + optind;
	o->ncmd = argc - optind;
	if (!o->ncmd == !o->input) {
		errmsg("trace: give either a command after '--' or -i FILE");
		trace_usage(stderr);
		return EXIT_USAGE;
	}
	return 0;
}

static int write_text(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(s, f) < 0 || fclose(f)) {
		errmsg("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_stats *st;
	struct trace_opts o;
	struct linebuf lb;
	int ret, exit_status = 0;

	ret = parse_trace_args(argc, argv, &o);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	memset(&lb, 0, sizeof(lb));
	if (o.raw_out) {
		lb.raw = fopen(o.raw_out, "w");
		if (!lb.raw) {
			errmsg("cannot write %s: %s", o.raw_out, strerror(errno));
			return EXIT_SYSERR;
		}
	}
	st = xcalloc(1, sizeof(*st));
	ret = o.input ? trace_file(o.input, &lb, st) : trace_live(&o, lb.raw, st, &exit_status);
	feed_flush(&lb, st);
	if (lb.raw && fclose(lb.raw)) {
		errmsg("cannot write %s: %s", o.raw_out, strerror(errno));
		ret = ret ? ret : EXIT_SYSERR;
	}
	if (!ret) {
		if (o.ncmd)
			printf("migrc trace: %s exited with status %d\n", o.cmd[0], exit_status);
		trace_print(stdout, st);
		if (o.json_out) {
			char *s = trace_json(st, &o, exit_status);

			if (write_text(o.json_out, s))
				ret = EXIT_SYSERR;
			free(s);
		}
	}
	free(lb.s);
	trace_stats_free(st);
	free(st);
	return ret;
}

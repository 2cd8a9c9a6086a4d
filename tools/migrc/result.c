// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - a measured run: JSON serialisation (the schema documented in
 * migrc.8), validating deserialisation for "compare", and the text summary.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "migrc.h"

void interval_free(struct interval *iv)
{
	free(iv->per_cpu);
	ctrlist_free(&iv->vmstat);
	ctrlist_free(&iv->flush);
	ctrlist_free(&iv->hw);
	memset(iv, 0, sizeof(*iv));
}

void run_free(struct run *r)
{
	int i;

	free(r->label);
	free(r->kernel);
	free(r->cmdline);
	strlist_free(&r->command);
	free(r->per_cpu);
	ctrlist_free(&r->vmstat);
	ctrlist_free(&r->flush);
	ctrlist_free(&r->hw);
	strlist_free(&r->absent);
	src_result_free(&r->src);
	for (i = 0; i < r->nintervals; i++)
		interval_free(&r->intervals[i]);
	free(r->intervals);
	memset(r, 0, sizeof(*r));
}

/* ---- writing ---- */

static void json_ctrs(struct jbuf *b, const char *key, const struct ctrlist *l)
{
	int i;

	jb_obj_begin(b, key);
	for (i = 0; i < l->n; i++) {
		if (l->v[i].valid)
			jb_i64(b, l->v[i].name, l->v[i].val);
		else
			jb_null(b, l->v[i].name);
	}
	jb_obj_end(b);
}

static void json_tlb(struct jbuf *b, bool has, int ncpus, const uint64_t *per_cpu,
		     uint64_t total)
{
	int i;

	if (!has) {
		jb_null(b, "tlb_shootdowns");
		return;
	}
	jb_obj_begin(b, "tlb_shootdowns");
	jb_arr_begin(b, "per_cpu");
	for (i = 0; i < ncpus; i++)
		jb_u64(b, NULL, per_cpu[i]);
	jb_arr_end(b);
	jb_u64(b, "total", total);
	jb_obj_end(b);
}

/* "sources": sends by source, received per CPU; null if not recorded. */
static void json_sources(struct jbuf *b, const struct run *r)
{
	const struct src_result *s = &r->src;
	int i, n = s->nrecv > r->ncpus ? s->nrecv : r->ncpus;

	if (!r->has_sources) {
		jb_null(b, "sources");
		return;
	}
	jb_obj_begin(b, "sources");
	json_ctrs(b, "sends", &s->sends);
	jb_obj_begin(b, "received");
	jb_arr_begin(b, "per_cpu");
	for (i = 0; i < n; i++)
		jb_u64(b, NULL, i < s->nrecv ? s->recv[i] : 0);
	jb_arr_end(b);
	jb_u64(b, "total", s->recv_total);
	jb_obj_end(b);
	jb_u64(b, "lost_events", s->lost);
	jb_arr_begin(b, "notes");
	for (i = 0; i < s->notes.n; i++)
		jb_str(b, NULL, s->notes.v[i]);
	jb_arr_end(b);
	jb_obj_end(b);
}

static void json_interval(struct jbuf *b, const struct interval *iv)
{
	jb_obj_begin(b, NULL);
	jb_dbl(b, "t_s", iv->t_s);
	jb_dbl(b, "wall_s", iv->wall_s);
	json_tlb(b, iv->has_tlb, iv->ncpus, iv->per_cpu, iv->tlb_total);
	json_ctrs(b, "vmstat", &iv->vmstat);
	if (iv->has_flush)
		json_ctrs(b, "tlb_flush", &iv->flush);
	else
		jb_null(b, "tlb_flush");
	json_ctrs(b, "hw", &iv->hw);
	jb_obj_end(b);
}

char *run_to_json(const struct run *r)
{
	struct jbuf b;
	int i;

	jb_init(&b);
	jb_obj_begin(&b, NULL);
	jb_str(&b, "tool", "migrc");
	jb_i64(&b, "version", MIGRC_VERSION);
	jb_str(&b, "label", r->label ? r->label : "");
	jb_str(&b, "kernel", r->kernel ? r->kernel : "");
	jb_str(&b, "cmdline", r->cmdline ? r->cmdline : "");
	jb_arr_begin(&b, "command");
	for (i = 0; i < r->command.n; i++)
		jb_str(&b, NULL, r->command.v[i]);
	jb_arr_end(&b);
	jb_i64(&b, "exit_status", r->exit_status);
	jb_dbl(&b, "wall_s", r->wall_s);
	jb_dbl(&b, "user_s", r->user_s);
	jb_dbl(&b, "sys_s", r->sys_s);
	jb_i64(&b, "ncpus", r->ncpus);
	json_tlb(&b, r->has_tlb, r->ncpus, r->per_cpu, r->tlb_total);
	json_ctrs(&b, "vmstat", &r->vmstat);
	if (r->has_flush)
		json_ctrs(&b, "tlb_flush", &r->flush);
	else
		jb_null(&b, "tlb_flush");
	json_ctrs(&b, "hw", &r->hw);
	if (r->want_sources || r->has_sources)
		json_sources(&b, r);
	jb_arr_begin(&b, "absent");
	for (i = 0; i < r->absent.n; i++)
		jb_str(&b, NULL, r->absent.v[i]);
	jb_arr_end(&b);
	if (r->nintervals) {
		jb_arr_begin(&b, "intervals");
		for (i = 0; i < r->nintervals; i++)
			json_interval(&b, &r->intervals[i]);
		jb_arr_end(&b);
	}
	jb_obj_end(&b);
	jb_raw(&b, "\n");
	return b.s;
}

/* ---- reading ---- */

static int __printf(3, 4) fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int get_str(const struct jval *o, const char *key, char **out, char *err, size_t errlen)
{
	const struct jval *v = json_get(o, key);

	*out = NULL;
	if (!v || v->type == J_NULL) {
		*out = xstrdup("");
		return 0;
	}
	if (v->type != J_STR)
		return fail(err, errlen, "\"%s\" must be a string", key);
	*out = xstrdup(v->str);
	return 0;
}

static int get_int(const struct jval *o, const char *key, bool required, int64_t *out,
		   char *err, size_t errlen)
{
	const struct jval *v = json_get(o, key);

	if (!v || v->type == J_NULL) {
		if (required)
			return fail(err, errlen, "missing \"%s\"", key);
		return 1;
	}
	if (v->type != J_NUM || !v->is_int)
		return fail(err, errlen, "\"%s\" must be an integer", key);
	*out = v->i;
	return 0;
}

static double get_dbl(const struct jval *o, const char *key, char *err, size_t errlen,
		      int *bad)
{
	const struct jval *v = json_get(o, key);

	if (!v || v->type == J_NULL)
		return NAN;
	if (v->type != J_NUM) {
		snprintf(err, errlen, "\"%s\" must be a number", key);
		*bad = 1;
		return NAN;
	}
	return v->num;
}

static int get_ctrs(const struct jval *o, const char *key, bool nullable, bool *has,
		    struct ctrlist *out, char *err, size_t errlen)
{
	const struct jval *v = json_get(o, key);
	int i;

	ctrlist_init(out);
	*has = false;
	if (!v || v->type == J_NULL) {
		if (!nullable && v)
			return fail(err, errlen, "\"%s\" must be an object", key);
		return 0;
	}
	if (v->type != J_OBJ)
		return fail(err, errlen, "\"%s\" must be an object", key);
	for (i = 0; i < v->n; i++) {
		const struct jval *c = v->kids[i];

		if (c->type == J_NULL) {
			ctrlist_add(out, v->keys[i], 0, false);
			continue;
		}
		if (c->type != J_NUM || !c->is_int)
			return fail(err, errlen, "\"%s\".\"%s\" must be an integer or null",
				    key, v->keys[i]);
		ctrlist_add(out, v->keys[i], c->i, true);
	}
	*has = true;
	return 0;
}

static int get_tlb(const struct jval *o, struct run *r, char *err, size_t errlen)
{
	const struct jval *t = json_get(o, "tlb_shootdowns"), *pc;
	uint64_t sum = 0;
	int64_t total;
	int i;

	if (!t || t->type == J_NULL)
		return 0;
	if (t->type != J_OBJ)
		return fail(err, errlen, "\"tlb_shootdowns\" must be an object or null");
	pc = json_get(t, "per_cpu");
	if (!pc || pc->type != J_ARR)
		return fail(err, errlen, "\"tlb_shootdowns.per_cpu\" must be an array");
	if (pc->n != r->ncpus)
		return fail(err, errlen,
			    "inconsistent run: %d per-CPU TLB values but \"ncpus\" is %d",
			    pc->n, r->ncpus);
	r->per_cpu = xcalloc(pc->n, sizeof(uint64_t));
	for (i = 0; i < pc->n; i++) {
		const struct jval *c = pc->kids[i];

		if (c->type != J_NUM || !c->is_int || c->i < 0)
			return fail(err, errlen,
				    "\"tlb_shootdowns.per_cpu[%d]\" must be a non-negative integer",
				    i);
		r->per_cpu[i] = c->i;
		sum += c->i;
	}
	if (get_int(t, "total", true, &total, err, errlen))
		return -1;
	if ((uint64_t)total != sum)
		return fail(err, errlen,
			    "inconsistent run: tlb_shootdowns.total is %lld but the per-CPU values add up to %llu",
			    (long long)total, (unsigned long long)sum);
	r->tlb_total = sum;
	r->has_tlb = true;
	return 0;
}

static int get_strlist(const struct jval *o, const char *key, struct strlist *out,
		       char *err, size_t errlen)
{
	const struct jval *v = json_get(o, key);
	int i;

	if (!v || v->type == J_NULL)
		return 0;
	if (v->type != J_ARR)
		return fail(err, errlen, "\"%s\" must be an array of strings", key);
	for (i = 0; i < v->n; i++) {
		if (v->kids[i]->type != J_STR)
			return fail(err, errlen, "\"%s[%d]\" must be a string", key, i);
		strlist_add(out, v->kids[i]->str);
	}
	return 0;
}

static int get_sends(const struct jval *s, struct src_result *src, char *err,
		     size_t errlen)
{
	struct ctr *total;
	int64_t sum = 0;
	bool has;
	int i;

	if (get_ctrs(s, "sends", false, &has, &src->sends, err, errlen))
		return -1;
	total = ctrlist_find(&src->sends, "total");
	if (!has || !total || !total->valid)
		return fail(err, errlen, "\"sources.sends\" must be an object with a \"total\"");
	for (i = 0; i < src->sends.n; i++)
		if (&src->sends.v[i] != total)
			sum += src->sends.v[i].val;
	if (sum != total->val)
		return fail(err, errlen,
			    "inconsistent run: sources.sends.total is %lld but the sources add up to %lld",
			    (long long)total->val, (long long)sum);
	return 0;
}

static int get_received(const struct jval *s, struct src_result *src, char *err,
			size_t errlen)
{
	const struct jval *rc = json_get(s, "received"), *pc;
	int64_t total;
	int i;

	if (!rc || rc->type != J_OBJ)
		return fail(err, errlen, "\"sources.received\" must be an object");
	pc = json_get(rc, "per_cpu");
	if (!pc || pc->type != J_ARR || pc->n > MAX_CPUS)
		return fail(err, errlen, "\"sources.received.per_cpu\" must be an array");
	src->recv = xcalloc(pc->n + 1, sizeof(uint64_t));
	src->nrecv = pc->n;
	for (i = 0; i < pc->n; i++) {
		if (pc->kids[i]->type != J_NUM || !pc->kids[i]->is_int || pc->kids[i]->i < 0)
			return fail(err, errlen,
				    "\"sources.received.per_cpu[%d]\" must be a non-negative integer",
				    i);
		src->recv[i] = pc->kids[i]->i;
	}
	if (get_int(rc, "total", true, &total, err, errlen))
		return -1;
	src->recv_total = total;
	return 0;
}

/* "sources" is optional: absent (no --sources), null (not recorded), or an object. */
static int get_sources(const struct jval *root, struct run *r, char *err, size_t errlen)
{
	const struct jval *s = json_get(root, "sources");
	int64_t lost = 0;

	if (!s)
		return 0;
	r->want_sources = true;
	if (s->type == J_NULL)
		return 0;
	if (s->type != J_OBJ)
		return fail(err, errlen, "\"sources\" must be an object or null");
	if (get_sends(s, &r->src, err, errlen) || get_received(s, &r->src, err, errlen) ||
	    get_int(s, "lost_events", false, &lost, err, errlen) < 0 ||
	    get_strlist(s, "notes", &r->src.notes, err, errlen))
		return -1;
	r->src.lost = lost;
	r->has_sources = true;
	return 0;
}

static int check_header(const struct jval *root, char *err, size_t errlen)
{
	const struct jval *tool = json_get(root, "tool");
	int64_t version;

	if (root->type != J_OBJ)
		return fail(err, errlen, "not a migrc result: top level is not an object");
	if (!tool || tool->type != J_STR || strcmp(tool->str, "migrc"))
		return fail(err, errlen, "not a migrc result: \"tool\" is not \"migrc\"");
	if (get_int(root, "version", true, &version, err, errlen))
		return -1;
	if (version != MIGRC_VERSION)
		return fail(err, errlen,
			    "unsupported result version %lld (this migrc reads version %d)",
			    (long long)version, MIGRC_VERSION);
	return 0;
}

static int run_fill(const struct jval *root, struct run *r, char *err, size_t errlen)
{
	int64_t v = 0;
	bool has;
	int bad = 0;

	if (check_header(root, err, errlen) ||
	    get_str(root, "label", &r->label, err, errlen) ||
	    get_str(root, "kernel", &r->kernel, err, errlen) ||
	    get_str(root, "cmdline", &r->cmdline, err, errlen) ||
	    get_strlist(root, "command", &r->command, err, errlen))
		return -1;
	if (get_int(root, "exit_status", false, &v, err, errlen) < 0)
		return -1;
	r->exit_status = (int)v;
	r->wall_s = get_dbl(root, "wall_s", err, errlen, &bad);
	r->user_s = get_dbl(root, "user_s", err, errlen, &bad);
	r->sys_s = get_dbl(root, "sys_s", err, errlen, &bad);
	if (bad)
		return -1;
	if (get_int(root, "ncpus", true, &v, err, errlen))
		return -1;
	if (v < 1 || v > MAX_CPUS)
		return fail(err, errlen, "\"ncpus\" is %lld, expected 1..%d",
			    (long long)v, MAX_CPUS);
	r->ncpus = (int)v;
	if (get_tlb(root, r, err, errlen) ||
	    get_ctrs(root, "vmstat", false, &has, &r->vmstat, err, errlen) ||
	    get_ctrs(root, "tlb_flush", true, &r->has_flush, &r->flush, err, errlen) ||
	    get_ctrs(root, "hw", false, &has, &r->hw, err, errlen) ||
	    get_sources(root, r, err, errlen) ||
	    get_strlist(root, "absent", &r->absent, err, errlen))
		return -1;
	if (!json_get(root, "vmstat"))
		return fail(err, errlen, "missing \"vmstat\"");
	if (r->has_flush && !ctrlist_find(&r->flush, "total"))
		return fail(err, errlen, "\"tlb_flush\" has no \"total\"");
	return 0;
}

int run_from_json(const char *text, struct run *r, char *err, size_t errlen)
{
	struct jval *root;
	int ret;

	memset(r, 0, sizeof(*r));
	root = json_parse(text, err, errlen);
	if (!root)
		return -1;
	ret = run_fill(root, r, err, errlen);
	json_free(root);
	if (ret)
		run_free(r);
	return ret;
}

/* ---- text summary ---- */

static void print_ctr_block(FILE *f, const char *title, const struct ctrlist *l,
			    bool skip_zero)
{
	int i, zero = 0;

	fprintf(f, "%s\n", title);
	for (i = 0; i < l->n; i++) {
		const struct ctr *c = &l->v[i];

		if (skip_zero && c->valid && c->val == 0) {
			zero++;
			continue;
		}
		if (c->valid)
			fprintf(f, "  %-32s %16lld\n", c->name, (long long)c->val);
		else
			fprintf(f, "  %-32s %16s\n", c->name, "not supported");
	}
	if (zero)
		fprintf(f, "  (%d more counter%s unchanged)\n", zero, zero == 1 ? "" : "s");
	if (!l->n)
		fprintf(f, "  (none present)\n");
}

static void print_tlb(FILE *f, const struct run *r)
{
	int i;

	if (!r->has_tlb) {
		fprintf(f, "TLB shootdowns (/proc/interrupts): not available\n");
		return;
	}
	fprintf(f, "TLB shootdowns (/proc/interrupts), %d CPU%s:\n", r->ncpus,
		r->ncpus == 1 ? "" : "s");
	for (i = 0; i < r->ncpus; i++) {
		if (i % 8 == 0) {
			char range[32];

			snprintf(range, sizeof(range), "CPU%d-%d", i,
				 i + 7 < r->ncpus ? i + 7 : r->ncpus - 1);
			fprintf(f, "  %-11s", range);
		}
		fprintf(f, " %10llu%s", (unsigned long long)r->per_cpu[i],
			(i % 8 == 7 || i == r->ncpus - 1) ? "\n" : "");
	}
	fprintf(f, "  %-32s %16llu\n", "total", (unsigned long long)r->tlb_total);
}

static int by_count_desc(const void *a, const void *b)
{
	const struct ctr *x = *(const struct ctr *const *)a;
	const struct ctr *y = *(const struct ctr *const *)b;

	return (y->val > x->val) - (y->val < x->val);
}

/* The sources with sends, most first, and their share of the total. */
static void print_sends(FILE *f, const struct ctrlist *sends, int64_t total)
{
	const struct ctr **v = xcalloc(sends->n + 1, sizeof(*v));
	int i, n = 0, zero = 0;

	for (i = 0; i < sends->n; i++) {
		if (!strcmp(sends->v[i].name, "total"))
			continue;
		if (sends->v[i].val)
			v[n++] = &sends->v[i];
		else
			zero++;
	}
	qsort(v, n, sizeof(*v), by_count_desc);
	fprintf(f, "  %-32s %16s %8s\n", "source", "IPI sends", "share");
	for (i = 0; i < n; i++)
		fprintf(f, "  %-32s %16lld %7.1f%%\n", v[i]->name, (long long)v[i]->val,
			100.0 * v[i]->val / total);
	fprintf(f, "  %-32s %16lld\n", "total", (long long)total);
	if (zero)
		fprintf(f, "  (%d source%s without sends not shown)\n", zero, zero == 1 ? "" : "s");
	free(v);
}

static void print_sources(FILE *f, const struct run *r)
{
	const struct ctr *total = ctrlist_find(&r->src.sends, "total");
	int i;

	if (!r->has_sources) {
		if (r->want_sources)
			fprintf(f, "shootdown sources: not available (see \"absent\")\n");
		return;
	}
	fprintf(f, "shootdown sources (tlb_flush \"remote ipi send\" events by context):\n");
	print_sends(f, &r->src.sends, total ? total->val : 0);
	fprintf(f, "  %-32s %16llu\n", "received (remote shootdown)",
		(unsigned long long)r->src.recv_total);
	for (i = 0; i < r->src.notes.n; i++)
		fprintf(f, "  note: %s\n", r->src.notes.v[i]);
}

static void print_cmd(FILE *f, const struct run *r)
{
	int i;

	if (!r->command.n) {
		fprintf(f, "migrc stat: system-wide, %.3f s\n", r->wall_s);
		return;
	}
	fprintf(f, "migrc stat:");
	for (i = 0; i < r->command.n; i++)
		fprintf(f, " %s", r->command.v[i]);
	if (r->exit_status >= 128)
		fprintf(f, "  (killed by signal %d)\n", r->exit_status - 128);
	else
		fprintf(f, "  (exit status %d)\n", r->exit_status);
}

void print_summary(FILE *f, const struct run *r)
{
	int i;

	fprintf(f, "\n");
	print_cmd(f, r);
	fprintf(f, "  wall %.3f s   user %.3f s   sys %.3f s%s\n\n", r->wall_s, r->user_s,
		r->sys_s, r->command.n ? "" : "   (user/sys: all CPUs)");
	print_tlb(f, r);
	if (r->has_flush)
		print_ctr_block(f, "tlb:tlb_flush events by reason:", &r->flush, false);
	else
		fprintf(f, "tlb:tlb_flush events: not available\n");
	print_sources(f, r);
	print_ctr_block(f, "hardware TLB misses:", &r->hw, false);
	print_ctr_block(f, "/proc/vmstat deltas:", &r->vmstat, true);
	if (r->absent.n) {
		fprintf(f, "absent or limited:\n");
		for (i = 0; i < r->absent.n; i++)
			fprintf(f, "  - %s\n", r->absent.v[i]);
	}
}

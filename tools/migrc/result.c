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
	print_ctr_block(f, "hardware TLB misses:", &r->hw, false);
	print_ctr_block(f, "/proc/vmstat deltas:", &r->vmstat, true);
	if (r->absent.n) {
		fprintf(f, "absent or limited:\n");
		for (i = 0; i < r->absent.n; i++)
			fprintf(f, "  - %s\n", r->absent.v[i]);
	}
}

// SPDX-License-Identifier: GPL-2.0
/*
 * migrc compare - put runs side by side, seeds-style (BEFORE / AFTER and the
 * reduction in percent against the first run), as a table, CSV or JSON,
 * optionally with an SVG chart.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "migrc.h"

#define MAX_RUNS 16

struct row {
	const char *section;
	char metric[NAMELEN];
	double val[MAX_RUNS];
	bool has[MAX_RUNS];
	bool is_float;
	bool no_reduction;
};

struct table {
	int nruns;
	const char **labels;
	struct row *rows;
	int nrows, cap;
	struct strlist warnings;
};

static const char *const SEC_TLB = "TLB shootdowns (/proc/interrupts)";
static const char *const SEC_FLUSH = "tlb:tlb_flush events by reason";
static const char *const SEC_SRC = "shootdown sources (IPI sends)";
static const char *const SEC_HW = "hardware counters";
static const char *const SEC_VM = "/proc/vmstat";
static const char *const SEC_RUN = "runtime";

static void compare_usage(FILE *f)
{
	fputs("usage: migrc compare [--format table|csv|json] [--svg FILE.svg]\n"
	      "                     [--label NAME[,NAME...]] [--allow-mismatch]\n"
	      "                     A.json B.json [C.json ...]\n"
	      "\n"
	      "Compare runs written by 'migrc stat -o'.  The first run is the baseline;\n"
	      "for every other run a column gives the reduction against it in percent:\n"
	      "(first - this) / first * 100, positive = fewer events / less time.\n"
	      "\n"
	      "  -f, --format FMT     table (default), csv or json, written to stdout\n"
	      "  -s, --svg FILE       also draw a chart (per-CPU shootdowns, main counters)\n"
	      "  -l, --label NAMES    column labels (repeat, or comma-separated); default:\n"
	      "                       the runs' own labels, else BEFORE/AFTER (RUN1.. for 3+)\n"
	      "  -m, --allow-mismatch exit 0 even if the runs have different CPU counts\n"
	      "  -h, --help           this help\n"
	      "\n"
	      "Exit: 0 ok, 1 usage, 2 unreadable or invalid input, 4 runs have different\n"
	      "CPU counts (output is still written, with warnings).\n", f);
}

static struct row *add_row(struct table *t, const char *section, const char *metric)
{
	struct row *r;

	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->rows = xrealloc(t->rows, t->cap * sizeof(*t->rows));
	}
	r = &t->rows[t->nrows++];
	memset(r, 0, sizeof(*r));
	r->section = section;
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	return r;
}

static void add_tlb_rows(struct table *t, struct run *runs)
{
	int i, c, maxcpus = 0;
	bool any = false;
	struct row *r;
	char name[32];

	for (i = 0; i < t->nruns; i++) {
		if (runs[i].has_tlb && runs[i].ncpus > maxcpus)
			maxcpus = runs[i].ncpus;
		any |= runs[i].has_tlb;
	}
	if (!any)
		return;
	for (c = 0; c < maxcpus; c++) {
		snprintf(name, sizeof(name), "CPU%d", c);
		r = add_row(t, SEC_TLB, name);
		for (i = 0; i < t->nruns; i++) {
			r->has[i] = runs[i].has_tlb && c < runs[i].ncpus;
			r->val[i] = r->has[i] ? (double)runs[i].per_cpu[c] : 0;
		}
	}
	r = add_row(t, SEC_TLB, "total");
	for (i = 0; i < t->nruns; i++) {
		r->has[i] = runs[i].has_tlb;
		r->val[i] = (double)runs[i].tlb_total;
	}
	r = add_row(t, SEC_TLB, "mean per CPU");
	r->is_float = true;
	for (i = 0; i < t->nruns; i++) {
		r->has[i] = runs[i].has_tlb;
		r->val[i] = (double)runs[i].tlb_total / runs[i].ncpus;
	}
}

/* Rows for the union of counter names, in order of first appearance. */
static void add_ctr_rows(struct table *t, struct run *runs, const char *section,
			 struct ctrlist *(*get)(struct run *), bool total_last)
{
	struct ctrlist names;
	int i, j;

	ctrlist_init(&names);
	for (i = 0; i < t->nruns; i++) {
		struct ctrlist *l = get(&runs[i]);

		for (j = 0; l && j < l->n; j++)
			if (!ctrlist_find(&names, l->v[j].name) &&
			    !(total_last && !strcmp(l->v[j].name, "total")))
				ctrlist_add(&names, l->v[j].name, 0, true);
	}
	if (total_last && names.n)
		ctrlist_add(&names, "total", 0, true);
	for (j = 0; j < names.n; j++) {
		struct row *r = add_row(t, section, names.v[j].name);

		for (i = 0; i < t->nruns; i++) {
			struct ctrlist *l = get(&runs[i]);
			struct ctr *c = l ? ctrlist_find(l, names.v[j].name) : NULL;

			r->has[i] = c && c->valid;
			r->val[i] = r->has[i] ? (double)c->val : 0;
		}
	}
	ctrlist_free(&names);
}

static struct ctrlist *get_flush(struct run *r)
{
	return r->has_flush ? &r->flush : NULL;
}

static struct ctrlist *get_sources(struct run *r)
{
	return r->has_sources ? &r->src.sends : NULL;
}

/* The sends by source, side by side, if any run recorded them. */
static void add_source_rows(struct table *t, struct run *runs)
{
	struct row *r;
	int i;

	for (i = 0; i < t->nruns && !runs[i].has_sources; i++)
		;
	if (i == t->nruns)
		return;
	add_ctr_rows(t, runs, SEC_SRC, get_sources, true);
	r = add_row(t, SEC_SRC, "received (remote shootdown)");
	for (i = 0; i < t->nruns; i++) {
		r->has[i] = runs[i].has_sources;
		r->val[i] = (double)runs[i].src.recv_total;
	}
}

static struct ctrlist *get_hw(struct run *r)
{
	return &r->hw;
}

static struct ctrlist *get_vmstat(struct run *r)
{
	return &r->vmstat;
}

static void add_runtime_rows(struct table *t, struct run *runs)
{
	static const char *const names[] = { "wall_s", "user_s", "sys_s" };
	struct row *r;
	int i, k;

	for (k = 0; k < 3; k++) {
		r = add_row(t, SEC_RUN, names[k]);
		r->is_float = true;
		for (i = 0; i < t->nruns; i++) {
			double v = k == 0 ? runs[i].wall_s : k == 1 ? runs[i].user_s
								   : runs[i].sys_s;

			r->has[i] = !isnan(v);
			r->val[i] = r->has[i] ? v : 0;
		}
	}
	r = add_row(t, SEC_RUN, "exit_status");
	r->no_reduction = true;
	for (i = 0; i < t->nruns; i++) {
		r->has[i] = true;
		r->val[i] = runs[i].exit_status;
	}
}

static bool same_command(const struct run *a, const struct run *b)
{
	int i;

	if (a->command.n != b->command.n)
		return false;
	for (i = 0; i < a->command.n; i++)
		if (strcmp(a->command.v[i], b->command.v[i]))
			return false;
	return true;
}

/* Returns true if the runs are not fully comparable (CPU count). */
static bool check_mismatch(struct table *t, struct run *runs)
{
	bool cpus = false;
	int i;

	for (i = 1; i < t->nruns; i++) {
		if (runs[i].ncpus != runs[0].ncpus) {
			strlist_addf(&t->warnings,
				     "CPU COUNT MISMATCH: %s has %d CPUs, %s has %d: per-CPU rows are only meaningful where every run has the CPU, totals scale with the CPU count (see \"mean per CPU\")",
				     t->labels[0], runs[0].ncpus, t->labels[i],
				     runs[i].ncpus);
			cpus = true;
		}
		if (runs[i].has_tlb != runs[0].has_tlb)
			strlist_addf(&t->warnings, "%s has no TLB shootdown data, %s has",
				     runs[i].has_tlb ? t->labels[0] : t->labels[i],
				     runs[i].has_tlb ? t->labels[i] : t->labels[0]);
		if (runs[i].has_flush != runs[0].has_flush)
			strlist_addf(&t->warnings, "%s has no tlb:tlb_flush data, %s has",
				     runs[i].has_flush ? t->labels[0] : t->labels[i],
				     runs[i].has_flush ? t->labels[i] : t->labels[0]);
		if (!same_command(&runs[0], &runs[i]))
			strlist_addf(&t->warnings, "%s and %s measured different commands",
				     t->labels[0], t->labels[i]);
	}
	return cpus;
}

static bool reduction(const struct row *r, int i, double *out)
{
	if (r->no_reduction || !r->has[0] || !r->has[i])
		return false;
	if (r->val[0] == 0) {
		if (r->val[i] != 0)
			return false;
		*out = 0;
		return true;
	}
	*out = (r->val[0] - r->val[i]) / r->val[0] * 100.0;
	return true;
}

static const char *fmt_val(const struct row *r, int i, char *buf, size_t len)
{
	if (!r->has[i])
		snprintf(buf, len, "-");
	else if (r->is_float)
		snprintf(buf, len, "%.3f", r->val[i]);
	else
		snprintf(buf, len, "%.0f", r->val[i]);
	return buf;
}

static bool all_zero(const struct row *r, int nruns)
{
	int i;

	for (i = 0; i < nruns; i++)
		if (r->has[i] && r->val[i] != 0)
			return false;
	return true;
}

static void red_header(const struct table *t, int i, char *buf, size_t len)
{
	if (t->nruns == 2)
		snprintf(buf, len, "reduction");
	else
		snprintf(buf, len, "red.%s", t->labels[i]);
}

static void print_table(FILE *f, struct table *t, struct run *runs)
{
	const char *sec = NULL;
	char buf[64];
	int i, k, w = 14, mw = 30, skipped = 0, no_sends = 0;

	fprintf(f,
		"migrc compare: %d runs; reduction = (%s - run) / %s * 100, positive = fewer/faster\n",
		t->nruns, t->labels[0], t->labels[0]);
	for (i = 0; i < t->nruns; i++)
		fprintf(f, "  %-12s %s (kernel %s, %d CPUs, exit %d)\n", t->labels[i],
			runs[i].file ? runs[i].file : "-", runs[i].kernel, runs[i].ncpus,
			runs[i].exit_status);
	for (i = 0; i < t->warnings.n; i++)
		fprintf(f, "  *** WARNING: %s ***\n", t->warnings.v[i]);
	for (i = 0; i < t->nruns; i++)
		if ((int)strlen(t->labels[i]) + 1 > w)
			w = strlen(t->labels[i]) + 1;
	for (k = 0; k < t->nrows; k++)
		if ((int)strlen(t->rows[k].metric) + 3 > mw)
			mw = strlen(t->rows[k].metric) + 3;
	fprintf(f, "\n%-*s", mw, "");
	for (i = 0; i < t->nruns; i++)
		fprintf(f, " %*s", w, t->labels[i]);
	for (i = 1; i < t->nruns; i++) {
		red_header(t, i, buf, sizeof(buf));
		fprintf(f, " %*s", w, buf);
	}
	fprintf(f, "\n");
	for (k = 0; k < t->nrows; k++) {
		const struct row *r = &t->rows[k];
		double red;

		if (r->section == SEC_VM && all_zero(r, t->nruns)) {
			skipped++;
			continue;
		}
		if (r->section == SEC_SRC && all_zero(r, t->nruns)) {
			no_sends++;
			continue;
		}
		if (r->section != sec) {
			sec = r->section;
			fprintf(f, "%s\n", sec);
		}
		fprintf(f, "  %-*s", mw - 2, r->metric);
		for (i = 0; i < t->nruns; i++)
			fprintf(f, " %*s", w, fmt_val(r, i, buf, sizeof(buf)));
		for (i = 1; i < t->nruns; i++) {
			if (reduction(r, i, &red))
				snprintf(buf, sizeof(buf), "%.2f%%", red);
			else
				snprintf(buf, sizeof(buf), "-");
			fprintf(f, " %*s", w, buf);
		}
		fprintf(f, "\n");
	}
	if (skipped)
		fprintf(f, "  (%d /proc/vmstat counters are zero in every run, not shown)\n",
			skipped);
	if (no_sends)
		fprintf(f, "  (%d shootdown sources without sends in any run, not shown)\n",
			no_sends);
}

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void print_csv(FILE *f, struct table *t)
{
	char buf[128];
	int i, k;

	fputs("section,metric", f);
	for (i = 0; i < t->nruns; i++) {
		fputc(',', f);
		csv_field(f, t->labels[i]);
	}
	for (i = 1; i < t->nruns; i++) {
		snprintf(buf, sizeof(buf), "reduction_pct_%s", t->labels[i]);
		fputc(',', f);
		csv_field(f, buf);
	}
	fputc('\n', f);
	for (k = 0; k < t->nrows; k++) {
		const struct row *r = &t->rows[k];
		double red;

		csv_field(f, r->section);
		fputc(',', f);
		csv_field(f, r->metric);
		for (i = 0; i < t->nruns; i++)
			fprintf(f, ",%s", r->has[i] ? fmt_val(r, i, buf, sizeof(buf)) : "");
		for (i = 1; i < t->nruns; i++) {
			if (reduction(r, i, &red))
				fprintf(f, ",%.2f", red);
			else
				fputc(',', f);
		}
		fputc('\n', f);
	}
}

static void print_json(FILE *f, struct table *t, struct run *runs)
{
	struct jbuf b;
	int i, k;

	jb_init(&b);
	jb_obj_begin(&b, NULL);
	jb_str(&b, "tool", "migrc");
	jb_str(&b, "kind", "compare");
	jb_i64(&b, "version", MIGRC_VERSION);
	jb_arr_begin(&b, "runs");
	for (i = 0; i < t->nruns; i++) {
		jb_obj_begin(&b, NULL);
		jb_str(&b, "label", t->labels[i]);
		jb_str(&b, "file", runs[i].file ? runs[i].file : "");
		jb_str(&b, "kernel", runs[i].kernel);
		jb_i64(&b, "ncpus", runs[i].ncpus);
		jb_obj_end(&b);
	}
	jb_arr_end(&b);
	jb_arr_begin(&b, "warnings");
	for (i = 0; i < t->warnings.n; i++)
		jb_str(&b, NULL, t->warnings.v[i]);
	jb_arr_end(&b);
	jb_arr_begin(&b, "rows");
	for (k = 0; k < t->nrows; k++) {
		const struct row *r = &t->rows[k];
		double red;

		jb_obj_begin(&b, NULL);
		jb_str(&b, "section", r->section);
		jb_str(&b, "metric", r->metric);
		jb_arr_begin(&b, "values");
		for (i = 0; i < t->nruns; i++) {
			if (!r->has[i])
				jb_null(&b, NULL);
			else if (r->is_float)
				jb_dbl(&b, NULL, r->val[i]);
			else
				jb_i64(&b, NULL, (int64_t)r->val[i]);
		}
		jb_arr_end(&b);
		jb_arr_begin(&b, "reduction_pct");
		for (i = 0; i < t->nruns; i++) {
			if (i > 0 && reduction(r, i, &red))
				jb_dbl(&b, NULL, red);
			else
				jb_null(&b, NULL);
		}
		jb_arr_end(&b);
		jb_obj_end(&b);
	}
	jb_arr_end(&b);
	jb_obj_end(&b);
	fprintf(f, "%s\n", b.s);
	free(b.s);
}

static void default_labels(struct run *runs, int nruns, const char **labels)
{
	bool usable = true;
	static char names[MAX_RUNS][16];
	int i, j;

	for (i = 0; i < nruns; i++) {
		if (!runs[i].label || !*runs[i].label)
			usable = false;
		for (j = 0; usable && j < i; j++)
			if (!strcmp(runs[i].label, runs[j].label))
				usable = false;
	}
	for (i = 0; i < nruns; i++) {
		if (usable) {
			labels[i] = runs[i].label;
		} else if (nruns == 2) {
			labels[i] = i ? "AFTER" : "BEFORE";
		} else {
			snprintf(names[i], sizeof(names[i]), "RUN%d", i + 1);
			labels[i] = names[i];
		}
	}
}

static void build_table(struct table *t, struct run *runs)
{
	add_tlb_rows(t, runs);
	add_ctr_rows(t, runs, SEC_FLUSH, get_flush, true);
	add_source_rows(t, runs);
	add_ctr_rows(t, runs, SEC_HW, get_hw, false);
	add_ctr_rows(t, runs, SEC_VM, get_vmstat, false);
	add_runtime_rows(t, runs);
}

int compare_runs_labels(struct run *runs, int nruns, const char **labels, const char *format,
			FILE *out, const char *svg_path, bool allow_mismatch)
{
	struct table t;
	bool mismatch;
	int i, ret = EXIT_OK;

	memset(&t, 0, sizeof(t));
	t.nruns = nruns;
	t.labels = labels;
	mismatch = check_mismatch(&t, runs);
	for (i = 0; i < t.warnings.n; i++)
		fprintf(stderr, "migrc: WARNING: %s\n", t.warnings.v[i]);
	build_table(&t, runs);
	if (!strcmp(format, "csv"))
		print_csv(out, &t);
	else if (!strcmp(format, "json"))
		print_json(out, &t, runs);
	else
		print_table(out, &t, runs);
	fflush(out);
	if (svg_path) {
		FILE *f = fopen(svg_path, "w");

		if (!f || write_svg(f, runs, nruns, labels) || fclose(f)) {
			errmsg("cannot write %s: %s", svg_path, strerror(errno));
			ret = EXIT_SYSERR;
		}
	}
	if (ret == EXIT_OK && mismatch && !allow_mismatch)
		ret = EXIT_MISMATCH;
	strlist_free(&t.warnings);
	free(t.rows);
	return ret;
}

int compare_runs(struct run *runs, int nruns, const char *format, FILE *out,
		 const char *svg_path, bool allow_mismatch)
{
	const char *labels[MAX_RUNS];

	default_labels(runs, nruns, labels);
	return compare_runs_labels(runs, nruns, labels, format, out, svg_path,
				   allow_mismatch);
}

static int load_run(const char *path, struct run *r)
{
	char err[ERRLEN], perr[ERRLEN];
	char *text = read_file(path, NULL, err, sizeof(err));

	if (!text) {
		errmsg("%s", err);
		return -1;
	}
	if (run_from_json(text, r, perr, sizeof(perr))) {
		errmsg("%s: %s", path, perr);
		free(text);
		return -1;
	}
	free(text);
	r->file = path;
	return 0;
}

static int split_labels(char *arg, const char **labels, int *n)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n == MAX_RUNS)
			return -1;
		labels[(*n)++] = tok;
	}
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "svg", required_argument, NULL, 's' },
		{ "label", required_argument, NULL, 'l' },
		{ "allow-mismatch", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = "table", *svg = NULL, *labels[MAX_RUNS];
	struct run runs[MAX_RUNS];
	bool allow = false;
	int c, i, nruns, nlabels = 0, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:s:l:mh", lopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 's':
			svg = optarg;
			break;
		case 'l':
			if (split_labels(optarg, labels, &nlabels)) {
				errmsg("compare: too many labels (max %d)", MAX_RUNS);
				return EXIT_USAGE;
			}
			break;
		case 'm':
			allow = true;
			break;
		case 'h':
			compare_usage(stdout);
			return EXIT_OK;
		default:
			compare_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (strcmp(format, "table") && strcmp(format, "csv") && strcmp(format, "json")) {
		errmsg("compare: unknown format '%s' (table, csv or json)", format);
		return EXIT_USAGE;
	}
	nruns = argc - optind;
	if (nruns < 2 || nruns > MAX_RUNS) {
		errmsg("compare: give 2 to %d result files", MAX_RUNS);
		compare_usage(stderr);
		return EXIT_USAGE;
	}
	if (nlabels && nlabels != nruns) {
		errmsg("compare: %d labels for %d runs", nlabels, nruns);
		return EXIT_USAGE;
	}
	for (i = 0; i < nruns; i++) {
		if (load_run(argv[optind + i], &runs[i])) {
			while (i--)
				run_free(&runs[i]);
			return EXIT_SYSERR;
		}
	}
	if (nlabels)
		ret = compare_runs_labels(runs, nruns, labels, format, stdout, svg, allow);
	else
		ret = compare_runs(runs, nruns, format, stdout, svg, allow);
	for (i = 0; i < nruns; i++)
		run_free(&runs[i]);
	return ret;
}

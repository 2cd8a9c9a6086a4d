// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the migrc parsers and for compare, on the fixtures in
 * tests/fixtures.  Output is TAP version 13, one line per test; the exit
 * status is non-zero if any test failed.
 *
 * usage: test_parsers FIXTURE_DIR
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "../migrc.h"

static int ntests, nfailed;
static const char *fixdir = "fixtures";

static void ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	ntests++;
	if (!cond)
		nfailed++;
	printf("%sok %d - ", cond ? "" : "not ", ntests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static char *read_fixture(const char *name)
{
	char path[4096], err[ERRLEN];
	char *buf;

	snprintf(path, sizeof(path), "%s/%s", fixdir, name);
	buf = read_file(path, NULL, err, sizeof(err));
	if (!buf) {
		diag("cannot read fixture: %s", err);
		return xstrdup("");
	}
	return buf;
}

/* ---- /proc/interrupts ---- */

static bool irq_ok(const char *name, struct irq_snap *s)
{
	char err[ERRLEN] = "";
	char *buf = read_fixture(name);
	int ret = parse_interrupts(buf, s, err, sizeof(err));

	free(buf);
	if (ret)
		diag("%s: %s", name, err);
	return ret == 0;
}

static void irq_bad(const char *name, const char *expect)
{
	struct irq_snap s;
	char err[ERRLEN] = "";
	char *buf = read_fixture(name);
	int ret = parse_interrupts(buf, &s, err, sizeof(err));

	free(buf);
	ok(ret != 0 && strstr(err, expect), "interrupts: %s rejected (\"%s\")", name, err);
	if (!ret)
		irq_snap_free(&s);
}

static void test_interrupts(void)
{
	static const uint64_t v4[] = { 1364803, 1303670, 1333921, 1349607 };
	struct irq_snap a, b;
	uint64_t d[64];
	char err[ERRLEN] = "";

	ok(irq_ok("interrupts-x86-2cpu", &a) && a.ncpus == 2 && a.has_tlb &&
	   a.tlb[0] == 3264 && a.tlb[1] == 2273, "interrupts: x86 2 CPUs TLB values");
	irq_snap_free(&a);
	ok(irq_ok("interrupts-x86-4cpu", &a) && a.ncpus == 4 && a.has_tlb &&
	   !memcmp(a.tlb, v4, sizeof(v4)), "interrupts: x86 4 CPUs TLB values");
	ok(irq_ok("interrupts-x86-4cpu-after", &b) && !irq_delta(&a, &b, d, err, sizeof(err)) &&
	   d[0] == 100 && d[1] == 200 && d[2] == 300 && d[3] == 400,
	   "interrupts: per-CPU delta 4 CPUs");
	ok(irq_delta(&b, &a, d, err, sizeof(err)) && strstr(err, "backwards"),
	   "interrupts: counter going backwards is an error");
	irq_snap_free(&b);
	ok(irq_ok("interrupts-x86-4cpu-hotplug", &b) && b.ncpus == 3 && b.cpu_ids[2] == 3,
	   "interrupts: header with an offline CPU (CPU0 CPU1 CPU3)");
	ok(irq_delta(&a, &b, d, err, sizeof(err)) && strstr(err, "hotplug"),
	   "interrupts: CPU set change between snapshots is an error (\"%s\")", err);
	irq_snap_free(&a);
	irq_snap_free(&b);
	ok(irq_ok("interrupts-x86-64cpu", &a) && a.ncpus == 64 && a.cpu_ids[63] == 63 &&
	   a.tlb[0] == 125553646 && a.tlb[63] == 125553646 + 63000,
	   "interrupts: x86 64 CPUs TLB values");
	ok(irq_ok("interrupts-x86-64cpu-after", &b) && !irq_delta(&a, &b, d, err, sizeof(err)) &&
	   d[0] == 5 && d[63] == 635, "interrupts: per-CPU delta 64 CPUs");
	irq_snap_free(&a);
	irq_snap_free(&b);
	ok(irq_ok("interrupts-arm64-4cpu", &a) && a.ncpus == 4 && !a.has_tlb,
	   "interrupts: arm64 without a TLB line parses, has_tlb=false");
	irq_snap_free(&a);
	irq_bad("interrupts-truncated", "truncated");
	irq_bad("interrupts-tlb-short", "2 valid value");
	irq_bad("interrupts-tlb-garbage", "1 valid value");
	irq_bad("interrupts-tlb-long", "more values");
	irq_bad("interrupts-no-header", "header");
	irq_bad("interrupts-empty", "empty");
}

/* ---- /proc/vmstat ---- */

static bool vm_ok(const char *name, struct ctrlist *l)
{
	char err[ERRLEN] = "";
	char *buf = read_fixture(name);
	int ret = parse_vmstat(buf, l, err, sizeof(err));

	free(buf);
	if (ret)
		diag("%s: %s", name, err);
	return ret == 0;
}

static int64_t val(const struct ctrlist *l, const char *name)
{
	struct ctr *c = ctrlist_find(l, name);

	return c && c->valid ? c->val : -1;
}

static void vm_delta_case(const char *base, int want_n, const char *name, int64_t want)
{
	struct ctrlist a, b, d;
	char after[128], err[ERRLEN] = "";
	bool good;

	snprintf(after, sizeof(after), "%s-after", base);
	good = vm_ok(base, &a) && vm_ok(after, &b) && !vmstat_delta(&a, &b, &d, err, sizeof(err));
	ok(good && d.n == want_n && val(&d, name) == want &&
	   val(&d, "pgmigrate_success") == 4096 && val(&d, "pgdemote_kswapd") == 2048 &&
	   !ctrlist_find(&d, "pgfault"),
	   "vmstat: %s deltas (%d counters, %s=%lld)", base, good ? d.n : -1, name,
	   good ? (long long)val(&d, name) : -1LL);
	if (good)
		ctrlist_free(&d);
	ctrlist_free(&a);
	ctrlist_free(&b);
}

static void vm_bad(const char *name, const char *expect)
{
	struct ctrlist l;
	char err[ERRLEN] = "";
	char *buf = read_fixture(name);
	int ret = parse_vmstat(buf, &l, err, sizeof(err));

	free(buf);
	ok(ret != 0 && strstr(err, expect), "vmstat: %s rejected (\"%s\")", name, err);
}

static void test_vmstat(void)
{
	struct ctrlist a, b, d;
	char err[ERRLEN] = "";

	ok(vm_ok("vmstat-plain", &a) && a.n == 192 && val(&a, "pgmigrate_success") == 3210 &&
	   !ctrlist_find(&a, "nr_tlb_remote_flush"), "vmstat: plain sample (192 lines)");
	ctrlist_free(&a);
	ok(vm_ok("vmstat-migrc", &a) && a.n == 201 && val(&a, "nr_tlb_remote_flush") == 5000 &&
	   val(&a, "migrc_flushed") == 5600, "vmstat: sample with nr_tlb_* and migrc_*");
	ctrlist_free(&a);
	vm_delta_case("vmstat-plain", 20, "numa_hint_faults", 777);
	vm_delta_case("vmstat-tlbflush", 24, "nr_tlb_remote_flush_received", 750);
	vm_delta_case("vmstat-migrc", 29, "migrc_flush_skipped", 370);
	vm_delta_case("vmstat-migrc-only", 25, "migrc_deferred_pages", 4096);
	ok(vm_ok("vmstat-migrc", &a) && vm_ok("vmstat-migrc-after-missing", &b) &&
	   vmstat_delta(&a, &b, &d, err, sizeof(err)) && strstr(err, "migrc_flushed"),
	   "vmstat: counter disappearing between snapshots is an error (\"%s\")", err);
	ctrlist_free(&a);
	ctrlist_free(&b);
	vm_bad("vmstat-truncated", "truncated");
	vm_bad("vmstat-garbage", "pgmigrate_fail");
	vm_bad("vmstat-noval", "line");
	vm_bad("vmstat-dup", "duplicate");
	vm_bad("vmstat-empty", "empty");
	ok(vmstat_interesting("numa_hit") && vmstat_interesting("migrc_anything") &&
	   vmstat_interesting("nr_tlb_local_flush_one") &&
	   vmstat_interesting("pgpromote_success") &&
	   !vmstat_interesting("pgfault") && !vmstat_interesting("nr_free_pages") &&
	   !vmstat_interesting("thp_migration_success"), "vmstat: counter selection");
}

/* ---- /proc/stat, CPU lists ---- */

static void test_stat_cpulist(void)
{
	struct cpu_times t;
	char err[ERRLEN] = "";
	int *ids = NULL, n = 0;

	ok(!parse_proc_stat("cpu  12113 5 9721 42284 662 3 141 17 0 0\ncpu0 1 2 3\n", &t,
			    err, sizeof(err)) && t.user == 12118 && t.sys == 9865,
	   "stat: cpu line user=12118 sys=9865 ticks");
	ok(parse_proc_stat("cpu  12113 0 9721\n", &t, err, sizeof(err)) != 0,
	   "stat: short cpu line rejected (\"%s\")", err);
	ok(parse_proc_stat("intr 1 2 3\n", &t, err, sizeof(err)) != 0,
	   "stat: missing cpu line rejected");
	ok(!parse_cpu_list("0-3,8,10-11\n", &ids, &n, err, sizeof(err)) && n == 7 &&
	   ids[3] == 3 && ids[4] == 8 && ids[6] == 11, "cpulist: 0-3,8,10-11");
	free(ids);
	ok(!parse_cpu_list("0\n", &ids, &n, err, sizeof(err)) && n == 1 && ids[0] == 0,
	   "cpulist: single CPU");
	free(ids);
	ok(parse_cpu_list("3-1", &ids, &n, err, sizeof(err)) &&
	   parse_cpu_list("", &ids, &n, err, sizeof(err)) &&
	   parse_cpu_list("0,,1", &ids, &n, err, sizeof(err)) &&
	   parse_cpu_list("1,0", &ids, &n, err, sizeof(err)) &&
	   parse_cpu_list("x", &ids, &n, err, sizeof(err)), "cpulist: malformed lists rejected");
}

/* ---- event formats (libtraceevent) ---- */

static const char *fixpath(const char *name, char *buf, size_t len)
{
	char dir[4096];

	snprintf(buf, len, "%s/%s", realpath(fixdir, dir) ? dir : fixdir, name);
	return buf;
}

/* Parse a format file that is not in a tracing directory. */
static struct tep_event *parse_fixture(struct tep_handle *tep, const char *name,
				       const char *system)
{
	char err[ERRLEN] = "";
	char *buf = read_fixture(name);
	struct tep_event *ev = tp_parse(tep, buf, strlen(buf), system, err, sizeof(err));

	if (!ev)
		diag("%s: %s", name, err);
	free(buf);
	return ev;
}

static bool has_fields(struct tep_event *ev, const char *const *names)
{
	for (; *names; names++)
		if (!tep_find_field(ev, *names))
			return false;
	return true;
}

static void test_tpformat(void)
{
	static const char *const flush_fields[] = {
		"reason", "gen", "nr_cpus", "nr_skipped", "nr_pages", "age_us", NULL,
	};
	struct tp_sym syms[MAX_SYMS];
	char err[ERRLEN] = "", name[NAMELEN], path[8192];
	struct tep_format_field *f;
	struct tep_handle *tep;
	struct tep_event *ev;
	int n;

	tracefs_set_tracing_dir((char *)fixpath("tracefs-6.12", path, sizeof(path)));
	tep = tp_open(true, err, sizeof(err));
	ok(tep && tep_get_header_page_size(tep) == 8,
	   "format: ring buffer header from events/header_page (%s)", err);
	ev = tep ? tp_load(tep, "tlb", "tlb_flush", err, sizeof(err)) : NULL;
	ok(ev && ev->id == 188 && ev->format.nr_fields == 2 && ev->format.nr_common == 4 &&
	   tep_find_field(ev, "reason") && tep_find_field(ev, "pages") &&
	   !strcmp(ev->name, "tlb_flush") && !strcmp(ev->system, "tlb"),
	   "format: tlb_flush id and fields from the tracing directory (%s)", err);
	n = ev ? tp_symbols(ev, "reason", syms, MAX_SYMS) : -2;
	ok(n == 5 && syms[3].value == 3 && !strcmp(syms[3].str, "local mm shootdown") &&
	   syms[4].value == 4, "format: tlb_flush reasons from print fmt (%d)", n);
	ok(ev && tp_symbols(ev, "pages", syms, MAX_SYMS) == 0,
	   "format: field without __print_symbolic gives 0");
	ev = tep ? tp_load(tep, "migrc", "migrc_flush", err, sizeof(err)) : NULL;
	n = ev ? tp_symbols(ev, "reason", syms, MAX_SYMS) : -2;
	ok(ev && ev->id == 1502 && has_fields(ev, flush_fields) && n == 5 &&
	   !strcmp(tp_sym_str(syms, n, 0, name, sizeof(name)), "alloc") &&
	   !strcmp(tp_sym_str(syms, n, 4, name, sizeof(name)), "other") &&
	   !strcmp(tp_sym_str(syms, n, 9, name, sizeof(name)), "0x9"),
	   "format: migrc_flush fields and reason names (%d)", n);
	ok(tep && !tp_load(tep, "migrc", "no_such_event", err, sizeof(err)) &&
	   strstr(err, "not available"), "format: missing event reported (\"%s\")", err);
	tep_free(tep);

	tep = tp_open(false, err, sizeof(err));
	ev = parse_fixture(tep, "tlb_flush-format-6.18", "tlb");
	ok(ev && tp_symbols(ev, "reason", syms, MAX_SYMS) == 6 &&
	   !strcmp(tlb_reason_name(syms[3].str, name, sizeof(name)), "TLB_LOCAL_MM_SHOOTDOWN") &&
	   !strcmp(tlb_reason_name(syms[5].str, name, sizeof(name)), "TLB_REMOTE_WRONG_CPU"),
	   "format: newer kernel, 6 reasons, names mapped (%s)", name);
	tep_free(tep);
	ok(!strcmp(tlb_reason_name("remote ipi send", name, sizeof(name)), "TLB_REMOTE_SEND_IPI") &&
	   !strcmp(tlb_reason_name("flush on task switch", name, sizeof(name)),
		   "TLB_FLUSH_ON_TASK_SWITCH"), "format: reason strings map to enum names");
	tep = tp_open(false, err, sizeof(err));
	ev = parse_fixture(tep, "tlb_flush-format-enum", "tlb");
	ok(ev && tp_symbols(ev, "reason", syms, MAX_SYMS) == -1,
	   "format: unresolved enum names detected (fallback needed)");
	tep_free(tep);
	tep = tp_open(false, err, sizeof(err));
	ev = parse_fixture(tep, "migrc_flush-format-string", "migrc");
	f = ev ? tep_find_field(ev, "reason") : NULL;
	ok(f && (f->flags & TEP_FIELD_IS_DYNAMIC) && (f->flags & TEP_FIELD_IS_STRING) &&
	   tep_find_field(ev, "comm") && (tep_find_field(ev, "comm")->flags & TEP_FIELD_IS_ARRAY) &&
	   tep_find_field(ev, "age_us") && tp_symbols(ev, "reason", syms, MAX_SYMS) == 0,
	   "format: migrc_flush with a string reason (__data_loc, arrays)");
	ok(!tp_parse(tep, "name: x\nID: 12\n", 14, "x", err, sizeof(err)),
	   "format: file without fields rejected (\"%s\")", err);
	ok(!tp_parse(tep, "ID: abc\n\tfield:int a;\n", 21, "x", err, sizeof(err)),
	   "format: malformed ID rejected (\"%s\")", err);
	tep_free(tep);
	tracefs_set_tracing_dir(NULL);
}

/* ---- JSON ---- */

static void json_bad(const char *text, const char *what)
{
	char err[ERRLEN] = "";
	struct jval *v = json_parse(text, err, sizeof(err));

	ok(!v && strstr(err, "invalid JSON"), "json: rejects %s (\"%s\")", what, err);
	json_free(v);
}

static void test_json(void)
{
	static const char doc[] = {
		" {\"a\": [1, -2, 3.5e2, 119001107892], \"s\": \"x\\\"\\u00e9\\n\", \"t\": true, \"n\": null, \"o\": {}} "
	};
	char err[ERRLEN] = "", deep[300];
	struct jval *v, *a;

	v = json_parse(doc, err, sizeof(err));
	a = json_get(v, "a");
	ok(v && a && a->n == 4 && a->kids[0]->is_int && a->kids[1]->i == -2 &&
	   !a->kids[2]->is_int && a->kids[2]->num == 350 && a->kids[3]->i == 119001107892LL &&
	   !strcmp(json_get(v, "s")->str, "x\"\xc3\xa9\n") && json_get(v, "t")->b &&
	   json_get(v, "n")->type == J_NULL && json_get(v, "o")->n == 0,
	   "json: values, escapes, exact 64-bit integers");
	json_free(v);
	json_bad("{\"a\": 1,}", "trailing comma");
	json_bad("{\"a\": \"abc", "unterminated string");
	json_bad("[01]", "leading zero");
	json_bad("{\"a\" 1}", "missing colon");
	json_bad("", "empty input");
	json_bad("[1] x", "trailing garbage");
	json_bad("[\"\\x\"]", "bad escape");
	json_bad("[\"a\tb\"]", "raw control character");
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = '\0';
	json_bad(deep, "nesting deeper than 64");
}

static bool load(const char *name, struct run *r, char *err, size_t errlen)
{
	char *buf = read_fixture(name);
	int ret = run_from_json(buf, r, err, errlen);

	free(buf);
	return ret == 0;
}

static void run_bad(const char *name, const char *expect)
{
	char err[ERRLEN] = "";
	struct run r;

	ok(!load(name, &r, err, sizeof(err)) && strstr(err, expect),
	   "result: %s rejected (\"%s\")", name, err);
}

static void test_results(void)
{
	char err[ERRLEN] = "";
	struct run r, r2;
	char *s;

	ok(load("run-before.json", &r, err, sizeof(err)) && r.ncpus == 16 &&
	   r.tlb_total == 21430968 && r.per_cpu[15] == 1340971 && r.has_flush &&
	   val(&r.flush, "total") == 1357543886 &&
	   val(&r.hw, "dTLB-load-misses") == 119001107892LL &&
	   val(&r.vmstat, "pgmigrate_success") == 1000000 && fabs(r.wall_s - 968.783) < 1.0 / 1e9 &&
	   r.command.n == 5 && !strcmp(r.label, "BEFORE"), "result: valid file loads exactly");
	s = run_to_json(&r);
	ok(!run_from_json(s, &r2, err, sizeof(err)) && r2.tlb_total == r.tlb_total &&
	   r2.ncpus == 16 && val(&r2.hw, "iTLB-load-misses") == 1355272118 &&
	   r2.flush.n == r.flush.n && !strcmp(r2.cmdline, r.cmdline),
	   "result: JSON write/read round trip");
	free(s);
	run_free(&r2);
	run_free(&r);
	ok(load("run-nulls.json", &r, err, sizeof(err)) && !r.has_tlb && !r.has_flush &&
	   r.hw.n == 3 && !r.hw.v[0].valid && r.absent.n == 1,
	   "result: null sections load as absent");
	run_free(&r);
	run_bad("run-invalid.json", "line");
	run_bad("run-truncated.json", "invalid JSON");
	run_bad("run-empty.json", "invalid JSON");
	run_bad("run-not-migrc.json", "not a migrc result");
	run_bad("run-version2.json", "version 2");
	run_bad("run-bad-total.json", "add up");
	run_bad("run-bad-ncpus.json", "ncpus");
	run_bad("run-bad-type.json", "pgmigrate_success");
}

/* ---- compare ---- */

static char *compare_to_string(struct run *runs, int n, const char *fmt, const char *svg,
			       int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*ret = compare_runs(runs, n, fmt, f, svg, false);
	fclose(f);
	return buf;
}

static void test_compare(void)
{
	char err[ERRLEN] = "", svg[] = "/tmp/migrc-test-XXXXXX";
	struct run runs[3];
	char *out, *s;
	struct jval *v;
	int ret, fd;

	if (!load("run-before.json", &runs[0], err, sizeof(err)) ||
	    !load("run-after.json", &runs[1], err, sizeof(err)) ||
	    !load("run-64cpu.json", &runs[2], err, sizeof(err)))
		diag("cannot load compare fixtures: %s", err);
	out = compare_to_string(runs, 2, "csv", NULL, &ret);
	ok(ret == 0 &&
	   strstr(out, "\nTLB shootdowns (/proc/interrupts),total,21430968,1851680,91.36\n") &&
	   strstr(out, "\nTLB shootdowns (/proc/interrupts),CPU0,1364803,117257,91.41\n") &&
	   strstr(out, "\ntlb:tlb_flush events by reason,total,1357543886,69175002,94.90\n") &&
	   strstr(out, "\n/proc/vmstat,migrc_deferred,,99000,\n") &&
	   strstr(out, "\nruntime,wall_s,968.783,913.210,5.74\n"),
	   "compare: csv rows and reductions exact");
	free(out);
	out = compare_to_string(runs, 2, "table", NULL, &ret);
	ok(ret == 0 && strstr(out, "BEFORE") && strstr(out, "AFTER") && strstr(out, "91.36%") &&
	   strstr(out, "dTLB-load-misses") && strstr(out, "1.17%"),
	   "compare: table has labels and reductions");
	free(out);
	out = compare_to_string(runs, 2, "json", NULL, &ret);
	v = json_parse(out, err, sizeof(err));
	ok(ret == 0 && v && json_get(v, "rows") && json_get(v, "rows")->n > 16 &&
	   !strcmp(json_get(v, "kind")->str, "compare"), "compare: json output parses");
	json_free(v);
	free(out);
	fd = mkstemp(svg);
	close(fd);
	out = compare_to_string(runs, 3, "table", svg, &ret);
	ok(ret == EXIT_MISMATCH && strstr(out, "CPU COUNT MISMATCH") && strstr(out, "CPU63"),
	   "compare: 16 vs 64 CPUs warns and exits %d", EXIT_MISMATCH);
	free(out);
	s = read_file(svg, NULL, err, sizeof(err));
	ok(s && !strncmp(s, "<svg", 4) && strstr(s, "</svg>\n") &&
	   strlen(strstr(s, "</svg>\n")) == 7 && strstr(s, "AFTER-64") &&
	   strstr(s, "TLB shootdowns per CPU"), "compare: svg is well formed and labelled");
	free(s);
	unlink(svg);
	run_free(&runs[0]);
	run_free(&runs[1]);
	run_free(&runs[2]);
}

/* ---- shootdown sources ---- */

static void feed(struct src_state *s, enum src_ev type, int pid, long arg, const char *name)
{
	struct src_event e = { .type = type, .pid = pid, .cpu = pid ? 0 : 1,
			       .arg = arg, .name = name };

	if (type == SRC_RECV)
		e.cpu = arg;
	src_feed(s, &e);
}

static void seed_tasks(struct src_state *s)
{
	src_set_task(s, 100, "munmap-loop", false);
	src_set_task(s, 200, "kswapd0", true);
	src_set_task(s, 300, "kworker/0:1", true);
	src_set_task(s, 400, "reader", false);
	src_set_task(s, 500, "kdamond.0", true);
}

/* Every context the attribution tells apart, one after the other. */
static void feed_contexts(struct src_state *s)
{
	feed(s, SRC_SYS_ENTER, 100, SYS_munmap, NULL);
	feed(s, SRC_SEND, 100, 0, NULL);
	feed(s, SRC_SYS_EXIT, 100, 0, NULL);
	feed(s, SRC_SYS_ENTER, 100, SYS_move_pages, NULL);
	feed(s, SRC_MIG_START, 100, 0, "syscall_or_cpuset");
	feed(s, SRC_SEND, 100, 0, NULL);
	feed(s, SRC_MIG_END, 100, 0, NULL);
	feed(s, SRC_SYS_EXIT, 100, 0, NULL);
	feed(s, SRC_MIG_START, 200, 0, "demotion");
	feed(s, SRC_SEND, 200, 0, NULL);
	feed(s, SRC_LOCAL, 200, 0, NULL);
	feed(s, SRC_MIG_END, 200, 0, NULL);
	feed(s, SRC_SEND, 200, 0, NULL);		/* kswapd itself */
	feed(s, SRC_SEND, 400, 0, NULL);		/* outside a syscall */
	feed(s, SRC_MIG_START, 400, 0, "numa_misplaced");
	feed(s, SRC_SEND, 400, 0, NULL);
	feed(s, SRC_MIG_END, 400, 0, NULL);
	feed(s, SRC_SEND, 300, 0, NULL);
	feed(s, SRC_LOCAL, 300, 0, NULL);
	feed(s, SRC_MIGRC_FLUSH, 300, 2, "alloc");	/* migrc's own */
	feed(s, SRC_SEND, 300, 0, NULL);
	feed(s, SRC_MIGRC_FLUSH, 300, 0, "timeout");	/* targeted none: not its */
	feed(s, SRC_SEND, 300, 0, NULL);
	feed(s, SRC_LOCAL, 300, 0, NULL);
	feed(s, SRC_LOCAL, 300, 0, NULL);
	feed(s, SRC_MIGRC_FLUSH, 300, 1, "write");	/* two locals: not its */
	feed(s, SRC_SYS_ENTER, 100, SYS_write, NULL);
	feed(s, SRC_RECLAIM_BEGIN, 100, 0, NULL);
	feed(s, SRC_SEND, 100, 0, NULL);
	feed(s, SRC_RECLAIM_END, 100, 0, NULL);
	feed(s, SRC_SYS_EXIT, 100, 0, NULL);
	feed(s, SRC_SEND, 500, 0, NULL);
	feed(s, SRC_MIG_START, 500, 0, "damon");
	feed(s, SRC_SEND, 500, 0, NULL);
	feed(s, SRC_MIG_END, 500, 0, NULL);
	feed(s, SRC_SEND, 0, 0, NULL);			/* the idle task */
	feed(s, SRC_RECV, 400, 3, NULL);
	feed(s, SRC_RECV, 100, 3, NULL);
	feed(s, SRC_RECV, 0, 0, NULL);
	feed(s, SRC_SYS_ENTER, 100, 9999, NULL);
	feed(s, SRC_SEND, 100, 0, NULL);
	feed(s, SRC_SYS_EXIT, 100, 0, NULL);
	feed(s, SRC_SYS_ENTER, 100, SYS_mprotect, NULL);
	feed(s, SRC_SEND, 100, 0, NULL);		/* settled at the end */
}

static void test_sources(void)
{
	struct src_result res;
	struct src_state s;
	char buf[NAMELEN];

	src_init(&s, true);
	seed_tasks(&s);
	feed_contexts(&s);
	memset(&res, 0, sizeof(res));
	src_finish(&s, &res);
	ok(val(&res.sends, "munmap") == 1 && val(&res.sends, "mprotect") == 1 &&
	   val(&res.sends, "syscall:9999") == 1,
	   "sources: syscalls by number, munmap and mprotect by name");
	ok(val(&res.sends, "migration_other") == 1 && val(&res.sends, "demotion") == 1 &&
	   val(&res.sends, "promotion") == 1 && val(&res.sends, "damon") == 2,
	   "sources: migrate_pages() by MR_ reason, kdamond as damon");
	ok(val(&res.sends, "reclaim") == 2 && val(&res.sends, "numa_scan_fault") == 1,
	   "sources: reclaim bracket and kswapd, a user task outside a syscall");
	ok(val(&res.sends, "migrc:alloc") == 1 && !ctrlist_find(&res.sends, "migrc:timeout") &&
	   !ctrlist_find(&res.sends, "migrc:write") && val(&res.sends, "other") == 3,
	   "sources: migrc's flush only right after its send, with CPUs targeted");
	ok(val(&res.sends, "total") == 15 && res.nrecv == 4 && res.recv[3] == 2 &&
	   res.recv[0] == 1 && res.recv_total == 3,
	   "sources: total and received per CPU (%lld)", (long long)val(&res.sends, "total"));
	src_result_free(&res);
	src_state_free(&s);

	src_init(&s, false);
	seed_tasks(&s);
	setenv("MIGRC_PROC", "/nonexistent", 1);	/* pid 77 is gone */
	feed(&s, SRC_SEND, 400, 0, NULL);
	feed(&s, SRC_SEND, 77, 0, NULL);		/* never in a syscall */
	src_finish(&s, &res);
	unsetenv("MIGRC_PROC");
	ok(val(&s.sends, "user") == 1 && val(&res.sends, "other") == 1 &&
	   val(&res.sends, "numa_scan_fault") == 0,
	   "sources: without syscall events a user task's send is \"user\"");
	src_result_free(&res);
	src_state_free(&s);
	ok(!strcmp(src_migrate_source("compaction"), "migration_other") &&
	   !strcmp(src_migrate_source(NULL), "migration_other") &&
	   !strcmp(src_syscall_source(SYS_madvise, buf, sizeof(buf)), "madvise") &&
	   !strcmp(src_syscall_source(SYS_mremap, buf, sizeof(buf)), "syscall:mremap"),
	   "sources: names of MR_ reasons and syscalls");
}

static void add_sources(struct run *r, int64_t demotion, int64_t migrc)
{
	src_result_free(&r->src);
	ctrlist_init(&r->src.sends);
	ctrlist_add(&r->src.sends, "demotion", demotion, true);
	ctrlist_add(&r->src.sends, "migrc:alloc", migrc, true);
	ctrlist_add(&r->src.sends, "total", demotion + migrc, true);
	r->src.recv = xcalloc(2, sizeof(uint64_t));
	r->src.nrecv = 2;
	r->src.recv[1] = 7;
	r->src.recv_total = 7;
	strlist_add(&r->src.notes, "a note");
	r->want_sources = r->has_sources = true;
}

static void test_sources_results(void)
{
	char err[ERRLEN] = "";
	struct run runs[2], back;
	char *s, *out;
	int ret;

	if (!load("run-before.json", &runs[0], err, sizeof(err)) ||
	    !load("run-after.json", &runs[1], err, sizeof(err)))
		diag("cannot load fixtures: %s", err);
	add_sources(&runs[0], 100, 0);
	add_sources(&runs[1], 20, 5);
	s = run_to_json(&runs[1]);
	ok(!run_from_json(s, &back, err, sizeof(err)) && back.has_sources &&
	   val(&back.src.sends, "migrc:alloc") == 5 && val(&back.src.sends, "total") == 25 &&
	   back.src.nrecv == 16 && back.src.recv[1] == 7 && back.src.recv_total == 7 &&
	   back.src.notes.n == 1, "sources: JSON round trip (%s)", err);
	run_free(&back);
	free(s);
	out = compare_to_string(runs, 2, "csv", NULL, &ret);
	ok(ret == 0 && strstr(out, "\nshootdown sources (IPI sends),demotion,100,20,80.00\n") &&
	   strstr(out, "\nshootdown sources (IPI sends),migrc:alloc,0,5,\n") &&
	   strstr(out, "\nshootdown sources (IPI sends),total,100,25,75.00\n") &&
	   strstr(out, "received (remote shootdown),7,7,0.00\n"),
	   "sources: compare puts them side by side");
	free(out);
	runs[1].has_sources = false;
	out = compare_to_string(runs, 2, "table", NULL, &ret);
	ok(ret == 0 && strstr(out, "shootdown sources") && strstr(out, "demotion"),
	   "sources: compare with one run without them");
	free(out);
	run_free(&runs[0]);
	run_free(&runs[1]);
	ok(!run_from_json("{\"tool\": \"migrc\", \"version\": 1, \"ncpus\": 1, \"vmstat\": {},"
			  " \"hw\": {}, \"sources\": {\"sends\": {\"a\": 1, \"total\": 2},"
			  " \"received\": {\"per_cpu\": [], \"total\": 0}}}",
			  &back, err, sizeof(err)) == false && strstr(err, "add up"),
	   "sources: inconsistent total rejected (\"%s\")", err);
}

/* ---- trace ---- */

static void test_trace(void)
{
	static const char *const lines[] = {	/* tracefs "trace", "trace-cmd report" */
		"    llama-1234  [002] d..1.  100.001000: migrc_flush: reason=alloc gen=7 nr_cpus=3 nr_pages=512 age_us=0",
		"      llama-1234  [002]   200.000001: migrc_flush:          reason=\"page cache write\" age_us=70000",
	};
	struct trace_kv kv[16];
	struct trace_stats st;
	char ev[NAMELEN];
	char *buf, *line, *save = NULL;
	int n;

	n = parse_trace_line(lines[0], ev, sizeof(ev), kv, 16);
	ok(n == 5 && !strcmp(ev, "migrc_flush") && !strcmp(kv[0].val, "alloc") &&
	   !strcmp(kv[4].key, "age_us"), "trace: tracefs line parsed (%d fields)", n);
	n = parse_trace_line(lines[1], ev, sizeof(ev), kv, 16);
	ok(n == 2 && !strcmp(kv[0].val, "page cache write") && !strcmp(kv[1].val, "70000"),
	   "trace: trace-cmd report line with quoted value");
	ok(parse_trace_line("# tracer: nop", ev, sizeof(ev), kv, 16) < 0 &&
	   parse_trace_line("garbage: x=1", ev, sizeof(ev), kv, 16) < 0,
	   "trace: comments and garbage are not events");
	ok(age_bucket(0) == 0 && age_bucket(1) == 1 && age_bucket(3) == 2 && age_bucket(4) == 3 &&
	   age_bucket(1023) == 10 && age_bucket(1024) == 11 &&
	   age_bucket(UINT64_MAX) == NR_AGE_BUCKETS - 1, "trace: log2 buckets");
	memset(&st, 0, sizeof(st));
	buf = read_fixture("trace-migrc.txt");
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		trace_account_line(&st, line);
	free(buf);
	ok(st.defer_events == 2 && st.defer_pages == 1024 && st.flush_events == 6 &&
	   st.flush_pages == 656 && st.unparsed == 1, "trace: event and page counts");
	ok(st.nreasons == 4 && !strcmp(st.reasons[0].name, "alloc") && st.reasons[0].count == 3 &&
	   st.reasons[0].pages == 642 && !strcmp(st.reasons[3].name, "page cache write"),
	   "trace: flush reasons");
	ok(st.age_count[0] == 1 && st.age_count[1] == 1 && st.age_count[2] == 1 &&
	   st.age_count[10] == 2 && st.age_count[11] == 1 && st.age_pages[10] == 32,
	   "trace: age histogram");
}

/* ---- medians ---- */

static uint64_t median_of(const uint64_t *v, int n)
{
	struct samples s = { 0 };
	uint64_t m = 12345;
	int i;

	for (i = 0; i < n; i++)
		samples_add(&s, v[i]);
	if (!samples_median(&s, &m))
		m = 12345;
	samples_free(&s);
	return m;
}

static void test_samples(void)
{
	static const uint64_t odd[] = { 50, 10, 30 }, even[] = { 40, 10, 30, 20 };
	static const uint64_t two[] = { 1, 2 }, big[] = { UINT64_MAX, UINT64_MAX - 2 };
	struct samples s = { 0 };
	bool in_range = true, has;
	uint64_t m = 0, i;

	ok(!samples_median(&s, &m) && samples_exact(&s), "samples: no value, no median");
	ok(median_of(odd, 3) == 30 && median_of(even, 4) == 25,
	   "samples: median of an odd and an even count");
	ok(median_of(two, 2) == 1 && median_of(big, 2) == UINT64_MAX - 1,
	   "samples: mean of the middle two rounded down, without overflow");
	for (i = 0; i < SAMPLES_MAX; i++)
		samples_add(&s, i);
	has = samples_median(&s, &m);
	ok(samples_exact(&s) && s.n == SAMPLES_MAX && has && m == SAMPLES_MAX / 2 - 1,
	   "samples: exact up to %u values (median %llu)",
	   SAMPLES_MAX, (unsigned long long)m);
	samples_add(&s, 0);
	ok(!samples_exact(&s) && s.n == SAMPLES_MAX && s.cap == SAMPLES_MAX &&
	   s.seen == SAMPLES_MAX + 1ULL, "samples: bounded past %u values", SAMPLES_MAX);
	samples_free(&s);
	s.max = 16;
	for (i = 1; i <= 1000; i++)
		samples_add(&s, i);
	for (i = 0; i < s.n; i++)
		in_range &= s.v[i] >= 1 && s.v[i] <= 1000;
	has = samples_median(&s, &m);
	ok(s.n == 16 && s.cap == 16 && s.seen == 1000 && in_range && has &&
	   m > 16 && m < 1000,
	   "samples: a reservoir of 16 of 1000 values, median estimated (%llu)",
	   (unsigned long long)m);
	samples_free(&s);
}

/* ---- migration batches (mm_migrate_batch) ---- */

static bool phases_are(const uint64_t *ns, uint64_t unmap, uint64_t flush, uint64_t copy,
		       uint64_t move)
{
	return ns[BATCH_UNMAP] == unmap && ns[BATCH_FLUSH] == flush && ns[BATCH_COPY] == copy &&
	       ns[BATCH_MOVE] == move;
}

static bool totals_are(const struct batch_totals *t, uint64_t batches, uint64_t folios,
		       uint64_t moved, uint64_t bytes)
{
	return t->batches == batches && t->folios == folios && t->moved == moved &&
	       t->bytes == bytes;
}

static void account_text(struct trace_stats *st, char *buf)
{
	char *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		trace_account_line(st, line);
}

static void test_batches(void)
{
	static const char *const bad[] = {
		"  x-1 [000] ...1.  1.000001: mm_migrate_batch: reason=demotion nr_folios=1",
		"  x-1 [000] ...1.  1.000002: mm_migrate_batch: reason= nr_folios=1 nr_moved=1 bytes=1 batch_copied=0 unmap_ns=1 flush_ns=1 copy_ns=1 move_ns=1 first_usable_ns=1",
		"  x-1 [000] ...1.  1.000003: mm_migrate_batch: reason=demotion nr_folios=1 nr_moved=1 bytes=1 batch_copied=0 unmap_ns=1 flush_ns=1 copy_ns=1 move_ns=-1 first_usable_ns=1",
		"  x-1 [000] ...1.  1.000004: mm_migrate_batch: reason=demotion nr_folios=1 nr_moved=1 bytes=1 batch_copied=0 unmap_ns=99999999999999999999 flush_ns=1 copy_ns=1 move_ns=1 first_usable_ns=1",
		"  x-1 [000] ...1.  1.000005: mm_migrate_batch:",
	};
	const struct batch_stats *b;
	struct batch_medians m;
	struct trace_stats st;
	char *buf;
	size_t i;

	memset(&st, 0, sizeof(st));
	buf = read_fixture("trace-batch.txt");
	account_text(&st, buf);
	free(buf);
	b = &st.batch;
	ok(totals_are(&b->all, 6, 523, 520, 4222976) && b->copied == 3 && b->skipped == 4 &&
	   st.flush_events == 1 && st.unparsed == 0,
	   "batches: counts, batched copies, malformed lines skipped (%llu)",
	   (unsigned long long)b->skipped);
	ok(phases_are(b->all.phase_ns, 1100000, 70000, 1724700, 468000),
	   "batches: phase totals");
	batch_medians(b, &m);
	ok(m.exact && m.has_phase && phases_are(m.phase_ns, 35000, 7500, 11000, 37500),
	   "batches: exact phase medians");
	ok(m.has_first_usable && m.first_usable_ns == 70000 && b->first_usable_max == 2400000 &&
	   b->first_usable.seen == 5, "batches: first usable median and max, nr_moved=0 left out");
	ok(b->size_count[1] == 2 && b->size_count[2] == 2 && b->size_count[3] == 1 &&
	   b->size_count[10] == 1 && batch_bucket(0) == 0 && batch_bucket(UINT32_MAX) == 32 &&
	   batch_bucket(UINT64_MAX) == NR_BATCH_BUCKETS - 1, "batches: size histogram");
	ok(b->nreasons == 4 && !strcmp(b->reasons[0].name, "demotion") &&
	   totals_are(&b->reasons[0].t, 2, 5, 5, 2113536) &&
	   phases_are(b->reasons[0].t.phase_ns, 140000, 30000, 502000, 140000) &&
	   !strcmp(b->reasons[1].name, "numa_misplaced") &&
	   totals_are(&b->reasons[1].t, 2, 5, 2, 8192) &&
	   !strcmp(b->reasons[2].name, "syscall_or_cpuset") &&
	   !strcmp(b->reasons[3].name, "compaction") &&
	   phases_are(b->reasons[3].t.phase_ns, 5000, 1000, 1700, 7000),
	   "batches: per reason");
	trace_stats_free(&st);

	memset(&st, 0, sizeof(st));
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		trace_account_line(&st, bad[i]);
	batch_medians(&st.batch, &m);
	ok(st.batch.skipped == ARRAY_SIZE(bad) && !st.batch.all.batches && !st.batch.nreasons &&
	   !m.has_phase && !m.has_first_usable && st.unparsed == 0,
	   "batches: lines missing a field or with a bad number are skipped");
	trace_stats_free(&st);
}

/* ---- trace records (libtraceevent) ---- */

struct rec_buf {
	unsigned char data[96];
	struct tep_record rec;
};

static void put(struct rec_buf *r, int off, uint64_t v, int size)
{
	memcpy(r->data + off, &v, size);	/* little endian, as the host */
}

static struct tep_record *flush_rec(struct rec_buf *r, int reason, uint64_t pages,
				    unsigned int cpus, uint64_t age, uint64_t ts)
{
	memset(r, 0, sizeof(*r));
	put(r, 0, 1502, 2);			/* common_type: migrc_flush */
	put(r, 4, 1234, 4);			/* common_pid */
	put(r, 8, (uint32_t)reason, 4);
	put(r, 16, 7, 8);			/* gen */
	put(r, 24, cpus, 4);
	put(r, 28, 1, 4);			/* nr_skipped */
	put(r, 32, pages, 8);
	put(r, 40, age, 8);
	r->rec.data = r->data;
	r->rec.size = 48;
	r->rec.ts = ts;
	r->rec.cpu = 2;
	return &r->rec;
}

static struct tep_record *defer_rec(struct rec_buf *r, uint64_t pages, uint64_t ts)
{
	memset(r, 0, sizeof(*r));
	put(r, 0, 1501, 2);			/* common_type: migrc_defer */
	put(r, 4, 52, 4);
	put(r, 8, 8, 8);			/* gen */
	put(r, 16, pages, 8);
	put(r, 24, 2, 4);			/* nr_cpus */
	put(r, 28, 3, 4);			/* reason (migrate_reason) */
	r->rec.data = r->data;
	r->rec.size = 32;
	r->rec.ts = ts;
	return &r->rec;
}

struct batch_vals {
	int reason;
	uint32_t folios, moved, copied;
	uint64_t bytes, unmap, flush, copy, move, first;
};

/* A mm_migrate_batch record, laid out as tracefs-6.12's format says. */
static struct tep_record *batch_rec(struct rec_buf *r, const struct batch_vals *v)
{
	memset(r, 0, sizeof(*r));
	put(r, 0, 1520, 2);			/* common_type: mm_migrate_batch */
	put(r, 4, 80, 4);
	put(r, 8, v->unmap, 8);
	put(r, 16, v->flush, 8);
	put(r, 24, v->copy, 8);
	put(r, 32, v->move, 8);
	put(r, 40, v->first, 8);
	put(r, 48, v->bytes, 8);
	put(r, 56, (uint32_t)v->reason, 4);
	put(r, 60, v->folios, 4);
	put(r, 64, v->moved, 4);
	put(r, 68, v->copied, 4);
	r->rec.data = r->data;
	r->rec.size = 72;
	r->rec.ts = 300000000000ULL;
	return &r->rec;
}

static bool same_batches(const struct batch_stats *a, const struct batch_stats *b)
{
	int i;

	if (memcmp(&a->all, &b->all, sizeof(a->all)) || a->copied != b->copied ||
	    a->skipped != b->skipped || a->first_usable_max != b->first_usable_max ||
	    memcmp(a->size_count, b->size_count, sizeof(a->size_count)) ||
	    a->nreasons != b->nreasons)
		return false;
	for (i = 0; i < a->nreasons; i++)
		if (strcmp(a->reasons[i].name, b->reasons[i].name) ||
		    memcmp(&a->reasons[i].t, &b->reasons[i].t, sizeof(a->reasons[i].t)))
			return false;
	return true;
}

static bool same_stats(const struct trace_stats *a, const struct trace_stats *b)
{
	int i;

	if (a->defer_events != b->defer_events || a->defer_pages != b->defer_pages ||
	    a->flush_events != b->flush_events || a->flush_pages != b->flush_pages ||
	    a->no_age != b->no_age || a->nreasons != b->nreasons ||
	    memcmp(a->age_count, b->age_count, sizeof(a->age_count)) ||
	    memcmp(a->age_pages, b->age_pages, sizeof(a->age_pages)))
		return false;
	for (i = 0; i < a->nreasons; i++)
		if (strcmp(a->reasons[i].name, b->reasons[i].name) ||
		    a->reasons[i].count != b->reasons[i].count ||
		    a->reasons[i].pages != b->reasons[i].pages ||
		    a->reasons[i].cpus != b->reasons[i].cpus)
			return false;
	return same_batches(&a->batch, &b->batch);
}

/* The format of an older mm_migrate_batch, without first_usable_ns. */
static const char old_batch_format[] =
	"name: mm_migrate_batch\nID: 1520\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
	"\tfield:int reason;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned int nr_folios;\toffset:12;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int nr_moved;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long bytes;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int batch_copied;\toffset:32;\tsize:4;\tsigned:0;\n"
	"\tfield:u64 unmap_ns;\toffset:40;\tsize:8;\tsigned:0;\n"
	"\tfield:u64 flush_ns;\toffset:48;\tsize:8;\tsigned:0;\n"
	"\tfield:u64 copy_ns;\toffset:56;\tsize:8;\tsigned:0;\n"
	"\tfield:u64 move_ns;\toffset:64;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"reason=%d nr_folios=%u\", REC->reason, REC->nr_folios\n";

static void test_batch_records(void)
{
	static const struct batch_vals v[] = {
		{ 8, 1, 1, 1, 2097152, 100000, 20000, 500000, 80000, 700000 },
		{ 5, 3, 0, 0, 0, 25000, 4000, 1000, 6000, 0 },
		{ 8, 4, 4, 0, 16384, 40000, 10000, 2000, 60000, 60000 },
		{ 12, 512, 512, 512, 2097152, 900000, 30000, 1200000, 300000, 2400000 },
	};
	struct trace_stats st, back;
	struct trace_events te;
	struct rec_buf rb;
	struct tep_handle *tep;
	struct trace_seq seq;
	struct batch_medians m;
	char err[ERRLEN] = "", path[8192];
	const struct batch_stats *b = &st.batch;
	size_t i;

	memset(&st, 0, sizeof(st));
	memset(&back, 0, sizeof(back));
	tracefs_set_tracing_dir((char *)fixpath("tracefs-6.12", path, sizeof(path)));
	tep = tp_open(true, err, sizeof(err));
	if (!tep || !tp_load(tep, "migrate", "mm_migrate_batch", err, sizeof(err)))
		diag("batch records: %s", err);
	trace_events_init(&te, tep);
	ok(te.batch && te.batch_nsyms == 10 && !te.flush &&
	   !strcmp(te.batch_fields[BF_COPIED]->name, "batch_copied"),
	   "batch records: event, fields and the MIGRATE_REASON names found (%d)",
	   te.batch_nsyms);
	trace_seq_init(&seq);
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		struct tep_record *rec = batch_rec(&rb, &v[i]);
		struct tep_event *ev = tep_find_event_by_record(tep, rec);

		trace_account_record(&st, &te, ev, rec);
		trace_record_text(&seq, ev, rec);
	}
	trace_seq_terminate(&seq);
	batch_medians(b, &m);
	ok(totals_are(&b->all, 4, 520, 517, 4210688) && b->copied == 2 && !b->skipped &&
	   phases_are(b->all.phase_ns, 1065000, 64000, 1703000, 446000) &&
	   b->first_usable_max == 2400000 && m.first_usable_ns == 700000 &&
	   phases_are(m.phase_ns, 70000, 15000, 251000, 70000),
	   "batch records: totals and medians from the fields");
	ok(b->nreasons == 3 && !strcmp(b->reasons[0].name, "demotion") &&
	   b->reasons[0].t.batches == 2 && !strcmp(b->reasons[1].name, "numa_misplaced") &&
	   !strcmp(b->reasons[2].name, "0xc"),
	   "batch records: reasons named from __print_symbolic(), else the number (%s)",
	   b->nreasons > 2 ? b->reasons[2].name : "");
	account_text(&back, seq.buffer);
	ok(same_batches(&st.batch, &back.batch) && back.unparsed == 0 && !back.batch.skipped,
	   "batch records: text written for -o reads back the same");
	trace_seq_destroy(&seq);
	trace_stats_free(&st);
	trace_stats_free(&back);
	tep_free(tep);

	tep = tp_open(false, err, sizeof(err));
	tp_parse(tep, old_batch_format, strlen(old_batch_format), "migrate", err, sizeof(err));
	trace_events_init(&te, tep);
	ok(tep_find_event_by_name(tep, "migrate", "mm_migrate_batch") && te.batch_reason &&
	   te.batch_fields[BF_MOVE] && !te.batch,
	   "batch records: a format lacking a field (first_usable_ns) is not used");
	tep_free(tep);
	tracefs_set_tracing_dir(NULL);
}

static void test_trace_records(void)
{
	struct trace_stats st, back;
	struct trace_events te;
	struct tep_record *recs[5];
	struct rec_buf rb[5];
	struct tep_handle *tep;
	struct trace_seq seq;
	char err[ERRLEN] = "", path[8192];
	char *line, *save = NULL;
	int i;

	memset(&st, 0, sizeof(st));
	memset(&back, 0, sizeof(back));
	tracefs_set_tracing_dir((char *)fixpath("tracefs-6.12", path, sizeof(path)));
	tep = tp_open(true, err, sizeof(err));
	if (!tep || !tp_load(tep, "migrc", "migrc_flush", err, sizeof(err)) ||
	    !tp_load(tep, "migrc", "migrc_defer", err, sizeof(err)))
		diag("records: %s", err);
	trace_events_init(&te, tep);
	ok(te.flush && te.defer && te.reason && te.pages && te.cpus && te.age &&
	   te.defer_pages && te.nsyms == 5, "records: migrc events and fields found");
	recs[0] = defer_rec(&rb[0], 512, 100000100000ULL);
	recs[1] = flush_rec(&rb[1], 0, 512, 3, 0, 100001000000ULL);
	recs[2] = flush_rec(&rb[2], 1, 8, 4, 3, 100003000000ULL);
	recs[3] = flush_rec(&rb[3], 0, 30, 1, 1000, 100004000000ULL);
	recs[4] = flush_rec(&rb[4], 2, 2, 0, 1024, 100006000000ULL);
	for (i = 0; i < 5; i++)
		trace_account_record(&st, &te, tep_find_event_by_record(tep, recs[i]), recs[i]);
	ok(st.defer_events == 1 && st.defer_pages == 512 && st.flush_events == 4 &&
	   st.flush_pages == 552 && st.no_age == 0, "records: event and page counts from fields");
	ok(st.nreasons == 3 && !strcmp(st.reasons[0].name, "alloc") && st.reasons[0].count == 2 &&
	   st.reasons[0].pages == 542 && st.reasons[0].cpus == 4 &&
	   !strcmp(st.reasons[1].name, "write") && !strcmp(st.reasons[2].name, "timeout"),
	   "records: integer reasons named from __print_symbolic()");
	ok(st.age_count[0] == 1 && st.age_count[2] == 1 && st.age_count[10] == 1 &&
	   st.age_count[11] == 1 && st.age_pages[10] == 30, "records: age histogram");

	/* What -o writes must give the same result when read back with -i. */
	trace_seq_init(&seq);
	for (i = 0; i < 5; i++)
		trace_record_text(&seq, tep_find_event_by_record(tep, recs[i]), recs[i]);
	trace_seq_terminate(&seq);
	for (line = strtok_r(seq.buffer, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		trace_account_line(&back, line);
	ok(same_stats(&st, &back) && back.unparsed == 0,
	   "records: text written for -o reads back the same (%llu lines)",
	   (unsigned long long)back.lines);
	trace_seq_destroy(&seq);

	memset(&st, 0, sizeof(st));
	recs[0] = flush_rec(&rb[0], 9, 1, 1, 5, 1000);
	trace_account_record(&st, &te, te.flush, recs[0]);
	ok(st.nreasons == 1 && !strcmp(st.reasons[0].name, "0x9"),
	   "records: unknown reason value named as the kernel prints it (%s)",
	   st.nreasons ? st.reasons[0].name : "");
	tep_free(tep);

	/* An older migrc_flush with the reason as a __data_loc string. */
	memset(&st, 0, sizeof(st));
	tep = tp_open(false, err, sizeof(err));
	parse_fixture(tep, "migrc_flush-format-string", "migrc");
	trace_events_init(&te, tep);
	memset(&rb[0], 0, sizeof(rb[0]));
	put(&rb[0], 0, 1502, 2);
	put(&rb[0], 8, (17 << 16) | 64, 4);	/* __data_loc: length 17 at offset 64 */
	put(&rb[0], 32, 16, 8);			/* nr_pages */
	put(&rb[0], 40, 70000, 8);		/* age_us */
	memcpy(rb[0].data + 64, "page cache write", 17);
	rb[0].rec.data = rb[0].data;
	rb[0].rec.size = 81;
	trace_account_record(&st, &te, te.flush, &rb[0].rec);
	ok(te.flush && te.nsyms == 0 && st.flush_pages == 16 && st.nreasons == 1 &&
	   !strcmp(st.reasons[0].name, "page cache write") && st.age_count[17] == 1,
	   "records: string reason read through __data_loc (%s)",
	   st.nreasons ? st.reasons[0].name : "");
	tep_free(tep);
	tracefs_set_tracing_dir(NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		fixdir = argv[1];
	printf("TAP version 13\n");
	test_interrupts();
	test_vmstat();
	test_stat_cpulist();
	test_tpformat();
	test_json();
	test_results();
	test_compare();
	test_sources();
	test_sources_results();
	test_trace();
	test_trace_records();
	test_samples();
	test_batches();
	test_batch_records();
	printf("1..%d\n", ntests);
	if (nfailed)
		printf("# %d of %d tests failed\n", nfailed, ntests);
	return nfailed ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * migrc stat - measure one command, or the whole system for a time window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "migrc.h"

struct stat_opts {
	const char *out;
	const char *label;
	bool all;
	double interval;
	long count;
	bool quiet;
	bool sources;
	char **cmd;
	int ncmd;
	int usage_exit;		/* 1, or 125 when a command was given */
};

static void stat_usage(FILE *f)
{
	fputs("usage: migrc stat [-o FILE.json] [--label NAME] [-q] [-a] [--sources]\n"
	      "                  -- COMMAND [ARGS...]\n"
	      "       migrc stat -a -I SECONDS [-n COUNT] [-o FILE.json] [--label NAME]\n"
	      "                  [--sources]\n"
	      "\n"
	      "Measure TLB shootdowns (/proc/interrupts), /proc/vmstat TLB, migration, NUMA\n"
	      "and migrc counters, tlb:tlb_flush events by reason and hardware TLB misses,\n"
	      "system-wide, over exactly the run of COMMAND, or over -I intervals.\n"
	      "\n"
	      "  -o, --output FILE    write the result as JSON (\"-\" for stdout)\n"
	      "  -l, --label NAME     label of this run (shown by 'migrc compare')\n"
	      "  -a, --all-cpus       system-wide only: never fall back to counting hardware\n"
	      "                       events for the command only; without COMMAND: window mode\n"
	      "  -I, --interval SECS  window mode: print every SECS seconds (fractions allowed)\n"
	      "  -n, --count N        window mode: stop after N intervals (default: until ^C)\n"
	      "  -q, --quiet          do not print the summary\n"
	      "  -S, --sources        attribute the shootdowns sent to their source (demotion,\n"
	      "                       promotion, damon, other migration, reclaim, NUMA scan or\n"
	      "                       fault, munmap/mprotect/madvise and other syscalls,\n"
	      "                       migrc's own flushes by reason, other) by tracing the\n"
	      "                       context of every tlb_flush \"remote ipi send\" event;\n"
	      "                       window mode: over the whole window, not per interval\n"
	      "  -h, --help           this help\n"
	      "\n"
	      "With COMMAND the summary goes to stderr (like perf stat) and migrc exits with\n"
	      "the command's exit status (128+N if killed by signal N); 125 means migrc\n"
	      "itself failed, 126/127 that COMMAND could not be executed / was not found.\n"
	      "Window mode prints to stdout and exits 0, 1 (usage) or 2 (system error).\n"
	      "Environment: MIGRC_PROC (default /proc), MIGRC_TRACEFS, MIGRC_NO_PERF=1.\n", f);
}

static int parse_stat_args(int argc, char **argv, struct stat_opts *o)
{
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'l' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "interval", required_argument, NULL, 'I' },
		{ "count", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "sources", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c, i;

	memset(o, 0, sizeof(*o));
	o->usage_exit = EXIT_USAGE;
	for (i = 1; i < argc - 1; i++)
		if (!strcmp(argv[i], "--"))
			o->usage_exit = EXIT_TOOL_FAILED;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:l:aI:n:qSh", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case 'l':
			o->label = optarg;
			break;
		case 'a':
			o->all = true;
			break;
		case 'I':
			o->interval = strtod(optarg, &end);
			if (*end || !(o->interval >= 0.01) || o->interval > 86400) {
				errmsg("stat: -I wants seconds between 0.01 and 86400, got '%s'",
				       optarg);
				return o->usage_exit;
			}
			break;
		case 'n':
			o->count = strtol(optarg, &end, 10);
			if (*end || o->count < 1) {
				errmsg("stat: -n wants a positive count, got '%s'", optarg);
				return o->usage_exit;
			}
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'S':
			o->sources = true;
			break;
		case 'h':
			stat_usage(stdout);
			return -1;
		default:
			stat_usage(stderr);
			return o->usage_exit;
		}
	}
	o->cmd = argv + optind;
	o->ncmd = argc - optind;
	if (o->ncmd && o->interval > 0) {
		errmsg("stat: -I is for window mode (-a without a command)");
		return o->usage_exit;
	}
	if (!o->ncmd && !(o->all && o->interval > 0)) {
		errmsg("stat: give a command after '--', or use -a -I SECONDS");
		stat_usage(stderr);
		return EXIT_USAGE;
	}
	if (o->count && !o->interval) {
		errmsg("stat: -n needs -I");
		return o->usage_exit;
	}
	return 0;
}

/* ---- static facts about the system ---- */

static char *read_trimmed(const char *rel)
{
	char path[4096], err[ERRLEN];
	char *buf = read_file(proc_path(rel, path, sizeof(path)), NULL, err, sizeof(err));
	size_t n;

	if (!buf)
		return NULL;
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return buf;
}

static void fill_static(struct run *r, const struct stat_opts *o)
{
	struct utsname u;
	int i;

	r->label = xstrdup(o->label ? o->label : "");
	r->kernel = getenv("MIGRC_PROC") ? read_trimmed("sys/kernel/osrelease") : NULL;
	if (!r->kernel)
		r->kernel = xstrdup(uname(&u) ? "" : u.release);
	r->cmdline = read_trimmed("cmdline");
	if (!r->cmdline) {
		r->cmdline = xstrdup("");
		strlist_add(&r->absent, "cmdline: /proc/cmdline not readable");
	}
	for (i = 0; i < o->ncmd; i++)
		strlist_add(&r->command, o->cmd[i]);
}

static bool has_prefix_key(const struct ctrlist *l, const char *prefix)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (!strncmp(l->v[i].name, prefix, strlen(prefix)))
			return true;
	return false;
}

static void note_absent_vmstat(struct run *r, const struct ctrlist *raw)
{
	static const char *const why[][2] = {
		{ "nr_tlb_", "kernel built without CONFIG_DEBUG_TLBFLUSH" },
		{ "migrc_", "kernel without migrc" },
		{ "pgmigrate_", "kernel built without CONFIG_MIGRATION" },
		{ "numa_", "kernel built without CONFIG_NUMA" },
		{ "pgdemote_", "kernel without demotion counters" },
		{ "pgpromote_", "kernel without promotion counters (CONFIG_NUMA_BALANCING)" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(why); i++)
		if (!has_prefix_key(raw, why[i][0]))
			strlist_addf(&r->absent, "vmstat %s*: absent (%s)", why[i][0], why[i][1]);
}

/* ---- differences between two snapshots ---- */

static int tlb_between(const struct snapshot *a, const struct snapshot *b, bool *has,
		       int *ncpus, uint64_t **per_cpu, uint64_t *total, char *err,
		       size_t errlen)
{
	int i;

	*ncpus = b->irq.ncpus;
	*has = false;
	*per_cpu = NULL;
	*total = 0;
	if (!a->irq.has_tlb && !b->irq.has_tlb && a->irq.ncpus == b->irq.ncpus)
		return 0;
	*per_cpu = xcalloc(*ncpus, sizeof(uint64_t));
	if (irq_delta(&a->irq, &b->irq, *per_cpu, err, errlen)) {
		free(*per_cpu);
		*per_cpu = NULL;
		return -1;
	}
	for (i = 0; i < *ncpus; i++)
		*total += (*per_cpu)[i];
	*has = true;
	return 0;
}

static void ctr_diff(const struct ctrlist *a, const struct ctrlist *b, struct ctrlist *out)
{
	int i;

	ctrlist_init(out);
	for (i = 0; i < b->n; i++) {
		const struct ctr *ca = ctrlist_find(a, b->v[i].name);
		bool ok = b->v[i].valid && ca && ca->valid;

		ctrlist_add(out, b->v[i].name, ok ? b->v[i].val - ca->val : 0, ok);
	}
}

static int write_json(const char *path, const struct run *r)
{
	char *s = run_to_json(r);
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	int ret = 0;

	if (!f) {
		errmsg("cannot write %s: %s", path, strerror(errno));
		free(s);
		return -1;
	}
	if (fputs(s, f) < 0 || fflush(f))
		ret = -1;
	if (f != stdout && fclose(f))
		ret = -1;
	if (ret)
		errmsg("cannot write %s: %s", path, strerror(errno));
	free(s);
	return ret;
}

/* ---- --sources ---- */

/* Start attributing shootdowns; NULL if not asked for or not possible. */
static struct src_rec *sources_start(const struct stat_opts *o, struct run *r)
{
	if (!o->sources)
		return NULL;
	r->want_sources = true;
	return src_start(&r->absent);
}

static void sources_stop(struct src_rec *src, struct run *r)
{
	if (!src)
		return;
	src_stop(src, &r->src);
	r->has_sources = true;
}

/* ---- command mode ---- */

static void child_run(int go_fd, int go_wr, int ex_fd, char **cmd)
{
	char c;
	int e;

	close(go_wr);
	if (read(go_fd, &c, 1) != 1)
		_exit(EXIT_TOOL_FAILED);	/* migrc gave up before starting us */
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	execvp(cmd[0], cmd);
	e = errno;
	if (write(ex_fd, &e, sizeof(e)) < 0)
		_exit(EXIT_CANNOT_EXEC);
	_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

static int status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_TOOL_FAILED;
}

static int finish_command_run(struct run *r, struct snapshot *a, struct snapshot *b,
			      struct perf_set *perf, char *err, size_t errlen)
{
	struct ctrlist hw;

	if (tlb_between(a, b, &r->has_tlb, &r->ncpus, &r->per_cpu, &r->tlb_total,
			err, errlen))
		return -1;
	if (vmstat_delta(&a->vmstat, &b->vmstat, &r->vmstat, err, errlen))
		return -1;
	perf_read(perf, &r->flush, &r->has_flush, &hw);
	r->hw = hw;
	if (!r->has_tlb)
		strlist_add(&r->absent,
			    "tlb_shootdowns: no \"TLB:\" line in /proc/interrupts (not x86?)");
	note_absent_vmstat(r, &a->vmstat);
	return 0;
}

static void abort_child(pid_t pid, int go_fd)
{
	int st;

	close(go_fd);		/* the child reads EOF and exits */
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

static int run_command(const struct stat_opts *o)
{
	struct perf_opts po = { .system_wide_only = o->all };
	struct snapshot a, b;
	struct perf_set *perf;
	struct src_rec *src;
	struct rusage ru;
	struct run r;
	char err[ERRLEN];
	int go[2], ex[2], status, exec_errno = 0, ret;
	double t0;
	pid_t pid;

	memset(&r, 0, sizeof(r));
	fill_static(&r, o);
	if (pipe2(go, O_CLOEXEC) || pipe2(ex, O_CLOEXEC)) {
		errmsg("pipe: %s", strerror(errno));
		return EXIT_TOOL_FAILED;
	}
	pid = fork();
	if (pid < 0) {
		errmsg("fork: %s", strerror(errno));
		return EXIT_TOOL_FAILED;
	}
	if (pid == 0)
		child_run(go[0], go[1], ex[1], o->cmd);
	close(go[0]);
	close(ex[1]);
	po.child = pid;
	perf = perf_open(&po, &r.absent);
	if (snapshot_take(&a, err, sizeof(err))) {
		errmsg("%s", err);
		abort_child(pid, go[1]);
		perf_close(perf);
		run_free(&r);
		return EXIT_TOOL_FAILED;
	}
	src = sources_start(o, &r);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	perf_enable(perf);
	t0 = now_mono();
	if (write(go[1], "g", 1) != 1)
		errmsg("cannot start the command: %s", strerror(errno));
	close(go[1]);
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			errmsg("wait4: %s", strerror(errno));
			sources_stop(src, &r);
			return EXIT_TOOL_FAILED;
		}
	}
	r.wall_s = now_mono() - t0;
	perf_disable(perf);
	sources_stop(src, &r);
	if (read(ex[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
		errmsg("cannot execute '%s': %s", o->cmd[0], strerror(exec_errno));
		ret = exec_errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
		goto out_a;
	}
	r.exit_status = status_code(status);
	r.user_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	r.sys_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	ret = EXIT_TOOL_FAILED;
	if (snapshot_take(&b, err, sizeof(err))) {
		errmsg("after the command: %s", err);
		goto out_a;
	}
	if (finish_command_run(&r, &a, &b, perf, err, sizeof(err))) {
		errmsg("%s", err);
		goto out_b;
	}
	if (!o->quiet)
		print_summary(stderr, &r);
	if (o->out && write_json(o->out, &r))
		goto out_b;
	ret = r.exit_status;
out_b:
	snapshot_free(&b);
out_a:
	if (ret == EXIT_TOOL_FAILED && r.exit_status)
		errmsg("(the command itself exited with status %d)", r.exit_status);
	snapshot_free(&a);
	perf_close(perf);
	close(ex[0]);
	run_free(&r);
	return ret;
}

/* ---- window mode ---- */

struct sample {
	struct snapshot snap;
	struct ctrlist flush;
	bool has_flush;
	struct ctrlist hw;
};

static void sample_free(struct sample *s)
{
	snapshot_free(&s->snap);
	ctrlist_free(&s->flush);
	ctrlist_free(&s->hw);
}

static int take_sample(struct sample *s, struct perf_set *perf, char *err, size_t errlen)
{
	if (snapshot_take(&s->snap, err, errlen))
		return -1;
	perf_read(perf, &s->flush, &s->has_flush, &s->hw);
	return 0;
}

static int64_t vm_sum_prefix(const struct ctrlist *l, const char *prefix, bool *any)
{
	int64_t sum = 0;
	int i;

	*any = false;
	for (i = 0; i < l->n; i++) {
		if (!strncmp(l->v[i].name, prefix, strlen(prefix))) {
			sum += l->v[i].val;
			*any = true;
		}
	}
	return sum;
}

static void print_cell(const struct ctr *c)
{
	if (c && c->valid)
		printf(" %14lld", (long long)c->val);
	else
		printf(" %14s", "-");
}

static void print_interval_header(void)
{
	printf("#%9s %14s %14s %14s %14s %14s %14s %14s\n", "time", "TLB-shootdowns",
	       "tlb_flush", "dTLB-ld-miss", "iTLB-ld-miss", "pgmigrate_succ",
	       "pgdemote_*", "pgpromote_succ");
}

static void print_interval(const struct interval *iv)
{
	struct ctr tot = { .valid = iv->has_tlb, .val = (int64_t)iv->tlb_total };
	struct ctr dem;
	bool any;

	dem.val = vm_sum_prefix(&iv->vmstat, "pgdemote_", &any);
	dem.valid = any;
	printf("%10.3f", iv->t_s);
	print_cell(&tot);
	print_cell(iv->has_flush ? ctrlist_find(&iv->flush, "total") : NULL);
	print_cell(ctrlist_find(&iv->hw, "dTLB-load-misses"));
	print_cell(ctrlist_find(&iv->hw, "iTLB-load-misses"));
	print_cell(ctrlist_find(&iv->vmstat, "pgmigrate_success"));
	print_cell(&dem);
	print_cell(ctrlist_find(&iv->vmstat, "pgpromote_success"));
	printf("\n");
	fflush(stdout);
}

static int make_interval(struct interval *iv, const struct sample *a, const struct sample *b,
			 double t0, char *err, size_t errlen)
{
	memset(iv, 0, sizeof(*iv));
	iv->t_s = b->snap.t - t0;
	iv->wall_s = b->snap.t - a->snap.t;
	if (tlb_between(&a->snap, &b->snap, &iv->has_tlb, &iv->ncpus, &iv->per_cpu,
			&iv->tlb_total, err, errlen))
		return -1;
	if (vmstat_delta(&a->snap.vmstat, &b->snap.vmstat, &iv->vmstat, err, errlen)) {
		interval_free(iv);
		return -1;
	}
	iv->has_flush = b->has_flush;
	ctr_diff(&a->flush, &b->flush, &iv->flush);
	ctr_diff(&a->hw, &b->hw, &iv->hw);
	return 0;
}

/*
 * SIGINT and SIGTERM stay blocked in window mode and are taken here: sleep
 * until @t (now_mono() seconds), or return false as soon as one is pending.
 */
static bool sleep_until(double t, const sigset_t *stop)
{
	struct timespec ts = { 0, 0 };
	double left;

	do {
		if (sigtimedwait(stop, NULL, &ts) > 0)
			return false;
		left = t - now_mono();
		ts.tv_sec = left > 0 ? (time_t)left : 0;
		ts.tv_nsec = left > 0 ? (long)((left - (double)ts.tv_sec) * 1e9) : 0;
	} while (left > 0);
	return true;
}

static void window_totals(struct run *r, const struct sample *first, const struct sample *last)
{
	long hz = sysconf(_SC_CLK_TCK);

	r->wall_s = last->snap.t - first->snap.t;
	if (first->snap.has_times && last->snap.has_times && hz > 0) {
		r->user_s = (double)(last->snap.times.user - first->snap.times.user) / hz;
		r->sys_s = (double)(last->snap.times.sys - first->snap.times.sys) / hz;
	} else {
		r->user_s = NAN;
		r->sys_s = NAN;
		strlist_add(&r->absent, "user_s/sys_s: /proc/stat not usable");
	}
	r->has_flush = last->has_flush;
	ctr_diff(&first->flush, &last->flush, &r->flush);
	ctr_diff(&first->hw, &last->hw, &r->hw);
	note_absent_vmstat(r, &first->snap.vmstat);
}

static int window_loop(const struct stat_opts *o, struct run *r, struct perf_set *perf,
		       struct sample *first, const sigset_t *stop, char *err, size_t errlen)
{
	struct sample prev = *first, cur;
	double next = first->snap.t;
	bool go_on = true;
	long k;
	int ret = 0;

	print_interval_header();
	for (k = 0; !o->count || k < o->count; k++) {
		struct interval iv;

		next += o->interval;
		go_on = sleep_until(next, stop);
		if (take_sample(&cur, perf, err, errlen) ||
		    make_interval(&iv, &prev, &cur, first->snap.t, err, errlen)) {
			ret = -1;
			break;
		}
		print_interval(&iv);
		r->intervals = xrealloc(r->intervals, (r->nintervals + 1) * sizeof(iv));
		r->intervals[r->nintervals++] = iv;
		if (prev.snap.t != first->snap.t)
			sample_free(&prev);
		prev = cur;
		if (!go_on || !sleep_until(0, stop))
			break;
	}
	if (!ret && tlb_between(&first->snap, &prev.snap, &r->has_tlb, &r->ncpus,
				&r->per_cpu, &r->tlb_total, err, errlen))
		ret = -1;
	if (!ret && vmstat_delta(&first->snap.vmstat, &prev.snap.vmstat, &r->vmstat,
				 err, errlen))
		ret = -1;
	if (!ret) {
		window_totals(r, first, &prev);
		if (!r->has_tlb)
			strlist_add(&r->absent,
				    "tlb_shootdowns: no \"TLB:\" line in /proc/interrupts (not x86?)");
	}
	if (prev.snap.t != first->snap.t)
		sample_free(&prev);
	return ret;
}

static int run_window(const struct stat_opts *o)
{
	struct perf_opts po = { .system_wide_only = true };
	struct sample first;
	sigset_t stop;
	struct perf_set *perf;
	struct src_rec *src;
	struct run r;
	char err[ERRLEN];
	int ret = EXIT_SYSERR;

	memset(&r, 0, sizeof(r));
	fill_static(&r, o);
	perf = perf_open(&po, &r.absent);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	src = sources_start(o, &r);
	perf_enable(perf);
	if (take_sample(&first, perf, err, sizeof(err))) {
		errmsg("%s", err);
		sources_stop(src, &r);
		goto out;
	}
	ret = window_loop(o, &r, perf, &first, &stop, err, sizeof(err));
	sources_stop(src, &r);
	if (ret) {
		ret = EXIT_SYSERR;
		errmsg("%s", err);
		goto out_first;
	}
	perf_disable(perf);
	if (!o->quiet)
		print_summary(stdout, &r);
	ret = EXIT_OK;
	if (o->out && write_json(o->out, &r))
		ret = EXIT_SYSERR;
out_first:
	sample_free(&first);
out:
	perf_close(perf);
	run_free(&r);
	return ret;
}

int cmd_stat(int argc, char **argv)
{
	struct stat_opts o;
	int ret = parse_stat_args(argc, argv, &o);

	if (ret < 0)
		return EXIT_OK;
	if (ret)
		return ret;
	if (o.ncmd)
		return run_command(&o);
	return run_window(&o);
}

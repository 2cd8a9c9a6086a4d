// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - perf_event_open() counters:
 *  - tlb:tlb_flush, one counting event per CPU (system-wide), plus one per
 *    CPU and reason with a "reason == N" tracepoint filter;
 *  - dTLB/iTLB miss counters (PERF_TYPE_HW_CACHE), system-wide per CPU,
 *    or for the measured command only when system-wide counting is refused.
 *
 * Counters are read cumulatively; callers take differences.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event-parse.h>

#include "migrc.h"

struct hw_def {
	const char *name;
	uint64_t config;
};

#define HW_CACHE(cache, op, res) \
	((cache) | ((op) << 8) | ((res) << 16))

static const struct hw_def hw_defs[] = {
	{ "dTLB-load-misses", HW_CACHE(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_READ,
				       PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "dTLB-store-misses", HW_CACHE(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_WRITE,
					PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "iTLB-load-misses", HW_CACHE(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_OP_READ,
				       PERF_COUNT_HW_CACHE_RESULT_MISS) },
};

#define NR_HW ((int)ARRAY_SIZE(hw_defs))

struct fdset {
	int n;
	int *fd;
};

struct perf_set {
	int ncpus;
	int *cpus;
	bool have_flush;
	struct fdset flush_total;
	int nreasons;
	struct tp_sym reasons[NR_TLB_REASONS_MAX];
	struct fdset flush_reason[NR_TLB_REASONS_MAX];
	struct fdset hw[NR_HW];
	bool hw_ok[NR_HW];
	bool hw_per_process[NR_HW];
};

static long sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
				int group_fd, unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, flags);
}

int perf_paranoid(void)
{
	char err[ERRLEN];
	char *buf = read_file("/proc/sys/kernel/perf_event_paranoid", NULL, err, sizeof(err));
	int v = 99;

	if (buf) {
		v = atoi(buf);
		free(buf);
	}
	return v;
}

static void fdset_close(struct fdset *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->fd[i] >= 0)
			close(s->fd[i]);
	free(s->fd);
	s->fd = NULL;
	s->n = 0;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void online_cpus(struct perf_set *p)
{
	char err[ERRLEN];
	char *buf = read_file("/sys/devices/system/cpu/online", NULL, err, sizeof(err));
	long n;
	int i;

	if (buf && !parse_cpu_list(buf, &p->cpus, &p->ncpus, err, sizeof(err))) {
		free(buf);
		return;
	}
	free(buf);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	p->ncpus = n > 0 ? (int)n : 1;
	p->cpus = xmalloc(p->ncpus * sizeof(int));
	for (i = 0; i < p->ncpus; i++)
		p->cpus[i] = i;
}

static const char *why_refused(int err, char *buf, size_t len)
{
	if (err == EACCES || err == EPERM)
		snprintf(buf, len,
			 "%s: system-wide counting needs root or CAP_PERFMON, or kernel.perf_event_paranoid <= 0 (it is %d)",
			 strerror(err), perf_paranoid());
	else if (err == ENOENT || err == EOPNOTSUPP || err == EINVAL || err == ENODEV)
		snprintf(buf, len, "not supported here (%s)", strerror(err));
	else
		snprintf(buf, len, "%s", strerror(err));
	return buf;
}

/* One event on every online CPU; on failure closes all and returns -errno. */
static int open_per_cpu(struct perf_set *p, struct perf_event_attr *attr,
			const char *filter, struct fdset *s)
{
	int i;

	s->fd = xmalloc(p->ncpus * sizeof(int));
	s->n = 0;
	for (i = 0; i < p->ncpus; i++) {
		long fd = sys_perf_event_open(attr, -1, p->cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		int e = errno;

		if (fd < 0) {
			fdset_close(s);
			return -e;
		}
		s->fd[s->n++] = (int)fd;
		if (filter && ioctl((int)fd, PERF_EVENT_IOC_SET_FILTER, filter)) {
			e = errno;
			fdset_close(s);
			return -(e ? e : EINVAL);
		}
	}
	return 0;
}

static void tp_attr(struct perf_event_attr *a, long long id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = (uint64_t)id;
	a->disabled = 1;
}

static void set_default_reasons(struct perf_set *p)
{
	static const char *const names[] = {
		"flush on task switch", "remote shootdown", "local shootdown",
		"local mm shootdown", "remote ipi send",
	};
	int i;

	p->nreasons = 5;
	for (i = 0; i < 5; i++) {
		p->reasons[i].value = i;
		snprintf(p->reasons[i].str, NAMELEN, "%s", names[i]);
	}
}

/* The tlb_flush event id and its reason table, from its format file. */
static long long load_tlb_flush(struct perf_set *p, struct strlist *absent)
{
	const char *root = tracing_root(true);
	struct tep_handle *tep;
	struct tep_event *ev;
	char err[ERRLEN];
	long long id;

	if (!root) {
		strlist_addf(absent, "tlb:tlb_flush: %s", tracing_why());
		return -1;
	}
	tep = tp_open(false, err, sizeof(err));
	ev = tep ? tp_load(tep, "tlb", "tlb_flush", err, sizeof(err)) : NULL;
	if (!ev) {
		strlist_addf(absent, "tlb:tlb_flush: %s", err);
		tep_free(tep);
		return -1;
	}
	id = ev->id;
	p->nreasons = tp_symbols(ev, "reason", p->reasons, NR_TLB_REASONS_MAX);
	tep_free(tep);
	return id;
}

static void open_flush_reasons(struct perf_set *p, long long id, struct strlist *absent)
{
	struct perf_event_attr a;
	char filter[64], why[ERRLEN];
	int i, j, ret;

	tp_attr(&a, id);
	for (i = 0; i < p->nreasons; i++) {
		snprintf(filter, sizeof(filter), "reason == %lld", p->reasons[i].value);
		ret = open_per_cpu(p, &a, filter, &p->flush_reason[i]);
		if (ret) {
			strlist_addf(absent,
				     "tlb:tlb_flush per-reason split: PERF_EVENT_IOC_SET_FILTER failed: %s; only the total is reported",
				     why_refused(-ret, why, sizeof(why)));
			for (j = 0; j < i; j++)
				fdset_close(&p->flush_reason[j]);
			p->nreasons = 0;
			return;
		}
	}
}

static void open_tlb_flush(struct perf_set *p, struct strlist *absent)
{
	struct perf_event_attr a;
	char why[ERRLEN];
	long long id;
	int ret;

	id = load_tlb_flush(p, absent);
	if (id < 0)
		return;
	tp_attr(&a, id);
	ret = open_per_cpu(p, &a, NULL, &p->flush_total);
	if (ret) {
		strlist_addf(absent, "tlb:tlb_flush: perf_event_open refused, %s",
			     why_refused(-ret, why, sizeof(why)));
		p->nreasons = 0;
		return;
	}
	p->have_flush = true;
	if (p->nreasons <= 0) {
		set_default_reasons(p);
		strlist_add(absent,
			    "tlb:tlb_flush reason values: not found in the format file, assumed the Linux 6.12 order (0..4)");
	}
	open_flush_reasons(p, id, absent);
}

static void hw_attr(struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_HW_CACHE;
	a->config = config;
	a->disabled = 1;
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
}

/* Count for the command and its descendants only, starting at its exec. */
static int open_hw_process(struct perf_set *p, int i, pid_t child)
{
	struct perf_event_attr a;
	long fd;

	hw_attr(&a, hw_defs[i].config);
	a.inherit = 1;
	a.enable_on_exec = 1;
	a.exclude_hv = 1;
	fd = sys_perf_event_open(&a, child, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		a.exclude_kernel = 1;
		fd = sys_perf_event_open(&a, child, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	p->hw[i].fd = xmalloc(sizeof(int));
	p->hw[i].fd[0] = (int)fd;
	p->hw[i].n = 1;
	p->hw_per_process[i] = true;
	return 0;
}

static void open_hw(struct perf_set *p, const struct perf_opts *o, struct strlist *absent)
{
	struct perf_event_attr a;
	char why[ERRLEN], why2[ERRLEN];
	int i, ret, ret2;

	for (i = 0; i < NR_HW; i++) {
		hw_attr(&a, hw_defs[i].config);
		ret = open_per_cpu(p, &a, NULL, &p->hw[i]);
		if (!ret) {
			p->hw_ok[i] = true;
			continue;
		}
		why_refused(-ret, why, sizeof(why));
		if ((ret != -EACCES && ret != -EPERM) || o->child <= 0 || o->system_wide_only) {
			strlist_addf(absent, "%s: %s", hw_defs[i].name, why);
			continue;
		}
		ret2 = open_hw_process(p, i, o->child);
		if (ret2) {
			strlist_addf(absent, "%s: system-wide: %s; for the command only: %s",
				     hw_defs[i].name, why, why_refused(-ret2, why2, sizeof(why2)));
			continue;
		}
		strlist_addf(absent, "%s system-wide: %s; counted for the command only",
			     hw_defs[i].name, why);
		p->hw_ok[i] = true;
	}
}

struct perf_set *perf_open(const struct perf_opts *o, struct strlist *absent)
{
	struct perf_set *p = xcalloc(1, sizeof(*p));
	const char *off = getenv("MIGRC_NO_PERF");

	if (off && *off && strcmp(off, "0")) {
		strlist_add(absent, "tlb:tlb_flush: perf disabled by MIGRC_NO_PERF");
		strlist_add(absent, "hw: perf disabled by MIGRC_NO_PERF");
		return p;
	}
	raise_fd_limit();
	online_cpus(p);
	open_tlb_flush(p, absent);
	open_hw(p, o, absent);
	return p;
}

static void fdset_ioctl(struct fdset *s, unsigned long req)
{
	int i;

	for (i = 0; i < s->n; i++)
		ioctl(s->fd[i], req, 0);
}

static void perf_ioctl_all(struct perf_set *p, unsigned long req, bool per_process_too)
{
	int i;

	fdset_ioctl(&p->flush_total, req);
	for (i = 0; i < p->nreasons; i++)
		fdset_ioctl(&p->flush_reason[i], req);
	for (i = 0; i < NR_HW; i++)
		if (!p->hw_per_process[i] || per_process_too)
			fdset_ioctl(&p->hw[i], req);
}

/* Per-process counters start by themselves at exec (enable_on_exec). */
void perf_enable(struct perf_set *p)
{
	perf_ioctl_all(p, PERF_EVENT_IOC_ENABLE, false);
}

void perf_disable(struct perf_set *p)
{
	perf_ioctl_all(p, PERF_EVENT_IOC_DISABLE, true);
}

void perf_reset(struct perf_set *p)
{
	perf_ioctl_all(p, PERF_EVENT_IOC_RESET, true);
}

static int64_t fdset_sum(const struct fdset *s)
{
	uint64_t sum = 0, v;
	int i;

	for (i = 0; i < s->n; i++)
		if (read(s->fd[i], &v, sizeof(v)) == sizeof(v))
			sum += v;
	return (int64_t)sum;
}

/* Sum with multiplexing scaling; false when the PMU never ran the event. */
static bool hw_sum(const struct fdset *s, int64_t *out)
{
	double sum = 0;
	bool ok = true;
	int i;

	for (i = 0; i < s->n; i++) {
		uint64_t v[3];

		if (read(s->fd[i], v, sizeof(v)) != sizeof(v))
			return false;
		if (v[2] == 0) {
			if (v[1] != 0)
				ok = false;	/* enabled but never scheduled */
			continue;
		}
		sum += (double)v[0] * ((double)v[1] / (double)v[2]);
	}
	*out = (int64_t)(sum + 0.5);
	return ok;
}

void perf_read(struct perf_set *p, struct ctrlist *flush, bool *has_flush,
	       struct ctrlist *hw)
{
	char name[NAMELEN];
	int i;

	ctrlist_init(flush);
	ctrlist_init(hw);
	*has_flush = p->have_flush;
	if (p->have_flush) {
		for (i = 0; i < p->nreasons; i++)
			ctrlist_add(flush, tlb_reason_name(p->reasons[i].str, name, sizeof(name)),
				    fdset_sum(&p->flush_reason[i]), true);
		ctrlist_add(flush, "total", fdset_sum(&p->flush_total), true);
	}
	for (i = 0; i < NR_HW; i++) {
		int64_t v = 0;
		bool ok = p->hw_ok[i] && hw_sum(&p->hw[i], &v);

		ctrlist_add(hw, hw_defs[i].name, ok ? v : 0, ok);
	}
}

void perf_close(struct perf_set *p)
{
	int i;

	if (!p)
		return;
	fdset_close(&p->flush_total);
	for (i = 0; i < NR_TLB_REASONS_MAX; i++)
		fdset_close(&p->flush_reason[i]);
	for (i = 0; i < NR_HW; i++)
		fdset_close(&p->hw[i]);
	free(p->cpus);
	free(p);
}

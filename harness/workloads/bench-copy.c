// SPDX-License-Identifier: GPL-2.0
/*
 * bench-copy: move_pages() copy throughput, the experiment of the
 * "Accelerate page migration with batching and multi threads" thread.
 *
 * For each configuration (folio size x batch size x copy threads x copy
 * policy) allocate N folios on node A, fill them with a pattern, check
 * where they are (and, for 2 MB, that they really are THPs), then time ONE
 * move_pages() call that moves all of them to node B, check every page is
 * on B and the pattern survived, and report bytes / seconds.  Each
 * configuration is repeated and the median, min and max are reported, as
 * tables shaped like the thread's (rows: batch size, columns: threads).
 *
 * The copy backend, threads and policy are set through the patched
 * kernel's knobs in /sys/kernel/mm/migrate/ (copy_backend, copy_threads,
 * copy_policy); without copy_threads only the kernel's own behaviour
 * ("vanilla") is measured.
 *
 * Exit status: 0 ok, 1 a verification failure, 2 a usage or setup error,
 * 4 every configuration was skipped.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE_SZ		4096UL
#define THP_SZ		(2UL << 20)
#define MAX_LIST	32
#define MAX_REPEAT	101
#define MAX_ROWS	4096
#define TOKEN_LEN	16
#define WORD(seed, i)	(((uint64_t)(i) + (seed)) * 0x9e3779b97f4a7c15ULL)

#define KNOB_THREADS	"/sys/kernel/mm/migrate/copy_threads"
#define KNOB_POLICY	"/sys/kernel/mm/migrate/copy_policy"
#define KNOB_BACKEND	"/sys/kernel/mm/migrate/copy_backend"
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"

enum { EXIT_VERIFY = 1, EXIT_SETUP = 2, EXIT_SKIPPED = 4 };

struct list {
	int n;
	char v[MAX_LIST][TOKEN_LEN];
};

/* One measured (or skipped) configuration: a CSV row. */
struct row {
	char label[64];
	char size[8];		/* "4k", "2m" or "memcpy" */
	unsigned long nr;	/* folios (memcpy: 4 KB pages copied) */
	char threads[TOKEN_LEN];
	char policy[TOKEN_LEN];
	double med, min, max;
	char verified[12];	/* yes, no, split, skipped */
};

static struct {
	bool do4k, do2m, memcpy, full_pattern, quiet, prefault;
	int warmup, interleave, start_on;
	unsigned long pages4k[MAX_LIST], pages2m[MAX_LIST];
	int n4k, n2m;
	int from, to, repeat;
	struct list threads, policy;
	const char *label, *csv, *baseline, *report, *backend, *pin;
	unsigned long memcpy_mb;
} opt = {
	.do4k = true, .do2m = true,
	.pages4k = { 512, 1024, 2048, 4096, 8192, 16384 }, .n4k = 6,
	.pages2m = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 }, .n2m = 10,
	.from = 0, .to = 1, .repeat = 5,
	.label = "bench", .memcpy_mb = 256, .backend = "mt",
};

static struct row rows[MAX_ROWS];
static int nrows;
static struct row base[MAX_ROWS];
static int nbase;
static bool had_verify_fail, had_setup_err;
static int measured;
static char knob_threads_saved[64], knob_policy_saved[64], knob_backend_saved[64];
static bool have_threads_knob, have_policy_knob, have_backend_knob;

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench-copy [options]\n"
"Time one move_pages() of N folios from node A to node B, per configuration.\n"
"\n"
"  --sizes 4k|2m|both     folio sizes (default both)\n"
"  --pages LIST           batch sizes in folios, e.g. 512,2048 (applies to the\n"
"                         sizes selected; use --pages4k/--pages2m for each)\n"
"  --pages4k LIST         default 512,1024,2048,4096,8192,16384\n"
"  --pages2m LIST         default 1,2,4,8,16,32,64,128,256,512\n"
"  --from A --to B        source and destination node (default 0 1)\n"
"  --repeat R             runs per configuration, median reported (default 5)\n"
"  --threads LIST         columns: a number N sets copy_backend to the --backend\n"
"                         and " KNOB_THREADS " to N (0 = auto);\n"
"                         a word (off, serial) sets copy_backend to it.\n"
"                         Default off,1,2,0 (1,2,0 without copy_backend);\n"
"                         without copy_threads: one \"vanilla\" column\n"
"  --backend NAME         copy_backend for numeric --threads (default mt)\n"
"  --policy LIST          values for " KNOB_POLICY " (push,pull,auto;\n"
"                         default: leave the knob as it is)\n"
"  --label NAME           run label for the CSV (default bench)\n"
"  --csv FILE             write rows: label,size,nr_folios,threads,policy,\n"
"                         gbps_median,gbps_min,gbps_max,verified; verified is\n"
"                         yes, split (data right but THPs split), no,\n"
"                         skipped (memory) or nothp (no THP to move)\n"
"  --baseline FILE.csv    add the median of that (vanilla) run as a column\n"
"  --report FILE.csv      measure nothing: print the tables of a CSV\n"
"  --memcpy               also measure the memcpy ceiling A->B with 1, 2 and\n"
"                         all CPUs (push: node A CPUs, pull: node B CPUs,\n"
"                         spread: all CPUs)\n"
"  --memcpy-mb MB         memcpy buffer size (default 256)\n"
"  --pin CPULIST          run on these CPUs (sched_setaffinity); the patched\n"
"                         kernel only takes copy helpers the caller may run\n"
"                         on (default: not pinned)\n"
"  --warmup N             untimed runs before the timed ones (default 0)\n"
"  --start-on CPU         enter each move_pages() on this CPU, with the\n"
"                         affinity unchanged (unlike --pin, which also\n"
"                         limits the CPUs the kernel may take as helpers)\n"
"  --interleave R         instead of the tables: R rounds (at least 2) of\n"
"                         every --threads column per batch size, in one\n"
"                         boot, the order rotated and reversed every round;\n"
"                         times the whole move and the copy phase (the\n"
"                         mm_migrate_batch_copy tracepoint's duration) and\n"
"                         reports each column against the first (serial if\n"
"                         listed) as per-round ratios: median, interquartile\n"
"                         range and a bootstrap 95%% interval\n"
"  --prefault             first touch 90%% of both nodes' free memory, so that\n"
"                         a VM's host faults its RAM in before timing\n"
"  --full-pattern         fill and check every word (default: 8 words per\n"
"                         4 KB page)\n"
"  -q, --quiet            no per-configuration lines, only the tables\n"
"  -h, --help             this text\n"
"\n"
"Configurations that do not fit in node A's or B's MemFree with 20%% headroom\n"
"are skipped.  Exit status: 0 ok, 1 verification failure, 2 usage or setup\n"
"error, 4 every configuration skipped.\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_list(const char *s, struct list *l)
{
	char buf[512], *tok, *save;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	l->n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *p;

		if (l->n == MAX_LIST || !*tok || strlen(tok) >= TOKEN_LEN)
			return -1;
		for (p = tok; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
				return -1;
		strcpy(l->v[l->n++], tok);
	}
	return l->n ? 0 : -1;
}

static int parse_nums(const char *s, unsigned long *v, int *n)
{
	struct list l;
	int i;

	if (parse_list(s, &l))
		return -1;
	for (i = 0; i < l.n; i++) {
		char *end;

		errno = 0;
		v[i] = strtoul(l.v[i], &end, 10);
		if (errno || *end || !v[i] || v[i] > (1UL << 24))
			return -1;
	}
	*n = l.n;
	return 0;
}

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -1;
	if (fputs(val, f) < 0)
		ret = -1;
	if (fclose(f))
		ret = -1;
	return ret;
}

/* A knob like THP's "always [madvise] never" shows its value in brackets. */
static void knob_value(const char *raw, char *out, size_t len)
{
	const char *l = strchr(raw, '['), *r = l ? strchr(l, ']') : NULL;

	if (l && r && (size_t)(r - l - 1) < len) {
		memcpy(out, l + 1, r - l - 1);
		out[r - l - 1] = 0;
	} else {
		snprintf(out, len, "%s", raw);
	}
}

static int set_knob(const char *path, const char *val)
{
	char back[64], cur[64];

	if (write_file(path, val)) {
		fprintf(stderr, "bench-copy: cannot write '%s' to %s: %s\n",
			val, path, strerror(errno));
		return -1;
	}
	if (!read_file(path, back, sizeof(back))) {
		knob_value(back, cur, sizeof(cur));
		if (strcmp(cur, val) && strcmp(back, val))
			fprintf(stderr, "bench-copy: note: %s reads back '%s' after writing '%s'\n",
				path, back, val);
	}
	return 0;
}

/* A --threads token: a number for copy_threads, or a backend name. */
static int set_threads(const char *tok)
{
	if (!isdigit((unsigned char)tok[0]))
		return set_knob(KNOB_BACKEND, tok);
	if (have_backend_knob && set_knob(KNOB_BACKEND, opt.backend))
		return -1;
	return set_knob(KNOB_THREADS, tok);
}

static void restore_knobs(void)
{
	if (have_threads_knob && knob_threads_saved[0])
		write_file(KNOB_THREADS, knob_threads_saved);
	if (have_policy_knob && knob_policy_saved[0])
		write_file(KNOB_POLICY, knob_policy_saved);
	if (have_backend_knob && knob_backend_saved[0])
		write_file(KNOB_BACKEND, knob_backend_saved);
}

/* MemFree of a node in bytes, or 0 if unknown. */
static unsigned long node_free(int node)
{
	char path[96], line[256];
	unsigned long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "MemFree:");

		if (p) {
			kb = strtoul(p + 8, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb << 10;
}

/* AnonHugePages of the mapping that starts at addr, in bytes; -1 on error. */
static long thp_bytes(void *addr)
{
	char line[512];
	unsigned long start, end, want = (unsigned long)addr;
	bool in = false;
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* "start-end perms ..." opens a mapping; fields never parse so. */
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			in = want >= start && want < end;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb < 0 ? -1 : kb << 10;
}

/* mmap len bytes aligned to align, exactly (the slop is unmapped). */
static void *map_aligned(size_t len, size_t align)
{
	size_t full = len + align;
	char *p = mmap(NULL, full, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, a - p);
	if (p + full > a + len)
		munmap(a + len, p + full - (a + len));
	return a;
}

static int bind_to(void *p, size_t len, int node)
{
	unsigned long mask[16] = { 0 };

	if (node >= (int)(sizeof(mask) * 8))
		return -1;
	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
	return mbind(p, len, MPOL_BIND, mask, sizeof(mask) * 8, MPOL_MF_STRICT);
}

static void fill(uint64_t *w, size_t words, uint64_t seed, size_t stride)
{
	size_t i;

	for (i = 0; i < words; i += stride)
		w[i] = WORD(seed, i);
}

/* Returns the index of the first bad word, or (size_t)-1. */
static size_t check(const uint64_t *w, size_t words, uint64_t seed, size_t stride)
{
	size_t i;

	for (i = 0; i < words; i += stride)
		if (w[i] != WORD(seed, i))
			return i;
	return (size_t)-1;
}

/* Where every 4 KB page of [buf, buf + len) is: count of pages not on node. */
static long pages_off_node(char *buf, size_t len, int node, long *first_bad,
			   int *first_status)
{
	size_t n = len / PAGE_SZ, i;
	void **pages = malloc(n * sizeof(*pages));
	int *status = malloc(n * sizeof(*status));
	long bad = 0;

	*first_bad = -1;
	if (!pages || !status) {
		free(pages);
		free(status);
		return -1;
	}
	for (i = 0; i < n; i++)
		pages[i] = buf + i * PAGE_SZ;
	if (move_pages(0, n, pages, NULL, status, 0)) {
		free(pages);
		free(status);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (status[i] != node) {
			if (*first_bad < 0) {
				*first_bad = i;
				*first_status = status[i];
			}
			bad++;
		}
	}
	free(pages);
	free(status);
	return bad;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void summarize(struct row *r, double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	r->min = v[0];
	r->max = v[n - 1];
	r->med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct row *new_row(const char *size, unsigned long nr, const char *threads,
			   const char *policy)
{
	struct row *r;

	if (nrows == MAX_ROWS) {
		fprintf(stderr, "bench-copy: too many configurations\n");
		exit(EXIT_SETUP);
	}
	r = &rows[nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->label, sizeof(r->label), "%s", opt.label);
	snprintf(r->size, sizeof(r->size), "%s", size);
	r->nr = nr;
	snprintf(r->threads, sizeof(r->threads), "%s", threads);
	snprintf(r->policy, sizeof(r->policy), "%s", policy);
	strcpy(r->verified, "skipped");
	return r;
}

/*
 * One run: returns GB/s (> 0), 0 if skipped for a setup reason (printed),
 * -2 if the kernel did not give us THPs (printed), or -1 on a verification
 * failure (printed).  *split is set if THPs were split by the migration.
 */
/*
 * The copy phase of the batched path, from the mm_migrate_batch_copy
 * tracepoint: its duration_ns is the batched copy step alone, without
 * unmap, flush, remap or the syscall.  Enabled only in --interleave mode.
 */
#define TRACEFS		"/sys/kernel/tracing"
#define COPY_EVENT	TRACEFS "/events/migrate/mm_migrate_batch_copy/enable"

static struct {
	bool on;
	char saved[8];
	double ns;		/* summed over the last move's batches */
	double bytes;
	int events;
	unsigned int threads;	/* the most any batch of the move used */
} phase;

static int copy_phase_start(void)
{
	if (read_file(COPY_EVENT, phase.saved, sizeof(phase.saved)) ||
	    write_file(COPY_EVENT, "1")) {
		fprintf(stderr, "bench-copy: cannot enable %s (tracefs mounted? root?)\n",
			COPY_EVENT);
		return -1;
	}
	phase.on = true;
	return 0;
}

static void copy_phase_stop(void)
{
	if (phase.on)
		write_file(COPY_EVENT, phase.saved[0] == '1' ? "1" : "0");
	phase.on = false;
}

static void copy_phase_reset(void)
{
	int fd;

	phase.ns = phase.bytes = 0;
	phase.events = 0;
	phase.threads = 0;
	if (!phase.on)
		return;
	fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
}

static void copy_phase_read(void)
{
	unsigned long long ns, bytes;
	unsigned int threads;
	char line[512], *p;
	FILE *f;

	if (!phase.on)
		return;
	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "mm_migrate_batch_copy:");
		if (!p || strstr(p, "err=0") == NULL)
			continue;
		if (!strstr(p, "bytes=") || !strstr(p, "duration_ns=") ||
		    sscanf(strstr(p, "bytes="), "bytes=%llu", &bytes) != 1 ||
		    sscanf(strstr(p, "duration_ns="), "duration_ns=%llu", &ns) != 1)
			continue;
		phase.ns += ns;
		phase.bytes += bytes;
		phase.events++;
		if (strstr(p, "threads=") &&
		    sscanf(strstr(p, "threads="), "threads=%u", &threads) == 1 &&
		    threads > phase.threads)
			phase.threads = threads;
	}
	fclose(f);
}

/*
 * Get onto @cpu and give the old affinity back: the call that follows
 * starts there (a lone running task is not moved off its CPU), while the
 * kernel may still take any CPU the task may use as a copy helper.
 */
static void start_on_cpu(int cpu)
{
	cpu_set_t one, all;

	if (sched_getaffinity(0, sizeof(all), &all))
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (!sched_setaffinity(0, sizeof(one), &one))
		sched_setaffinity(0, sizeof(all), &all);
}

static double run_once(bool thp, unsigned long nr, int rep, bool *split)
{
	size_t fsz = thp ? THP_SZ : PAGE_SZ, len = nr * fsz;
	size_t words = len / 8, stride = opt.full_pattern ? 1 : PAGE_SZ / 8 / 8;
	uint64_t seed = ((uint64_t)rep << 32) ^ (nr << 1) ^ thp;
	void **addrs = NULL;
	int *nodes = NULL, *status = NULL, st = 0;
	double t0, t1, ret = 0;
	char *buf;
	long bad, first;
	size_t i, w;

	buf = map_aligned(len, thp ? THP_SZ : PAGE_SZ);
	if (!buf) {
		fprintf(stderr, "bench-copy: mmap %zu bytes: %s\n", len, strerror(errno));
		had_setup_err = true;
		return 0;
	}
	if (madvise(buf, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) ||
	    bind_to(buf, len, opt.from)) {
		fprintf(stderr, "bench-copy: madvise/mbind: %s\n", strerror(errno));
		had_setup_err = true;
		goto out;
	}
	fill((uint64_t *)buf, words, seed, stride);

	bad = pages_off_node(buf, len, opt.from, &first, &st);
	if (bad) {
		fprintf(stderr, "bench-copy: %ld of %zu pages not on node %d before the move (page %ld: %d)\n",
			bad, len / PAGE_SZ, opt.from, first, st);
		had_setup_err = true;
		goto out;
	}
	if (thp) {
		long got = thp_bytes(buf);

		if (got != (long)len) {
			fprintf(stderr, "bench-copy: THP allocation failed: %ld of %zu kB are THPs (AnonHugePages)\n",
				got < 0 ? -1 : got >> 10, len >> 10);
			ret = -2;
			goto out;
		}
	}

	addrs = malloc(nr * sizeof(*addrs));
	nodes = malloc(nr * sizeof(*nodes));
	status = malloc(nr * sizeof(*status));
	if (!addrs || !nodes || !status) {
		had_setup_err = true;
		goto out;
	}
	for (i = 0; i < nr; i++) {
		addrs[i] = buf + i * fsz;
		nodes[i] = opt.to;
		status[i] = INT32_MIN;
	}

	copy_phase_reset();
	if (opt.start_on)
		start_on_cpu(opt.start_on - 1);
	t0 = now();
	bad = move_pages(0, nr, addrs, nodes, status, MPOL_MF_MOVE);
	t1 = now();
	copy_phase_read();

	ret = -1;
	if (bad) {
		fprintf(stderr, "FAIL: move_pages() of %lu folios returned %ld%s%s\n",
			nr, bad, bad < 0 ? ": " : " (folios not migrated)",
			bad < 0 ? strerror(errno) : "");
		goto out;
	}
	for (i = 0; i < nr; i++) {
		if (status[i] != opt.to) {
			fprintf(stderr, "FAIL: folio %zu status %d after the move, want node %d\n",
				i, status[i], opt.to);
			goto out;
		}
	}
	bad = pages_off_node(buf, len, opt.to, &first, &st);
	if (bad) {
		fprintf(stderr, "FAIL: %ld of %zu pages not on node %d after the move (page %ld: %d)\n",
			bad, len / PAGE_SZ, opt.to, first, st);
		goto out;
	}
	w = check((const uint64_t *)buf, words, seed, stride);
	if (w != (size_t)-1) {
		fprintf(stderr, "FAIL: data mismatch after the move at byte %zu (page %zu): %#llx, want %#llx\n",
			w * 8, w * 8 / PAGE_SZ, (unsigned long long)((uint64_t *)buf)[w],
			(unsigned long long)WORD(seed, w));
		goto out;
	}
	if (thp && thp_bytes(buf) != (long)len)
		*split = true;
	ret = len / (t1 - t0) / 1e9;
out:
	free(addrs);
	free(nodes);
	free(status);
	munmap(buf, len);
	return ret;
}

static const char *col_name(const char *threads, char *buf, size_t len)
{
	if (!strcmp(threads, "0"))
		return "auto";
	if (isdigit((unsigned char)threads[0]))
		snprintf(buf, len, "mt:%s", threads);
	else
		snprintf(buf, len, "%s", threads);
	return buf;
}

static void run_config(bool thp, unsigned long nr, const char *threads,
		       const char *policy)
{
	const char *size = thp ? "2m" : "4k";
	size_t len = nr * (thp ? THP_SZ : PAGE_SZ);
	struct row *r = new_row(size, nr, threads, policy);
	double v[MAX_REPEAT];
	unsigned long need = len + len / 5;
	bool split = false;
	char cb[32];
	int i;

	if (!opt.quiet) {
		printf("%-2s %6lu folios %-7s %-5s ", size, nr,
		       col_name(threads, cb, sizeof(cb)), policy);
		fflush(stdout);
	}
	if (node_free(opt.to) < need || node_free(opt.from) < need) {
		if (!opt.quiet)
			printf("skipped (needs %lu MB)\n", need >> 20);
		return;
	}
	for (i = 0; i < opt.warmup; i++) {
		v[0] = run_once(thp, nr, MAX_REPEAT + i, &split);
		if (v[0] <= 0)
			break;
	}
	for (i = 0; i < opt.repeat && (!opt.warmup || v[0] > 0); i++) {
		v[i] = run_once(thp, nr, i, &split);
		if (v[i] <= 0)
			break;
	}
	if (i < opt.repeat) {
		if (v[i] == -2) {
			strcpy(r->verified, "nothp");
			if (!opt.quiet)
				printf("skipped (THP allocation failed)\n");
		} else if (v[i] < 0) {
			had_verify_fail = true;
			strcpy(r->verified, "no");
			if (!opt.quiet)
				printf("FAILED verification\n");
		} else if (!opt.quiet) {
			printf("skipped (setup failed, see above)\n");
		}
		return;
	}
	summarize(r, v, opt.repeat);
	strcpy(r->verified, split ? "split" : "yes");
	measured++;
	if (!opt.quiet)
		printf("%7.2f GB/s (min %.2f max %.2f)%s\n", r->med, r->min, r->max,
		       split ? " THPs were split by the move" : "");
}

/*
 * Touch most of a node's free memory once and give it back.  A VM's RAM is
 * allocated by its host on first touch; without this the first runs that
 * land on fresh guest memory time the host's page faults as well.
 */
static void prefault_node(int node)
{
	size_t len = (node_free(node) / 10 * 9) & ~(THP_SZ - 1);
	unsigned long mask[16] = { 0 };
	double t0 = now();
	char *p;
	size_t i;

	if (!len || node >= (int)(sizeof(mask) * 8))
		return;
	p = map_aligned(len, THP_SZ);
	if (!p)
		return;
	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
	/* Preferred, not bind: never OOM over a warm-up. */
	mbind(p, len, MPOL_PREFERRED, mask, sizeof(mask) * 8, 0);
	madvise(p, len, MADV_HUGEPAGE);
	for (i = 0; i < len; i += PAGE_SZ)
		p[i] = 1;
	munmap(p, len);
	printf("bench-copy: prefaulted %zu MB of node %d in %.1fs\n", len >> 20, node,
	       now() - t0);
}

/* ---- memcpy ceiling ---- */

struct mc_arg {
	char *dst;
	const char *src;
	size_t len;
	int cpu;
	pthread_barrier_t *bar;
};

static void *mc_thread(void *p)
{
	struct mc_arg *a = p;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(a->bar);
	memcpy(a->dst, a->src, a->len);
	return NULL;
}

static double mc_run(char *dst, const char *src, size_t len, int nthr,
		     const int *cpus, int ncpus)
{
	pthread_t tid[256];
	struct mc_arg arg[256];
	pthread_barrier_t bar;
	size_t chunk = (len / nthr) & ~(PAGE_SZ - 1);
	double t0, t1;
	int i;

	pthread_barrier_init(&bar, NULL, nthr + 1);
	for (i = 0; i < nthr; i++) {
		arg[i].dst = dst + i * chunk;
		arg[i].src = src + i * chunk;
		arg[i].len = i == nthr - 1 ? len - i * chunk : chunk;
		arg[i].cpu = cpus[i % ncpus];
		arg[i].bar = &bar;
		if (pthread_create(&tid[i], NULL, mc_thread, &arg[i])) {
			fprintf(stderr, "bench-copy: pthread_create failed\n");
			exit(EXIT_SETUP);
		}
	}
	pthread_barrier_wait(&bar);
	t0 = now();
	for (i = 0; i < nthr; i++)
		pthread_join(tid[i], NULL);
	t1 = now();
	pthread_barrier_destroy(&bar);
	return len / (t1 - t0) / 1e9;
}

/* The CPUs of a node (all of ours for node -1), up to max. */
static int node_cpus(int node, int *cpus, int max)
{
	struct bitmask *bm = numa_all_cpus_ptr;
	int n = 0, c;

	if (node >= 0) {
		bm = numa_allocate_cpumask();
		if (numa_node_to_cpus(node, bm)) {
			numa_free_cpumask(bm);
			return 0;
		}
	}
	for (c = 0; c < numa_num_configured_cpus() && n < max; c++)
		if (numa_bitmask_isbitset(bm, c))
			cpus[n++] = c;
	if (node >= 0)
		numa_free_cpumask(bm);
	return n;
}

static void run_memcpy(void)
{
	static const char *const place[] = { "push", "pull", "spread" };
	int cpus[3][256], ncpu[3], tlist[3], nt = 0, all, p, t, i;
	size_t len = opt.memcpy_mb << 20;
	unsigned long need = len + len / 5;
	char *src, *dst;
	double v[MAX_REPEAT];
	char tb[16];

	ncpu[0] = node_cpus(opt.from, cpus[0], 256);
	ncpu[1] = node_cpus(opt.to, cpus[1], 256);
	ncpu[2] = node_cpus(-1, cpus[2], 256);
	all = ncpu[2];
	tlist[nt++] = 1;
	if (all >= 2)
		tlist[nt++] = 2;
	if (all > 2)
		tlist[nt++] = all;

	printf("\nmemcpy ceiling, node %d -> node %d, %lu MB (GB/s, median of %d):\n",
	       opt.from, opt.to, opt.memcpy_mb, opt.repeat);
	if (node_free(opt.to) < need || node_free(opt.from) < need) {
		printf("  skipped (needs %lu MB)\n", need >> 20);
		return;
	}
	src = map_aligned(len, THP_SZ);
	dst = map_aligned(len, THP_SZ);
	if (!src || !dst || bind_to(src, len, opt.from) || bind_to(dst, len, opt.to)) {
		fprintf(stderr, "bench-copy: memcpy buffers: %s\n", strerror(errno));
		had_setup_err = true;
		return;
	}
	fill((uint64_t *)src, len / 8, 42, 1);
	memset(dst, 0, len);

	printf("%-20s", "cpus");
	for (t = 0; t < nt; t++) {
		snprintf(tb, sizeof(tb), "T=%d", tlist[t]);
		printf("%-10s", tb);
	}
	printf("\n");
	for (p = 0; p < 3; p++) {
		char name[32];

		snprintf(name, sizeof(name), "%s (%d cpus)", place[p], ncpu[p]);
		printf("%-20s", name);
		for (t = 0; t < nt; t++) {
			struct row *r;

			snprintf(tb, sizeof(tb), "%d", tlist[t]);
			r = new_row("memcpy", len / PAGE_SZ, tb, place[p]);
			if (!ncpu[p]) {
				printf("%-10s", "-");
				continue;
			}
			for (i = 0; i < opt.repeat; i++) {
				memset(dst, 0, PAGE_SZ);
				v[i] = mc_run(dst, src, len, tlist[t], cpus[p], ncpu[p]);
			}
			summarize(r, v, opt.repeat);
			if (memcmp(src, dst, len)) {
				strcpy(r->verified, "no");
				had_verify_fail = true;
				printf("%-10s", "FAIL");
				continue;
			}
			strcpy(r->verified, "yes");
			printf("%-10.2f", r->med);
		}
		printf("\n");
	}
	munmap(src, len);
	munmap(dst, len);
}

/* ---- CSV and tables ---- */

static void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f) {
		fprintf(stderr, "bench-copy: cannot write %s: %s\n", path, strerror(errno));
		had_setup_err = true;
		return;
	}
	fprintf(f, "label,size,nr_folios,threads,policy,gbps_median,gbps_min,gbps_max,verified\n");
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];

		fprintf(f, "%s,%s,%lu,%s,%s,%.3f,%.3f,%.3f,%s\n", r->label, r->size,
			r->nr, r->threads, r->policy, r->med, r->min, r->max, r->verified);
	}
	if (fclose(f)) {
		fprintf(stderr, "bench-copy: writing %s: %s\n", path, strerror(errno));
		had_setup_err = true;
	}
}

static int read_csv(const char *path, struct row *out, int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "bench-copy: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) && n < max) {
		struct row *r = &out[n];

		if (!strncmp(line, "label,", 6))
			continue;
		memset(r, 0, sizeof(*r));
		if (sscanf(line, "%63[^,],%7[^,],%lu,%15[^,],%15[^,],%lf,%lf,%lf,%11[^,\n]",
			   r->label, r->size, &r->nr, r->threads, r->policy, &r->med,
			   &r->min, &r->max, r->verified) == 9)
			n++;
	}
	fclose(f);
	return n;
}

static bool row_ok(const struct row *r)
{
	return !strcmp(r->verified, "yes") || !strcmp(r->verified, "split");
}

static const struct row *find_row(const struct row *v, int n, const char *size,
				  unsigned long nr, const char *threads,
				  const char *policy)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].size, size) && v[i].nr == nr &&
		    (!threads || !strcmp(v[i].threads, threads)) &&
		    (!policy || !strcmp(v[i].policy, policy)))
			return &v[i];
	return NULL;
}

static int add_unique(char (*v)[TOKEN_LEN], int n, const char *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return n;
	if (n < MAX_LIST)
		snprintf(v[n++], TOKEN_LEN, "%s", s);
	return n;
}

static void print_cell(const struct row *r)
{
	if (!r)
		printf("%-10s", "-");
	else if (!strcmp(r->verified, "skipped"))
		printf("%-10s", "skip");
	else if (!strcmp(r->verified, "nothp"))
		printf("%-10s", "no-THP");
	else if (!strcmp(r->verified, "no"))
		printf("%-10s", "FAIL");
	else
		printf("%-10.2f", r->med);
}

static void print_tables(const struct row *v, int n, const struct row *b, int nb,
			 bool with_memcpy)
{
	static const char *const sizes[] = { "4k", "2m" };
	char pol[MAX_LIST][TOKEN_LEN], thr[MAX_LIST][TOKEN_LEN], cb[32];
	unsigned long nrs[MAX_ROWS];
	const char *blabel = nb ? b[0].label : NULL;
	int s, np, nt, nn, i, j, k, sec = 0;
	bool mc_head = false;

	for (s = 0; s < 2; s++) {
		np = 0;
		for (i = 0; i < n; i++)
			if (!strcmp(v[i].size, sizes[s]))
				np = add_unique(pol, np, v[i].policy);
		for (k = 0; k < np; k++) {
			nt = nn = 0;
			for (i = 0; i < n; i++) {
				if (strcmp(v[i].size, sizes[s]) || strcmp(v[i].policy, pol[k]))
					continue;
				nt = add_unique(thr, nt, v[i].threads);
				for (j = 0; j < nn && nrs[j] != v[i].nr; j++)
					;
				if (j == nn)
					nrs[nn++] = v[i].nr;
			}
			printf("\n#%d %s, %s%s%s, %s (GB/s, median of runs):\n",
			       ++sec, sizes[s][1] == 'k' ? "THP=never" : "THP=always",
			       sizes[s][1] == 'k' ? "4KB folios" : "2MB folios",
			       strcmp(pol[k], "-") ? ", policy " : "",
			       strcmp(pol[k], "-") ? pol[k] : "", v[0].label);
			printf("%-10s%-8s", "nr_folios", "MB");
			if (blabel)
				printf("%-10s", blabel);
			for (j = 0; j < nt; j++)
				printf("%-10s", col_name(thr[j], cb, sizeof(cb)));
			printf("\n");
			for (i = 0; i < nn; i++) {
				unsigned long mb = nrs[i] * (s ? THP_SZ : PAGE_SZ) >> 20;

				printf("%-10lu%-8lu", nrs[i], mb);
				if (blabel) {
					const struct row *r = find_row(b, nb, sizes[s], nrs[i],
								       "vanilla", NULL);

					if (!r)
						r = find_row(b, nb, sizes[s], nrs[i], NULL, NULL);
					print_cell(r);
				}
				for (j = 0; j < nt; j++)
					print_cell(find_row(v, n, sizes[s], nrs[i], thr[j], pol[k]));
				printf("\n");
			}
		}
	}
	/* The memcpy rows of a CSV, when printing a report. */
	for (i = 0; with_memcpy && i < n; i++) {
		if (strcmp(v[i].size, "memcpy"))
			continue;
		if (!mc_head) {
			printf("\nmemcpy ceiling, %lu MB (GB/s):\n", v[i].nr * PAGE_SZ >> 20);
			mc_head = true;
		}
		printf("  %-7s T=%-4s ", v[i].policy, v[i].threads);
		if (row_ok(&v[i]))
			printf("%.2f\n", v[i].med);
		else
			printf("%s\n", v[i].verified);
	}
}

enum {
	O_SIZES = 256, O_PAGES, O_PAGES4K, O_PAGES2M, O_FROM, O_TO, O_REPEAT,
	O_THREADS, O_POLICY, O_LABEL, O_CSV, O_BASELINE, O_REPORT, O_MEMCPY,
	O_MEMCPY_MB, O_FULL, O_BACKEND, O_PIN, O_WARMUP, O_PREFAULT,
	O_INTERLEAVE, O_START_ON,
};

static const struct option longopts[] = {
	{ "sizes", required_argument, NULL, O_SIZES },
	{ "pages", required_argument, NULL, O_PAGES },
	{ "pages4k", required_argument, NULL, O_PAGES4K },
	{ "pages2m", required_argument, NULL, O_PAGES2M },
	{ "from", required_argument, NULL, O_FROM },
	{ "to", required_argument, NULL, O_TO },
	{ "repeat", required_argument, NULL, O_REPEAT },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "policy", required_argument, NULL, O_POLICY },
	{ "label", required_argument, NULL, O_LABEL },
	{ "csv", required_argument, NULL, O_CSV },
	{ "baseline", required_argument, NULL, O_BASELINE },
	{ "report", required_argument, NULL, O_REPORT },
	{ "memcpy", no_argument, NULL, O_MEMCPY },
	{ "memcpy-mb", required_argument, NULL, O_MEMCPY_MB },
	{ "full-pattern", no_argument, NULL, O_FULL },
	{ "backend", required_argument, NULL, O_BACKEND },
	{ "pin", required_argument, NULL, O_PIN },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "prefault", no_argument, NULL, O_PREFAULT },
	{ "interleave", required_argument, NULL, O_INTERLEAVE },
	{ "start-on", required_argument, NULL, O_START_ON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	const char *pages = NULL;
	int c, v;

	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case O_SIZES:
			opt.do4k = !strcmp(optarg, "4k") || !strcmp(optarg, "both");
			opt.do2m = !strcmp(optarg, "2m") || !strcmp(optarg, "both");
			if (!opt.do4k && !opt.do2m)
				goto bad;
			break;
		case O_PAGES:
			pages = optarg;
			break;
		case O_PAGES4K:
			if (parse_nums(optarg, opt.pages4k, &opt.n4k))
				goto bad;
			break;
		case O_PAGES2M:
			if (parse_nums(optarg, opt.pages2m, &opt.n2m))
				goto bad;
			break;
		case O_FROM:
			if (parse_int(optarg, 0, 1023, &opt.from))
				goto bad;
			break;
		case O_TO:
			if (parse_int(optarg, 0, 1023, &opt.to))
				goto bad;
			break;
		case O_REPEAT:
			if (parse_int(optarg, 1, MAX_REPEAT, &opt.repeat))
				goto bad;
			break;
		case O_THREADS:
			if (parse_list(optarg, &opt.threads))
				goto bad;
			break;
		case O_POLICY:
			if (parse_list(optarg, &opt.policy))
				goto bad;
			break;
		case O_LABEL:
			if (!*optarg || strlen(optarg) >= 64 || strpbrk(optarg, ", \n"))
				goto bad;
			opt.label = optarg;
			break;
		case O_CSV:
			opt.csv = optarg;
			break;
		case O_BASELINE:
			opt.baseline = optarg;
			break;
		case O_REPORT:
			opt.report = optarg;
			break;
		case O_MEMCPY:
			opt.memcpy = true;
			break;
		case O_MEMCPY_MB:
			if (parse_int(optarg, 1, 1 << 20, &v))
				goto bad;
			opt.memcpy_mb = v;
			break;
		case O_FULL:
			opt.full_pattern = true;
			break;
		case O_WARMUP:
			if (parse_int(optarg, 0, MAX_REPEAT, &opt.warmup))
				goto bad;
			break;
		case O_START_ON:
			if (parse_int(optarg, 0, CPU_SETSIZE - 1, &opt.start_on))
				goto bad;
			opt.start_on++;		/* 0: not set */
			break;
		case O_INTERLEAVE:
			if (parse_int(optarg, 2, MAX_REPEAT, &opt.interleave))
				goto bad;
			break;
		case O_PREFAULT:
			opt.prefault = true;
			break;
		case O_PIN:
			opt.pin = optarg;
			break;
		case O_BACKEND:
			if (!*optarg || strlen(optarg) >= TOKEN_LEN || strpbrk(optarg, ", \n"))
				goto bad;
			opt.backend = optarg;
			break;
		case 'q':
			opt.quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench-copy: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (pages) {
		if (opt.do4k && parse_nums(pages, opt.pages4k, &opt.n4k))
			goto bad_pages;
		if (opt.do2m && parse_nums(pages, opt.pages2m, &opt.n2m))
			goto bad_pages;
	}
	if (opt.from == opt.to) {
		fprintf(stderr, "bench-copy: --from and --to must differ\n");
		return -1;
	}
	return 0;
bad_pages:
	optarg = (char *)pages;
bad:
	fprintf(stderr, "bench-copy: bad value '%s' for an option (see --help)\n", optarg);
	return -1;
}

static int setup_nodes(void)
{
	int max, i;

	if (numa_available() < 0) {
		fprintf(stderr, "bench-copy: NUMA is not available on this system (no mbind/move_pages)\n");
		return -1;
	}
	max = numa_max_node();
	for (i = 0; i < 2; i++) {
		int node = i ? opt.to : opt.from;

		if (node <= max && numa_bitmask_isbitset(numa_nodes_ptr, node))
			continue;
		fprintf(stderr,
			"bench-copy: node %d does not exist: this system has %d NUMA node(s).\n"
			"bench-copy: run it on a machine or VM with two nodes, e.g. with harness/bench-copy\n"
			"bench-copy: or harness/vm-run --topo numa2 --cpus 2 --mem 2G,2G -- build/selftests/bench-copy\n",
			node, numa_num_configured_nodes());
		return -1;
	}
	return 0;
}

/* The q-quantile of n sorted values, interpolated. */
static double quantile(const double *v, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)pos;

	return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[n - 1];
}

static double median_of(const double *v, int n)
{
	double s[MAX_REPEAT];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return quantile(s, n, 0.5);
}

/* Median with its interquartile range and a bootstrap 95% interval. */
struct spread {
	double med, q1, q3, lo, hi;
};

#define BOOTSTRAP	2000

static struct spread spread_of(const double *v, int n)
{
	static double meds[BOOTSTRAP];
	uint64_t x = 0x9e3779b97f4a7c15ULL;	/* fixed: runs are reproducible */
	double s[MAX_REPEAT], r[MAX_REPEAT];
	struct spread sp;
	int b, i;

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	sp.med = quantile(s, n, 0.5);
	sp.q1 = quantile(s, n, 0.25);
	sp.q3 = quantile(s, n, 0.75);
	for (b = 0; b < BOOTSTRAP; b++) {
		for (i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			r[i] = v[x % n];
		}
		meds[b] = median_of(r, n);
	}
	qsort(meds, BOOTSTRAP, sizeof(*meds), cmp_double);
	sp.lo = quantile(meds, BOOTSTRAP, 0.025);
	sp.hi = quantile(meds, BOOTSTRAP, 0.975);
	return sp;
}

static void print_spread(const char *what, const double *v, int n)
{
	struct spread sp;

	if (n < 2) {
		printf("  %-26s n/a\n", what);
		return;
	}
	sp = spread_of(v, n);
	printf("  %-26s %6.3f  IQR %.3f-%.3f  95%% CI %.3f-%.3f  (%d rounds)\n",
	       what, sp.med, sp.q1, sp.q3, sp.lo, sp.hi, n);
}

/*
 * The kernel's own copy ceiling (debugfs migrate_copy/ceiling, with
 * CONFIG_MIGRATE_COPY_CEILING): the same number and size of folios copied
 * from node A to node B on one CPU, and on every CPU of the guest, with
 * nothing of a migration around it.  Migration's copy phase is reported
 * as a fraction of it.
 */
#define CEILING		"/sys/kernel/debug/migrate_copy/ceiling"

/* GB/s on 1 CPU and on all CPUs; false if there is no ceiling file. */
static bool ceiling_measure(bool thp, unsigned long nr, double *one,
			    double *all, unsigned int *cpus)
{
	unsigned long long bytes, serial_ns, parallel_ns;
	char req[96], res[512], *p;

	if (access(CEILING, W_OK))
		return false;
	snprintf(req, sizeof(req), "%lu %d %d %d", nr, thp ? 9 : 0, opt.from,
		 opt.to);
	if (write_file(CEILING, req) || read_file(CEILING, res, sizeof(res)))
		return false;
	p = strstr(res, "bytes=");
	if (!p || sscanf(p, "bytes=%llu", &bytes) != 1 ||
	    !(p = strstr(res, "serial_ns=")) ||
	    sscanf(p, "serial_ns=%llu cpus=%u", &serial_ns, cpus) != 2 ||
	    !(p = strstr(res, "parallel_ns=")) ||
	    sscanf(p, "parallel_ns=%llu", &parallel_ns) != 1 ||
	    !serial_ns || !parallel_ns)
		return false;
	*one = (double)bytes / serial_ns;
	*all = (double)bytes / parallel_ns;
	return true;
}

/* The copy-phase ratio mt:2/serial of the largest THP batch measured. */
static struct {
	unsigned long nr;
	bool have;
	struct spread sp;
} thp_speedup;

/*
 * The ceiling's own spread, and each column's copy phase per round as a
 * fraction of the ceiling with as many CPUs as the column may use: one
 * for serial and mt:1, all of them for the others.
 */
static void print_ceiling(const char *size, unsigned long nr,
			  const struct list *cols,
			  double copy[][MAX_REPEAT], const double *ceil1,
			  const double *ceiln, unsigned int cpus)
{
	double frac[MAX_REPEAT];
	char name[32], what[64];
	struct spread sp;
	int c, r, n;

	print_spread("ceiling, 1 CPU", ceil1, opt.interleave);
	snprintf(what, sizeof(what), "ceiling, %u CPUs", cpus);
	print_spread(what, ceiln, opt.interleave);
	for (c = 0; c < cols->n; c++) {
		const char *cn = col_name(cols->v[c], name, sizeof(name));
		bool one = !strcmp(cols->v[c], "serial") ||
			   !strcmp(cols->v[c], "1");

		for (n = 0, r = 0; r < opt.interleave; r++)
			if (copy[c][r] > 0)
				frac[n++] = copy[c][r] / (one ? ceil1[r] : ceiln[r]);
		if (n < 2)
			continue;
		sp = spread_of(frac, n);
		printf("ceiling: %s x %lu %s copy phase / %u-CPU ceiling %.3f (95%% CI %.3f-%.3f)\n",
		       size, nr, cn, one ? 1 : cpus, sp.med, sp.lo, sp.hi);
	}
}

/*
 * One batch size: every column once per round, the order rotated by one
 * and reversed every other round, so that no column always runs first
 * or right after the same one.  Ratios are taken within a round, where
 * the guest's host load is the most alike.
 */
static int interleave_point(bool thp, unsigned long nr, const struct list *cols)
{
	static double move[MAX_LIST][MAX_REPEAT], copy[MAX_LIST][MAX_REPEAT];
	static unsigned int thr[MAX_LIST][MAX_REPEAT];
	static double ceil1[MAX_REPEAT], ceiln[MAX_REPEAT];
	unsigned int ceil_cpus = 0;
	bool have_ceil = true;
	const char *size = thp ? "2m" : "4k";
	int ref = 0, r, k, c, n, nc = cols->n;
	double ratio[MAX_REPEAT];
	bool split = false;
	char name[32], what[64];
	unsigned long need = nr * (thp ? THP_SZ : PAGE_SZ) * 6 / 5;

	if (node_free(opt.to) < need || node_free(opt.from) < need) {
		printf("interleaved %s x %lu: skipped (needs %lu MB)\n", size, nr, need >> 20);
		return 0;
	}
	for (c = 0; c < nc; c++)
		if (!strcmp(cols->v[c], "serial"))
			ref = c;
	for (r = 0; r < opt.interleave; r++) {
		for (k = 0; k < nc; k++) {
			c = ((r & 1) ? nc - 1 - k : k) + r;
			c %= nc;
			if (have_threads_knob && set_threads(cols->v[c]))
				return EXIT_SETUP;
			move[c][r] = run_once(thp, nr, r, &split);
			if (move[c][r] == -2) {
				printf("interleaved %s x %lu: skipped (THP allocation failed)\n",
				       size, nr);
				return 0;
			}
			if (move[c][r] <= 0) {
				had_verify_fail |= move[c][r] < 0;
				return move[c][r] < 0 ? EXIT_VERIFY : EXIT_SETUP;
			}
			copy[c][r] = phase.events && phase.ns > 0 ?
				     phase.bytes / phase.ns : 0;
			thr[c][r] = phase.threads;
		}
		have_ceil = have_ceil &&
			    ceiling_measure(thp, nr, &ceil1[r], &ceiln[r], &ceil_cpus);
	}
	measured++;
	printf("\ninterleaved %s x %lu (%lu MB), %d rounds%s; GB/s per round, "
	       "ratios against %s\n", size, nr,
	       nr * (thp ? THP_SZ : PAGE_SZ) >> 20, opt.interleave,
	       split ? ", THPs were split by the move" : "", cols->v[ref]);
	for (c = 0; c < nc; c++) {
		const char *cn = col_name(cols->v[c], name, sizeof(name));
		int multi = 0;

		snprintf(what, sizeof(what), "%s move", cn);
		print_spread(what, move[c], opt.interleave);
		for (n = 0, r = 0; r < opt.interleave; r++)
			if (copy[c][r] > 0)
				ratio[n++] = copy[c][r];
		snprintf(what, sizeof(what), "%s copy phase", cn);
		if (n == opt.interleave)
			print_spread(what, ratio, n);
		else
			printf("  %-26s n/a (%d of %d rounds had no batched copy)\n",
			       what, opt.interleave - n, opt.interleave);
		for (r = 0; r < opt.interleave; r++)
			multi += thr[c][r] > 1;
		if (n)
			printf("  %-26s %d of %d rounds copied on more than one CPU\n",
			       "", multi, opt.interleave);
	}
	for (c = 0; c < nc; c++) {
		struct spread sp;

		const char *cn;

		if (c == ref)
			continue;
		cn = col_name(cols->v[c], name, sizeof(name));
		for (r = 0; r < opt.interleave; r++)
			ratio[r] = move[c][r] / move[ref][r];
		snprintf(what, sizeof(what), "%s/%s move", cn, cols->v[ref]);
		print_spread(what, ratio, opt.interleave);
		for (n = 0, r = 0; r < opt.interleave; r++)
			if (copy[c][r] > 0 && copy[ref][r] > 0)
				ratio[n++] = copy[c][r] / copy[ref][r];
		snprintf(what, sizeof(what), "%s/%s copy phase", cn, cols->v[ref]);
		if (n < opt.interleave) {
			printf("  %-26s n/a\n", what);
			continue;
		}
		print_spread(what, ratio, n);
		sp = spread_of(ratio, n);
		printf("ratio: %s x %lu %s/%s copy phase %.3f (95%% CI %.3f-%.3f): %s\n",
		       size, nr, cn, cols->v[ref], sp.med, sp.lo, sp.hi,
		       sp.lo > 1.0 ? "faster" : sp.hi < 1.0 ? "slower" :
		       "no difference shown");
		if (thp && !strcmp(cols->v[c], "2") && nr >= thp_speedup.nr &&
		    !strcmp(cols->v[ref], "serial")) {
			thp_speedup.nr = nr;
			thp_speedup.sp = sp;
			thp_speedup.have = true;
		}
	}
	if (have_ceil)
		print_ceiling(size, nr, cols, copy, ceil1, ceiln, ceil_cpus);
	else
		printf("  ceiling: n/a (no %s: a kernel without CONFIG_MIGRATE_COPY_CEILING?)\n",
		       CEILING);
	return 0;
}

static void print_copy_variant(void)
{
	char line[4096];
	bool erms = false, fsrm = false, rep_good = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		erms = strstr(line, " erms") != NULL;
		fsrm = strstr(line, " fsrm") != NULL;
		rep_good = strstr(line, " rep_good") != NULL;
		break;
	}
	if (f)
		fclose(f);
	printf("cpu: erms %s, fsrm %s, rep_good %s: migration's copy_mc_highpage() "
	       "copies with %s; copy_page() with %s\n",
	       erms ? "yes" : "no", fsrm ? "yes" : "no", rep_good ? "yes" : "no",
	       erms ? "rep movsb (copy_mc_enhanced_fast_string)" :
	       fsrm ? "memcpy's rep movsb" : "memcpy's unrolled loop",
	       rep_good ? "rep movsq" : "copy_page_regs");
}

static int run_interleaved(const struct list *cols)
{
	int i, rc = 0;

	print_copy_variant();
	if (have_threads_knob && copy_phase_start())
		return EXIT_SETUP;
	for (i = 0; !rc && opt.do4k && i < opt.n4k; i++)
		rc = interleave_point(false, opt.pages4k[i], cols);
	for (i = 0; !rc && opt.do2m && i < opt.n2m; i++)
		rc = interleave_point(true, opt.pages2m[i], cols);
	copy_phase_stop();
	restore_knobs();
	if (rc)
		return rc;
	/* User-space memcpy() on the same vCPUs, beside the kernel's ceiling. */
	if (opt.memcpy)
		run_memcpy();
	if (thp_speedup.have)
		printf("thp copy-phase speedup at 2 threads: %.2fx [%.2f, %.2f] (%lu THPs, median of per-round mt:2/serial, bootstrap 95%% interval)\n",
		       thp_speedup.sp.med, thp_speedup.sp.lo, thp_speedup.sp.hi,
		       thp_speedup.nr);
	return measured ? 0 : EXIT_SKIPPED;
}

int main(int argc, char **argv)
{
	char buf[256];
	struct list threads, policies;
	int t, p, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv))
		return EXIT_SETUP;

	if (opt.baseline) {
		nbase = read_csv(opt.baseline, base, MAX_ROWS);
		if (nbase < 0)
			return EXIT_SETUP;
		if (!nbase)
			fprintf(stderr, "bench-copy: no rows in baseline %s\n", opt.baseline);
	}
	if (opt.report) {
		nrows = read_csv(opt.report, rows, MAX_ROWS);
		if (nrows <= 0) {
			fprintf(stderr, "bench-copy: no rows in %s\n", opt.report);
			return EXIT_SETUP;
		}
		print_tables(rows, nrows, base, nbase, true);
		return 0;
	}

	if (setup_nodes())
		return EXIT_SETUP;
	if (opt.pin) {
		struct bitmask *bm = numa_parse_cpustring_all(opt.pin);

		if (!bm || numa_sched_setaffinity(0, bm)) {
			fprintf(stderr, "bench-copy: cannot pin to CPUs '%s'\n", opt.pin);
			return EXIT_SETUP;
		}
		numa_bitmask_free(bm);
	}

	have_threads_knob = !access(KNOB_THREADS, F_OK);
	have_policy_knob = !access(KNOB_POLICY, F_OK);
	have_backend_knob = have_threads_knob && !access(KNOB_BACKEND, F_OK);
	if (have_backend_knob) {
		if (read_file(KNOB_BACKEND, buf, sizeof(buf)) || access(KNOB_BACKEND, W_OK)) {
			fprintf(stderr, "bench-copy: %s is not readable and writable (run as root)\n",
				KNOB_BACKEND);
			return EXIT_SETUP;
		}
		knob_value(buf, knob_backend_saved, sizeof(knob_backend_saved));
	}
	if (have_threads_knob) {
		if (read_file(KNOB_THREADS, knob_threads_saved, sizeof(knob_threads_saved)) ||
		    access(KNOB_THREADS, W_OK)) {
			fprintf(stderr, "bench-copy: %s is not readable and writable (run as root)\n",
				KNOB_THREADS);
			return EXIT_SETUP;
		}
		if (opt.threads.n)
			threads = opt.threads;
		else
			parse_list(have_backend_knob ? "off,1,2,0" : "1,2,0", &threads);
		for (t = 0; t < threads.n; t++) {
			if (isdigit((unsigned char)threads.v[t][0]) || have_backend_knob)
				continue;
			fprintf(stderr, "bench-copy: --threads %s needs %s, which this kernel lacks\n",
				threads.v[t], KNOB_BACKEND);
			return EXIT_SETUP;
		}
	} else {
		printf("bench-copy: no %s: measuring the kernel's own copy (\"vanilla\")\n",
		       KNOB_THREADS);
		parse_list("vanilla", &threads);
	}
	if (have_policy_knob) {
		if (read_file(KNOB_POLICY, buf, sizeof(buf)) ||
		    (opt.policy.n && access(KNOB_POLICY, W_OK))) {
			fprintf(stderr, "bench-copy: %s is not readable and writable (run as root)\n",
				KNOB_POLICY);
			return EXIT_SETUP;
		}
		knob_value(buf, knob_policy_saved, sizeof(knob_policy_saved));
		if (opt.policy.n) {
			policies = opt.policy;
		} else if (parse_list(knob_policy_saved, &policies)) {
			parse_list("current", &policies);
		}
	} else {
		if (opt.policy.n)
			printf("bench-copy: no %s: ignoring --policy\n", KNOB_POLICY);
		parse_list("-", &policies);
	}
	atexit(restore_knobs);

	if (opt.do2m) {
		if (read_file(THP_ENABLED, buf, sizeof(buf)) || strstr(buf, "[never]")) {
			printf("bench-copy: THP is disabled or missing (%s: %s): skipping 2 MB folios\n",
			       THP_ENABLED, buf);
			opt.do2m = false;
		}
	}

	printf("bench-copy: %s, node %d -> node %d, %d runs per configuration, "
	       "MemFree node%d %lu MB, node%d %lu MB\n", opt.label, opt.from, opt.to,
	       opt.repeat, opt.from, node_free(opt.from) >> 20, opt.to,
	       node_free(opt.to) >> 20);

	if (opt.prefault) {
		prefault_node(opt.from);
		prefault_node(opt.to);
	}
	if (opt.interleave) {
		if (have_policy_knob && opt.policy.n && set_knob(KNOB_POLICY, policies.v[0]))
			return EXIT_SETUP;
		return run_interleaved(&threads);
	}
	for (p = 0; p < policies.n; p++) {
		if (have_policy_knob && opt.policy.n && set_knob(KNOB_POLICY, policies.v[p]))
			return EXIT_SETUP;
		for (t = 0; t < threads.n; t++) {
			if (have_threads_knob && set_threads(threads.v[t]))
				return EXIT_SETUP;
			for (i = 0; opt.do4k && i < opt.n4k; i++)
				run_config(false, opt.pages4k[i], threads.v[t], policies.v[p]);
			for (i = 0; opt.do2m && i < opt.n2m; i++)
				run_config(true, opt.pages2m[i], threads.v[t], policies.v[p]);
		}
	}
	restore_knobs();

	if (opt.memcpy)
		run_memcpy();

	print_tables(rows, nrows, base, nbase, false);
	if (opt.csv)
		write_csv(opt.csv);

	if (had_verify_fail) {
		printf("bench-copy: VERIFICATION FAILED (see FAIL lines above)\n");
		return EXIT_VERIFY;
	}
	if (had_setup_err)
		return EXIT_SETUP;
	if (!measured) {
		printf("bench-copy: every configuration was skipped\n");
		return EXIT_SKIPPED;
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * anon-ro: anonymous read-mostly memory, the way an inference engine that
 * loads its weights into anonymous memory uses it (or XSBench's lookups).
 *
 * Threads, one per CPU, each fill their own slice of an anonymous private
 * buffer with a checkable pattern (word i holds i * ODD ^ seed), wait for
 * each other, then read random words of the whole buffer and verify each:
 * one word per 4 KiB page visited, in batches of independent loads, so
 * that the run is memory-bound and spread over every page.  It moves no
 * page itself: make the buffer bigger than the fast node and NUMA
 * balancing or demotion migrates it, unmapping read-only anonymous pages
 * that every thread's TLB holds, the shootdowns migrc defers.  It needs
 * no NUMA to run.
 *
 * The buffer stays writable after the write phase: until the kernel
 * write-protects a page (NUMA balancing's scanner does, and a promoted
 * page comes back read-only), its first migration finds a writable entry,
 * which migrc never defers (migrc_writable_entries in /proc/vmstat).
 * With -p the buffer is sealed with mprotect(PROT_READ) after the write
 * phase, as an engine that seals its weights does: every entry is then
 * read-only from the start.  With -w a share of the accesses rewrite the
 * word they hit with the value it already holds: writes that make pages
 * writable again while verification still holds.
 *
 * With -H PERCENT the reads go to a window of that share of the buffer,
 * not all of it, and with -d SECONDS the window slides over the buffer,
 * wrapping around once every SECONDS: a hot set that moves, as the
 * experts a mixture-of-experts model uses, a key-value store's popular
 * keys or a solver's active region do.  Uniform reads of a buffer bigger
 * than the fast node leave reclaim nothing cold to demote: kswapd finds
 * every page referenced, gives up on the node (node_unreclaimable in
 * /proc/zoneinfo) and tiering stops, promotions included.  A moving
 * window keeps the pages behind it cold, so tiering keeps moving them:
 * that is where a read-mostly workload's steady state of migration is.
 *
 * With -c PERCENT it also finds out when tiering has cycled the fast node:
 * the first demotion of a page written at start-up finds it writable, and
 * only once most of those have moved is the run in its steady state.  It
 * records the frame (/proc/self/pagemap, which shows frames to root only)
 * of every page that the write phase left on the node its first thread
 * runs on (move_pages() with no target), and at each interval counts the
 * pages whose frame has changed since: a page that moved away and back
 * almost never gets its old frame again, so the count is a lower bound of
 * the pages that moved at least once.
 *
 * Prints the time the write phase took ("anon-ro write: ..."), a line per
 * interval ("anon-ro interval A-B s: reads_per_s=..."), with -c the moment
 * the share was reached ("anon-ro cycled: ..."), and at the end the
 * one line that starts with "anon-ro:" (see show_usage()).  Exits 0 if
 * every word read right, 1 if any was wrong, 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "stop.h"

#define PAGE		4096UL
#define PAGE_WORDS	(PAGE / sizeof(u64))
#define MAX_THREADS	1024
#define MAX_MB		1048576UL	/* 1 TiB */
#define BATCH		16		/* independent accesses in flight */
#define NSAMPLES	4		/* wrong words reported per thread */
#define ODD		0x9e3779b97f4a7c15ULL

typedef unsigned long long u64;
typedef unsigned int u32;

static struct {
	size_t size;
	unsigned int threads;
	unsigned long seconds, interval;
	unsigned int permille;		/* accesses that are writes */
	unsigned int cycle_pct;		/* -c: 0 if not asked */
	bool lru;			/* -L: where the unmoved pages are */
	unsigned int hot_pct;		/* -H: share of the buffer read */
	unsigned long drift;		/* -d: seconds per lap, 0: still */
	u64 seed;
	bool seal;
} opt = {
	.size = 1536UL << 20,
	.seconds = 60,
	.interval = 10,
	.hot_pct = 100,
};

struct worker {			/* a cache line or more each */
	alignas(64) pthread_t thread;
	unsigned int id;
	int cpu;
	atomic_ulong reads, writes;	/* published once per batch */
	unsigned long wrong;
	struct {
		size_t idx;
		u64 got;
	} sample[NSAMPLES];
};

static u64 *map;
static size_t nr_pages, win_pages;	/* the buffer, the window read */
static double reads_start;		/* when the reads began */
static struct worker *workers;
static pthread_barrier_t written, go;
static atomic_bool stop;

static inline u64 pattern(size_t idx)
{
	return (u64)idx * ODD ^ opt.seed;
}

static void show_usage(FILE *f)
{
	fprintf(f,
		"usage: anon-ro [-s MB] [-r THREADS] [-t SECONDS] [-i SECONDS] [-p]\n"
		"               [-w PERMILLE] [-c PERCENT [-L]] [-H PERCENT [-d SECONDS]]\n"
		"               [-S SEED]\n"
		"Fill an anonymous buffer with a pattern, one slice per thread, then\n"
		"read random words of all of it from every thread, one word per page\n"
		"visited, verifying each: read-mostly anonymous memory, as model\n"
		"weights loaded by an inference engine.  It moves no page itself; make\n"
		"it bigger than the fast node and let NUMA balancing or demotion do it.\n"
		"  -s  buffer size in MB, 1..%lu (default 1536)\n"
		"  -r  threads, one per CPU, 1..%u (default or 0: online CPUs)\n"
		"  -t  seconds of random reads after the write phase (default 60)\n"
		"  -i  print reads per second every this many seconds (default 10;\n"
		"      0: only the summary)\n"
		"  -p  seal: mprotect(PROT_READ) the buffer after the write phase\n"
		"  -w  permille of the accesses that rewrite the word they hit with its\n"
		"      own value, 0..1000 (default 0); not with -p\n"
		"  -c  print 'anon-ro cycled: ...' once PERCENT (1..100) of the pages\n"
		"      the write phase left on the first thread's node have moved to\n"
		"      another frame (root: it reads frame numbers from pagemap), and\n"
		"      the share moved on each interval line\n"
		"  -L  with -c, also say on each interval line where the pages not\n"
		"      yet moved are: how many sit in the read window, on the active\n"
		"      LRU list, with the referenced flag (/proc/kpageflags), the\n"
		"      node's active and inactive anonymous pages, and whether kswapd\n"
		"      has given up on it (node_unreclaimable)\n"
		"  -H  read only a window of PERCENT (1..100) of the buffer, a hot set\n"
		"      (default 100: all of it, uniformly)\n"
		"  -d  slide the window over the buffer, once round every SECONDS\n"
		"      (1..2^30; default: it stays at the start); needs -H below 100\n"
		"  -S  seed of the pattern and the random walk (default: from the clock)\n"
		"  -h, --help  this text\n"
		"Prints 'anon-ro: size=MB threads=N seconds=S reads=N writes=N\n"
		"reads_per_s=N wrong_words=N' last; exits 0 if every word read right,\n"
		"1 on any wrong word, 2 on a usage or setup error.\n",
		MAX_MB, MAX_THREADS);
}

/* A bad option value: say which, and exit with the usage status. */
static int bad_value(int c, const char *arg)
{
	fprintf(stderr, "anon-ro: invalid -%c value '%s'\n", c, arg);
	show_usage(stderr);
	return 2;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	double d = t - now();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);	/* early on a signal: the caller looks */
}

/* splitmix64: a thread's PRNG state from the seed, never 0. */
static u64 mix(u64 x)
{
	x += ODD;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x ? x : 1;
}

/* xorshift64*: a few cycles, next to a cache miss per access. */
static inline u64 next_rand(u64 *s)
{
	u64 x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void wrong_word(struct worker *w, size_t idx, u64 got)
{
	if (w->wrong < NSAMPLES) {
		w->sample[w->wrong].idx = idx;
		w->sample[w->wrong].got = got;
	}
	w->wrong++;
}

/*
 * One batch: BATCH random pages of the window that starts at page @first,
 * one word of each.  The addresses are drawn first so that the loads are
 * independent and miss in parallel.  The top 32 bits of a draw pick the
 * page, the low 9 the word in it, the 23 above those whether the access
 * is a write.
 */
static void batch(struct worker *w, size_t first, u64 *rng,
		  unsigned long *reads, unsigned long *writes)
{
	u32 wlimit = (u32)(((u64)opt.permille << 23) / 1000);
	size_t idx[BATCH];
	u64 val[BATCH];
	bool wr[BATCH];
	unsigned int b;

	for (b = 0; b < BATCH; b++) {
		u64 r = next_rand(rng);

		size_t page = first + (size_t)(((r >> 32) * win_pages) >> 32);

		if (page >= nr_pages)
			page -= nr_pages;	/* the window wraps around */
		idx[b] = page * PAGE_WORDS + (r & (PAGE_WORDS - 1));
		wr[b] = ((r >> 9) & 0x7fffff) < wlimit;
	}
	for (b = 0; b < BATCH; b++) {
		if (wr[b])
			map[idx[b]] = pattern(idx[b]);
		else
			val[b] = map[idx[b]];
	}
	for (b = 0; b < BATCH; b++) {
		if (wr[b]) {
			++*writes;
			continue;
		}
		++*reads;
		if (val[b] != pattern(idx[b]))
			wrong_word(w, idx[b], val[b]);
	}
}

/*
 * -c: the frames of the pages the write phase left on the fast node (0 once
 * a page has moved, or if it is not tracked), and how many have moved.
 */
#define PM_PRESENT	(1ULL << 63)
#define PM_PFN_MASK	((1ULL << 55) - 1)
#define CHUNK		4096	/* pages per pagemap read or move_pages() */

static struct {
	int fd;			/* /proc/self/pagemap */
	unsigned int node;
	u64 *pfn;
	size_t tracked, moved;
	bool reported;
} cyc = { .fd = -1 };

static bool pagemap_read(size_t first, size_t n, u64 *out)
{
	off_t off = (off_t)((uintptr_t)map / PAGE + first) * sizeof(u64);

	return pread(cyc.fd, out, n * sizeof(u64), off) ==
	       (ssize_t)(n * sizeof(u64));
}

/* Record the frames; 0 if tracking can start, else 2 (said why). */
static int cycle_start(void)
{
	static u64 ent[CHUNK];
	static void *pages[CHUNK];
	static int status[CHUNK];
	unsigned int cpu;
	size_t i, j, n;

	cyc.fd = open("/proc/self/pagemap", O_RDONLY);
	cyc.pfn = calloc(nr_pages, sizeof(u64));
	if (cyc.fd < 0 || !cyc.pfn || getcpu(&cpu, &cyc.node)) {
		fprintf(stderr, "anon-ro: -c: /proc/self/pagemap or getcpu(): %s\n",
			strerror(errno));
		return 2;
	}
	for (i = 0; i < nr_pages; i += n) {
		n = nr_pages - i < CHUNK ? nr_pages - i : CHUNK;
		for (j = 0; j < n; j++)
			pages[j] = (char *)map + (i + j) * PAGE;
		/* No target nodes: it only says where each page is. */
		if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) ||
		    !pagemap_read(i, n, ent)) {
			fprintf(stderr, "anon-ro: -c: move_pages() or pagemap: %s\n",
				strerror(errno));
			return 2;
		}
		for (j = 0; j < n; j++) {
			if (status[j] != (int)cyc.node || !(ent[j] & PM_PRESENT))
				continue;
			cyc.pfn[i + j] = ent[j] & PM_PFN_MASK;
			if (!cyc.pfn[i + j]) {
				fprintf(stderr, "anon-ro: -c: pagemap shows no frame numbers (needs CAP_SYS_ADMIN)\n");
				return 2;
			}
			cyc.tracked++;
		}
	}
	printf("anon-ro cycle: tracking the %zu pages on node %u\n",
	       cyc.tracked, cyc.node);
	return 0;
}

/*
 * Count the tracked pages that left their frame (migrated, or swapped
 * out: either way their next mapping is a new frame).  Returns the share
 * moved in percent, or -1 if pagemap could not be read.
 */
static double cycle_check(void)
{
	static u64 ent[CHUNK];
	size_t i, j, n;

	for (i = 0; i < nr_pages; i += n) {
		n = nr_pages - i < CHUNK ? nr_pages - i : CHUNK;
		if (!pagemap_read(i, n, ent))
			return -1;
		for (j = 0; j < n; j++) {
			u64 *pfn = &cyc.pfn[i + j];

			if (*pfn && (!(ent[j] & PM_PRESENT) ||
				     (ent[j] & PM_PFN_MASK) != *pfn)) {
				*pfn = 0;
				cyc.moved++;
			}
		}
	}
	return cyc.tracked ? cyc.moved * 100.0 / cyc.tracked : 100.0;
}

/*
 * The first page of the window, now: with -d it has slid (t / drift) of
 * the way round the buffer since the reads began.
 */
static size_t window_first(void)
{
	double lap;

	if (!opt.drift)
		return 0;
	lap = (now() - reads_start) / opt.drift;
	lap -= (unsigned long)lap;
	return (size_t)(lap * nr_pages) % nr_pages;
}

/*
 * -L: why the pages not yet moved stay.  Reclaim (classic LRU) demotes
 * from the tail of the inactive list, and only refills it from the
 * active list while the inactive list is short; a page in the read window
 * is referenced at every look.  So count, of the tracked pages still in
 * their first frame, those in the window now, those on the active list,
 * and those with the referenced flag, from /proc/kpageflags (root), the
 * node's active and inactive anonymous pages, and node_unreclaimable.
 * A value that cannot be read prints as "?": a diagnosis, never a reason
 * to stop the run.  The referenced flag is PG_referenced, which reclaim
 * and mark_page_accessed() set; it is not a record of recent reads.
 */
#define KPF_REFERENCED	(1ULL << 2)
#define KPF_LRU		(1ULL << 5)
#define KPF_ACTIVE	(1ULL << 6)

static long node_stat(const char *key)
{
	char path[64], name[64];
	long val = -1, v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/vmstat",
		 cyc.node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", name, &v) == 2)
		if (!strcmp(name, key)) {
			val = v;
			break;
		}
	fclose(f);
	return val;
}

/*
 * The flags of frame PFN, read a run of KPF_RUN frames at a time: a
 * thread's start-up pages mostly sit in runs of neighbouring frames, and a
 * read per page would cost the readers' CPUs a second per interval under
 * TCG.  The run is kept for one report only (len = 0 empties it), so
 * that no flag is an interval old.  Returns false if it cannot be read.
 */
#define KPF_RUN		512

struct kpf_run {
	u64 flags[KPF_RUN];
	u64 first;
	size_t len;
};

static bool kpf_read(int fd, struct kpf_run *r, u64 pfn, u64 *flags)
{
	ssize_t got;

	if (!r->len || pfn < r->first || pfn - r->first >= r->len) {
		r->first = pfn - pfn % KPF_RUN;
		got = pread(fd, r->flags, sizeof(r->flags),
			    r->first * sizeof(u64));
		r->len = got > 0 ? got / sizeof(u64) : 0;
		if (pfn - r->first >= r->len) {
			r->len = 0;
			return false;
		}
	}
	*flags = r->flags[pfn - r->first];
	return true;
}

/*
 * node_unreclaimable of the tracked node in /proc/zoneinfo (in the node's
 * first zone): 1 once kswapd has failed on it MAX_RECLAIM_RETRIES times
 * in a row, after which it sleeps and promotion into the node stops until
 * a direct reclaim there makes progress.  -1 if it cannot be read.
 */
static int node_given_up(void)
{
	int node = -1, val = -1, v;
	char line[256];
	FILE *f;

	f = fopen("/proc/zoneinfo", "r");
	if (!f)
		return -1;
	while (val < 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d,", &v) == 1)
			node = v;
		else if (node == (int)cyc.node &&
			 sscanf(line, " node_unreclaimable: %d", &v) == 1)
			val = v;
	}
	fclose(f);
	return val;
}

/* " KEY=N", or " KEY=?" for a value that could not be read (-1). */
static void print_stat(const char *key, long val)
{
	if (val < 0)
		printf(" %s=?", key);
	else
		printf(" %s=%ld", key, val);
}

static void lru_report(void)
{
	size_t i, left = 0, in_win = 0, active = 0, ref = 0, off_lru = 0;
	size_t first = window_first();
	static struct kpf_run run;
	static int fd = -2;
	bool flags_ok;
	u64 flags;

	if (fd == -2)
		fd = open("/proc/kpageflags", O_RDONLY);
	flags_ok = fd >= 0;
	run.len = 0;
	for (i = 0; i < nr_pages; i++) {
		if (!cyc.pfn[i])
			continue;
		left++;
		if ((i + nr_pages - first) % nr_pages < win_pages)
			in_win++;
		if (!flags_ok)
			continue;
		if (!kpf_read(fd, &run, cyc.pfn[i], &flags)) {
			flags_ok = false;
			continue;
		}
		active += !!(flags & KPF_ACTIVE);
		ref += !!(flags & KPF_REFERENCED);
		off_lru += !(flags & KPF_LRU);
	}
	printf(" unmoved=%zu in_window=%zu", left, in_win);
	print_stat("active", flags_ok ? (long)active : -1);
	print_stat("referenced", flags_ok ? (long)ref : -1);
	print_stat("off_lru", flags_ok ? (long)off_lru : -1);
	print_stat("node_active_anon", node_stat("nr_active_anon"));
	print_stat("node_inactive_anon", node_stat("nr_inactive_anon"));
	print_stat("unreclaimable", node_given_up());
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	size_t first = nr_pages * w->id / opt.threads * PAGE_WORDS;
	size_t last = nr_pages * (w->id + 1) / opt.threads * PAGE_WORDS;
	unsigned long reads = 0, writes = 0, n;
	u64 rng = mix(opt.seed + w->id);
	size_t i, win = 0;

	pin(w->cpu);
	for (i = first; i < last; i++)
		map[i] = pattern(i);
	pthread_barrier_wait(&written);
	pthread_barrier_wait(&go);

	for (n = 0; !atomic_load_explicit(&stop, memory_order_relaxed); n++) {
		/* A clock read per 64 batches: the window moves smoothly. */
		if (!(n & 63))
			win = window_first();
		batch(w, win, &rng, &reads, &writes);
		atomic_store_explicit(&w->reads, reads, memory_order_relaxed);
		atomic_store_explicit(&w->writes, writes, memory_order_relaxed);
	}
	return NULL;
}

static void totals(unsigned long *reads, unsigned long *writes)
{
	unsigned int i;

	*reads = 0;
	*writes = 0;
	for (i = 0; i < opt.threads; i++) {
		*reads += atomic_load_explicit(&workers[i].reads,
					       memory_order_relaxed);
		*writes += atomic_load_explicit(&workers[i].writes,
						memory_order_relaxed);
	}
}

/* The CPUs this process may run on, in order; thread i takes the i-th. */
static void assign_cpus(void)
{
	int cpus[CPU_SETSIZE], n = 0, c;
	cpu_set_t set;
	unsigned int i;

	if (!sched_getaffinity(0, sizeof(set), &set))
		for (c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[n++] = c;
	for (i = 0; i < opt.threads; i++)
		workers[i].cpu = n ? cpus[i % n] : -1;
}

/* The end of an interval line with -c, and the line it prints once. */
static void cycle_report(double t)
{
	double pct = cycle_check();

	if (pct < 0) {
		printf(" moved=?");
		return;
	}
	printf(" moved=%.1f%%", pct);
	if (opt.lru)
		lru_report();
	if (cyc.reported || pct < opt.cycle_pct)
		return;
	cyc.reported = true;
	printf("\nanon-ro cycled: %.1f%% of the %zu pages first on node %u have moved, after %.0f s of reads",
	       pct, cyc.tracked, cyc.node, t);
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool seeded = false;
	unsigned long v;
	int c;

	while ((c = getopt_long(argc, argv, "s:r:t:i:pw:c:LH:d:S:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			if (!parse_ul(optarg, 1, MAX_MB, &v))
				return bad_value(c, optarg);
			opt.size = v << 20;
			break;
		case 'r':
			if (!parse_ul(optarg, 0, MAX_THREADS, &v))
				return bad_value(c, optarg);
			opt.threads = v;
			break;
		case 't':
			if (!parse_ul(optarg, 1, 1UL << 30, &opt.seconds))
				return bad_value(c, optarg);
			break;
		case 'i':
			if (!parse_ul(optarg, 0, 1UL << 30, &opt.interval))
				return bad_value(c, optarg);
			break;
		case 'p':
			opt.seal = true;
			break;
		case 'w':
			if (!parse_ul(optarg, 0, 1000, &v))
				return bad_value(c, optarg);
			opt.permille = v;
			break;
		case 'c':
			if (!parse_ul(optarg, 1, 100, &v))
				return bad_value(c, optarg);
			opt.cycle_pct = v;
			break;
		case 'L':
			opt.lru = true;
			break;
		case 'H':
			if (!parse_ul(optarg, 1, 100, &v))
				return bad_value(c, optarg);
			opt.hot_pct = v;
			break;
		case 'd':
			if (!parse_ul(optarg, 1, 1UL << 30, &opt.drift))
				return bad_value(c, optarg);
			break;
		case 'S':
			if (!parse_ul(optarg, 0, ULONG_MAX, &v))
				return bad_value(c, optarg);
			opt.seed = v;
			seeded = true;
			break;
		case 'h':
			show_usage(stdout);
			return 0;
		default:
			show_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "anon-ro: unexpected argument '%s'\n",
			argv[optind]);
		show_usage(stderr);
		return 2;
	}
	if (opt.seal && opt.permille) {
		fprintf(stderr, "anon-ro: invalid: -p seals the buffer, -w writes to it\n");
		show_usage(stderr);
		return 2;
	}
	if (opt.lru && !opt.cycle_pct) {
		fprintf(stderr, "anon-ro: invalid: -L reports on the pages -c tracks: give -c\n");
		show_usage(stderr);
		return 2;
	}
	if (opt.drift && opt.hot_pct == 100) {
		fprintf(stderr, "anon-ro: invalid: -d slides a window: give -H below 100\n");
		show_usage(stderr);
		return 2;
	}
	if (!opt.threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		opt.threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
	}
	if (!seeded)
		opt.seed = mix((u64)(now() * 1e9) ^ getpid());
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long reads, writes, last_reads = 0, last_writes = 0, wrong = 0;
	double t0, start, end, next, last, t, elapsed;
	sigset_t old;
	unsigned int i, j;
	int rc;

	rc = parse_args(argc, argv);
	if (rc >= 0)
		return rc;
	setvbuf(stdout, NULL, _IOLBF, 0);
	nr_pages = opt.size / PAGE;
	win_pages = nr_pages * opt.hot_pct / 100;
	if (!win_pages)
		win_pages = 1;

	map = mmap(NULL, opt.size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "anon-ro: mmap of %zu MB: %s\n", opt.size >> 20,
			strerror(errno));
		return 2;
	}
	workers = aligned_alloc(64, opt.threads * sizeof(*workers));
	if (!workers) {
		fprintf(stderr, "anon-ro: out of memory\n");
		return 2;
	}
	memset(workers, 0, opt.threads * sizeof(*workers));
	assign_cpus();
	if (pthread_barrier_init(&written, NULL, opt.threads + 1) ||
	    pthread_barrier_init(&go, NULL, opt.threads + 1)) {
		fprintf(stderr, "anon-ro: pthread_barrier_init failed\n");
		return 2;
	}

	/* SIGINT and SIGTERM end the run early, in the main thread only. */
	stop_signals_block(&old);

	t0 = now();
	for (i = 0; i < opt.threads; i++) {
		workers[i].id = i;
		rc = pthread_create(&workers[i].thread, NULL, worker_fn,
				    &workers[i]);
		if (rc) {
			fprintf(stderr, "anon-ro: thread %u: %s\n", i,
				strerror(rc));
			return 2;
		}
	}
	stop_signals_unblock(&old);
	pthread_barrier_wait(&written);
	t = now() - t0;
	fprintf(stdout,
		"anon-ro write: %zu MB by %u threads in %.3f s (%.2f GB/s), seed=0x%016llx\n",
		opt.size >> 20, opt.threads, t, opt.size / t / 1e9, opt.seed);
	if (opt.seal) {
		if (mprotect(map, opt.size, PROT_READ)) {
			fprintf(stderr, "anon-ro: mprotect(PROT_READ): %s\n",
				strerror(errno));
			return 2;
		}
		printf("anon-ro write: buffer sealed with mprotect(PROT_READ)\n");
	}
	if (opt.hot_pct < 100) {
		printf("anon-ro window: %zu of %zu pages (%u%%), ", win_pages,
		       nr_pages, opt.hot_pct);
		if (opt.drift)
			printf("once round the buffer every %lu s\n", opt.drift);
		else
			printf("still, at the start\n");
	}
	if (opt.cycle_pct) {
		rc = cycle_start();
		if (rc)
			return rc;
	}

	start = now();
	reads_start = start;
	end = start + opt.seconds;
	next = opt.interval ? start + opt.interval : end;
	last = start;
	pthread_barrier_wait(&go);
	j = 1;
	while (!atomic_load(&interrupted)) {
		sleep_until(next < end ? next : end);
		t = now();
		if (opt.interval && t >= next && !atomic_load(&interrupted)) {
			totals(&reads, &writes);
			printf("anon-ro interval %lu-%lu s: reads_per_s=%.0f",
			       (j - 1) * opt.interval, j * opt.interval,
			       (reads - last_reads) / (t - last));
			if (opt.permille)
				printf(" writes_per_s=%.0f",
				       (writes - last_writes) / (t - last));
			if (opt.cycle_pct)
				cycle_report(t - start);
			putchar('\n');
			last_reads = reads;
			last_writes = writes;
			last = t;
			next = start + ++j * (double)opt.interval;
		}
		if (t >= end)
			break;
	}
	elapsed = now() - start;
	atomic_store(&stop, true);
	for (i = 0; i < opt.threads; i++)
		pthread_join(workers[i].thread, NULL);

	totals(&reads, &writes);
	for (i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];

		for (j = 0; j < w->wrong && j < NSAMPLES; j++)
			fprintf(stderr,
				"anon-ro: thread %u read word %zu (page %zu) as 0x%016llx, expected 0x%016llx\n",
				i, w->sample[j].idx, w->sample[j].idx / PAGE_WORDS,
				w->sample[j].got, pattern(w->sample[j].idx));
		wrong += w->wrong;
	}
	if (atomic_load(&interrupted))
		fprintf(stderr, "anon-ro: interrupted after %.1f s\n", elapsed);
	fprintf(stdout,
		"anon-ro: size=%zuMB threads=%u seconds=%.1f reads=%lu writes=%lu reads_per_s=%.0f wrong_words=%lu\n",
		opt.size >> 20, opt.threads, elapsed, reads, writes,
		reads / elapsed, wrong);
	return wrong ? 1 : 0;
}

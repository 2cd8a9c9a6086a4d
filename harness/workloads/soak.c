// SPDX-License-Identifier: GPL-2.0
/*
 * soak: a long-running mixed workload that checks every byte it reads while
 * migration, reclaim and page reuse race with it.
 *
 * migrc defers the TLB shootdown of read-only, clean folios unmapped by
 * migration and reclaim.  Its correctness rests on two rules: the flush is
 * done before a source page leaves the page allocator again, and before
 * anything writes data that a stale read-only entry would hide.  The
 * selftests check each rule on its own, for a few seconds; soak runs all of
 * them together, for as long as you like (minutes in the test VM, hours by
 * hand), so that rare interleavings get their chance.
 *
 * Every page of every region holds 64-bit words that encode the region, the
 * page index, the word index and a version: word = version << 32 | a hash
 * of (region, page, word), never zero, so a page of zeros, of another
 * region, another page or another version does not match.  For each page
 * the writer of the page publishes two numbers: issued[page], the version
 * it starts to write, and committed[page], the last version fully written
 * (its write()/store loop returned).  A reader loads committed (acquire),
 * reads the whole page, then loads issued, and accepts:
 *
 *   - a page that decodes to one version v with committed <= v <= issued;
 *   - a page that does not decode to one version, only if issued moved
 *     past committed (a write ran while it read: a torn read); it then
 *     reads again, for at most 10 s (then it counts a "torn giveup").
 *
 * Anything else is a mismatch.  A stale TLB entry to a page migrated away
 * (or reclaimed) and freed shows either the page's older version (< the
 * committed one the reader already saw) or whatever the page's new owner
 * wrote; both are mismatches, and neither needs a time window to be seen.
 *
 * All at once, for -t seconds:
 *
 *   readers   one per CPU, pinned, looping over every region but the
 *             reclaim one and checking every word of every page, and with
 *             -m a second one per CPU that does the same over the reclaim
 *             region (whose refaults are slow); no system calls (only page
 *             faults), so that nothing but a real TLB flush drops the TLB
 *             entries they hold;
 *   mover     move_pages() of random ranges of random regions between
 *             nodes -a and -b; counts the pages that really changed node;
 *   anon      a private anonymous region, written once and then
 *             mprotect(PROT_READ).  Its PTEs stay dirty, so migrc never
 *             defers them: it checks the ordinary path mixed into the same
 *             batches;
 *   file      a read-only MAP_SHARED mapping of a file in -d, which a writer
 *             thread keeps pwrite()ing with new versions (the write()
 *             barrier: a stale entry would hide the new data);
 *   prot      a MAP_SHARED mapping of a second file in -d, which a thread
 *             makes writable with mprotect(), writes through, makes
 *             read-only again and zaps with MADV_DONTNEED, so that the
 *             readers refault clean read-only PTEs that migrc may defer
 *             (the write-fault / mprotect barrier);
 *   fork      a private writable anonymous region the main thread writes a
 *             new version into, then forks a child that checks that its
 *             copy-on-write snapshot holds exactly that version, while the
 *             parent keeps writing newer ones;
 *   reuse     a thread that maps anonymous memory bound to one node or the
 *             other, checks that it reads as zero, fills, checks and unmaps
 *             it, over and over: it reuses freed pages, migrated-away
 *             sources among them, and a reader holding a stale entry to
 *             one would see its pattern;
 *   reclaim   (-m MB) a read-only MAP_SHARED mapping of a file in -D, which
 *             should be on a filesystem with a real page cache (not tmpfs:
 *             without swap its pages cannot be reclaimed).  Run soak in a
 *             memory cgroup smaller than its working set and the readers'
 *             own refaults keep reclaiming it.
 *
 * Memory cgroup limits, demotion and promotion between memory tiers are set
 * up from outside (harness/tests/soak.sh).
 *
 * Prints "key: value" counters and a verdict line; exits 0 if everything
 * read right, 1 on any mismatch (or a fork child that failed or died),
 * 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

#ifndef __aligned
#define __aligned(x)		__attribute__((aligned(x)))
#endif
#ifndef __noreturn
#define __noreturn		__attribute__((noreturn))
#endif
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC		0x01021994
#endif

#define GOLD32			0x9e3779b1u
#define MAX_READERS		256
#define MAX_CHUNK		256	/* pages per move_pages() call */
#define MAX_WRITE_PAGES		16	/* pages per pwrite() */
#define MAX_PROT_PAGES		64	/* pages per mprotect() round */
#define MAX_SAMPLES		8	/* mismatches printed */
#define TORN_SPINS		100	/* torn reads before yielding */
#define TORN_GIVEUP_S		10.0	/* then give up on the page */
#define CHILD_ROUNDS		3
#define READER_NICE		5
#define PROGRESS_S		10

enum {
	R_ANON,
	R_FILE,
	R_PROT,
	R_FORK,
	R_RECLAIM,
	NR_REGIONS,
};

struct region {
	const char *name;
	char *base;
	size_t npages;
	uint32_t tag;
	int fd;
	atomic_uint *issued;	/* version being written (or last) */
	atomic_uint *committed;	/* last version fully written */
};

struct reader {
	pthread_t thread;
	unsigned int cpu;
	bool reclaim;		/* reads the reclaim region only */
	size_t start;
	/* Written by the reader only. */
	unsigned long pages __aligned(64);
	unsigned long passes;
	unsigned long torn;
	unsigned long giveups;
} __aligned(64);

/* What one look at a page found. */
struct look {
	uint32_t c0, i1;	/* committed before, issued after */
	uint32_t seen;		/* version in word 0 */
	size_t word;		/* first word that does not match */
	uint64_t got, want;
};

enum { PAGE_OK, PAGE_TORN, PAGE_BAD };

/* The fork child's findings, in a shared page. */
struct child_report {
	unsigned int bad;
	unsigned int region;
	size_t page;
	struct look l;
};

static struct {
	unsigned int seconds;
	uint64_t seed;
	bool seed_set;
	int node_a, node_b;
	const char *dir, *rdir;
	size_t size_mb, reclaim_mb;
	unsigned int readers;
	bool verbose;
} opt = {
	.seconds = 60,
	.node_a = 0,
	.node_b = 1,
	.dir = "/tmp",
	.size_mb = 16,
};

static struct region regions[NR_REGIONS] = {
	[R_ANON]	= { .name = "anon",	.tag = 0x414e4f4e, .fd = -1 },
	[R_FILE]	= { .name = "file",	.tag = 0x46494c45, .fd = -1 },
	[R_PROT]	= { .name = "prot",	.tag = 0x50524f54, .fd = -1 },
	[R_FORK]	= { .name = "fork",	.tag = 0x464f524b, .fd = -1 },
	[R_RECLAIM]	= { .name = "reclaim",	.tag = 0x5245434c, .fd = -1 },
};

#define REUSE_TAG	0x52455553u

static size_t page_size, wpp;	/* words per page */
static char reclaim_path[4096];
static struct child_report *child_report;

static atomic_bool stop;
static volatile sig_atomic_t interrupted;
static atomic_int fatal;
static atomic_ulong mismatches, samples;
static atomic_ulong move_calls, moved_pages, unmoved_pages, move_errors;
static atomic_ulong pwrites, pwrite_pages, toggles, toggle_pages;
static atomic_ulong reuses, reuse_pages;
static unsigned long forks, fork_failures, fork_versions;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: soak [-t SECONDS] [-S SEED] [-a NODE] [-b NODE] [-d DIR] [-D DIR]\n"
		"            [-s MB] [-m MB] [-r CPUS] [-v]\n"
		"Reads and checks every word of several memory regions on every CPU while\n"
		"move_pages(), pwrite(), mprotect(), munmap()/mmap() reuse and fork() race\n"
		"with it; any stale or foreign data a reader sees is a mismatch.\n"
		"  -t  run time in seconds (default 60)\n"
		"  -S  seed of the random choices (default: from the clock; printed)\n"
		"  -a, -b  the two nodes to move pages between (default 0 and 1)\n"
		"  -d  directory for the pwrite() and mprotect() files (default /tmp)\n"
		"  -D  directory for the reclaim file (default: the -d directory); use a\n"
		"      filesystem with a page cache, not tmpfs, for reclaim without swap\n"
		"  -s  size in MB of the anon and file regions; the prot region is half\n"
		"      of it, the fork region and the reuse thread's mapping a quarter\n"
		"      (default 16)\n"
		"  -m  size in MB of the reclaim region (default 0: none); make it larger\n"
		"      than what the memory cgroup soak runs in leaves for it\n"
		"  -r  readers on this many CPUs, one per CPU and with -m one more for\n"
		"      the reclaim region (default: every CPU soak may use)\n"
		"  -v  print the counters every %d seconds on stderr\n"
		"  -h, --help  this text\n"
		"Prints 'key: value' counters and 'verdict: PASS' or 'verdict: FAIL';\n"
		"exits 0 if everything read right, 1 on a content mismatch (or a fork\n"
		"child that failed or died), 2 on a usage or setup error.\n",
		PROGRESS_S);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(unsigned int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* splitmix64: one state per thread, seeded from the seed and the thread. */
static inline uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rnd_below(uint64_t *s, uint64_t n)
{
	return n ? rnd(s) % n : 0;
}

static inline uint64_t word_of(uint32_t tag, size_t page, size_t i,
			       uint32_t version)
{
	uint32_t lo = ((uint32_t)(page * wpp + i) * GOLD32 ^ tag) | 1;

	return (uint64_t)version << 32 | lo;
}

static void fill_page(volatile uint64_t *w, uint32_t tag, size_t page,
		      uint32_t version)
{
	size_t i;

	for (i = 0; i < wpp; i++)
		w[i] = word_of(tag, page, i, version);
}

/*
 * Read page @p of @r once.  PAGE_OK: one version, within what the writer
 * published around the read.  PAGE_TORN: not one version, but a write ran
 * meanwhile.  PAGE_BAD: anything else; @l says what was seen.
 */
static int look_page(const struct region *r, size_t p, struct look *l)
{
	const volatile uint64_t *w =
		(const volatile uint64_t *)(r->base + p * page_size);
	uint32_t c0, i1, v, x;
	uint64_t hi;
	size_t i;

	c0 = atomic_load_explicit(&r->committed[p], memory_order_acquire);
	v = w[0] >> 32;
	hi = (uint64_t)v << 32;
	x = (uint32_t)(p * wpp) * GOLD32;
	for (i = 0; i < wpp; i++, x += GOLD32)
		if (__builtin_expect(w[i] != (hi | ((x ^ r->tag) | 1)), 0))
			break;
	atomic_thread_fence(memory_order_acquire);
	i1 = atomic_load_explicit(&r->issued[p], memory_order_acquire);
	if (__builtin_expect(i == wpp && v >= c0 && v <= i1, 1))
		return PAGE_OK;
	if (i < wpp && i1 != c0)
		return PAGE_TORN;
	l->c0 = c0;
	l->i1 = i1;
	l->seen = v;
	l->word = i;
	if (i < wpp) {
		l->got = w[i];
		l->want = word_of(r->tag, p, i, v);
	} else {
		l->got = w[0];
		l->want = word_of(r->tag, p, 0, c0);
	}
	return PAGE_BAD;
}

static void report(const char *fmt, ...)
{
	unsigned long n = atomic_fetch_add(&samples, 1);
	va_list ap;

	if (n >= MAX_SAMPLES)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "soak: MISMATCH ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void report_page(const char *who, int cpu, const struct region *r,
			size_t p, const struct look *l, const char *again)
{
	const char *what;

	if (l->word < wpp)
		what = "foreign or garbled data";
	else if (l->seen < l->c0)
		what = "stale: older than committed";
	else
		what = "a version never written";
	report("%s on CPU %d: region %s page %zu: expected version %u..%u, seen %u (%s), word %zu %#018llx, expected %#018llx%s",
	       who, cpu, r->name, p, l->c0, l->i1, l->seen, what,
	       l->word < wpp ? l->word : 0,
	       (unsigned long long)l->got, (unsigned long long)l->want, again);
}

/*
 * Check one page as a reader: read again while writes tear it.  Returns
 * false on a mismatch (reported and counted).
 */
static bool check_page(struct reader *rd, const struct region *r, size_t p)
{
	unsigned long tries;
	struct look l, l2;
	double t0 = 0;
	int ret;

	for (tries = 0;; tries++) {
		ret = look_page(r, p, &l);
		if (ret == PAGE_OK)
			return true;
		if (ret == PAGE_BAD)
			break;
		rd->torn++;
		if (tries < TORN_SPINS) {
			__builtin_ia32_pause();
			continue;
		}
		/*
		 * The writer is slow, maybe preempted on our CPU: let it run
		 * (a switch to a thread of the same mm keeps our TLB), and
		 * give up on this page after a while, counting it.
		 */
		if (tries == TORN_SPINS)
			t0 = now();
		else if (!(tries % 64) && now() - t0 > TORN_GIVEUP_S)
			break;
		sched_yield();
	}
	if (ret == PAGE_TORN) {
		rd->giveups++;
		return true;
	}
	atomic_fetch_add(&mismatches, 1);
	/* A second look at once: does the stale view persist? */
	ret = look_page(r, p, &l2);
	report_page("reader", rd->cpu, r, p, &l,
		    ret == PAGE_OK ? "; read right at once after" :
		    ret == PAGE_TORN ? "; torn at once after" :
		    "; wrong again at once after");
	return false;
}

/*
 * A reader checks every page of its regions, pass after pass: the reclaim
 * reader the reclaim region only, the others all the other regions.  The
 * reclaim region's refaults are slow (each one reclaims), and the other
 * regions should be read again soon after their pages moved; both readers
 * of a CPU share the mm, so switching between them keeps the TLB.
 */
static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	size_t p, k;
	int ri;

	pin(rd->cpu);
	/* Readers fill the time the other threads leave. */
	setpriority(PRIO_PROCESS, gettid(), READER_NICE);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (ri = 0; ri < NR_REGIONS; ri++) {
			const struct region *r = &regions[ri];

			if (rd->reclaim != (ri == R_RECLAIM) || !r->npages)
				continue;
			p = rd->start % r->npages;
			for (k = 0; k < r->npages; k++) {
				if (!(k % 64) &&
				    atomic_load_explicit(&stop, memory_order_relaxed))
					break;
				check_page(rd, r, p);
				if (++p == r->npages)
					p = 0;
			}
			rd->pages += k;
		}
		rd->passes++;
	}
	return NULL;
}

/* The mover: random ranges of random regions between the two nodes. */
static void *mover_main(void *arg)
{
	uint64_t rs = opt.seed ^ 0x6d6f766572ULL, pick;
	static void *addrs[MAX_CHUNK];
	static int nodes[MAX_CHUNK], before[MAX_CHUNK], status[MAX_CHUNK];
	size_t total = 0, start, len, i;
	unsigned long moved, unmoved;
	struct region *r;
	int ri, target;
	long ret;

	(void)arg;
	for (ri = 0; ri < NR_REGIONS; ri++)
		total += regions[ri].npages;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* A region with a chance proportional to its size. */
		pick = rnd_below(&rs, total);
		for (ri = 0; ri < NR_REGIONS - 1; ri++) {
			if (pick < regions[ri].npages)
				break;
			pick -= regions[ri].npages;
		}
		r = &regions[ri];
		len = 1 + rnd_below(&rs, r->npages < MAX_CHUNK ?
					 r->npages : MAX_CHUNK);
		start = rnd_below(&rs, r->npages - len + 1);
		for (i = 0; i < len; i++)
			addrs[i] = r->base + (start + i) * page_size;
		/* Where the pages are now: move them to the other node. */
		if (move_pages(0, len, addrs, NULL, before, 0) < 0)
			memset(before, 0xff, sizeof(before));
		if (before[0] == opt.node_a)
			target = opt.node_b;
		else if (before[0] == opt.node_b)
			target = opt.node_a;
		else
			target = rnd(&rs) & 1 ? opt.node_a : opt.node_b;
		for (i = 0; i < len; i++)
			nodes[i] = target;
		ret = move_pages(0, len, addrs, nodes, status, MPOL_MF_MOVE);
		atomic_fetch_add(&move_calls, 1);
		if (ret < 0) {
			if (errno == ENODEV || errno == EINVAL ||
			    errno == EPERM) {
				fprintf(stderr, "soak: move_pages to node %d: %s\n",
					target, strerror(errno));
				atomic_store(&fatal, 1);
				atomic_store(&stop, true);
				break;
			}
			atomic_fetch_add(&move_errors, 1);
			continue;
		}
		moved = 0;
		unmoved = 0;
		for (i = 0; i < len; i++) {
			if (status[i] == target && before[i] >= 0 &&
			    before[i] != target)
				moved++;
			else if (status[i] != target)
				unmoved++;
		}
		atomic_fetch_add(&moved_pages, moved);
		atomic_fetch_add(&unmoved_pages, unmoved);
		usleep(rnd_below(&rs, 2000));
	}
	return NULL;
}

/* The write() path: new versions of the file region with pwrite(). */
static void *writer_main(void *arg)
{
	struct region *r = &regions[R_FILE];
	uint64_t rs = opt.seed ^ 0x777269746572ULL;
	size_t start, len, i;
	uint64_t *buf;
	ssize_t ret;

	(void)arg;
	buf = aligned_alloc(page_size, MAX_WRITE_PAGES * page_size);
	if (!buf) {
		atomic_store(&fatal, 1);
		atomic_store(&stop, true);
		return NULL;
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		len = 1 + rnd_below(&rs, r->npages < MAX_WRITE_PAGES ?
					 r->npages : MAX_WRITE_PAGES);
		start = rnd_below(&rs, r->npages - len + 1);
		for (i = 0; i < len; i++) {
			size_t p = start + i;
			uint32_t v = atomic_load(&r->issued[p]) + 1;

			atomic_store(&r->issued[p], v);
			fill_page(buf + i * wpp, r->tag, p, v);
		}
		ret = pwrite(r->fd, buf, len * page_size, start * page_size);
		if (ret != (ssize_t)(len * page_size)) {
			fprintf(stderr, "soak: pwrite: %s\n",
				ret < 0 ? strerror(errno) : "short write");
			atomic_store(&fatal, 1);
			atomic_store(&stop, true);
			break;
		}
		for (i = 0; i < len; i++)
			atomic_store_explicit(&r->committed[start + i],
					      atomic_load(&r->issued[start + i]),
					      memory_order_release);
		atomic_fetch_add(&pwrites, 1);
		atomic_fetch_add(&pwrite_pages, len);
		usleep(rnd_below(&rs, 1000));
	}
	free(buf);
	return NULL;
}

/*
 * The mprotect() path: make a range writable, write new versions through
 * the readers' own mapping, make it read-only again, and zap the now dirty
 * PTEs so that the readers refault clean read-only ones (which migrc may
 * defer: a dirty PTE never is).
 */
static void *toggler_main(void *arg)
{
	struct region *r = &regions[R_PROT];
	uint64_t rs = opt.seed ^ 0x70726f74ULL;
	size_t start, len, i;
	char *addr;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		len = 1 + rnd_below(&rs, r->npages < MAX_PROT_PAGES ?
					 r->npages : MAX_PROT_PAGES);
		start = rnd_below(&rs, r->npages - len + 1);
		addr = r->base + start * page_size;
		if (mprotect(addr, len * page_size, PROT_READ | PROT_WRITE)) {
			perror("soak: mprotect(PROT_READ | PROT_WRITE)");
			goto fail;
		}
		for (i = 0; i < len; i++) {
			size_t p = start + i;
			uint32_t v = atomic_load(&r->issued[p]) + 1;

			atomic_store(&r->issued[p], v);
			fill_page((volatile uint64_t *)(addr + i * page_size),
				  r->tag, p, v);
			atomic_store_explicit(&r->committed[p], v,
					      memory_order_release);
		}
		if (mprotect(addr, len * page_size, PROT_READ)) {
			perror("soak: mprotect(PROT_READ)");
			goto fail;
		}
		madvise(addr, len * page_size, MADV_DONTNEED);
		atomic_fetch_add(&toggles, 1);
		atomic_fetch_add(&toggle_pages, len);
		usleep(rnd_below(&rs, 2000));
	}
	return NULL;
fail:
	atomic_store(&fatal, 1);
	atomic_store(&stop, true);
	return NULL;
}

/*
 * munmap() and reuse: fresh anonymous memory from one node or the other
 * must read as zero, then hold what we write.
 */
static void *reuser_main(void *arg)
{
	uint64_t rs = opt.seed ^ 0x7265757365ULL;
	size_t len = (opt.size_mb << 20) / 4, npages = len / page_size, p, i;
	unsigned long mask, iter = 0;
	volatile uint64_t *w;
	char *m;
	int node;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		node = rnd(&rs) & 1 ? opt.node_a : opt.node_b;
		mask = 1UL << node;
		if (node < (int)(8 * sizeof(mask)))
			set_mempolicy(MPOL_BIND, &mask, 8 * sizeof(mask));
		m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		set_mempolicy(MPOL_DEFAULT, NULL, 0);
		if (m == MAP_FAILED) {
			usleep(1000);
			continue;
		}
		iter++;
		for (p = 0; p < npages; p++) {
			w = (volatile uint64_t *)(m + p * page_size);
			for (i = 0; i < wpp; i++)
				if (w[i])
					break;
			if (i < wpp) {
				atomic_fetch_add(&mismatches, 1);
				report("reuse: fresh anonymous page %zu (node %d) is not zero: word %zu %#018llx",
				       p, node, i, (unsigned long long)w[i]);
			}
			fill_page(w, REUSE_TAG, p, (uint32_t)iter);
		}
		for (p = 0; p < npages; p++) {
			uint64_t want = 0;

			w = (volatile uint64_t *)(m + p * page_size);
			for (i = 0; i < wpp; i++) {
				want = word_of(REUSE_TAG, p, i, (uint32_t)iter);
				if (w[i] != want)
					break;
			}
			if (i < wpp) {
				atomic_fetch_add(&mismatches, 1);
				report("reuse: page %zu (node %d) does not hold what was written: word %zu %#018llx, expected %#018llx",
				       p, node, i, (unsigned long long)w[i],
				       (unsigned long long)want);
			}
		}
		munmap(m, len);
		atomic_fetch_add(&reuses, 1);
		atomic_fetch_add(&reuse_pages, npages);
		usleep(rnd_below(&rs, 1000));
	}
	return NULL;
}

/* Write version @v into every page of the fork region. */
static void write_fork_region(uint32_t v)
{
	struct region *r = &regions[R_FORK];
	size_t p;

	for (p = 0; p < r->npages; p++) {
		atomic_store(&r->issued[p], v);
		fill_page((volatile uint64_t *)(r->base + p * page_size),
			  r->tag, p, v);
		atomic_store_explicit(&r->committed[p], v,
				      memory_order_release);
	}
}

/*
 * The fork child: its copy-on-write snapshot must hold exactly the versions
 * its copy of issued/committed says (the parent wrote them all before
 * fork(), and keeps writing newer ones now).  Only system calls and our own
 * code here: the child of a threaded process.
 */
static void __noreturn child_main(void)
{
	static const int check[] = { R_FORK, R_ANON };
	unsigned int round, k;
	struct look l;
	size_t p;

	for (round = 0; round < CHILD_ROUNDS; round++) {
		for (k = 0; k < ARRAY_SIZE(check); k++) {
			const struct region *r = &regions[check[k]];

			for (p = 0; p < r->npages; p++) {
				/* No writer here: a torn page is bad too. */
				if (look_page(r, p, &l) == PAGE_OK)
					continue;
				if (!child_report->bad++) {
					child_report->region = check[k];
					child_report->page = p;
					child_report->l = l;
				}
			}
		}
		usleep(2000);
	}
	_exit(child_report->bad ? 1 : 0);
}

/* One fork round: returns false if the child found a mismatch or died. */
static bool fork_round(void)
{
	int status;
	pid_t pid;

	write_fork_region(++fork_versions);
	memset(child_report, 0, sizeof(*child_report));
	pid = fork();
	if (pid < 0) {
		perror("soak: fork");
		return true;
	}
	if (!pid)
		child_main();
	forks++;
	/* Keep writing new versions while the child checks its snapshot. */
	for (;;) {
		pid_t ret = waitpid(pid, &status, WNOHANG);

		if (ret == pid)
			break;
		if (ret < 0) {
			perror("soak: waitpid");
			return true;
		}
		write_fork_region(++fork_versions);
		usleep(1000);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	fork_failures++;
	atomic_fetch_add(&mismatches, 1);
	if (WIFEXITED(status) && child_report->bad) {
		const struct region *r = &regions[child_report->region];

		report_page("fork child", -1, r, child_report->page,
			    &child_report->l, "");
		report("fork child: %u bad pages in its snapshot", child_report->bad);
	} else if (WIFSIGNALED(status)) {
		report("fork child killed by signal %d", WTERMSIG(status));
	} else {
		report("fork child exited %d", WEXITSTATUS(status));
	}
	return false;
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	atomic_store(&stop, true);
}

static int open_tmp(const char *dir, const char *what, bool keep_name)
{
	char path[sizeof(reclaim_path)];
	int fd;

	snprintf(path, sizeof(path), "%s/soak-%s.XXXXXX", dir, what);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "soak: cannot create a file in %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	if (keep_name)
		snprintf(reclaim_path, sizeof(reclaim_path), "%s", path);
	else
		unlink(path);
	return fd;
}

/* Write version 1 of @r into @fd, @chunk bytes at a time. */
static int fill_file(int fd, const struct region *r)
{
	const size_t chunk = 1 << 20, pages = chunk / page_size;
	uint64_t *buf = malloc(chunk);
	size_t p, i, n;

	if (!buf)
		return -1;
	for (p = 0; p < r->npages; p += pages) {
		n = r->npages - p < pages ? r->npages - p : pages;
		for (i = 0; i < n; i++)
			fill_page(buf + i * wpp, r->tag, p + i, 1);
		if (pwrite(fd, buf, n * page_size, p * page_size) !=
		    (ssize_t)(n * page_size)) {
			fprintf(stderr, "soak: writing the %s file: %s\n",
				r->name, strerror(errno));
			free(buf);
			return -1;
		}
	}
	free(buf);
	return 0;
}

static int setup_versions(struct region *r, uint32_t v)
{
	size_t p;

	r->issued = calloc(r->npages, sizeof(*r->issued));
	r->committed = calloc(r->npages, sizeof(*r->committed));
	if (!r->issued || !r->committed)
		return -1;
	for (p = 0; p < r->npages; p++) {
		atomic_init(&r->issued[p], v);
		atomic_init(&r->committed[p], v);
	}
	return 0;
}

static int setup_anon(struct region *r, size_t len, int prot)
{
	size_t p;

	r->npages = len / page_size;
	if (setup_versions(r, 1))
		return -1;
	r->base = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->base == MAP_FAILED) {
		fprintf(stderr, "soak: mmap %s: %s\n", r->name, strerror(errno));
		return -1;
	}
	for (p = 0; p < r->npages; p++)
		fill_page((volatile uint64_t *)(r->base + p * page_size),
			  r->tag, p, 1);
	if (mprotect(r->base, len, prot)) {
		perror("soak: mprotect");
		return -1;
	}
	return 0;
}

/* A file region: created in @dir, filled, mapped read-only and shared. */
static int setup_file(struct region *r, const char *dir, size_t len,
		      bool populate)
{
	bool reclaim = r == &regions[R_RECLAIM];
	struct statfs sfs;
	int fd;

	r->npages = len / page_size;
	if (setup_versions(r, 1))
		return -1;
	fd = open_tmp(dir, r->name, reclaim);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, len) || fill_file(fd, r)) {
		close(fd);
		return -1;
	}
	if (reclaim) {
		/*
		 * Map it from a read-only descriptor: 9p without a writeback
		 * cache maps files read-only only, and refuses a shared mapping
		 * that could become writable.  Drop what we wrote from the page
		 * cache, so that the pages are charged to us when read.
		 */
		close(fd);
		fd = open(reclaim_path, O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "soak: open %s: %s\n", reclaim_path,
				strerror(errno));
			return -1;
		}
		fdatasync(fd);
		posix_fadvise(fd, 0, len, POSIX_FADV_DONTNEED);
		if (!fstatfs(fd, &sfs) && sfs.f_type == TMPFS_MAGIC)
			fprintf(stderr, "soak: note: %s is on tmpfs: without swap its pages cannot be reclaimed (use -D)\n",
				dir);
	}
	r->fd = fd;
	r->base = mmap(NULL, len, PROT_READ,
		       MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
	if (r->base == MAP_FAILED) {
		fprintf(stderr, "soak: mmap %s file: %s\n", r->name,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void print_counters(FILE *f, double elapsed, struct reader *readers,
			   unsigned int nreaders)
{
	unsigned long pages = 0, passes = 0, rpasses = 0, torn = 0;
	unsigned long giveups = 0;
	unsigned int i;

	for (i = 0; i < nreaders; i++) {
		pages += readers[i].pages;
		if (readers[i].reclaim)
			rpasses += readers[i].passes;
		else
			passes += readers[i].passes;
		torn += readers[i].torn;
		giveups += readers[i].giveups;
	}
	fprintf(f, "seconds: %.1f\n", elapsed);
	fprintf(f, "move_calls: %lu\n", atomic_load(&move_calls));
	fprintf(f, "moved_pages: %lu\n", atomic_load(&moved_pages));
	fprintf(f, "unmoved_pages: %lu\n", atomic_load(&unmoved_pages));
	fprintf(f, "move_errors: %lu\n", atomic_load(&move_errors));
	fprintf(f, "verified_pages: %lu\n", pages);
	fprintf(f, "reader_passes: %lu\n", passes);
	fprintf(f, "reclaim_reader_passes: %lu\n", rpasses);
	fprintf(f, "torn_retries: %lu\n", torn);
	fprintf(f, "torn_giveups: %lu\n", giveups);
	fprintf(f, "pwrites: %lu\n", atomic_load(&pwrites));
	fprintf(f, "pwrite_pages: %lu\n", atomic_load(&pwrite_pages));
	fprintf(f, "mprotect_rounds: %lu\n", atomic_load(&toggles));
	fprintf(f, "mprotect_pages: %lu\n", atomic_load(&toggle_pages));
	fprintf(f, "reuses: %lu\n", atomic_load(&reuses));
	fprintf(f, "reuse_pages: %lu\n", atomic_load(&reuse_pages));
	fprintf(f, "forks: %lu\n", forks);
	fprintf(f, "fork_failures: %lu\n", fork_failures);
	fprintf(f, "mismatches: %lu\n", atomic_load(&mismatches));
	fflush(f);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	pthread_t mover, writer, toggler, reuser;
	unsigned int cpus[MAX_READERS], ncpus = 0, nreaders, i;
	double start, end, next_fork, next_progress, elapsed;
	uint64_t rs;
	struct reader *readers;
	struct look l;
	struct sigaction sa;
	unsigned long v;
	size_t len, p;
	cpu_set_t set;
	int c, ri, rc = 2;

	while ((c = getopt_long(argc, argv, "t:S:a:b:d:D:s:m:r:vh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 't':
			if (!parse_ul(optarg, 1, 1UL << 30, &v))
				goto bad;
			opt.seconds = v;
			break;
		case 'S':
			if (!parse_ul(optarg, 0, ULONG_MAX, &v))
				goto bad;
			opt.seed = v;
			opt.seed_set = true;
			break;
		case 'a':
			if (!parse_ul(optarg, 0, 1023, &v))
				goto bad;
			opt.node_a = v;
			break;
		case 'b':
			if (!parse_ul(optarg, 0, 1023, &v))
				goto bad;
			opt.node_b = v;
			break;
		case 'd':
			opt.dir = optarg;
			break;
		case 'D':
			opt.rdir = optarg;
			break;
		case 's':
			if (!parse_ul(optarg, 1, 1 << 20, &v))
				goto bad;
			opt.size_mb = v;
			break;
		case 'm':
			if (!parse_ul(optarg, 0, 1 << 20, &v))
				goto bad;
			opt.reclaim_mb = v;
			break;
		case 'r':
			if (!parse_ul(optarg, 1, MAX_READERS, &v))
				goto bad;
			opt.readers = v;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || opt.node_a == opt.node_b) {
bad:
		usage(stderr);
		return 2;
	}
	if (!opt.rdir)
		opt.rdir = opt.dir;
	if (!opt.seed_set)
		opt.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	page_size = sysconf(_SC_PAGESIZE);
	wpp = page_size / sizeof(uint64_t);

	if (sched_getaffinity(0, sizeof(set), &set))
		return 2;
	for (i = 0; i < CPU_SETSIZE && ncpus < MAX_READERS; i++)
		if (CPU_ISSET(i, &set))
			cpus[ncpus++] = i;
	if (!opt.readers || opt.readers > ncpus)
		opt.readers = ncpus;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	len = (opt.size_mb << 20) / page_size * page_size;
	child_report = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (child_report == MAP_FAILED)
		return 2;
	if (setup_anon(&regions[R_ANON], len, PROT_READ) ||
	    setup_anon(&regions[R_FORK], len / 4, PROT_READ | PROT_WRITE) ||
	    setup_file(&regions[R_FILE], opt.dir, len, true) ||
	    setup_file(&regions[R_PROT], opt.dir, len / 2, true))
		goto out;
	if (opt.reclaim_mb &&
	    setup_file(&regions[R_RECLAIM], opt.rdir,
		       opt.reclaim_mb << 20, false))
		goto out;

	printf("seed: %llu\n", (unsigned long long)opt.seed);
	printf("cpus: %u\n", opt.readers);
	printf("nodes: %d %d\n", opt.node_a, opt.node_b);
	for (ri = 0; ri < NR_REGIONS; ri++)
		printf("region_%s_mb: %zu\n", regions[ri].name,
		       regions[ri].npages * page_size >> 20);
	fflush(stdout);

	/* One reader per CPU, and one more for the reclaim region. */
	nreaders = regions[R_RECLAIM].npages ? 2 * opt.readers : opt.readers;
	readers = aligned_alloc(64, sizeof(*readers) * nreaders);
	if (!readers)
		goto out;
	memset(readers, 0, sizeof(*readers) * nreaders);
	rs = opt.seed;
	start = now();
	for (i = 0; i < nreaders; i++) {
		readers[i].cpu = cpus[i % opt.readers];
		readers[i].reclaim = i >= opt.readers;
		readers[i].start = rnd(&rs);
		if (pthread_create(&readers[i].thread, NULL, reader_main,
				   &readers[i])) {
			fprintf(stderr, "soak: cannot start the readers\n");
			exit(2);
		}
	}
	if (pthread_create(&mover, NULL, mover_main, NULL) ||
	    pthread_create(&writer, NULL, writer_main, NULL) ||
	    pthread_create(&toggler, NULL, toggler_main, NULL) ||
	    pthread_create(&reuser, NULL, reuser_main, NULL)) {
		fprintf(stderr, "soak: cannot start the threads\n");
		exit(2);
	}

	/* The main thread forks now and then until the time is up. */
	end = start + opt.seconds;
	next_fork = start + 0.2;
	next_progress = start + PROGRESS_S;
	while (!atomic_load(&stop) && now() < end) {
		if (now() >= next_fork) {
			fork_round();
			next_fork = now() + 0.2 + rnd_below(&rs, 800) / 1000.0;
		}
		if (opt.verbose && now() >= next_progress) {
			fprintf(stderr, "soak: after %.0f s:\n", now() - start);
			print_counters(stderr, now() - start, readers,
				       nreaders);
			next_progress += PROGRESS_S;
		}
		usleep(20000);
	}
	atomic_store(&stop, true);
	for (i = 0; i < nreaders; i++)
		pthread_join(readers[i].thread, NULL);
	pthread_join(mover, NULL);
	pthread_join(writer, NULL);
	pthread_join(toggler, NULL);
	pthread_join(reuser, NULL);
	elapsed = now() - start;

	/* A last look at everything, with nothing else running. */
	for (ri = 0; ri < NR_REGIONS; ri++) {
		const struct region *r = &regions[ri];

		for (p = 0; p < r->npages; p++) {
			if (look_page(r, p, &l) == PAGE_OK)
				continue;
			atomic_fetch_add(&mismatches, 1);
			report_page("final check", sched_getcpu(), r, p, &l, "");
		}
	}

	if (interrupted)
		printf("interrupted: 1\n");
	print_counters(stdout, elapsed, readers, nreaders);
	if (atomic_load(&fatal)) {
		printf("verdict: ERROR (setup failed during the run)\n");
		rc = 2;
	} else if (atomic_load(&mismatches)) {
		printf("verdict: FAIL (%lu mismatches; the first %d are on stderr)\n",
		       atomic_load(&mismatches), MAX_SAMPLES);
		rc = 1;
	} else if (!atomic_load(&moved_pages)) {
		printf("verdict: ERROR (no page moved: are there nodes %d and %d?)\n",
		       opt.node_a, opt.node_b);
		rc = 2;
	} else {
		printf("verdict: PASS\n");
		rc = 0;
	}
	fflush(stdout);
out:
	if (reclaim_path[0])
		unlink(reclaim_path);
	return rc;
}

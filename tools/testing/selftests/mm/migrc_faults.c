// SPDX-License-Identifier: GPL-2.0
/*
 * migrc_faults - migrations that fail, and what migrc must do about them.
 *
 * With migrc, the TLB shootdown for read-only, clean mappings of a migrated
 * folio is deferred at the unmap point of the migration batch.  The batch
 * can still fail afterwards, for part or all of its folios: no destination
 * page (-ENOMEM), an extra reference on the source (-EAGAIN), a folio that
 * another migration has isolated (-EBUSY) or is migrating (-ENOENT), a
 * batched copy backend that fails (fallback to the per-folio copy).  Then
 * the source mappings are restored, or the folio is moved by another path,
 * while deferred entries may still exist.  These tests make migrations fail
 * in each of these ways and check that they fail cleanly: the data is
 * intact, every page is mapped on one of the two nodes, a write made after
 * the failure is seen by a reader on another CPU (no stale TLB entry
 * survived), and migrc's pending-flush accounting returns to zero.
 *
 * Method.  A memfd of MIGRC_TEST_PAGES pages (default 16) is mapped twice:
 * read-only, where a reader thread pinned to the second CPU spins over it
 * with volatile loads and no system calls (so only a real TLB flush drops
 * its TLB entries; under QEMU TCG a vCPU keeps its software TLB until the
 * guest flushes it), and read-write, an alias the main thread writes
 * through.  Every word encodes its index and a generation.  After each
 * round of migrations the main thread reads every word itself, writes the
 * next generation (through the alias, whose PTEs it then zaps so that the
 * pages are mapped read-only and clean again, or with pwrite()), publishes
 * the generation and waits until the reader has scanned the whole buffer
 * under it.  A reader that still reads a freed source page through a stale
 * TLB entry sees an older generation: counted as stale, and the test fails.
 * The page placement is checked with move_pages(nodes = NULL) after every
 * call: a page that reads as -ENOENT there has no present PTE (a migration
 * entry left behind by a failed migration).
 *
 * The tests (fixture "faults"):
 *   fail_page_alloc   fail_page_alloc (debugfs), restricted to the main
 *                     thread during move_pages() (task-filter and
 *                     /proc/thread-self/make-it-fail), makes every Nth
 *                     destination allocation fail.  Linux 6.12 then
 *                     returns -1/ENOMEM and leaves the status of the
 *                     failing batch unwritten (it stores the statuses of a
 *                     batch only when the whole batch moved); the folios
 *                     unmapped before the failure are still moved.  Checks:
 *                     every status is the target node, unwritten (only when
 *                     the call failed) or -EBUSY/-EAGAIN/-ENOMEM; a page
 *                     reported on the target is there; every page is on one
 *                     of the two nodes; after ENOMEM some page is still on
 *                     its source; data intact; later writes seen by the
 *                     reader; failures were really injected (the "times"
 *                     counter of fail_page_alloc went down, ENOMEM was
 *                     returned, pages stayed behind).
 *   pinned_eagain     every other page is held by a pipe (vmsplice() without
 *                     reading).  Moving all pages: Linux 6.12 returns the
 *                     number of pinned pages (migrate_pages() retries the
 *                     -EAGAIN folios, then counts them as failed) and
 *                     writes no status at all (one batch, not fully moved).
 *                     The pinned pages are still on their source, the others
 *                     on the target (in at most 1 cycle of 10 some stay
 *                     behind, counted in the return value: the transient
 *                     references move_all_ok() retries for); a write
 *                     after the failed migration is seen by the reader,
 *                     and the pipe, which references the pinned pages,
 *                     returns the new data (the restored PTE maps the
 *                     page the pipe holds).  After the pipe is
 *                     drained, moving again succeeds for every page
 *                     (within MOVE_ATTEMPTS calls: migration is best
 *                     effort against transient references).
 *   concurrent_ebusy  two threads, on different CPUs, move the same pages to
 *                     opposite nodes for MIGRC_TEST_SECONDS while the main
 *                     thread keeps writing new generations and the reader
 *                     checks.  In 6.12 a status is the caller's own target
 *                     node (moved, or already there), -EBUSY (isolated by
 *                     the other thread), -ENOENT (a migration entry: being
 *                     migrated by the other thread), or unwritten when the
 *                     call returned a positive count; -EAGAIN and -ENOMEM
 *                     are tolerated.  No content error; every page ends up
 *                     on one of the two nodes.
 *   copy_fallback     with the batched copy (/sys/kernel/mm/migrate/) set to
 *                     the "mt" backend, debugfs fail_migrate_copy/ makes
 *                     every other batched copy fail: that move must still
 *                     succeed through the per-folio copy and count exactly
 *                     one pgmigrate_copy_fallback, the others are batch-
 *                     copied; data intact, and with migrc on, the batches
 *                     deferred their flush and writes after the move are
 *                     seen by the reader.  Skipped without the batched copy.
 *   migrc_flush       (runs last) with a deferral pending, pending_pages is
 *                     above 0 and equals migrc_deferred_pages -
 *                     migrc_flushed_pages; writing /sys/kernel/mm/migrc/flush
 *                     makes it 0, counts one migrc_flush_other and adds the
 *                     pending pages to migrc_flushed_pages.  With migrc off
 *                     every migrc_* counter and pending_pages stay 0.
 *                     Skipped without migrc.
 *
 * After each test, on a kernel with migrc: a write to
 * /sys/kernel/mm/migrc/flush leaves pending_pages at 0 and
 * migrc_deferred_pages equal to migrc_flushed_pages (the admin guide:
 * their difference is the pending count); with migrc=on the test must have
 * deferred some pages, with migrc=off none.  On a kernel without migrc
 * (vanilla 6.12) these checks do not apply and only the data and placement
 * checks run.
 *
 * kernel.numa_balancing is turned off while a test runs (it would move the
 * pages towards the reader's node), migrc's max_age_ms is raised to 1 s (so
 * that the timeout flush cannot hide a flush missing elsewhere), and every
 * knob a test changes (these, fail_page_alloc, the copy knobs) is restored
 * by the fixture teardown, which runs in the parent even if the test fails.
 * fail_page_alloc is configured with verbose=0, so injected failures print
 * nothing in the kernel log.
 *
 * Environment: MIGRC_TEST_SECONDS (time per test, default 2),
 * MIGRC_TEST_PAGES (buffer size in pages, default 16).  Needs root, two
 * CPUs and two memory nodes.
 */
#include "../kselftest_harness.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "migrc_util.h"

#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE		(1 << 1)
#endif
#ifndef MPOL_MF_MOVE_ALL
#define MPOL_MF_MOVE_ALL	(1 << 2)
#endif

#define DEFAULT_SECONDS		2.0
#define MAX_SECONDS		60.0
#define DEFAULT_PAGES		16
#define MAX_PAGES		256
#define TEST_TIMEOUT		240
#define READER_WAIT_S		30.0
#define NSAMPLES		8
#define STATUS_UNSET		INT_MIN	/* never a node nor an errno */
#define FPA_TIMES		1000000
#define MOVE_ATTEMPTS		5	/* for a move that must succeed */

#define MIGRC_DIR		"/sys/kernel/mm/migrc"
#define FPA_DIR			"/sys/kernel/debug/fail_page_alloc"
#define MIGRATE_DIR		"/sys/kernel/mm/migrate"
#define COPY_BACKEND		MIGRATE_DIR "/copy_backend"
#define COPY_MIN_PAGES		MIGRATE_DIR "/copy_min_pages"
#define COPY_THREADS		MIGRATE_DIR "/copy_threads"
/* fault_attr: with probability 100, "times" is how many copies still fail */
#define COPY_FAIL_DIR		"/sys/kernel/debug/fail_migrate_copy"
#define COPY_FAIL_NEXT		COPY_FAIL_DIR "/times"
#define NUMA_BALANCING		"/proc/sys/kernel/numa_balancing"
#define MAKE_IT_FAIL		"/proc/thread-self/make-it-fail"

/*
 * Note: the ASSERT_*() and EXPECT_*() macros of kselftest_harness.h expand
 * to two statements, so every loop or if around one has braces.
 *
 * The fail_page_alloc knobs the fail_page_alloc test sets, in the order it
 * sets them (probability last, so nothing fails while half configured).
 * The teardown restores them in the reverse order (probability first).
 */
static const char * const fpa_knob[] = {
	"task-filter", "verbose", "space", "times", "interval", "min-order",
	"ignore-gfp-wait", "ignore-gfp-highmem", "probability",
};

#define NR_FPA_KNOBS	((int)ARRAY_SIZE(fpa_knob))
#define KNOB_LEN	64

struct saved {
	bool numa_balancing;
	char numa_balancing_val[KNOB_LEN];
	bool fpa;
	char fpa_val[NR_FPA_KNOBS][KNOB_LEN];
	bool copy;
	char backend[KNOB_LEN];
	char min_pages[KNOB_LEN];
	char threads[KNOB_LEN];
	char fail_next[KNOB_LEN];
	bool max_age;
	char max_age_val[KNOB_LEN];
};

struct reader {
	pthread_t thread;
	int cpu;
	int pin_err;
	/* The generation of the last full scan; written by the reader. */
	uint64_t seen __attribute__((aligned(64)));
	unsigned long scans;
	unsigned long torn;
	unsigned long stale;
	unsigned long corrupt;
	unsigned int nsamples;
	struct {
		size_t idx;
		uint64_t val;
		uint64_t gen;
	} sample[NSAMPLES];
};

struct env {
	int node[2];
	int cpu[2];		/* main thread, reader */
	int npages;
	size_t psz;
	size_t len;
	size_t nwords;
	int move_flags;
	double seconds;
	int fd;
	uint64_t *rbuf;		/* read-only mapping, read by the reader */
	uint64_t *wbuf;		/* writable alias of the same memfd */
	uint64_t *staging;	/* pwrite() source */
	void **pages;
	int *nodes;
	int *status;
	int *where;
	int *before;
	/* Published generation: every word holds it or a newer one. */
	uint64_t pub __attribute__((aligned(64)));
	int stop __attribute__((aligned(64)));
	uint64_t gen;
	struct reader rd;
	bool reader_running;
	bool migrc;		/* the kernel has /sys/kernel/mm/migrc */
	bool migrc_on;
	long long deferred0;
	unsigned long rounds;
	unsigned long writes;
};

/* ---------------------------------------------------------------------- */
/* Helpers */

/* The bracketed word of an "a [b] c" sysfs choice, "" if none. */
static void read_choice(const char *path, char *out, size_t size)
{
	char buf[256], *o, *c;

	out[0] = 0;
	if (read_str(path, buf, sizeof(buf)))
		return;
	o = strchr(buf, '[');
	c = o ? strchr(o, ']') : NULL;
	if (!c || (size_t)(c - o - 1) >= size)
		return;
	memcpy(out, o + 1, c - o - 1);
	out[c - o - 1] = 0;
}

/* The value word i holds at generation gen; never 0. */
static inline uint64_t word_enc(size_t i, uint64_t gen)
{
	uint32_t lo = 0x6d696772U ^ (uint32_t)(i * 2654435761U) ^
		      (uint32_t)(gen * 0x9e3779b9U);

	return ((gen + 1) << 32) | lo;
}

/* ---------------------------------------------------------------------- */
/* The reader */

/*
 * A word that is not the generation the scan started under: a newer
 * generation written since, a word torn by a write in progress (pwrite()
 * copies with byte-granular string instructions), or an error.  Only a
 * generation older than the published one is stale.
 */
static void __attribute__((noinline))
slow_check(struct env *e, size_t i, uint64_t v, uint64_t gen)
{
	struct reader *r = &e->rd;
	uint64_t cur = __atomic_load_n(&e->pub, __ATOMIC_ACQUIRE);
	uint64_t hi = v >> 32, g, lo;

	/* The main thread writes at most one generation ahead of pub. */
	if (hi > gen + 1 && hi <= cur + 2 && v == word_enc(i, hi - 1))
		return;
	lo = cur > gen + 64 ? cur - 64 : gen;
	for (g = lo; g <= cur; g++) {
		if (byte_mix(v, word_enc(i, g), word_enc(i, g + 1))) {
			r->torn++;
			return;
		}
	}
	if (hi >= 1 && hi - 1 < gen && v == word_enc(i, hi - 1))
		r->stale++;
	else
		r->corrupt++;
	if (r->nsamples < NSAMPLES) {
		r->sample[r->nsamples].idx = i;
		r->sample[r->nsamples].val = v;
		r->sample[r->nsamples].gen = gen;
		r->nsamples++;
	}
}

static void *reader_main(void *arg)
{
	struct env *e = arg;
	struct reader *r = &e->rd;
	const volatile uint64_t *buf = e->rbuf;
	const size_t n = e->nwords;

	r->pin_err = pin_self(r->cpu);
	while (!__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) {
		uint64_t gen = __atomic_load_n(&e->pub, __ATOMIC_ACQUIRE);
		size_t i;

		for (i = 0; i < n; i++) {
			uint64_t v = buf[i];

			if (__builtin_expect(v != word_enc(i, gen), 0))
				slow_check(e, i, v, gen);
		}
		r->scans++;
		__atomic_store_n(&r->seen, gen, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Wait until the reader has done a full scan under the published gen. */
static bool wait_reader(struct env *e)
{
	uint64_t gen = __atomic_load_n(&e->pub, __ATOMIC_RELAXED);
	double deadline = now_s() + READER_WAIT_S;
	unsigned long spins = 0;

	while (__atomic_load_n(&e->rd.seen, __ATOMIC_ACQUIRE) != gen) {
		if (!(++spins & 63) && now_s() > deadline)
			return false;
		sched_yield();
	}
	return true;
}

static void start_reader(struct __test_metadata *_metadata, struct env *e)
{
	e->stop = 0;
	e->rd.seen = ~0ULL;
	ASSERT_EQ(pthread_create(&e->rd.thread, NULL, reader_main, e), 0);
	e->reader_running = true;
	ASSERT_TRUE(wait_reader(e)) {
		TH_LOG("the reader did not start");
	}
	ASSERT_EQ(e->rd.pin_err, 0) {
		TH_LOG("cannot pin the reader to CPU %d", e->rd.cpu);
	}
}

static void stop_reader(struct env *e)
{
	if (!e->reader_running)
		return;
	__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
	pthread_join(e->rd.thread, NULL);
	e->reader_running = false;
}

/* Stop the reader, log what it saw, fail on any stale or corrupt word. */
static void reader_verdict(struct __test_metadata *_metadata, struct env *e,
			   const char *what)
{
	struct reader *r = &e->rd;
	unsigned int i;

	stop_reader(e);
	for (i = 0; i < r->nsamples; i++)
		TH_LOG("%s: reader on CPU %d read word %zu = %#llx under generation %llu (expected %#llx)",
		       r->stale ? "STALE" : "BAD", r->cpu, r->sample[i].idx,
		       (unsigned long long)r->sample[i].val,
		       (unsigned long long)r->sample[i].gen,
		       (unsigned long long)word_enc(r->sample[i].idx,
						    r->sample[i].gen));
	TH_LOG("%s: %lu rounds, %lu writes; reader on CPU %d: %lu scans, %lu torn, %lu stale, %lu corrupt",
	       what, e->rounds, e->writes, r->cpu, r->scans, r->torn, r->stale,
	       r->corrupt);
	ASSERT_GT(r->scans, 0UL);
	ASSERT_EQ(r->stale, 0UL);
	ASSERT_EQ(r->corrupt, 0UL);
}

/* ---------------------------------------------------------------------- */
/* Data and placement */

/* The main thread reads every word: the current generation, exactly. */
static void verify_all(struct __test_metadata *_metadata, struct env *e)
{
	const volatile uint64_t *buf = e->rbuf;
	size_t i;

	for (i = 0; i < e->nwords; i++) {
		uint64_t v = buf[i];

		ASSERT_EQ(v, word_enc(i, e->gen)) {
			TH_LOG("page %zu word %zu: %#llx, expected generation %llu (%#llx)",
			       i * sizeof(uint64_t) / e->psz, i,
			       (unsigned long long)v,
			       (unsigned long long)e->gen,
			       (unsigned long long)word_enc(i, e->gen));
		}
	}
}

/*
 * Write the next generation into every page, publish it, and wait until
 * the reader on the other CPU has scanned it all.  Odd generations go
 * through the writable alias (write faults install writable PTEs), even
 * ones through pwrite() into the page cache.  The alias PTEs are zapped
 * only after the reader has checked: the zap flushes the TLBs of the mm,
 * which on x86 also drops any stale entry of the reader (its CPU is behind
 * the mm's tlb_gen), so zapping first would hide a missing flush.  Without
 * the alias PTEs, only read-only clean PTEs map the pages at the next
 * migration.
 */
static void write_next(struct __test_metadata *_metadata, struct env *e)
{
	uint64_t gen = e->gen + 1;
	size_t i;

	if (gen & 1) {
		volatile uint64_t *w = e->wbuf;

		for (i = 0; i < e->nwords; i++)
			w[i] = word_enc(i, gen);
	} else {
		for (i = 0; i < e->nwords; i++)
			e->staging[i] = word_enc(i, gen);
		ASSERT_EQ(pwrite(e->fd, e->staging, e->len, 0),
			  (ssize_t)e->len);
	}
	e->gen = gen;
	e->writes++;
	__atomic_store_n(&e->pub, gen, __ATOMIC_RELEASE);
	ASSERT_TRUE(wait_reader(e)) {
		TH_LOG("the reader did not finish a scan of generation %llu in %.0f s",
		       (unsigned long long)gen, READER_WAIT_S);
	}
	if (gen & 1) {
		ASSERT_EQ(madvise(e->wbuf, e->len, MADV_DONTNEED), 0);
	}
}

/* Where is every page now?  Every page must be mapped on a test node. */
static void query(struct __test_metadata *_metadata, struct env *e, int *where)
{
	int i;

	for (i = 0; i < e->npages; i++)
		where[i] = STATUS_UNSET;
	ASSERT_EQ(move_pages_sys(e->npages, e->pages, NULL, where, 0), 0) {
		TH_LOG("move_pages() placement lookup: %s", strerror(errno));
	}
	for (i = 0; i < e->npages; i++) {
		ASSERT_TRUE(where[i] == e->node[0] || where[i] == e->node[1]) {
			TH_LOG("page %d is at %d (%s), not on node %d or %d",
			       i, where[i],
			       where[i] < 0 && where[i] != STATUS_UNSET ?
			       strerror(-where[i]) : "?",
			       e->node[0], e->node[1]);
		}
	}
}

static long move_all(struct env *e, int node, int *nodes, int *status)
{
	int i;

	for (i = 0; i < e->npages; i++) {
		nodes[i] = node;
		status[i] = STATUS_UNSET;
	}
	return move_pages_sys(e->npages, e->pages, nodes, status,
			      e->move_flags);
}

/* Log PFN and /proc/kpageflags of the pages not on node, for a report. */
static void log_stragglers(struct __test_metadata *_metadata, struct env *e,
			   int node)
{
	int pm = open("/proc/self/pagemap", O_RDONLY);
	int kf = open("/proc/kpageflags", O_RDONLY);
	uint64_t ent, flags;
	int i;

	for (i = 0; i < e->npages; i++) {
		uint64_t pfn = 0;

		if (e->where[i] == node)
			continue;
		flags = ~0ULL;
		if (pm >= 0 &&
		    pread(pm, &ent, sizeof(ent),
			  (uintptr_t)e->pages[i] / e->psz * sizeof(ent)) ==
		    sizeof(ent) && (ent & (1ULL << 63)))
			pfn = ent & ((1ULL << 55) - 1);
		if (pfn && kf >= 0 &&
		    pread(kf, &flags, sizeof(flags), pfn * sizeof(flags)) !=
		    sizeof(flags))
			flags = ~0ULL;
		TH_LOG("page %d is at %d, not %d: pfn %#llx kpageflags %#llx",
		       i, e->where[i], node, (unsigned long long)pfn,
		       (unsigned long long)flags);
	}
	if (pm >= 0)
		close(pm);
	if (kf >= 0)
		close(kf);
}

/*
 * Move everything to node and make sure it all got there.
 *
 * Migration is best effort: a folio whose reference count stays raised
 * through all of migrate_pages()' retries (a fault-around or a GUP-fast
 * lookup on the other vCPU, which TCG can preempt for milliseconds) is
 * reported as not moved, and upstream's migration selftest simply tries
 * again.  So does this, a few times; a reference that is really held (a
 * pipe that did not release its pages) fails every attempt.
 */
static void move_all_ok(struct __test_metadata *_metadata, struct env *e,
			int node)
{
	long ret;
	int i, err, attempt = 0;

	for (;;) {
		ret = move_all(e, node, e->nodes, e->status);
		err = errno;
		if (ret <= 0 || ++attempt == MOVE_ATTEMPTS)
			break;
		TH_LOG("move_pages() to node %d: %ld pages not moved, attempt %d of %d",
		       node, ret, attempt + 1, MOVE_ATTEMPTS);
		usleep(10000);
	}
	if (ret) {
		query(_metadata, e, e->where);
		log_stragglers(_metadata, e, node);
	}
	ASSERT_EQ(ret, 0) {
		TH_LOG("move_pages() to node %d: %ld (%s)", node, ret,
		       ret < 0 ? strerror(err) : "pages not moved");
	}
	query(_metadata, e, e->where);
	for (i = 0; i < e->npages; i++) {
		ASSERT_EQ(e->status[i], node);
		ASSERT_EQ(e->where[i], node);
	}
}

/* ---------------------------------------------------------------------- */
/* migrc state */

/*
 * After a flush nothing is pending: pending_pages reads 0 and
 * migrc_deferred_pages - migrc_flushed_pages, which the admin guide
 * defines as the pending count, is 0.  Other activity may defer in
 * between, so a few attempts are allowed; a leak fails every one.
 */
static void migrc_quiescent(struct __test_metadata *_metadata, struct env *e)
{
	long long pending = -1, pending2 = -1, deferred = -1, flushed = -1;
	int attempt;

	if (!e->migrc)
		return;
	for (attempt = 0; attempt < 5; attempt++) {
		ASSERT_EQ(write_str(MIGRC_DIR "/flush", "1"), 0);
		pending = read_ll(MIGRC_DIR "/pending_pages");
		deferred = read_vmstat("migrc_deferred_pages");
		flushed = read_vmstat("migrc_flushed_pages");
		pending2 = read_ll(MIGRC_DIR "/pending_pages");
		if (!pending && !pending2 && deferred == flushed)
			break;
		usleep(10000);
	}
	TH_LOG("migrc after flush: pending_pages %lld, migrc_deferred_pages %lld, migrc_flushed_pages %lld",
	       pending, deferred, flushed);
	ASSERT_EQ(pending, 0);
	ASSERT_EQ(pending2, 0);
	ASSERT_GE(deferred, 0);
	ASSERT_EQ(deferred, flushed);
}

/* With migrc on the test must have deferred something, with it off not. */
static void migrc_exercised(struct __test_metadata *_metadata, struct env *e)
{
	long long d = read_vmstat("migrc_deferred_pages");

	if (!e->migrc || e->deferred0 < 0 || d < 0)
		return;
	TH_LOG("migrc %s: migrc_deferred_pages +%lld during the test",
	       e->migrc_on ? "on" : "off", d - e->deferred0);
	if (e->migrc_on) {
		ASSERT_GT(d, e->deferred0);
	} else {
		ASSERT_EQ(d, e->deferred0);
	}
}

/* ---------------------------------------------------------------------- */
/* Knobs, restored by the teardown in the parent */

static int save_knob(const char *path, char *val)
{
	return read_str(path, val, KNOB_LEN);
}

static void restore_knobs(struct saved *s)
{
	char path[256];
	int i;

	if (s->fpa) {
		for (i = NR_FPA_KNOBS - 1; i >= 0; i--) {
			snprintf(path, sizeof(path), FPA_DIR "/%s", fpa_knob[i]);
			write_str(path, s->fpa_val[i]);
		}
		s->fpa = false;
	}
	if (s->copy) {
		write_str(COPY_FAIL_DIR "/probability", "0");
		write_str(COPY_FAIL_NEXT, s->fail_next);
		write_str(COPY_BACKEND, s->backend);
		write_str(COPY_MIN_PAGES, s->min_pages);
		write_str(COPY_THREADS, s->threads);
		s->copy = false;
	}
	if (s->max_age) {
		write_str(MIGRC_DIR "/max_age_ms", s->max_age_val);
		s->max_age = false;
	}
	if (s->numa_balancing) {
		write_str(NUMA_BALANCING, s->numa_balancing_val);
		s->numa_balancing = false;
	}
}

/* ---------------------------------------------------------------------- */
/* Setup */

static bool env_setup(struct __test_metadata *_metadata, struct env *e,
		      struct saved *s)
{
	int nodes[64], nnodes, i, ncpus = 0;
	char buf[KNOB_LEN];
	cpu_set_t set;

	memset(e, 0, sizeof(*e));
	e->fd = -1;
	if (geteuid() != 0) {
		SKIP(return false,
		     "needs root (debugfs, numa_balancing, MPOL_MF_MOVE_ALL)");
	}
	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (i = 0; i < CPU_SETSIZE && ncpus < 2; i++)
		if (CPU_ISSET(i, &set))
			e->cpu[ncpus++] = i;
	if (ncpus < 2) {
		SKIP(return false, "needs at least 2 CPUs");
	}
	nnodes = memory_nodes(nodes, 64);
	if (nnodes < 2) {
		SKIP(return false, "needs at least 2 NUMA nodes with memory");
	}
	e->node[0] = nodes[0];
	e->node[1] = nodes[1];
	e->rd.cpu = e->cpu[1];
	ASSERT_EQ(pin_self(e->cpu[0]), 0);

	e->seconds = env_double("MIGRC_TEST_SECONDS", DEFAULT_SECONDS, 0.05,
				MAX_SECONDS);
	e->npages = env_double("MIGRC_TEST_PAGES", DEFAULT_PAGES, 2,
			       MAX_PAGES);
	e->psz = getpagesize();
	e->len = e->npages * e->psz;
	e->nwords = e->len / sizeof(uint64_t);
	e->move_flags = MPOL_MF_MOVE_ALL;
	e->migrc = !access(MIGRC_DIR "/flush", W_OK);
	e->migrc_on = e->migrc &&
		      !read_str(MIGRC_DIR "/enabled", buf, sizeof(buf)) &&
		      !strcmp(buf, "on");

	e->pages = calloc(e->npages, sizeof(*e->pages));
	e->nodes = calloc(e->npages, sizeof(int));
	e->status = calloc(e->npages, sizeof(int));
	e->where = calloc(e->npages, sizeof(int));
	e->before = calloc(e->npages, sizeof(int));
	e->staging = malloc(e->len);
	ASSERT_TRUE(e->pages && e->nodes && e->status && e->where &&
		    e->before && e->staging);

	e->fd = memfd_create("migrc_faults", 0);
	ASSERT_GE(e->fd, 0);
	ASSERT_EQ(ftruncate(e->fd, e->len), 0);
	for (i = 0; i < (int)e->nwords; i++)
		e->staging[i] = word_enc(i, 0);
	ASSERT_EQ(pwrite(e->fd, e->staging, e->len, 0), (ssize_t)e->len);
	e->rbuf = mmap(NULL, e->len, PROT_READ, MAP_SHARED, e->fd, 0);
	ASSERT_NE(e->rbuf, MAP_FAILED);
	e->wbuf = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       e->fd, 0);
	ASSERT_NE(e->wbuf, MAP_FAILED);
	for (i = 0; i < e->npages; i++) {
		e->pages[i] = (char *)e->rbuf + i * e->psz;
		(void)*(volatile uint64_t *)e->pages[i];
	}
	/* Fault in the arrays move_pages() writes, before any injection. */
	memset(e->nodes, 0, e->npages * sizeof(int));
	memset(e->status, 0, e->npages * sizeof(int));
	memset(e->where, 0, e->npages * sizeof(int));
	memset(e->before, 0, e->npages * sizeof(int));

	/*
	 * Global knobs last: the teardown does not run after a failed
	 * assertion of the setup, so the setup puts them back itself.
	 *
	 * migrc flushes what is pending after max_age_ms anyway; raise it
	 * from 50 ms to 1 s, so that this timeout cannot hide a flush missing
	 * from the write or allocation paths while the reader checks.
	 */
	if (e->migrc && !save_knob(MIGRC_DIR "/max_age_ms", s->max_age_val)) {
		s->max_age = true;
		if (write_str(MIGRC_DIR "/max_age_ms", "1000")) {
			restore_knobs(s);
			ASSERT_TRUE(false) {
				TH_LOG("cannot write " MIGRC_DIR "/max_age_ms");
			}
		}
	}
	/* NUMA balancing would move the pages towards the reader. */
	if (!save_knob(NUMA_BALANCING, s->numa_balancing_val)) {
		s->numa_balancing = true;
		if (write_str(NUMA_BALANCING, "0")) {
			restore_knobs(s);
			ASSERT_TRUE(false) {
				TH_LOG("cannot turn " NUMA_BALANCING " off");
			}
		}
	}
	move_all_ok(_metadata, e, e->node[0]);
	e->gen = 0;
	e->pub = 0;
	start_reader(_metadata, e);
	e->deferred0 = read_vmstat("migrc_deferred_pages");
	return true;
}

FIXTURE(faults) {
	struct env e;
	struct saved saved;
};

FIXTURE_SETUP(faults)
{
	env_setup(_metadata, &self->e, &self->saved);
}

/*
 * In the parent, after the test process is gone (also when it failed or
 * crashed): the knobs are global, the threads and mappings died with it.
 */
FIXTURE_TEARDOWN_PARENT(faults)
{
	restore_knobs(&self->saved);
}

/* ---------------------------------------------------------------------- */
/* 1. fail_page_alloc during move_pages() */

static void fpa_set(struct __test_metadata *_metadata, const char *knob,
		    const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), FPA_DIR "/%s", knob);
	ASSERT_EQ(write_str(path, val), 0) {
		TH_LOG("writing '%s' to %s", val, path);
	}
}

TEST_F_TIMEOUT(faults, fail_page_alloc, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	struct saved *s = &self->saved;
	unsigned long calls = 0, ok_calls = 0, enomem_calls = 0;
	unsigned long other_calls = 0, moved = 0, stayed = 0, unset = 0;
	unsigned long ebusy = 0;
	long long injected = 0, t0, t1;
	char path[256], interval[32], times[32];
	double deadline;
	int i, mif, dst, p, err;
	long ret;

	snprintf(path, sizeof(path), FPA_DIR "/%s", "probability");
	if (access(path, W_OK) || access(MAKE_IT_FAIL, W_OK))
		SKIP(return, "no fail_page_alloc in debugfs (CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAULT_INJECTION_DEBUG_FS)");
	for (i = 0; i < NR_FPA_KNOBS; i++) {
		snprintf(path, sizeof(path), FPA_DIR "/%s", fpa_knob[i]);
		ASSERT_EQ(save_knob(path, s->fpa_val[i]), 0) {
			TH_LOG("cannot read %s", path);
		}
	}
	s->fpa = true;

	mif = open(MAKE_IT_FAIL, O_WRONLY);
	ASSERT_GE(mif, 0);
	/*
	 * Only tasks with make-it-fail set fail, and only the main thread
	 * has it, only inside move_pages().  Destination pages are allocated
	 * with GFP_HIGHUSER_MOVABLE | __GFP_THISNODE: order 0, may sleep,
	 * highmem, which the default filters (min-order 1, ignore-gfp-wait,
	 * ignore-gfp-highmem) would all exclude, so they are off.  Every
	 * interval-th allocation fails (the count only runs for our task), so
	 * calls fail at changing positions of their batch and some calls
	 * succeed.  "times" counts the failures down; verbose=0 keeps the
	 * kernel log clean.
	 */
	snprintf(interval, sizeof(interval), "%d", e->npages + e->npages / 2 + 1);
	fpa_set(_metadata, "task-filter", "Y");
	fpa_set(_metadata, "verbose", "0");
	fpa_set(_metadata, "space", "0");
	snprintf(times, sizeof(times), "%d", FPA_TIMES);
	fpa_set(_metadata, "times", times);
	fpa_set(_metadata, "interval", interval);
	fpa_set(_metadata, "min-order", "0");
	fpa_set(_metadata, "ignore-gfp-wait", "N");
	fpa_set(_metadata, "ignore-gfp-highmem", "N");
	fpa_set(_metadata, "probability", "100");

	deadline = now_s() + e->seconds;
	do {
		dst = e->node[!(e->rounds & 1)];
		query(_metadata, e, e->before);
		for (p = 0; p < e->npages; p++) {
			e->nodes[p] = dst;
			e->status[p] = STATUS_UNSET;
		}
		t0 = read_ll(FPA_DIR "/times");
		ASSERT_EQ(pwrite(mif, "1", 1, 0), 1);
		ret = move_pages_sys(e->npages, e->pages, e->nodes, e->status,
				     e->move_flags);
		err = ret < 0 ? errno : 0;
		ASSERT_EQ(pwrite(mif, "0", 1, 0), 1);
		t1 = read_ll(FPA_DIR "/times");
		ASSERT_TRUE(t0 >= t1 && t1 >= 0);
		injected += t0 - t1;
		calls++;

		/* 6.12: -ENOMEM is returned, never stored as a status. */
		if (ret < 0) {
			ASSERT_EQ(err, ENOMEM) {
				TH_LOG("move_pages(): %s", strerror(err));
			}
			ASSERT_GT(t0 - t1, 0) {
				TH_LOG("ENOMEM without an injected failure");
			}
			enomem_calls++;
		} else if (ret == 0) {
			ok_calls++;
		} else {
			/* A transient extra reference; not expected here. */
			other_calls++;
		}
		query(_metadata, e, e->where);
		for (p = 0; p < e->npages; p++) {
			int st = e->status[p];

			if (st == STATUS_UNSET) {
				ASSERT_NE(ret, 0) {
					TH_LOG("page %d: no status after a successful call",
					       p);
				}
				unset++;
			} else if (st == -EBUSY || st == -EAGAIN ||
				   st == -ENOMEM) {
				ebusy++;
			} else {
				ASSERT_EQ(st, dst) {
					TH_LOG("page %d: status %d", p, st);
				}
				/* Reported on the target: it is there. */
				ASSERT_EQ(e->where[p], dst);
			}
			/* Nothing moves a page away from the target. */
			if (e->before[p] == dst || ret == 0) {
				ASSERT_EQ(e->where[p], dst);
			}
			if (e->before[p] != dst) {
				if (e->where[p] == dst)
					moved++;
				else
					stayed++;
			}
		}
		/* The page whose allocation failed stayed on its source. */
		if (ret < 0) {
			for (p = 0; p < e->npages; p++)
				if (e->where[p] != dst)
					break;
			ASSERT_LT(p, e->npages) {
				TH_LOG("ENOMEM, but every page is on node %d",
				       dst);
			}
		}
		/* Readable and writable, and the reader sees the write. */
		verify_all(_metadata, e);
		write_next(_metadata, e);
		e->rounds++;
	} while (now_s() < deadline || e->rounds < 4);
	close(mif);

	TH_LOG("%lu calls: %lu ok, %lu ENOMEM, %lu other; %lld failures injected; pages: %lu moved, %lu stayed on the source, %lu statuses unwritten, %lu -EBUSY/-EAGAIN/-ENOMEM",
	       calls, ok_calls, enomem_calls, other_calls, injected, moved,
	       stayed, unset, ebusy);
	reader_verdict(_metadata, e, "fail_page_alloc");
	/* It tested something: failures were injected and seen. */
	ASSERT_GT(injected, 0);
	ASSERT_GT(enomem_calls, 0UL);
	ASSERT_GT(stayed, 0UL);
	ASSERT_GT(moved, 0UL);
	migrc_exercised(_metadata, e);
	migrc_quiescent(_metadata, e);
}

/* ---------------------------------------------------------------------- */
/* 2. -EAGAIN: pages held by a pipe */

TEST_F_TIMEOUT(faults, pinned_eagain, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	struct iovec iov[MAX_PAGES];
	unsigned long cycles = 0;
	double deadline;
	unsigned long transient = 0;
	int pipefd[2], npinned = 0, stayed, p;
	char *drain;
	long ret;

	drain = malloc(e->len);
	ASSERT_NE(drain, NULL);
	ASSERT_EQ(pipe(pipefd), 0);
	/* Room for every pinned page, so that vmsplice() never blocks. */
	ASSERT_GE(fcntl(pipefd[1], F_SETPIPE_SZ, e->len), (int)e->len);

	deadline = now_s() + e->seconds;
	do {
		int src = e->node[cycles & 1], dst = e->node[!(cycles & 1)];
		size_t got = 0;
		ssize_t n;

		move_all_ok(_metadata, e, src);

		/* The pipe holds a reference on every other page. */
		npinned = 0;
		for (p = 0; p < e->npages; p += 2) {
			iov[npinned].iov_base = e->pages[p];
			iov[npinned].iov_len = e->psz;
			npinned++;
		}
		n = vmsplice(pipefd[1], iov, npinned, 0);
		ASSERT_EQ(n, (ssize_t)(npinned * e->psz)) {
			TH_LOG("vmsplice: %s", strerror(errno));
		}

		/*
		 * Linux 6.12: the pinned folios fail with -EAGAIN in every
		 * pass (refcount check in folio_migrate_mapping(); the PTEs
		 * are restored each time), migrate_pages() returns how many
		 * failed and move_pages() returns that count, without
		 * storing any status of the batch, not even of the pages
		 * that moved.
		 */
		ret = move_all(e, dst, e->nodes, e->status);
		ASSERT_GE(ret, npinned) {
			TH_LOG("move_pages() with %d pinned pages: %ld (%s)",
			       npinned, ret, ret < 0 ? strerror(errno) : "");
		}
		query(_metadata, e, e->where);
		stayed = 0;
		for (p = 0; p < e->npages; p++) {
			ASSERT_EQ(e->status[p], STATUS_UNSET) {
				TH_LOG("page %d: status %d", p, e->status[p]);
			}
			if (p % 2 && e->where[p] == src) {
				stayed++;
				continue;
			}
			ASSERT_EQ(e->where[p], p % 2 ? dst : src) {
				TH_LOG("%s page %d is on node %d",
				       p % 2 ? "unpinned" : "pinned", p,
				       e->where[p]);
			}
		}
		/*
		 * An unpinned page may stay behind for the reason
		 * move_all_ok() retries: a transient reference.  The count
		 * must still add up, and it must stay rare (below).
		 */
		ASSERT_EQ(ret, npinned + stayed);
		if (stayed) {
			TH_LOG("cycle %lu: %d unpinned pages stayed on node %d",
			       cycles, stayed, src);
			transient++;
		}

		/* Data intact; the write after the failure is seen. */
		verify_all(_metadata, e);
		write_next(_metadata, e);

		/*
		 * The pipe references the pinned pages themselves: it must
		 * return what was just written through the mapping.
		 */
		while (got < npinned * e->psz) {
			n = read(pipefd[0], drain + got,
				 npinned * e->psz - got);
			ASSERT_GT(n, 0);
			got += n;
		}
		for (p = 0; p < npinned; p++) {
			const uint64_t *w = (uint64_t *)(drain + p * e->psz);
			size_t base = 2 * p * e->psz / sizeof(uint64_t), i;

			for (i = 0; i < e->psz / sizeof(uint64_t); i++) {
				ASSERT_EQ(w[i], word_enc(base + i, e->gen)) {
					TH_LOG("pipe data of page %d word %zu: %#llx",
					       2 * p, i,
					       (unsigned long long)w[i]);
				}
			}
		}

		/* Released: now every page moves. */
		move_all_ok(_metadata, e, dst);
		verify_all(_metadata, e);
		write_next(_metadata, e);
		cycles++;
		e->rounds++;
	} while (now_s() < deadline || cycles < 2);

	close(pipefd[0]);
	close(pipefd[1]);
	free(drain);
	TH_LOG("%lu cycles with %d of %d pages pinned, %lu with an unpinned page left behind",
	       cycles, npinned, e->npages, transient);
	/* About 1 in 10000 moves under TCG; a systematic failure is not. */
	ASSERT_LE(transient * 10, cycles);
	reader_verdict(_metadata, e, "pinned_eagain");
	migrc_exercised(_metadata, e);
	migrc_quiescent(_metadata, e);
}

/* ---------------------------------------------------------------------- */
/* 3. -EBUSY: two threads move the same pages to opposite nodes */

struct mover {
	pthread_t thread;
	struct env *e;
	int cpu;
	int node;
	int pin_err;
	int *nodes;
	int *status;
	unsigned long calls;
	unsigned long partial;		/* returned > 0 */
	unsigned long enomem;		/* returned -1/ENOMEM */
	unsigned long ok;		/* status: our target node */
	unsigned long ebusy;
	unsigned long enoent;
	unsigned long eagain;
	unsigned long unset;
	unsigned long bad;
	int bad_status;
	long bad_ret;
	int bad_errno;
};

static void *mover_main(void *arg)
{
	struct mover *m = arg;
	struct env *e = m->e;

	m->pin_err = pin_self(m->cpu);
	while (!__atomic_load_n(&e->stop, __ATOMIC_RELAXED) && !m->pin_err) {
		long ret = move_all(e, m->node, m->nodes, m->status);
		int err = errno, i;

		m->calls++;
		if (ret < 0) {
			if (err == ENOMEM) {
				m->enomem++;
			} else {
				m->bad++;
				m->bad_ret = ret;
				m->bad_errno = err;
			}
		} else if (ret > 0) {
			m->partial++;
		}
		for (i = 0; i < e->npages; i++) {
			int st = m->status[i];

			if (st == m->node) {
				m->ok++;
			} else if (st == -EBUSY) {
				m->ebusy++;
			} else if (st == -ENOENT) {
				m->enoent++;
			} else if (st == -EAGAIN || st == -ENOMEM) {
				m->eagain++;
			} else if (st == STATUS_UNSET && ret != 0) {
				m->unset++;
			} else {
				m->bad++;
				m->bad_status = st;
				m->bad_ret = ret;
			}
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(faults, concurrent_ebusy, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	struct mover m[2];
	long long success0, success1;
	unsigned long contention = 0;
	double deadline;
	int k, p, on[2] = { 0, 0 };

	memset(m, 0, sizeof(m));
	success0 = read_vmstat("pgmigrate_success");
	for (k = 0; k < 2; k++) {
		m[k].e = e;
		m[k].cpu = e->cpu[k];
		m[k].node = e->node[k];
		m[k].nodes = calloc(e->npages, sizeof(int));
		m[k].status = calloc(e->npages, sizeof(int));
		ASSERT_TRUE(m[k].nodes && m[k].status);
	}
	for (k = 0; k < 2; k++) {
		ASSERT_EQ(pthread_create(&m[k].thread, NULL, mover_main,
					 &m[k]), 0);
	}

	deadline = now_s() + e->seconds;
	while (now_s() < deadline) {
		usleep(20000);
		write_next(_metadata, e);
		e->rounds++;
	}
	/* The reader's stop flag stops the movers too. */
	stop_reader(e);
	for (k = 0; k < 2; k++)
		pthread_join(m[k].thread, NULL);
	/* Restart the reader for the final checks. */
	start_reader(_metadata, e);

	/* Every page ended up on one of the two nodes, data intact. */
	query(_metadata, e, e->where);
	for (p = 0; p < e->npages; p++)
		on[e->where[p] == e->node[1]]++;
	verify_all(_metadata, e);
	write_next(_metadata, e);

	for (k = 0; k < 2; k++) {
		TH_LOG("mover to node %d on CPU %d: %lu calls (%lu partial, %lu ENOMEM); statuses: %lu node %d, %lu -EBUSY, %lu -ENOENT, %lu -EAGAIN/-ENOMEM, %lu unwritten, %lu bad",
		       m[k].node, m[k].cpu, m[k].calls, m[k].partial,
		       m[k].enomem, m[k].ok, m[k].node, m[k].ebusy,
		       m[k].enoent, m[k].eagain, m[k].unset, m[k].bad);
		contention += m[k].ebusy + m[k].enoent + m[k].unset;
	}
	success1 = read_vmstat("pgmigrate_success");
	TH_LOG("final placement: %d pages on node %d, %d on node %d; pgmigrate_success +%lld",
	       on[0], e->node[0], on[1], e->node[1], success1 - success0);
	reader_verdict(_metadata, e, "concurrent_ebusy");
	for (k = 0; k < 2; k++) {
		ASSERT_EQ(m[k].pin_err, 0);
		ASSERT_GT(m[k].calls, 0UL);
		ASSERT_EQ(m[k].bad, 0UL) {
			TH_LOG("mover to node %d: unexpected status %d (call returned %ld, errno %d)",
			       m[k].node, m[k].bad_status, m[k].bad_ret,
			       m[k].bad_errno);
		}
		free(m[k].nodes);
		free(m[k].status);
	}
	ASSERT_GT(success1, success0);
	if (!contention)
		TH_LOG("the two movers never met: no -EBUSY, -ENOENT or partial call");
	migrc_exercised(_metadata, e);
	migrc_quiescent(_metadata, e);
}

/* ---------------------------------------------------------------------- */
/* 4. Failing batched copy, with the flush deferred */

TEST_F_TIMEOUT(faults, copy_fallback, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	struct saved *s = &self->saved;
	unsigned long injected = 0, batched = 0;
	double deadline;
	int round = 0;

	if (access(COPY_BACKEND, W_OK))
		SKIP(return, "no " COPY_BACKEND ": kernel without the batched migration copy");
	if (access(COPY_FAIL_NEXT, W_OK))
		SKIP(return, "no " COPY_FAIL_NEXT " (CONFIG_DEBUG_FS?)");
	ASSERT_GE(read_vmstat("pgmigrate_copy_fallback"), 0);
	read_choice(COPY_BACKEND, s->backend, KNOB_LEN);
	ASSERT_NE(s->backend[0], 0);
	ASSERT_EQ(save_knob(COPY_MIN_PAGES, s->min_pages), 0);
	ASSERT_EQ(save_knob(COPY_THREADS, s->threads), 0);
	ASSERT_EQ(save_knob(COPY_FAIL_NEXT, s->fail_next), 0);
	s->copy = true;

	/* mt backend, every batch (this one is npages) batch-copied. */
	ASSERT_EQ(write_str(COPY_FAIL_NEXT, "0"), 0);
	ASSERT_EQ(write_str(COPY_FAIL_DIR "/verbose", "0"), 0);
	ASSERT_EQ(write_str(COPY_FAIL_DIR "/interval", "1"), 0);
	ASSERT_EQ(write_str(COPY_FAIL_DIR "/probability", "100"), 0);
	ASSERT_EQ(write_str(COPY_MIN_PAGES, "1"), 0);
	ASSERT_EQ(write_str(COPY_THREADS, "0"), 0);
	ASSERT_EQ(write_str(COPY_BACKEND, "mt"), 0);

	deadline = now_s() + e->seconds;
	do {
		int dst = e->node[!(round & 1)];
		bool inject = !(round & 1);
		long long f0, f1, b0, b1;

		if (inject) {
			ASSERT_EQ(write_str(COPY_FAIL_NEXT, "1"), 0);
		}
		f0 = read_vmstat("pgmigrate_copy_fallback");
		b0 = read_vmstat("pgmigrate_copy_batches");
		move_all_ok(_metadata, e, dst);
		f1 = read_vmstat("pgmigrate_copy_fallback");
		b1 = read_vmstat("pgmigrate_copy_batches");
		if (inject) {
			/* The one failure was consumed by this move. */
			ASSERT_EQ(read_ll(COPY_FAIL_NEXT), 0);
			ASSERT_EQ(f1 - f0, 1) {
				TH_LOG("pgmigrate_copy_fallback +%lld for one failed batch",
				       f1 - f0);
			}
			injected++;
		} else {
			ASSERT_EQ(f1 - f0, 0);
			ASSERT_GE(b1 - b0, 1) {
				TH_LOG("the move was not batch-copied");
			}
			batched++;
		}
		verify_all(_metadata, e);
		write_next(_metadata, e);
		round++;
		e->rounds++;
	} while (now_s() < deadline || round < 4);

	TH_LOG("%d moves: %lu with a failed batched copy, %lu batch-copied",
	       round, injected, batched);
	reader_verdict(_metadata, e, "copy_fallback");
	migrc_exercised(_metadata, e);
	migrc_quiescent(_metadata, e);
}

/* ---------------------------------------------------------------------- */
/* 5. migrc's flush file and pending accounting (last) */

static const char * const migrc_counter[] = {
	"migrc_deferred_pages", "migrc_flushed_pages", "migrc_flush_other",
};

#define NR_MIGRC_COUNTERS	((int)ARRAY_SIZE(migrc_counter))

TEST_F_TIMEOUT(faults, migrc_flush, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	struct saved *s = &self->saved;
	long long pending = -1, pending2, pending3, d0, f0, o0, d1, f1, o1;
	bool seen = false;
	int attempt, i;

	if (!e->migrc)
		SKIP(return, "no " MIGRC_DIR ": kernel without migrc");
	for (i = 0; i < NR_MIGRC_COUNTERS; i++) {
		const char *name = migrc_counter[i];

		ASSERT_GE(read_vmstat(name), 0) {
			TH_LOG("/proc/vmstat has no %s", name ?: "?");
		}
	}

	if (!e->migrc_on) {
		/* Disabled means vanilla: nothing is ever deferred. */
		move_all_ok(_metadata, e, e->node[1]);
		ASSERT_EQ(read_ll(MIGRC_DIR "/pending_pages"), 0);
		ASSERT_EQ(write_str(MIGRC_DIR "/flush", "1"), 0);
		ASSERT_EQ(read_ll(MIGRC_DIR "/pending_pages"), 0);
		for (i = 0; i < NR_MIGRC_COUNTERS; i++) {
			const char *name = migrc_counter[i];

			ASSERT_EQ(read_vmstat(name), 0) {
				TH_LOG("%s is not 0 with migrc off",
				       name ?: "?");
			}
		}
		verify_all(_metadata, e);
		write_next(_metadata, e);
		reader_verdict(_metadata, e, "migrc_flush");
		return;
	}

	/* No timeout flush during the checks (the teardown restores it). */
	ASSERT_TRUE(s->max_age);
	ASSERT_EQ(write_str(MIGRC_DIR "/max_age_ms", "10000"), 0);

	/*
	 * Any write fault or write() in the system flushes what is pending,
	 * so nothing is logged until the checks of an attempt are done, and
	 * an attempt whose deferral was flushed by someone else is retried.
	 */
	for (attempt = 0; attempt < 10 && !seen; attempt++) {
		int dst = e->node[!(attempt & 1)];

		ASSERT_EQ(write_str(MIGRC_DIR "/flush", "1"), 0);
		move_all_ok(_metadata, e, dst);
		pending = read_ll(MIGRC_DIR "/pending_pages");
		d0 = read_vmstat("migrc_deferred_pages");
		f0 = read_vmstat("migrc_flushed_pages");
		o0 = read_vmstat("migrc_flush_other");
		pending2 = read_ll(MIGRC_DIR "/pending_pages");
		if (pending <= 0 || pending != pending2)
			continue;
		seen = true;
		/* The admin guide: deferred - flushed is the pending count. */
		ASSERT_EQ(d0 - f0, pending);
		ASSERT_EQ(write_str(MIGRC_DIR "/flush", "1"), 0);
		pending3 = read_ll(MIGRC_DIR "/pending_pages");
		d1 = read_vmstat("migrc_deferred_pages");
		f1 = read_vmstat("migrc_flushed_pages");
		o1 = read_vmstat("migrc_flush_other");
		TH_LOG("pending_pages %lld (deferred %lld - flushed %lld); after the flush: pending_pages %lld, deferred %lld, flushed %lld, migrc_flush_other +%lld",
		       pending, d0, f0, pending3, d1, f1, o1 - o0);
		ASSERT_EQ(pending3, 0);
		ASSERT_EQ(d1, f1);
		/* The write flushed, counted as "other", every pending page. */
		ASSERT_GE(o1 - o0, 1);
		ASSERT_GE(f1 - f0, pending);
	}
	ASSERT_TRUE(seen) {
		TH_LOG("after %d read-only moves pending_pages never stayed above 0 (last %lld)",
		       attempt, pending);
	}
	verify_all(_metadata, e);
	write_next(_metadata, e);
	reader_verdict(_metadata, e, "migrc_flush");
	migrc_exercised(_metadata, e);
	migrc_quiescent(_metadata, e);
}

TEST_HARNESS_MAIN

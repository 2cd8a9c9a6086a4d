// SPDX-License-Identifier: GPL-2.0
/*
 * migrc_fork - a page that a thread writes is migrated while its process
 * forks: no write may be lost.
 *
 * migrc defers the TLB shootdown of an entry that migration found
 * read-only, dirty or not, unless a write-protect of its mm is in flight.
 * fork() is one: copy_present_pte() clears the write bit of the parent's
 * private writable PTEs under the PTE lock, one page table after the
 * other, and dup_mmap() flushes the parent's TLBs once, with
 * flush_tlb_mm() at its end.  Until then another CPU may still cache a
 * writable, dirty entry for a PTE that now reads read-only, and write
 * through it without a page walk.  If migration unmapped such a PTE in
 * that window and deferred its flush, the writes made through the stale
 * entry after the copy land in the freed source page: they are lost.
 * migrc counts fork() in mm->migrc_wp_pending and defers nothing of the
 * mm meanwhile (vmstat migrc_wp_in_flight counts the entries it did not
 * defer for that reason); the debug kernel's fault injection
 * skip_wp_check ignores the condition, and this test must then fail.
 *
 * The test (fixture "fork"):
 *   writer_keeps_writes  a thread increments a counter in a page that
 *                        migrates while its process forks, again and
 *                        again; the counter must end at the number of
 *                        increments the thread made.
 *
 * Method.  Three threads of the test process, each pinned to a CPU:
 *
 *   writer    increments a 64-bit counter in P, the first page of a
 *             private anonymous mapping, in a tight loop (v = *p;
 *             *p = v + 1: a load and a store, not an atomic increment)
 *             and counts its increments itself.  It writes nothing else
 *             but a progress word in a MAP_SHARED page: not even its
 *             stack, which fork() write-protects as well (a write to it
 *             would block the writer until the fork is over).
 *   migrator  moves P between two memory nodes with move_pages(), in one
 *             call with MIGRC_FORK_RO_PAGES read-only pages that precede
 *             P in the call.
 *   main      forks, once per such call; each child calls _exit(0) at
 *             once and is reaped.
 *
 * P is followed in its mapping by MIGRC_FORK_MB of populated anonymous
 * memory, in base pages.  dup_mmap() walks the parent's mappings in
 * address order, so it write-protects P early and then spends a long time
 * copying the rest: the write-protect window.  At the end the writer is
 * stopped, and P must hold exactly the number of increments the writer
 * counted (lost = counted - *P).  After a fork the writer's next write to
 * P faults (COW), and the kernel reuses P or copies it: the value is kept
 * either way on a correct kernel.
 *
 * Lining the migration up with the fork.  move_pages() isolates each page
 * under mmap_read_lock(), and fork() holds mmap_write_lock() from before
 * it write-protects anything to after its flush, so a migration of P can
 * only overlap the window if the fork starts between P's isolation and
 * P's unmap.  For P alone that gap is a few microseconds, far shorter
 * than what fork() does before it reaches P: free-running loops (almost)
 * never overlap.  So the read-only pages come first in the call and P
 * last: move_pages() isolates all pages of a call bound for one node
 * before it unmaps the first, and unmaps P last.  The main thread watches
 * P's page in /proc/kpageflags and forks as soon as it leaves the LRU
 * (isolated; a page not on the LRU at first is in a per-CPU batch, which
 * move_pages() drains before isolating).  The fork then write-protects P
 * while the migrator is still unmapping the read-only pages, and P is
 * unmapped, copied and remapped while the fork copies the rest.  Every
 * entry of the call is read-only, so with the injection the kernel sends
 * no flush at all.  Before each raced call the read-only pages join P on
 * its node in a call of their own (a page already on the destination
 * would cut the raced call in two).  The defaults are sized so that, by
 * rough native timings, P is unmapped about three times later than fork()
 * reaches it and copied well before the fork ends; the log shows how
 * often P's move was over before fork() returned ("during a fork": its
 * status, which move_pages() writes once P has moved, was unset before
 * the fork and set after it; the arrays move_pages() uses are in a
 * MAP_SHARED page, which fork() does not write-protect).
 *
 * CPUs.  The main thread runs on the first CPU, the writer on the second,
 * the migrator on the third, or with two CPUs on the writer's: the main
 * thread must watch P while the migrator isolates it, and a CPU switching
 * between two threads of one mm flushes nothing, so the writer's TLB
 * entries survive the migrator's turn.  The migrator runs SCHED_FIFO (if
 * allowed), so the writer does not slice its raced call; after the call
 * it blocks (at the latest on its own stack, which the fork has
 * write-protected) and the writer runs again, through its stale entry if
 * the flush was skipped.  A CPU that comes back to the mm from a kernel
 * thread (the lru drain of move_pages()) catches up with the mm's TLB
 * generation, which each deferral bumps; so before each raced call the
 * migrator brings every TLB of the mm up to date (a zap of a spare page)
 * and waits until the writer has written P again.
 *
 * On a kernel with migrc enabled (/sys/kernel/mm/migrc/enabled), the
 * test reports the growth of migrc_wp_in_flight, migrc_deferred_pages and
 * migrc_writable_entries in /proc/vmstat, and migrc_wp_in_flight must
 * have grown (migrations did hit a fork's window), unless the
 * skip_wp_check fault injection is armed (its probability in debugfs is
 * not 0), which keeps that counter still.  On a kernel without migrc or
 * with migrc off only the writes are checked.  Every run must see forks
 * and moves of P.
 *
 * kernel.numa_balancing is turned off while the test runs (it would move
 * and write-protect P on its own) and migrc's max_age_ms raised to 1 s (a
 * timeout flush must not hide a flush missing at migration); the fixture
 * teardown, run in the parent, restores both.
 *
 * Environment: MIGRC_TEST_SECONDS (default 10), MIGRC_FORK_MB (the memory
 * after P, default 128), MIGRC_FORK_RO_PAGES (default 256).  Needs root
 * (/proc/kpageflags, MPOL_MF_MOVE_ALL), two CPUs and two memory nodes.
 */
#include "../kselftest_harness.h"

#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <linux/kernel-page-flags.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "vm_util.h"
#include "migrc_util.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define DEFAULT_SECONDS		10.0
#define MAX_SECONDS		120.0
#define DEFAULT_BG_MB		128
#define MAX_BG_MB		1024
#define DEFAULT_RO_PAGES	256
#define MAX_RO_PAGES		1024
#define TEST_TIMEOUT		300
#define WRITER_CHUNK		256
#define TRIGGER_TIMEOUT_S	0.5
#define PROGRESS_TIMEOUT_S	10.0
#define STATUS_UNSET		INT_MIN	/* never a node nor an errno */
#define KNOB_LEN		64

#define MIGRC_DIR		"/sys/kernel/mm/migrc"
#define SKIP_WP_CHECK		"/sys/kernel/debug/migrc/skip_wp_check/probability"
#define NUMA_BALANCING		"/proc/sys/kernel/numa_balancing"

enum { CPU_MAIN, CPU_WRITER, CPU_MIGRATOR, NR_ROLES };

/*
 * What the threads share, and the arrays of move_pages(): in a MAP_SHARED
 * mapping, which fork() neither copies nor write-protects, so that no
 * thread and no kernel write to them waits for a fork to finish.
 */
struct shared {
	/* The writer's */
	uint64_t progress;
	int stop;
	uint64_t local;
	int writer_pin_err;
	/* Migrator to main thread: a raced call is next (or quit) */
	sem_t arm;
	/* Main thread to migrator: P's page noted; fork() is over */
	sem_t ready;
	sem_t done;
	int quit;
	/* The raced call: P's destination and P's index in list[] */
	int dst;
	int p_idx;
	/* Written by the main thread before posting done */
	bool forked;
	bool triggered;
	bool overlap;
	/* move_pages(): the read-only pages, then P */
	void *pages[MAX_RO_PAGES + 1];
	void *list[MAX_RO_PAGES + 1];
	int nodes[MAX_RO_PAGES + 1];
	int status[MAX_RO_PAGES + 1];
	int where[MAX_RO_PAGES + 1];
};

struct migrator {
	int pin_err;
	int fifo_err;		/* SCHED_FIFO refused: run as SCHED_OTHER */
	int err;		/* an unexpected errno */
	const char *what;
	unsigned long rounds;
	unsigned long skipped;	/* P not mapped or moved before the race */
	unsigned long p_moved;
	unsigned long overlaps;	/* P's move done before fork() returned */
	unsigned long ro_batched;
	unsigned long ro_moved;
	unsigned long enomem;
	unsigned long partial;
};

struct forker {
	int err;
	unsigned long forks;
	unsigned long triggered;
	unsigned long bad_children;
	double fork_s;
	double fork_max_s;
};

struct env {
	int cpu[NR_ROLES];
	int ncpus;
	int node[2];
	size_t psz;
	double seconds;
	size_t bg_len;
	int nro;
	char *region;		/* P, the background, the read-only pages, spare */
	size_t region_len;
	uint64_t *p;		/* only read and written with __atomic_*() */
	char *ro;
	char *spare;
	int pagemap_fd;
	int kpf_fd;
	struct shared *sh;
	bool migrc;
	bool migrc_on;
	bool injected;
	long long wp_in_flight0;
	long long deferred0;
	long long writable0;
	struct migrator mig;
	struct forker fk;
};

struct saved {
	bool numa_balancing;
	char numa_balancing_val[KNOB_LEN];
	bool max_age;
	char max_age_val[KNOB_LEN];
};

/* ---------------------------------------------------------------------- */
/* Helpers */

static void restore_knobs(struct saved *s)
{
	if (s->max_age) {
		write_str(MIGRC_DIR "/max_age_ms", s->max_age_val);
		s->max_age = false;
	}
	if (s->numa_balancing) {
		write_str(NUMA_BALANCING, s->numa_balancing_val);
		s->numa_balancing = false;
	}
}

static void sem_wait_intr(sem_t *s)
{
	while (sem_wait(s) && errno == EINTR)
		;
}

/* Wait until the writer has counted more than @since; false on timeout. */
static bool writer_wrote(struct shared *sh, uint64_t since)
{
	double deadline = now_s() + PROGRESS_TIMEOUT_S;

	while (__atomic_load_n(&sh->progress, __ATOMIC_ACQUIRE) == since) {
		if (now_s() > deadline)
			return false;
		usleep(1000);
	}
	return true;
}

/* The nodes of the read-only pages and of P into sh->where: 0 or -1. */
static int query(struct env *e)
{
	int i;

	for (i = 0; i <= e->nro; i++)
		e->sh->where[i] = STATUS_UNSET;
	return move_pages_sys(e->nro + 1, e->sh->pages, NULL, e->sh->where,
			      0) ? -1 : 0;
}

/* ---------------------------------------------------------------------- */
/* The writer */

static void *writer_main(void *arg)
{
	struct env *e = arg;
	struct shared *sh = e->sh;
	uint64_t *p = e->p, local = 0, v;
	int i;

	sh->writer_pin_err = pin_self(e->cpu[CPU_WRITER]);
	if (sh->writer_pin_err)
		return NULL;
	/* Registers, P and sh->progress only: see the header comment. */
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < WRITER_CHUNK; i++) {
			/* A load, then a store: not an atomic increment. */
			v = __atomic_load_n(p, __ATOMIC_RELAXED);
			__atomic_store_n(p, v + 1, __ATOMIC_RELAXED);
		}
		local += WRITER_CHUNK;
		__atomic_store_n(&sh->progress, local, __ATOMIC_RELEASE);
	}
	sh->local = local;
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The migrator */

static void mig_fail(struct migrator *m, const char *what, int err)
{
	if (!m->err) {
		m->err = err ? err : EIO;
		m->what = what;
	}
}

/*
 * Bring every TLB of the mm up to date: zapping a present page flushes
 * all CPUs the mm runs on, and a CPU more than one generation behind
 * mm->context.tlb_gen does a full flush and catches up.
 */
static int tlb_sync(struct env *e)
{
	__atomic_store_n(e->spare, 1, __ATOMIC_RELAXED);
	return madvise(e->spare, e->psz, MADV_DONTNEED);
}

static void migrate_round(struct env *e)
{
	struct shared *sh = e->sh;
	struct migrator *m = &e->mig;
	int i, cnt = 0, src, dst, err;
	uint64_t since;
	long ret;

	/* Where is P?  It goes to the other node. */
	if (query(e)) {
		mig_fail(m, "move_pages() placement query", errno);
		return;
	}
	src = sh->where[e->nro];
	if (src < 0) {
		/* P not mapped: the writer's fault is on its way. */
		m->skipped++;
		usleep(1000);
		return;
	}
	dst = src == e->node[0] ? e->node[1] : e->node[0];

	/* The read-only pages first join P on its node, not raced. */
	if (e->nro) {
		for (i = 0; i < e->nro; i++) {
			sh->nodes[i] = src;
			sh->status[i] = STATUS_UNSET;
		}
		ret = move_pages_sys(e->nro, sh->pages, sh->nodes, sh->status,
				     MPOL_MF_MOVE_ALL);
		if (ret < 0 && errno != ENOMEM) {
			mig_fail(m, "move_pages() of the read-only pages", errno);
			return;
		}
	}

	/* Every TLB up to date, then the writer has written P again. */
	since = __atomic_load_n(&sh->progress, __ATOMIC_ACQUIRE);
	if (tlb_sync(e)) {
		mig_fail(m, "madvise(MADV_DONTNEED) of the spare page", errno);
		return;
	}
	if (!writer_wrote(sh, since)) {
		mig_fail(m, "waiting for the writer", ETIMEDOUT);
		return;
	}

	/* The raced call: the read-only pages not on dst, then P. */
	if (query(e)) {
		mig_fail(m, "move_pages() placement query", errno);
		return;
	}
	if (sh->where[e->nro] != src) {
		m->skipped++;
		usleep(1000);
		return;
	}
	for (i = 0; i < e->nro; i++)
		if (sh->where[i] >= 0 && sh->where[i] != dst)
			sh->list[cnt++] = sh->pages[i];
	sh->list[cnt++] = sh->pages[e->nro];
	for (i = 0; i < cnt; i++) {
		sh->nodes[i] = dst;
		sh->status[i] = STATUS_UNSET;
	}
	sh->dst = dst;
	sh->p_idx = cnt - 1;
	sem_post(&sh->arm);
	sem_wait_intr(&sh->ready);
	ret = move_pages_sys(cnt, sh->list, sh->nodes, sh->status,
			     MPOL_MF_MOVE_ALL);
	err = errno;
	sem_wait_intr(&sh->done);

	m->rounds++;
	m->ro_batched += cnt - 1;
	if (ret < 0) {
		if (err != ENOMEM) {
			mig_fail(m, "move_pages() of P", err);
			return;
		}
		m->enomem++;
	} else if (ret > 0) {
		/* Not all moved: 6.12 then writes no status of the call. */
		m->partial++;
	}
	for (i = 0; i < cnt - 1; i++)
		if (sh->status[i] == dst)
			m->ro_moved++;
	if (sh->status[cnt - 1] == dst) {
		m->p_moved++;
		if (sh->forked && sh->overlap)
			m->overlaps++;
	}
}

static void *migrator_main(void *arg)
{
	struct env *e = arg;
	struct migrator *m = &e->mig;
	struct sched_param sp = { .sched_priority = 1 };
	double deadline;

	m->pin_err = pin_self(e->cpu[CPU_MIGRATOR]);
	/*
	 * Not time-sliced with the writer when they share a CPU: the raced
	 * call runs in one go, and the writer runs whenever it blocks.
	 */
	m->fifo_err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	deadline = now_s() + e->seconds;
	while (!m->pin_err && !m->err && now_s() < deadline)
		migrate_round(e);
	__atomic_store_n(&e->sh->quit, 1, __ATOMIC_RELEASE);
	sem_post(&e->sh->arm);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The main thread: one fork per raced migration */

static bool page_on_lru(struct env *e, unsigned long pfn, bool *lru)
{
	uint64_t flags;

	if (pread(e->kpf_fd, &flags, sizeof(flags), pfn * sizeof(flags)) !=
	    sizeof(flags))
		return false;
	*lru = flags & (1ULL << KPF_LRU);
	return true;
}

/*
 * Wait until page @pfn leaves the LRU after having been on it (@lru: it
 * was when first looked at): the migrator isolated it.  False after
 * TRIGGER_TIMEOUT_S.
 */
static bool isolated(struct env *e, unsigned long pfn, bool lru)
{
	double deadline = now_s() + TRIGGER_TIMEOUT_S;
	unsigned long spins = 0;
	bool now;

	for (;;) {
		if (!page_on_lru(e, pfn, &now))
			return false;
		if (now)
			lru = true;
		else if (lru)
			return true;
		if (!(++spins & 15) && now_s() > deadline)
			return false;
	}
}

static int p_status(struct shared *sh)
{
	return __atomic_load_n(&sh->status[sh->p_idx], __ATOMIC_RELAXED);
}

static void fork_loop(struct env *e)
{
	struct shared *sh = e->sh;
	struct forker *f = &e->fk;

	for (;;) {
		bool lru = false, known, moved_before;
		unsigned long pfn;
		int status = 0;
		double t0, t1;
		pid_t pid;

		sem_wait_intr(&sh->arm);
		if (__atomic_load_n(&sh->quit, __ATOMIC_ACQUIRE))
			break;
		pfn = pagemap_get_pfn(e->pagemap_fd, (char *)e->p);
		known = pfn != -1UL && page_on_lru(e, pfn, &lru);
		sem_post(&sh->ready);
		sh->triggered = known && isolated(e, pfn, lru);
		/* P's status is written once P is moved: not yet, and then? */
		moved_before = p_status(sh) == sh->dst;
		t0 = now_s();
		pid = fork();
		if (!pid)
			_exit(0);
		t1 = now_s();
		sh->overlap = !moved_before && p_status(sh) == sh->dst;
		sh->forked = pid > 0;
		sem_post(&sh->done);
		if (pid < 0) {
			if (!f->err)
				f->err = errno;
			continue;
		}
		f->forks++;
		f->triggered += sh->triggered;
		f->fork_s += t1 - t0;
		if (t1 - t0 > f->fork_max_s)
			f->fork_max_s = t1 - t0;
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR) {
				if (!f->err)
					f->err = errno;
				break;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			f->bad_children++;
	}
}

/* ---------------------------------------------------------------------- */
/* Setup */

FIXTURE(fork) {
	struct env e;
	struct saved saved;
};

FIXTURE_SETUP(fork)
{
	struct env *e = &self->e;
	struct saved *s = &self->saved;
	int nodes[64], i, n = 0;
	char buf[KNOB_LEN];
	cpu_set_t set;
	size_t off;

	e->pagemap_fd = -1;
	e->kpf_fd = -1;
	if (geteuid() != 0)
		SKIP(return, "needs root (/proc/kpageflags, MPOL_MF_MOVE_ALL, numa_balancing)");
	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (i = 0; i < CPU_SETSIZE && n < NR_ROLES; i++)
		if (CPU_ISSET(i, &set))
			e->cpu[n++] = i;
	if (n < 2)
		SKIP(return, "needs at least 2 CPUs");
	e->ncpus = n;
	/* With two CPUs the migrator runs on the writer's. */
	if (n == 2)
		e->cpu[CPU_MIGRATOR] = e->cpu[CPU_WRITER];
	if (memory_nodes(nodes, 64) < 2)
		SKIP(return, "needs at least 2 NUMA nodes with memory");
	e->node[0] = nodes[0];
	e->node[1] = nodes[1];
	e->pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	e->kpf_fd = open("/proc/kpageflags", O_RDONLY);
	if (e->pagemap_fd < 0 || e->kpf_fd < 0)
		SKIP(return, "no /proc/kpageflags (CONFIG_PROC_PAGE_MONITOR)");

	e->seconds = env_double("MIGRC_TEST_SECONDS", DEFAULT_SECONDS, 0.5,
				MAX_SECONDS);
	e->bg_len = (size_t)env_double("MIGRC_FORK_MB", DEFAULT_BG_MB, 1,
				       MAX_BG_MB) << 20;
	e->nro = env_double("MIGRC_FORK_RO_PAGES", DEFAULT_RO_PAGES, 0,
			    MAX_RO_PAGES);
	e->psz = psize();
	e->migrc = !access(MIGRC_DIR "/enabled", R_OK);
	e->migrc_on = e->migrc &&
		      !read_str(MIGRC_DIR "/enabled", buf, sizeof(buf)) &&
		      (!strcmp(buf, "on") || !strcmp(buf, "1"));
	e->injected = read_ll(SKIP_WP_CHECK) > 0;
	ASSERT_EQ(pin_self(e->cpu[CPU_MAIN]), 0);

	/*
	 * P, then the background, then the read-only pages and a spare
	 * page: in this order, so that fork() copies P first.  Base pages
	 * only, populated (real pages, written: dirty).
	 */
	e->region_len = e->psz + e->bg_len + (e->nro + 1) * e->psz;
	e->region = mmap(NULL, e->region_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->region, MAP_FAILED);
	/* Fails only without THP, and then there is none. */
	madvise(e->region, e->region_len, MADV_NOHUGEPAGE);
	if (madvise(e->region, e->region_len, MADV_POPULATE_WRITE))
		for (off = 0; off < e->region_len; off += e->psz)
			e->region[off] = 1;
	e->p = (uint64_t *)e->region;
	e->ro = e->region + e->psz + e->bg_len;
	e->spare = e->ro + e->nro * e->psz;
	for (i = 0; i < e->nro; i++)
		memset(e->ro + i * e->psz, i + 1, e->psz);
	if (e->nro)
		ASSERT_EQ(mprotect(e->ro, e->nro * e->psz, PROT_READ), 0);
	__atomic_store_n(e->p, 0, __ATOMIC_RELAXED);

	e->sh = mmap(NULL, sizeof(*e->sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->sh, MAP_FAILED);
	ASSERT_EQ(sem_init(&e->sh->arm, 0, 0), 0);
	ASSERT_EQ(sem_init(&e->sh->ready, 0, 0), 0);
	ASSERT_EQ(sem_init(&e->sh->done, 0, 0), 0);
	for (i = 0; i < e->nro; i++)
		e->sh->pages[i] = e->ro + i * e->psz;
	e->sh->pages[e->nro] = e->p;

	/*
	 * Global knobs last: the teardown does not run after a failed
	 * assertion of the setup, so the setup puts them back itself.
	 */
	if (!read_str(NUMA_BALANCING, s->numa_balancing_val, KNOB_LEN)) {
		s->numa_balancing = true;
		if (write_str(NUMA_BALANCING, "0")) {
			restore_knobs(s);
			ASSERT_TRUE(false) {
				TH_LOG("cannot turn " NUMA_BALANCING " off");
			}
		}
	}
	if (e->migrc &&
	    !read_str(MIGRC_DIR "/max_age_ms", s->max_age_val, KNOB_LEN)) {
		s->max_age = true;
		if (write_str(MIGRC_DIR "/max_age_ms", "1000")) {
			restore_knobs(s);
			ASSERT_TRUE(false) {
				TH_LOG("cannot write " MIGRC_DIR "/max_age_ms");
			}
		}
	}
	e->wp_in_flight0 = read_vmstat("migrc_wp_in_flight");
	e->deferred0 = read_vmstat("migrc_deferred_pages");
	e->writable0 = read_vmstat("migrc_writable_entries");
}

/*
 * In the parent, after the test process is gone (also when it failed or
 * crashed): the knobs are global; threads, children and mappings died
 * with the test process.
 */
FIXTURE_TEARDOWN_PARENT(fork)
{
	restore_knobs(&self->saved);
}

/* ---------------------------------------------------------------------- */
/* The test */

static long long grew(long long before, const char *name)
{
	long long now = read_vmstat(name);

	return before < 0 || now < 0 ? -1 : now - before;
}

TEST_F_TIMEOUT(fork, writer_keeps_writes, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	struct shared *sh = e->sh;
	struct migrator *m = &e->mig;
	struct forker *f = &e->fk;
	long long wp, deferred, writable, lost;
	pthread_t writer, migrator;
	uint64_t final;

	TH_LOG("nodes %d and %d; CPUs: main thread %d, writer %d, migrator %d",
	       e->node[0], e->node[1], e->cpu[CPU_MAIN], e->cpu[CPU_WRITER],
	       e->cpu[CPU_MIGRATOR]);
	TH_LOG("%zu MB after P, %d read-only pages moved with P, %.1f s",
	       e->bg_len >> 20, e->nro, e->seconds);
	ASSERT_EQ(pthread_create(&writer, NULL, writer_main, e), 0);
	ASSERT_TRUE(writer_wrote(sh, 0)) {
		TH_LOG("the writer did not start (pinning to CPU %d: %s)",
		       e->cpu[CPU_WRITER], strerror(-sh->writer_pin_err));
	}
	ASSERT_EQ(pthread_create(&migrator, NULL, migrator_main, e), 0);
	fork_loop(e);
	pthread_join(migrator, NULL);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	pthread_join(writer, NULL);
	final = __atomic_load_n(e->p, __ATOMIC_RELAXED);
	lost = (long long)(sh->local - final);

	wp = grew(e->wp_in_flight0, "migrc_wp_in_flight");
	deferred = grew(e->deferred0, "migrc_deferred_pages");
	writable = grew(e->writable0, "migrc_writable_entries");
	if (m->fifo_err)
		TH_LOG("migrator not SCHED_FIFO: %s", strerror(m->fifo_err));
	TH_LOG("%lu raced moves (%lu skipped): P moved %lu times, %lu during a fork",
	       m->rounds, m->skipped, m->p_moved, m->overlaps);
	TH_LOG("%lu of %lu read-only pages moved with P; %lu calls ENOMEM, %lu partial",
	       m->ro_moved, m->ro_batched, m->enomem, m->partial);
	TH_LOG("%lu forks, %lu on P's isolation; %.1f ms each on average, %.1f ms at most",
	       f->forks, f->triggered,
	       f->forks ? f->fork_s * 1e3 / f->forks : 0.0,
	       f->fork_max_s * 1e3);
	TH_LOG("writer: %llu increments, P holds %llu: %lld lost",
	       (unsigned long long)sh->local, (unsigned long long)final, lost);
	if (e->migrc) {
		TH_LOG("migrc %s%s", e->migrc_on ? "on" : "off",
		       e->injected ? ", skip_wp_check injection armed" : "");
		TH_LOG("vmstat: migrc_wp_in_flight +%lld, migrc_deferred_pages +%lld",
		       wp, deferred);
		TH_LOG("vmstat: migrc_writable_entries +%lld", writable);
	} else {
		TH_LOG("kernel without migrc");
	}

	/* The point of the test: not one increment lost. */
	ASSERT_EQ(final, sh->local) {
		TH_LOG("%lld writes lost: made through a stale TLB entry", lost);
	}
	ASSERT_EQ(m->pin_err, 0) {
		TH_LOG("cannot pin the migrator to CPU %d",
		       e->cpu[CPU_MIGRATOR]);
	}
	ASSERT_EQ(m->err, 0) {
		TH_LOG("%s: %s", m->what, strerror(m->err));
	}
	ASSERT_EQ(f->err, 0) {
		TH_LOG("fork()/waitpid(): %s", strerror(f->err));
	}
	ASSERT_EQ(f->bad_children, 0UL);
	ASSERT_GT(f->forks, 0UL);
	ASSERT_GT(m->p_moved, 0UL);
	if (e->migrc_on && !e->injected && wp >= 0) {
		ASSERT_GT(wp, 0) {
			TH_LOG("no migration during a fork's write-protect");
		}
	}
}

TEST_HARNESS_MAIN

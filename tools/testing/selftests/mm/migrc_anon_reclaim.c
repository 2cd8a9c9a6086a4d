// SPDX-License-Identifier: GPL-2.0
/*
 * migrc_anon_reclaim - reclaim frees an anonymous page while other threads
 * read it, then the page is written again: they must read the new data,
 * not the page reclaim freed.
 *
 * Reclaim frees a clean anonymous folio in two ways, and migrc may defer
 * the flush of its read-only entries in neither without a barrier on the
 * way back:
 *
 *  lazyfree   a clean MADV_FREE folio is discarded and its PTEs are left
 *             none (try_to_unmap_one(), "discard").  The next fault at
 *             that address is an ordinary anonymous fault: a new zeroed
 *             page, which no key names and no barrier sees, and a fault
 *             does not consult mm->tlb_flush_batched.  migrc does not
 *             defer such a folio (vmstat migrc_excluded_pages counts it);
 *             the debug kernel's fault injection defer_lazyfree makes it
 *             defer them, and the variant must then fail.
 *  swapcache  a clean folio in the swap cache (swapped out once, read
 *             back in) is freed and its PTEs become swap entries.  The
 *             write that brings the data back passes do_swap_page() or
 *             wp_page_reuse(), whose barrier must finish the deferral
 *             (migrc_deferred_reclaim counts it); with the injection
 *             skip_write_flush the variant must fail.  Needs swap
 *             (harness/guest/scratch-swap), or skips.
 *  move       as swapcache, but the swap entries are then moved away with
 *             UFFDIO_MOVE, which leaves their old addresses empty, and
 *             UFFDIO_COPY places the new data there: neither passes a
 *             barrier that knows the old data, so the flush must come
 *             from move_swap_pte(), which flushes mm->tlb_flush_batched
 *             with migrc on; with the injection skip_move_flush the
 *             variant must fail.  Needs swap and UFFD_FEATURE_MOVE.
 *
 * The entries must be read-only for migrc to consider them at all (a
 * writable one is never deferred) while the VMA stays writable: fork()
 * leaves the parent's PTEs of a private mapping write-protected until the
 * next write fault, and MADV_FREE keeps them so.
 *
 * Each round (test write_after_reclaim): fill PAGES pages with an old
 * value; for swapcache, MADV_PAGEOUT them (swapped out) and let the
 * readers read them back in; fork and reap a child (the PTEs become
 * read-only); for lazyfree, MADV_FREE them; let the readers load their
 * TLB entries; MADV_PAGEOUT them (the pages reclaim freed are those
 * /proc/self/pagemap shows gone); write a new value to every page and
 * publish it.  The move variant write-protects its entries with
 * UFFDIO_WRITEPROTECT instead (a fork would make the pages shared, and
 * UFFDIO_MOVE moves only exclusive ones; mprotect() would make the VMA
 * read-only, and UFFDIO_MOVE moves only between writable ones), moves
 * them to a second mapping and copies the new value in.  A reader that
 * sees the publication and then reads anything but the new value in a
 * page counts a stale read; there must be none.
 *
 * The main thread runs on the first CPU and a reader on every other one
 * (at most MAX_READERS), each pinned, spinning over the first word of
 * every page.  A CPU that switches to a kernel thread and back may catch
 * up with the mm's TLB generation and lose its stale entries, so a missed
 * flush is not seen in every round, but in most.  Few pages see it best:
 * a reader that loses the TLB entry of one page (a small TLB, or QEMU's,
 * which evicts) faults on its swap entry, and do_swap_page()'s barrier
 * then finishes the round's deferral before the write.  Measured in the
 * TCG guest with a flush skipped on purpose: with 64 pages, 2 of 5 runs
 * of 10 s (move) read stale data, with 16 pages 6 of 6 runs of 2 s
 * (swapcache and move), which also run 2 to 20 times the rounds.
 *
 * migrc's max_age_ms is raised to 1 s while the test runs (the time bound
 * must not hide a missing flush) and restored by the parent.  The test
 * passes on any kernel that loses no write: vanilla, migrc off and on.
 * A run in which reclaim freed no page skips.
 *
 * Environment: MIGRC_TEST_SECONDS (default 2), MIGRC_ANON_PAGES (default
 * 16).  Needs root (the knob) and two CPUs.
 */
#include "../kselftest_harness.h"

#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>

#include "vm_util.h"
#include "migrc_util.h"

#ifndef MADV_FREE
#define MADV_FREE		8
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT		21
#endif

#define DEFAULT_SECONDS		2.0
#define MAX_SECONDS		100.0
#define DEFAULT_PAGES		16
#define MAX_PAGES		4096
#define MAX_READERS		8
#define MIN_ROUNDS		5
#define READER_PASSES		3
#define READER_WAIT_S		5.0
#define TEST_TIMEOUT		200
#define KNOB_LEN		64

#define MIGRC_DIR		"/sys/kernel/mm/migrc"

/* The value of page @i, old or fresh, in round @round: never 0. */
static inline uint64_t word(uint64_t round, size_t i, bool fresh)
{
	return (1ULL << 63) | (round << 32) | ((uint64_t)i << 1) | fresh;
}

/*
 * What the threads share: in a MAP_SHARED mapping, which fork() does not
 * write-protect, so that no thread waits for a fork to write it.
 */
struct ctl {
	uint64_t pub;		/* the round published, 0 while none is */
	int stop;
	struct reader {
		uint64_t passes;	/* completed passes over the pages */
		uint64_t last_pub;	/* what the last pass checked against */
		uint64_t stale;		/* words not fresh after publication */
		uint64_t checked;	/* words read after publication */
		uint64_t first_stale;	/* the first one, for the log */
		int cpu;
		int pin_err;
	} r[MAX_READERS];
};

/* What a reader thread is given. */
struct reader_arg {
	struct ctl *ctl;
	struct reader *r;
	uint64_t *buf;
	size_t stride, npages;
};

struct env {
	size_t psz;
	size_t npages;
	double seconds;
	int pagemap_fd;
	int uffd;		/* move: registered on buf and away */
	uint64_t *buf;		/* npages pages, private anonymous */
	uint64_t *away;		/* move: where UFFDIO_MOVE puts them */
	uint64_t *fresh;	/* move: what UFFDIO_COPY puts in buf */
	struct ctl *ctl;
	int nreaders;
	pthread_t thread[MAX_READERS];
	struct reader_arg arg[MAX_READERS];
};

/*
 * Spin over the first word of every page.  While a round is published,
 * every word must be that round's fresh one; otherwise anything goes (the
 * old word, or 0 where a reader without an entry faulted in the zero
 * page).  The main thread changes the words only while no round is
 * published and every reader has finished a pass that knew it.
 */
static void *reader_main(void *arg)
{
	struct reader_arg *a = arg;
	struct reader *r = a->r;
	size_t i, words = a->stride / sizeof(uint64_t);

	r->pin_err = pin_self(r->cpu);
	while (!__atomic_load_n(&a->ctl->stop, __ATOMIC_RELAXED)) {
		uint64_t pub = __atomic_load_n(&a->ctl->pub, __ATOMIC_ACQUIRE);

		for (i = 0; i < a->npages; i++) {
			uint64_t v = __atomic_load_n(&a->buf[i * words],
						     __ATOMIC_RELAXED);

			if (!pub)
				continue;
			r->checked++;
			if (v != word(pub, i, true)) {
				if (!r->stale)
					r->first_stale = v;
				r->stale++;
			}
		}
		r->last_pub = pub;
		__atomic_store_n(&r->passes, r->passes + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Wait until every reader has finished READER_PASSES passes against @pub. */
static bool wait_readers(struct env *e, uint64_t pub)
{
	uint64_t start[MAX_READERS];
	double deadline = now_s() + READER_WAIT_S;
	int i;

	for (i = 0; i < e->nreaders; i++)
		start[i] = __atomic_load_n(&e->ctl->r[i].passes,
					   __ATOMIC_ACQUIRE);
	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->ctl->r[i];

		while (__atomic_load_n(&r->passes, __ATOMIC_ACQUIRE) <
		       start[i] + READER_PASSES ||
		       __atomic_load_n(&r->last_pub, __ATOMIC_RELAXED) != pub) {
			if (now_s() > deadline)
				return false;
			sched_yield();
		}
	}
	return true;
}

static void fill(struct env *e, uint64_t round, bool fresh)
{
	size_t i, words = e->psz / sizeof(uint64_t);

	for (i = 0; i < e->npages; i++)
		e->buf[i * words] = word(round, i, fresh);
}

/* fork() write-protects the parent's PTEs; the child leaves at once. */
static int fork_and_reap(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid)
		_exit(0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	return 0;
}

static void restore_age(bool have, const char *val)
{
	if (have)
		write_str(MIGRC_DIR "/max_age_ms", val);
}

/* How many of the pages reclaim freed: no longer present. */
static size_t count_gone(struct env *e, size_t *swapped)
{
	size_t i, gone = 0;

	*swapped = 0;
	for (i = 0; i < e->npages; i++) {
		uint64_t ent = pagemap_get_entry(e->pagemap_fd,
						 (char *)e->buf + i * e->psz);

		if (!(ent & PM_PRESENT))
			gone++;
		if (ent & PM_SWAP)
			(*swapped)++;
	}
	return gone;
}

/*
 * The move variant: a second mapping for UFFDIO_MOVE to put the pages in,
 * and the fresh data UFFDIO_COPY copies back.  Both mappings are
 * registered for missing faults, buf also for write-protect faults;
 * nothing reads the events: UFFDIO_COPY wakes a reader that faulted on an
 * emptied address, and the main thread writes buf only where nothing is
 * missing or write-protected (it is populated first).
 */
static bool uffd_setup(struct __test_metadata *_metadata, struct env *e)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
	size_t len = e->npages * e->psz;

	e->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (e->uffd < 0)
		SKIP(return false, "no userfaultfd: %s", strerror(errno));
	if (ioctl(e->uffd, UFFDIO_API, &api) ||
	    !(api.features & UFFD_FEATURE_MOVE))
		SKIP(return false, "no UFFD_FEATURE_MOVE");
	e->away = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	e->fresh = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->away, MAP_FAILED);
	ASSERT_NE(e->fresh, MAP_FAILED);
	madvise(e->away, len, MADV_NOHUGEPAGE);
	memset(e->buf, 0, len);
	/* vm_util.h's */
	ASSERT_EQ(uffd_register(e->uffd, e->buf, len, true, true, false), 0);
	ASSERT_EQ(uffd_register(e->uffd, e->away, len, true, false, false), 0);
	return true;
}

/*
 * Move every page of buf to away, retrying what the kernel asks to; the
 * pages moved.  A swap entry whose folio is back in the swap cache meanwhile
 * is refused with EAGAIN, a shared one with EBUSY: those rounds are not
 * published.
 */
static size_t move_away(struct env *e)
{
	size_t len = e->npages * e->psz, done = 0;
	int tries;

	for (tries = 0; done < len && tries < 10; tries++) {
		struct uffdio_move mv = {
			.dst = (unsigned long)e->away + done,
			.src = (unsigned long)e->buf + done,
			.len = len - done,
		};

		if (!ioctl(e->uffd, UFFDIO_MOVE, &mv)) {
			done = len;
			break;
		}
		if (mv.move > 0)
			done += mv.move;
		if (errno != EAGAIN)
			break;
	}
	return done / e->psz;
}

/*
 * buf's entries read-only, the pages still exclusive; or, !@on, no longer
 * write-protected, also where a page stayed swapped out (its next write
 * would otherwise wait for a write-protect fault nobody resolves).
 */
static bool write_protect(struct env *e, bool on)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = (unsigned long)e->buf,
			   .len = e->npages * e->psz },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return !ioctl(e->uffd, UFFDIO_WRITEPROTECT, &wp);
}

/*
 * The fresh value of @round into the pages of buf that move_away()
 * emptied, page by page, so that no page stays missing (a reader faulting
 * there would wait for good); false if a page could not be filled (one
 * not moved: EEXIST).
 */
static bool copy_fresh(struct env *e, uint64_t round)
{
	size_t i, words = e->psz / sizeof(uint64_t);
	bool all = true;

	for (i = 0; i < e->npages; i++) {
		struct uffdio_copy cp = {
			.dst = (unsigned long)e->buf + i * e->psz,
			.src = (unsigned long)e->fresh + i * e->psz,
			.len = e->psz,
		};

		e->fresh[i * words] = word(round, i, true);
		if (ioctl(e->uffd, UFFDIO_COPY, &cp))
			all = false;
	}
	return all;
}

FIXTURE(anon_reclaim) {
	struct env e;
	bool have_age;
	char age[KNOB_LEN];
};

enum how { LAZYFREE, SWAPCACHE, MOVE };

FIXTURE_VARIANT(anon_reclaim) {
	enum how how;
};

FIXTURE_VARIANT_ADD(anon_reclaim, lazyfree) {
	.how = LAZYFREE,
};

FIXTURE_VARIANT_ADD(anon_reclaim, swapcache) {
	.how = SWAPCACHE,
};

FIXTURE_VARIANT_ADD(anon_reclaim, move) {
	.how = MOVE,
};

/* Is a swap area on?  /proc/swaps has a header line. */
static bool swap_on(void)
{
	char line[256];
	FILE *f = fopen("/proc/swaps", "r");
	int n = 0;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n > 1;
}

FIXTURE_SETUP(anon_reclaim)
{
	struct env *e = &self->e;
	cpu_set_t set;
	int cpus[MAX_READERS + 1], n = 0, i;

	e->pagemap_fd = -1;
	e->uffd = -1;
	if (geteuid() != 0)
		SKIP(return, "needs root (migrc's max_age_ms)");
	if (variant->how != LAZYFREE && !swap_on())
		SKIP(return, "no swap (harness/guest/scratch-swap turns some on)");
	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (i = 0; i < CPU_SETSIZE && n <= MAX_READERS; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	if (n < 2)
		SKIP(return, "needs at least 2 CPUs");
	ASSERT_EQ(pin_self(cpus[0]), 0);
	e->pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_GE(e->pagemap_fd, 0);

	e->psz = psize();
	e->seconds = env_double("MIGRC_TEST_SECONDS", DEFAULT_SECONDS, 0.5,
				MAX_SECONDS);
	e->npages = env_double("MIGRC_ANON_PAGES", DEFAULT_PAGES, 1,
			       MAX_PAGES);
	e->buf = mmap(NULL, e->npages * e->psz, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->buf, MAP_FAILED);
	/* Base pages: reclaim does not defer large folios. */
	madvise(e->buf, e->npages * e->psz, MADV_NOHUGEPAGE);
	e->ctl = mmap(NULL, sizeof(*e->ctl), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->ctl, MAP_FAILED);
	if (variant->how == MOVE && !uffd_setup(_metadata, e))
		return;

	e->nreaders = n - 1;
	for (i = 0; i < e->nreaders; i++) {
		e->ctl->r[i].cpu = cpus[i + 1];
		e->arg[i].ctl = e->ctl;
		e->arg[i].r = &e->ctl->r[i];
		e->arg[i].buf = e->buf;
		e->arg[i].stride = e->psz;
		e->arg[i].npages = e->npages;
	}

	/* Last: the teardown does not run after a failed assertion here. */
	if (!access(MIGRC_DIR "/max_age_ms", W_OK) &&
	    !read_str(MIGRC_DIR "/max_age_ms", self->age, KNOB_LEN)) {
		self->have_age = true;
		if (write_str(MIGRC_DIR "/max_age_ms", "1000")) {
			restore_age(true, self->age);
			ASSERT_TRUE(false) {
				TH_LOG("cannot write " MIGRC_DIR "/max_age_ms");
			}
		}
	}
}

/*
 * In the parent, also when the test process failed or crashed; the
 * threads, the mappings and the pagemap file went with the test process.
 */
FIXTURE_TEARDOWN_PARENT(anon_reclaim)
{
	restore_age(self->have_age, self->age);
}

static long long grew(long long before, const char *name)
{
	long long now = read_vmstat(name);

	return before < 0 || now < 0 ? -1 : now - before;
}

/* MADV_PAGEOUT, or skip the test where the kernel has none. */
static int pageout(struct env *e)
{
	if (!madvise(e->buf, e->npages * e->psz, MADV_PAGEOUT))
		return 0;
	return errno == EINVAL ? 1 : -1;
}

TEST_F_TIMEOUT(anon_reclaim, write_after_reclaim, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	long long excl0 = read_vmstat("migrc_excluded_pages");
	long long defr0 = read_vmstat("migrc_deferred_reclaim");
	uint64_t round, stale = 0, checked = 0, first = 0;
	size_t freed = 0, swapped, gone, moved = 0;
	size_t len = e->npages * e->psz;
	unsigned long freed_rounds = 0, unpublished = 0;
	double end;
	int i, ret;

	for (i = 0; i < e->nreaders; i++)
		ASSERT_EQ(pthread_create(&e->thread[i], NULL, reader_main,
					 &e->arg[i]), 0);

	end = now_s() + e->seconds;
	for (round = 1; round < (1ULL << 30); round++) {
		if (round > MIN_ROUNDS && now_s() > end)
			break;
		/* No round published: the readers accept anything. */
		__atomic_store_n(&e->ctl->pub, 0, __ATOMIC_RELEASE);
		ASSERT_TRUE(wait_readers(e, 0));
		/* Nothing left where the move puts the pages. */
		if (variant->how == MOVE) {
			ASSERT_TRUE(write_protect(e, false));
			ASSERT_EQ(madvise(e->away, len, MADV_DONTNEED), 0);
		}
		fill(e, round, false);
		if (variant->how != LAZYFREE) {
			/* Out to swap, and back in by the readers' reads. */
			ret = pageout(e);
			if (ret > 0)
				SKIP(break, "no MADV_PAGEOUT");
			ASSERT_EQ(ret, 0);
			ASSERT_TRUE(wait_readers(e, 0));
		}
		/* The harness's ASSERT_*() take an else of their own. */
		if (variant->how != MOVE) {
			ASSERT_EQ(fork_and_reap(), 0);
		} else {
			ASSERT_TRUE(write_protect(e, true));
		}
		if (variant->how == LAZYFREE)
			ASSERT_EQ(madvise(e->buf, len, MADV_FREE), 0);
		/* MADV_FREE, fork() and the write-protect flushed: reload. */
		ASSERT_TRUE(wait_readers(e, 0));
		ret = pageout(e);
		if (ret > 0)
			SKIP(break, "no MADV_PAGEOUT");
		ASSERT_EQ(ret, 0);
		gone = count_gone(e, &swapped);
		/* Swapped back in clean, then freed: a swap entry again. */
		if (variant->how != LAZYFREE)
			gone = swapped;
		if (variant->how == MOVE) {
			/* Only a round whose every page moved is published. */
			size_t m = move_away(e);

			moved += m;
			if (!copy_fresh(e, round) || m < e->npages) {
				unpublished++;
				continue;
			}
		} else {
			/* Faults the pages back in, or in anew, and writes them. */
			fill(e, round, true);
		}
		freed += gone;
		freed_rounds += gone > 0;
		__atomic_store_n(&e->ctl->pub, round, __ATOMIC_RELEASE);
		ASSERT_TRUE(wait_readers(e, round));
	}
	__atomic_store_n(&e->ctl->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->ctl->r[i];

		pthread_join(e->thread[i], NULL);
		ASSERT_EQ(r->pin_err, 0);
		if (r->stale && !stale)
			first = r->first_stale;
		stale += r->stale;
		checked += r->checked;
	}

	TH_LOG("%llu rounds of %zu pages: reclaim freed %zu pages, in %lu rounds",
	       (unsigned long long)round - 1, e->npages, freed, freed_rounds);
	if (variant->how == MOVE)
		TH_LOG("UFFDIO_MOVE moved %zu pages; %lu rounds not published",
		       moved, unpublished);
	TH_LOG("migrc_excluded_pages +%lld, migrc_deferred_reclaim +%lld",
	       grew(excl0, "migrc_excluded_pages"),
	       grew(defr0, "migrc_deferred_reclaim"));
	TH_LOG("%llu of %llu words read after publication were stale%s",
	       (unsigned long long)stale, (unsigned long long)checked,
	       stale ? " (old data of a page reclaim freed)" : "");
	if (stale)
		TH_LOG("first stale word %#llx", (unsigned long long)first);
	if (!freed_rounds)
		SKIP(return, "reclaim freed none of the pages");
	ASSERT_NE(checked, 0ULL);
	ASSERT_EQ(stale, 0ULL);
}

TEST_HARNESS_MAIN

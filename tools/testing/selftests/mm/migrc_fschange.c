// SPDX-License-Identifier: GPL-2.0
/*
 * migrc_fschange - no stale read after a change of file data, also when
 * reclaim freed the page with its TLB flush deferred.
 *
 * With migrc, reclaim that unmaps a clean folio whose PTEs are all
 * read-only frees it without the TLB shootdown; other CPUs keep an entry
 * for the freed page until the deferred flush.  When the file's data then
 * changes without a cached folio being written (direct I/O, fallocate()),
 * the stale entry shows the old data unless a barrier flushes first:
 * invalidate_inode_pages2_range() (which every O_DIRECT write passes) and
 * truncate_inode_pages_range() end with one, buffered writes have one in
 * generic_perform_write().  Files outside migrc's safe set are never
 * deferred (migrc_excluded_pages).
 *
 * Method.  A file of MIGRC_TEST_PAGES pages (default 64) is made in
 * MIGRC_FS_DIR (default /mnt/migrc-ext4, an ext4 loop filesystem in the
 * test VM) and mapped read-only MAP_SHARED once.  The first word of page p
 * holds a value derived from p and the page's version (expected()).
 * Reader threads, pinned to every CPU but the first, sweep over the pages;
 * for each page that is not quiet they load the published version (acquire)
 * and then the word through the mapping with a volatile load, which must be
 * exactly the expected value.  They make no system calls (and take no page
 * fault, the main thread faults every page in), so only a real TLB flush
 * drops their entries (under QEMU TCG each vCPU keeps its software TLB
 * until the guest flushes it).  The main thread, on the first CPU, writes
 * the file back (reclaim does not free dirty page cache) and takes a group
 * of 8 pages per round:
 *
 *   1. it completes the batched flush the previous round's reclaim left in
 *      mm->tlb_flush_batched (MADV_DONTNEED of a scratch page: zap_pte_range()
 *      calls flush_tlb_batched_pending()), and waits until every reader
 *      has read the group again: each now holds a TLB entry for its pages
 *      (otherwise the MADV_PAGEOUT walk below would do that flush, after the
 *      readers stopped reading the group, and leave nothing stale);
 *   2. it sets the group quiet and waits until every reader finished the
 *      sweep it was in: no reader touches the group now, but their entries
 *      stay;
 *   3. MADV_PAGEOUT on the group (the only mapping, so mapcount 1), and
 *      mincore() counts the pages that really left the page cache;
 *   4. the change, for the variant, to version v + 1;
 *   5. after it returned, it publishes v + 1 (release), reads every page of
 *      the group itself (faulting it in on its own CPU, where MADV_PAGEOUT's
 *      lru_add_drain() will find it next time, and checking it too), and
 *      clears quiet.
 *
 * A reader that kept its entry for a freed page reads the page's old
 * version, which is counted as a stale read.  The page is not reused
 * before the flush (it is freed tagged), so the old version is what it
 * shows.  The check is exact: no change is in flight while a page is not
 * quiet, so any other value is a failure too.  max_age_ms is raised to 2 s
 * and max_pending_pages to 128 MB so that the time and size bounds cannot
 * hide a missing barrier (readers come back to a page within microseconds),
 * and unbound workqueues are kept on the main thread's CPU, so that the
 * change's I/O workers do not flush a reader's TLB by running on its CPU
 * (switch_mm_irqs_off() catching up with the mm's tlb_gen).
 *
 * Variants (the change of step 4):
 *   dio         O_DIRECT pwrite() of the group through a second descriptor
 *               (skipped if the filesystem refuses O_DIRECT): only the new
 *               barrier in invalidate_inode_pages2_range() flushes
 *   pwrite      buffered pwrite(): generic_perform_write()'s barrier
 *   punch       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
 *   zero_range  FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE (skipped if not
 *               supported)
 *   remap       mmap(MAP_FIXED) of a second file, which holds version v + 1,
 *               over the group: the file's data did not change, the
 *               address now maps other data.  The range was reclaimed, so
 *               it has no present PTE and munmap() sends no flush; only
 *               the barrier in tlb_finish_mmu() does
 *   cow         the mapping is MAP_PRIVATE and writable, and the change is
 *               a store of v + 1 into each page: a copy-on-write fault on
 *               a PTE that reclaim cleared, whose new anonymous page no key
 *               of a migration would name; reclaim's deferral is unkeyed,
 *               so the fault's barrier flushes.  The next round on the
 *               group maps the file back (holding v) first
 * For punch and zero_range, odd versions are holes and read as zero, even
 * versions are data, which is never zero: a round that finds the group a
 * hole first writes version v + 1 back (while quiet), then reclaims and
 * punches it to v + 2.  Truncation of whole pages also unmaps them, and
 * zap_pte_range() flushes the mm, so these two pass even without the
 * barrier in truncate_inode_pages_range(); dio and pwrite depend on their
 * barriers alone.  A change that passes no barrier at all (written into
 * the loop image behind ext4's back) is read stale in every round with
 * migrc on, and never with migrc off.
 *
 * Asserts: no stale read, by a reader or by the main thread; MADV_PAGEOUT
 * reclaimed at least one page (else nothing was tested); with migrc on and
 * the file on ext4 (the safe set), migrc_deferred_reclaim increased: the
 * deferral the test is about happened; with migrc on and the file
 * elsewhere, migrc_deferred_reclaim did not increase and
 * migrc_excluded_pages did (in the test VM: MIGRC_FS_DIR on the
 * repository, 9p, where punch and zero_range are skipped).  With migrc
 * off, or without migrc, only the first two.
 *
 * Environment: MIGRC_FS_DIR, MIGRC_TEST_PAGES, MIGRC_TEST_SECONDS (per
 * variant, default 2).  Needs 2 CPUs; root only to raise the bounds.
 */
#include "../kselftest_harness.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <linux/falloc.h>

#include "vm_util.h"
#include "migrc_util.h"

#define DEFAULT_DIR		"/mnt/migrc-ext4"
#define WQ_CPUMASK		"/sys/devices/virtual/workqueue/cpumask"
#define DEFAULT_SECONDS		2.0
#define MAX_SECONDS		60.0
#define TEST_TIMEOUT		120
#define GROUP			8	/* pages changed per round */
#define DEFAULT_PAGES		64
#define MAX_PAGES		4096
#define MAX_READERS		8
#define GRACE_FACTOR		4
#define READER_WAIT_S		10.0
#define LONG_AGE_MS		"2000"
#define BIG_PENDING		"32768"	/* pages, 128 MB */
#define MIGRC_SYSFS		"/sys/kernel/mm/migrc/"
#define MAGIC			0x6d67ULL

enum change { DIO, PWRITE, PUNCH, ZERO_RANGE, REMAP, COW };

struct env;

struct reader {
	pthread_t thread;
	int cpu;
	int pin_err;
	struct env *e;
	/* Written by the reader. */
	unsigned long sweeps __attribute__((aligned(64)));
	unsigned long stale;
	size_t s_page;		/* the first stale read */
	uint64_t s_got, s_ver;
} __attribute__((aligned(64)));

/* What the parent undoes once the test process is gone. */
struct saved {
	char path[300];				/* the test file */
	char path2[300];			/* REMAP's second file */
	char old_age[32], old_pending[32];	/* "": not changed */
	char old_wq_mask[64];			/* "": not changed */
};

struct env {
	struct saved *s;
	int fd, dfd;
	int fd2;		/* REMAP: the second file */
	bool *alt;		/* REMAP: the group maps the second file */
	bool *cowed;		/* COW: the group holds anonymous copies */
	int cpus[MAX_READERS + 1];
	int ncpus, nreaders;
	size_t psz, npages;
	bool holes;		/* odd versions are holes */
	char dir[256], fstype[32];
	const volatile uint64_t *map;
	char *scratch;		/* an anonymous page to zap */
	uint64_t *buf;		/* GROUP pages, aligned for O_DIRECT */
	uint64_t *pub;		/* published version of each page */
	int *quiet;		/* readers leave the page alone */
	struct reader *readers;
	bool running;
	/* Written by the main thread while the readers run. */
	int stop __attribute__((aligned(64)));
	unsigned long rounds, reclaimed, main_stale;
	size_t m_page;		/* its first stale read */
	uint64_t m_got, m_ver;
};

/* ---------------------------------------------------------------------- */
/* Helpers */

/* The first word of page @p at version @ver: zero only for a hole. */
static inline uint64_t expected(const struct env *e, size_t p, uint64_t ver)
{
	if (e->holes && (ver & 1))
		return 0;
	return MAGIC << 48 | (uint64_t)(p + 1) << 32 | (uint32_t)ver;
}

/* ---------------------------------------------------------------------- */
/* Readers */

static void record_stale(struct reader *r, size_t p, uint64_t got, uint64_t ver)
{
	if (!r->stale++) {
		r->s_page = p;
		r->s_got = got;
		r->s_ver = ver;
	}
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct env *e = r->e;
	const size_t words = e->psz / sizeof(uint64_t);
	size_t p;

	r->pin_err = pin_self(r->cpu);
	while (!__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) {
		for (p = 0; p < e->npages; p++) {
			uint64_t ver, got;

			if (__atomic_load_n(&e->quiet[p], __ATOMIC_ACQUIRE))
				continue;
			ver = __atomic_load_n(&e->pub[p], __ATOMIC_ACQUIRE);
			got = e->map[p * words];
			if (__builtin_expect(got != expected(e, p, ver), 0))
				record_stale(r, p, got, ver);
		}
		/*
		 * A full barrier: the main thread sets quiet, then reads
		 * sweeps (both seq_cst).  If it read the value before this
		 * increment, the next sweep sees quiet (no store buffering).
		 */
		__atomic_add_fetch(&r->sweeps, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* Wait until every reader completed @n more sweeps; false on timeout. */
static bool wait_sweeps(struct env *e, unsigned long n)
{
	unsigned long target[MAX_READERS];
	double deadline = now_s() + READER_WAIT_S;
	int i;

	for (i = 0; i < e->nreaders; i++)
		target[i] = __atomic_load_n(&e->readers[i].sweeps,
					    __ATOMIC_SEQ_CST) + n;
	for (i = 0; i < e->nreaders; i++)
		while (__atomic_load_n(&e->readers[i].sweeps,
				       __ATOMIC_SEQ_CST) < target[i]) {
			if (now_s() > deadline)
				return false;
			sched_yield();
		}
	return true;
}

static void set_quiet(struct env *e, size_t first, int q)
{
	size_t p;

	for (p = first; p < first + GROUP; p++)
		__atomic_store_n(&e->quiet[p], q, __ATOMIC_SEQ_CST);
}

static void stop_readers(struct env *e)
{
	int i;

	if (!e->running)
		return;
	__atomic_store_n(&e->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < e->nreaders; i++)
		pthread_join(e->readers[i].thread, NULL);
	e->running = false;
}

/* ---------------------------------------------------------------------- */
/* The main thread's steps */

/* Write version @ver of the group at @first through @fd. */
static ssize_t write_group(struct env *e, int fd, size_t first, uint64_t ver)
{
	size_t i, words = e->psz / sizeof(uint64_t);

	memset(e->buf, 0, GROUP * e->psz);
	for (i = 0; i < GROUP; i++)
		e->buf[i * words] = expected(e, first + i, ver);
	return pwrite(fd, e->buf, GROUP * e->psz, first * e->psz);
}

/*
 * Publish @ver for the group, then read it here: that faults the pages in
 * on this CPU (MADV_PAGEOUT drains this CPU's LRU batch, not the readers')
 * and checks them as a reader would.
 */
static void publish(struct env *e, size_t first, uint64_t ver)
{
	size_t p, words = e->psz / sizeof(uint64_t);
	uint64_t got;

	for (p = first; p < first + GROUP; p++)
		__atomic_store_n(&e->pub[p], ver, __ATOMIC_RELEASE);
	for (p = first; p < first + GROUP; p++) {
		got = e->map[p * words];
		if (got != expected(e, p, ver) && !e->main_stale++) {
			e->m_page = p;
			e->m_got = got;
			e->m_ver = ver;
		}
	}
}

static void *group_addr(const struct env *e, size_t first)
{
	return (void *)(e->map + first * (e->psz / sizeof(uint64_t)));
}

/* REMAP: map the file the group does not map now over it. */
static int remap_group(struct env *e, size_t first)
{
	off_t off = first * e->psz, len = GROUP * e->psz;
	bool *alt = &e->alt[first / GROUP];
	void *p;

	p = mmap(group_addr(e, first), len, PROT_READ, MAP_SHARED | MAP_FIXED,
		 *alt ? e->fd : e->fd2, off);
	if (p == MAP_FAILED)
		return -errno;
	*alt = !*alt;
	return 0;
}

/* COW: write version @ver through the private mapping. */
static int cow_group(struct env *e, size_t first, uint64_t ver)
{
	volatile uint64_t *w = group_addr(e, first);
	size_t i, words = e->psz / sizeof(uint64_t);

	for (i = 0; i < GROUP; i++)
		w[i * words] = expected(e, first + i, ver);
	e->cowed[first / GROUP] = true;
	return 0;
}

/* The variant's change of the group at @first to version @ver. */
static int change(struct env *e, enum change how, size_t first, uint64_t ver)
{
	off_t off = first * e->psz, len = GROUP * e->psz;
	int keep = FALLOC_FL_KEEP_SIZE;

	errno = EIO;		/* what a short write means */
	switch (how) {
	case DIO:
		return write_group(e, e->dfd, first, ver) == len ? 0 : -errno;
	case PWRITE:
		return write_group(e, e->fd, first, ver) == len ? 0 : -errno;
	case PUNCH:
		return fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | keep, off, len) ?
		       -errno : 0;
	case ZERO_RANGE:
		return fallocate(e->fd, FALLOC_FL_ZERO_RANGE | keep, off, len) ?
		       -errno : 0;
	case REMAP:
		return remap_group(e, first);
	case COW:
		return cow_group(e, first, ver);
	}
	return -EINVAL;
}

static void sync_readers(struct __test_metadata *_metadata, struct env *e,
			 unsigned long n)
{
	ASSERT_TRUE(wait_sweeps(e, n)) {
		TH_LOG("a reader made no progress for %.0f s", READER_WAIT_S);
	}
}

/* One round, on the next group: the steps of the comment at the top. */
static void one_round(struct __test_metadata *_metadata, struct env *e,
		      enum change how)
{
	size_t first = e->rounds % (e->npages / GROUP) * GROUP, p;
	const ssize_t len = GROUP * e->psz;
	uint64_t ver = e->pub[first];
	unsigned char vec[GROUP];
	void *addr = group_addr(e, first);
	int ret;

	if (e->holes && (ver & 1)) {
		/* A hole: data back first, out of the readers' sight. */
		set_quiet(e, first, 1);
		sync_readers(_metadata, e, 1);
		ASSERT_EQ(write_group(e, e->fd, first, ++ver), len);
		publish(e, first, ver);
		set_quiet(e, first, 0);
	}
	if (how == REMAP) {
		/* The next version into the file not mapped there. */
		int other = e->alt[first / GROUP] ? e->fd : e->fd2;

		ASSERT_EQ(write_group(e, other, first, ver + 1), len);
		ASSERT_EQ(fdatasync(other), 0);
	}
	if (how == COW && e->cowed[first / GROUP]) {
		/*
		 * The file under the group again, holding the version the
		 * anonymous copies hold: readers see no change.
		 */
		ASSERT_EQ(write_group(e, e->fd, first, ver), len);
		ASSERT_NE(mmap(addr, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_FIXED, e->fd,
			       first * e->psz), MAP_FAILED);
		e->cowed[first / GROUP] = false;
	}
	/* Clean: reclaim does not free dirty page cache. */
	ASSERT_EQ(fdatasync(e->fd), 0);

	/* 1. Complete the last round's batched flush; readers re-read. */
	e->scratch[0] = 1;
	ASSERT_EQ(madvise(e->scratch, e->psz, MADV_DONTNEED), 0);
	sync_readers(_metadata, e, 2);
	/* 2. Quiet: nobody reads the group now, the entries stay. */
	set_quiet(e, first, 1);
	sync_readers(_metadata, e, 1);
	/* 3. Reclaim. */
	ASSERT_EQ(madvise(addr, len, MADV_PAGEOUT), 0) {
		TH_LOG("MADV_PAGEOUT: %s", strerror(errno));
	}
	ASSERT_EQ(mincore(addr, len, vec), 0);
	for (p = 0; p < GROUP; p++)
		e->reclaimed += !(vec[p] & 1);
	/* 4. The change. */
	ret = change(e, how, first, ++ver);
	ASSERT_EQ(ret, 0) {
		TH_LOG("change of pages %zu-%zu: %s", first,
		       first + GROUP - 1, strerror(-ret));
	}
	/* 5. Publish, fault in, let the readers back. */
	publish(e, first, ver);
	set_quiet(e, first, 0);
	e->rounds++;
}

/* ---------------------------------------------------------------------- */
/* Fixture */

FIXTURE(fschange) {
	struct env *e;		/* the test process's own */
	struct saved s;		/* shared with the parent */
};

FIXTURE_VARIANT(fschange) {
	enum change how;
	const char *name;
};

FIXTURE_VARIANT_ADD(fschange, dio) {
	.how = DIO,
	.name = "dio",
};

FIXTURE_VARIANT_ADD(fschange, pwrite) {
	.how = PWRITE,
	.name = "pwrite",
};

FIXTURE_VARIANT_ADD(fschange, punch) {
	.how = PUNCH,
	.name = "punch",
};

FIXTURE_VARIANT_ADD(fschange, zero_range) {
	.how = ZERO_RANGE,
	.name = "zero_range",
};

FIXTURE_VARIANT_ADD(fschange, remap) {
	.how = REMAP,
	.name = "remap",
};

FIXTURE_VARIANT_ADD(fschange, cow) {
	.how = COW,
	.name = "cow",
};

/* Cheap checks only: whatever is created is created by the test. */
FIXTURE_SETUP(fschange)
{
	const char *dir = getenv("MIGRC_FS_DIR");
	struct env *e;
	cpu_set_t set;
	int i;

	ASSERT_EQ(posix_memalign((void **)&self->e, 64, sizeof(*e)), 0);
	e = self->e;
	memset(e, 0, sizeof(*e));
	e->s = &self->s;
	e->fd = -1;
	e->dfd = -1;
	e->fd2 = -1;
	e->psz = psize();
	e->npages = env_double("MIGRC_TEST_PAGES", DEFAULT_PAGES, 2 * GROUP,
			       MAX_PAGES);
	e->npages -= e->npages % GROUP;
	e->holes = variant->how == PUNCH || variant->how == ZERO_RANGE;
	snprintf(e->dir, sizeof(e->dir), "%s", dir && *dir ? dir : DEFAULT_DIR);

	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (i = 0; i < CPU_SETSIZE && e->ncpus < MAX_READERS + 1; i++)
		if (CPU_ISSET(i, &set))
			e->cpus[e->ncpus++] = i;
	if (e->ncpus < 2)
		SKIP(return, "need at least 2 CPUs");
	e->nreaders = e->ncpus - 1;
	if (access(e->dir, W_OK))
		SKIP(return, "%s: %s (set MIGRC_FS_DIR to a writable ext4 directory)",
		     e->dir, strerror(errno));
	migrc_fs_type(e->dir, e->fstype, sizeof(e->fstype));
	if (!strcmp(e->fstype, "tmpfs"))
		SKIP(return, "%s is on tmpfs, which reclaim can only swap out",
		     e->dir);
}

/*
 * In the parent, once the test process is gone, also after a failed
 * ASSERT (which skips FIXTURE_TEARDOWN in this harness): the bounds are
 * global and the file stays; threads, mappings and descriptors died with
 * the test process.
 */
FIXTURE_TEARDOWN_PARENT(fschange)
{
	if (self->s.old_wq_mask[0])
		write_str(WQ_CPUMASK, self->s.old_wq_mask);
	if (self->s.old_age[0])
		write_str(MIGRC_SYSFS "max_age_ms", self->s.old_age);
	if (self->s.old_pending[0])
		write_str(MIGRC_SYSFS "max_pending_pages", self->s.old_pending);
	if (self->s.path[0])
		unlink(self->s.path);
	if (self->s.path2[0])
		unlink(self->s.path2);
}

/* Raise a migrc bound for the run, if there is one; @old keeps it. */
static void raise_bound(struct __test_metadata *_metadata, const char *name,
			const char *val, char *old, size_t size)
{
	char path[128];

	snprintf(path, sizeof(path), MIGRC_SYSFS "%s", name);
	if (read_str(path, old, size)) {
		old[0] = 0;
		return;
	}
	if (write_str(path, val)) {
		TH_LOG("cannot set %s to %s: the bound may hide a missing barrier",
		       name, val);
		old[0] = 0;
	}
}

/* Create the file, map it, fault it in, start the readers. */
static void prepare(struct __test_metadata *_metadata, struct env *e,
		    enum change how)
{
	const ssize_t len = GROUP * e->psz;
	size_t p;
	ssize_t ret;
	int i, rfd, err = 0;

	/* Not unlinked at once: 9p cannot resize an unlinked file. */
	snprintf(e->s->path, sizeof(e->s->path), "%s/migrc_fschange.%d",
		 e->dir, getpid());
	e->fd = open(e->s->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_GE(e->fd, 0) {
		TH_LOG("create %s: %s", e->s->path, strerror(errno));
	}
	if (how == DIO) {
		e->dfd = open(e->s->path, O_RDWR | O_DIRECT);
		err = errno;
	}
	if (how == DIO && e->dfd < 0 && err == EINVAL)
		SKIP(return, "%s: O_DIRECT not supported", e->fstype);
	if (how == DIO)
		ASSERT_GE(e->dfd, 0);
	ASSERT_EQ(ftruncate(e->fd, e->npages * e->psz), 0) {
		TH_LOG("ftruncate %s: %s", e->s->path, strerror(errno));
	}
	if (e->holes) {
		int mode = FALLOC_FL_KEEP_SIZE | (how == PUNCH ?
			   FALLOC_FL_PUNCH_HOLE : FALLOC_FL_ZERO_RANGE);

		if (fallocate(e->fd, mode, 0, e->psz) && errno == EOPNOTSUPP)
			SKIP(return, "%s: fallocate() mode %#x not supported",
			     e->fstype, mode);
	}
	ASSERT_EQ(posix_memalign((void **)&e->buf, e->psz, len), 0);
	for (p = 0; p < e->npages; p += GROUP) {
		ret = write_group(e, how == DIO ? e->dfd : e->fd, p, 0);
		if (ret < 0 && errno == EINVAL && how == DIO)
			SKIP(return, "%s: O_DIRECT write refused", e->fstype);
		ASSERT_EQ(ret, len);
	}
	ASSERT_EQ(fsync(e->fd), 0);
	if (how == REMAP) {
		snprintf(e->s->path2, sizeof(e->s->path2),
			 "%s/migrc_fschange.%d.2", e->dir, getpid());
		e->fd2 = open(e->s->path2, O_RDWR | O_CREAT | O_TRUNC, 0600);
		ASSERT_GE(e->fd2, 0) {
			TH_LOG("create %s: %s", e->s->path2, strerror(errno));
		}
		ASSERT_EQ(ftruncate(e->fd2, e->npages * e->psz), 0);
	}
	e->alt = calloc(e->npages / GROUP, sizeof(*e->alt));
	e->cowed = calloc(e->npages / GROUP, sizeof(*e->cowed));
	ASSERT_TRUE(e->alt && e->cowed);

	e->pub = calloc(e->npages, sizeof(*e->pub));
	e->quiet = calloc(e->npages, sizeof(*e->quiet));
	ASSERT_NE(e->pub, NULL);
	ASSERT_NE(e->quiet, NULL);
	/* Through a read-only descriptor: uncached 9p maps only those. */
	rfd = open(e->s->path, O_RDONLY);
	ASSERT_GE(rfd, 0);
	if (how == COW)
		e->map = mmap(NULL, e->npages * e->psz, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE, rfd, 0);
	else
		e->map = mmap(NULL, e->npages * e->psz, PROT_READ, MAP_SHARED,
			      rfd, 0);
	err = errno;
	close(rfd);
	ASSERT_NE(e->map, MAP_FAILED) {
		TH_LOG("mmap %s: %s", e->s->path, strerror(err));
	}
	e->scratch = mmap(NULL, e->psz, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->scratch, MAP_FAILED);
	ASSERT_EQ(pin_self(e->cpus[0]), 0);
	for (p = 0; p < e->npages; p += GROUP)
		publish(e, p, 0);

	/*
	 * The I/O of a change runs in unbound kworkers (the loop device's,
	 * iomap's completion).  One that runs on a reader's CPU makes the
	 * reader switch back from lazy TLB mode to its mm, whose tlb_gen the
	 * reclaim bumped, and switch_mm_irqs_off() then flushes that CPU's
	 * TLB: a missing barrier would go unseen.  Keep them on the main CPU.
	 * Best effort (no such file without CONFIG_SYSFS workqueue support).
	 */
	if (!read_str(WQ_CPUMASK, e->s->old_wq_mask,
		      sizeof(e->s->old_wq_mask))) {
		char mask[32];

		snprintf(mask, sizeof(mask), "%llx", 1ULL << e->cpus[0]);
		if (e->cpus[0] >= 64 || write_str(WQ_CPUMASK, mask))
			e->s->old_wq_mask[0] = 0;
	}
	raise_bound(_metadata, "max_age_ms", LONG_AGE_MS, e->s->old_age,
		    sizeof(e->s->old_age));
	/* Best effort: capped at a quarter of the RAM. */
	raise_bound(_metadata, "max_pending_pages", BIG_PENDING,
		    e->s->old_pending, sizeof(e->s->old_pending));

	ASSERT_EQ(posix_memalign((void **)&e->readers, 64,
				 e->nreaders * sizeof(*e->readers)), 0);
	memset(e->readers, 0, e->nreaders * sizeof(*e->readers));
	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->readers[i];

		r->e = e;
		r->cpu = e->cpus[i + 1];
		ASSERT_EQ(pthread_create(&r->thread, NULL, reader_main, r), 0);
		e->running = true;
	}
	sync_readers(_metadata, e, 2);
	for (i = 0; i < e->nreaders; i++)
		ASSERT_EQ(e->readers[i].pin_err, 0) {
			TH_LOG("cannot pin a reader to CPU %d",
			       e->readers[i].cpu);
		}
}

static void log_stale(struct __test_metadata *_metadata,
		      const struct env *e, int cpu, unsigned long n, size_t p,
		      uint64_t got, uint64_t ver)
{
	if (n)
		TH_LOG("STALE on CPU %d: %lu reads, first page %zu: %#llx, expected %#llx (v%llu)",
		       cpu, n, p, (unsigned long long)got,
		       (unsigned long long)expected(e, p, ver),
		       (unsigned long long)ver);
}

static void delta(char *buf, size_t size, long long now, long long then)
{
	if (now < 0 || then < 0)
		snprintf(buf, size, "n/a");
	else
		snprintf(buf, size, "+%lld", now - then);
}

TEST_F_TIMEOUT(fschange, no_stale_read, TEST_TIMEOUT)
{
	struct env *e = self->e;
	long long d0, x0, w0, deferred, excluded;
	char sd[24], sx[24], sw[24], buf[16];
	unsigned long stale, min_rounds;
	double seconds, now, deadline, hard;
	bool has_counters, on, safe;
	int i;

	prepare(_metadata, e, variant->how);
	if (_metadata->exit_code == KSFT_SKIP)
		return;
	has_counters = read_vmstat("migrc_deferred_reclaim") >= 0;
	on = has_counters &&
	     !read_str(MIGRC_SYSFS "enabled", buf, sizeof(buf)) &&
	     !strcmp(buf, "on");
	/* ext4 is the one disk filesystem in the safe set today. */
	safe = !strcmp(e->fstype, "ext4");
	d0 = read_vmstat("migrc_deferred_reclaim");
	x0 = read_vmstat("migrc_excluded_pages");
	w0 = read_vmstat("migrc_flush_write");

	seconds = env_double("MIGRC_TEST_SECONDS", DEFAULT_SECONDS, 0.1,
			     MAX_SECONDS);
	now = now_s();
	deadline = now + seconds;
	hard = now + GRACE_FACTOR * seconds;
	min_rounds = e->npages / GROUP;		/* every page once */
	do {
		one_round(_metadata, e, variant->how);
		now = now_s();
	} while (now < deadline || (e->rounds < min_rounds && now < hard));
	stop_readers(e);

	deferred = read_vmstat("migrc_deferred_reclaim");
	excluded = read_vmstat("migrc_excluded_pages");
	delta(sd, sizeof(sd), deferred, d0);
	delta(sx, sizeof(sx), excluded, x0);
	delta(sw, sizeof(sw), read_vmstat("migrc_flush_write"), w0);
	deferred -= d0;
	excluded -= x0;
	stale = e->main_stale;
	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->readers[i];

		stale += r->stale;
		log_stale(_metadata, e, r->cpu, r->stale, r->s_page, r->s_got,
			  r->s_ver);
	}
	log_stale(_metadata, e, e->cpus[0], e->main_stale, e->m_page,
		  e->m_got, e->m_ver);
	TH_LOG("%s: rounds=%lu reclaimed=%lu/%lu deferred_reclaim=%s excluded=%s stale=%lu",
	       variant->name, e->rounds, e->reclaimed, e->rounds * GROUP, sd,
	       sx, stale);
	TH_LOG("%s: %s on %s (%s the safe set), %d reader(s), migrc %s, flush_write=%s",
	       variant->name, e->dir, e->fstype, safe ? "in" : "outside",
	       e->nreaders, !has_counters ? "absent" : on ? "on" : "off", sw);

	ASSERT_EQ(stale, 0UL);
	ASSERT_GT(e->reclaimed, 0UL) {
		TH_LOG("MADV_PAGEOUT reclaimed no page: this run tested nothing");
	}
	if (!on)
		return;
	if (safe) {
		ASSERT_GT(deferred, 0LL) {
			TH_LOG("migrc on, %s in the safe set, but no deferral",
			       e->fstype);
		}
	} else {
		/* Its filesystem does not declare FS_MIGRC_BARRIERS. */
		ASSERT_EQ(deferred, 0LL) {
			TH_LOG("reclaim deferred the flush of pages of a file on %s",
			       e->fstype);
		}
		ASSERT_GT(excluded, 0LL) {
			TH_LOG("migrc_excluded_pages did not count the file's pages");
		}
	}
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * migrc_fschange - no stale read after a change of file data, also when
 * migration or reclaim freed the old page with its TLB flush deferred:
 * the filesystem matrix.
 *
 * With migrc, migration and reclaim that unmap a folio whose PTEs are all
 * read-only free the old page without the TLB shootdown; other CPUs keep
 * an entry for it until the deferred flush.  When the data at the address
 * then changes, the stale entry shows the old data unless a barrier
 * flushes first: buffered writes pass one under the folio lock
 * (generic_perform_write(), iomap_write_begin()), write faults one in
 * wp_page_reuse() and set_pte_range(), direct I/O and truncation one at
 * the end of invalidate_inode_pages2_range() and
 * truncate_inode_pages_range(), sub-block zeroing one on the folio it
 * zeroes.  A migration's deferral is keyed (its destination page, its
 * file), so a write elsewhere neither waits for it nor ends it; reclaim's
 * is not, any barrier ends it.  Files outside migrc's safe set (of the
 * filesystems here, all but ext4, XFS and tmpfs) are never deferred and
 * are counted in migrc_excluded_pages instead.
 *
 * The binary is run once per filesystem (MIGRC_FS_DIR on ext4, XFS,
 * btrfs, FUSE, 9p with cache=loose or tmpfs) and per boot (migrc=off,
 * migrc=on, a kernel without migrc) by harness/tests/fs-matrix.sh.  Its
 * tests are METHOD.CHANGE.no_stale_read, e.g. migrate.pwrite.no_stale_read;
 * "-f migrate" selects every change under migration, "-v pwrite" pwrite
 * under both methods (the harness adds the two up), "-r
 * reclaim.dio.no_stale_read" one test.
 *
 * Method.  A file of MIGRC_TEST_PAGES pages (default 64) is made in
 * MIGRC_FS_DIR (default /mnt/migrc-ext4) and mapped read-only MAP_SHARED
 * once.  The first word of page p holds a value derived from p and the
 * page's version (expected()).  Reader threads, pinned to every CPU but
 * the first, sweep over the pages; for each page that is not quiet they
 * load the published version (acquire) and then the word through the
 * mapping (a relaxed atomic load: one plain load each time), which must be
 * exactly the expected value.
 * They make no system calls (and take no page fault, the main thread
 * faults every page in), so only a real TLB flush drops their entries
 * (under QEMU TCG each vCPU keeps its software TLB until the guest
 * flushes it).  The main thread, on the first CPU, writes the file back
 * (reclaim does not free dirty page cache; migration gets the same clean
 * folios) and takes a group of 8 pages per round:
 *
 *   1. it completes the batched flush the previous round left in
 *      mm->tlb_flush_batched (MADV_DONTNEED of a scratch page:
 *      zap_pte_range() calls flush_tlb_batched_pending()), and waits until
 *      every reader has read the group again: each now holds a TLB entry
 *      for its pages (otherwise the walk of step 3 would do that flush,
 *      after the readers stopped reading the group, and leave nothing
 *      stale);
 *   2. it sets the group quiet and waits until every reader finished the
 *      sweep it was in: no reader touches the group now, but their entries
 *      stay;
 *   3. the method, on the group (the only mapping of its pages, so
 *      mapcount 1; neither method touches pages that another process maps
 *      too):
 *        reclaim  MADV_PAGEOUT; mincore() counts the pages that really
 *                 left the page cache (reclaimed)
 *        migrate  move_pages() of each page to the memory node it is not
 *                 on (so every round alternates); the pages whose status
 *                 is the node asked for are counted (moved);
 *   4. the change, for the variant, to version v + 1;
 *   5. after it returned, it publishes v + 1 (release), reads every page of
 *      the group itself (faulting it in on its own CPU, where MADV_PAGEOUT's
 *      lru_add_drain() will find it next time, and checking it too), and
 *      clears quiet.
 *
 * A reader that kept its entry for a page freed in step 3 reads the
 * page's old version, which is counted as a stale read.  The page is not
 * reused before the flush (it is freed tagged), so the old version is what
 * it shows.  The check is exact: no change is in flight while a page is
 * not quiet, so any other value is a failure too.  max_age_ms is raised to
 * 2 s and max_pending_pages to 128 MB so that the time and size bounds
 * cannot hide a missing barrier (readers come back to a page within
 * microseconds), and unbound workqueues are kept on the main thread's CPU,
 * as is the writer process of mmap_write, so that the change's I/O
 * workers do not flush a reader's TLB by running on its CPU
 * (switch_mm_irqs_off() catching up with the mm's tlb_gen).
 *
 * Every mapping of the file is MADV_RANDOM and the file is written a page
 * per pwrite(): XFS would otherwise cache a group in one large folio
 * (from a multi-page write or from read-around), and reclaim defers
 * order-0 folios only (without these, reclaim.pwrite on XFS deferred
 * nothing, migrc_excluded_large counted every page).  tmpfs is only
 * tested by migration: reclaim can only swap shmem out, and dirty.
 *
 * Variants (the change of step 4):
 *   dio         O_DIRECT pwrite() of the group through a second descriptor
 *               (skipped if the filesystem refuses O_DIRECT)
 *   pwrite      buffered pwrite()
 *   mmap_write  another process, forked at the start and pinned to the
 *               main thread's CPU, maps the file PROT_READ | PROT_WRITE
 *               MAP_SHARED; asked through a MAP_SHARED control block (a
 *               futex), it stores v + 1 into each page of the group (a
 *               write fault), then MADV_DONTNEEDs its range, so that the
 *               group is again mapped by the test process alone
 *   punch       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE of the group
 *   zero_range  FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE (skipped if not
 *               supported)
 *   subpunch    a hole punch of the first 512 bytes of each page of the
 *               group, less than a block: the filesystem zeroes part of a
 *               block in the page cache (ext4 __ext4_block_zero_page_range(),
 *               XFS iomap zeroing, btrfs btrfs_truncate_block(), shmem
 *               truncate_inode_partial_folio()); skipped if not supported
 *   truncate    ftruncate() to the start of the group, then back to the
 *               full size; always the last group of the file.  Readers
 *               never touch a page past EOF: the group is quiet
 *   clone       v + 1 is written to a second file, which is synced, then
 *               FICLONERANGE of the group's range from it into the file
 *               (XFS, btrfs); where the filesystem refuses, (EOPNOTSUPP,
 *               EXDEV, EINVAL, ENOTTY) copy_file_range() (ext4, tmpfs,
 *               FUSE, 9p: a copy through the page cache).  The log says
 *               which
 *   remap       mmap(MAP_FIXED) of a second file, which holds version v + 1,
 *               over the group: the file's data did not change, the
 *               address now maps other data
 *   cow         the mapping is MAP_PRIVATE and writable (its PTEs are
 *               read-only until a write), and the change is a store of
 *               v + 1 into each page: a copy-on-write fault.  The next
 *               round on the group maps the file back (holding v) first
 *   unrelated   pwrite() of the group's range of a second file in the same
 *               directory: the file's data does not change and neither
 *               does the version.  Nothing can be read stale; the test
 *               shows that an unrelated writer neither breaks the deferral
 *               nor is needed to end it
 *   dio_inflight (reclaim only) steps 3 and 4 the other way round: an
 *               O_DIRECT write of the group, held in the device for
 *               MIGRC_SLOW_WRITE_MS (scratch-fs's ext4-slow: dm-delay),
 *               during which the group is faulted in with the old data,
 *               read by the readers and reclaimed.  The file is one group,
 *               so its cache is empty when the write completes and only
 *               kiocb_invalidate_post_direct_write()'s barrier for an
 *               empty cache protects the readers (see dio_inflight());
 *               skipped unless MIGRC_SLOW_WRITE_MS is at least 50
 * For punch, zero_range, subpunch and truncate, odd versions are holes
 * and read as zero (the first word: subpunch zeroes 512 bytes), even
 * versions are data, which is never zero: a round that finds the group a
 * hole first writes version v + 1 back (while quiet), then frees the
 * pages and makes the hole, v + 2.
 *
 * What protects the readers.  Some changes unmap the group first:
 * truncation, hole punching and invalidation of whole pages
 * (unmap_mapping_range()), munmap() under remap's MAP_FIXED, the
 * copy-on-write fault that replaces a present PTE (ptep_clear_flush()).
 * Zapping a present PTE flushes the readers' TLBs whatever migrc does;
 * after reclaim the PTE is gone already, but the zap's walk calls
 * flush_tlb_batched_pending(), which flushes the mm all the same.  The
 * other changes depend on migrc's barrier alone.  Measured with every
 * write barrier skipped (debugfs migrc/skip_write_flush, the debug
 * kernel, migrc=on; ext4 four runs of 0.5 or 1 s, tmpfs two, XFS one,
 * the same in every run): F fails (stale reads in every such run, 40,000
 * to 5,700,000 of them), - passes (protected otherwise):
 *
 *                 ext4        XFS         tmpfs
 *                 rcl  mig    rcl  mig    mig
 *   dio           F    -      F    -      F
 *   pwrite        F    F      F    F      F
 *   mmap_write    F    F      F    F      F
 *   punch         -    -      -    -      -
 *   zero_range    -    -      -    -      (not supported)
 *   subpunch      F    F      -    -      F
 *   truncate      -    -      -    -      -
 *   clone         F    F      -    -      F
 *   remap         -    -      -    -      -
 *   cow           F    -      F    -      -
 *   unrelated     -    -      -    -      -
 *   dio_inflight  F           (ext4-slow only)
 *
 * dio after a migration invalidates the mapped destination, which unmaps
 * it; after reclaim nothing is cached, so nothing is unmapped (tmpfs does
 * O_DIRECT writes through the page cache: a buffered write).  XFS unmaps
 * the whole pages of a sub-block punch and of a reflink before it changes
 * them (xfs_flush_unmap_range()); ext4 zeroes the partial block in the
 * cached folio, shmem too, and ext4 and tmpfs clone by copy_file_range(),
 * a buffered write.  cow after a migration faults on the present PTE of
 * the destination, whose replacement is flushed; after reclaim the PTE is
 * none, the fault flushes nothing.  So the migration of a cow mapping is
 * deferred (its PTEs are read-only until the write) and protected
 * otherwise.  unrelated changes nothing the readers read.
 * A change that passes no barrier at all (written into the loop image
 * behind ext4's back) is read stale in every round with migrc on, and
 * never with migrc off.
 *
 * Asserts: no stale read, by a reader or by the main thread; the method
 * freed at least one page (else nothing was tested); with migrc on and the
 * file in the safe set (ext4, XFS, tmpfs), the method's deferral counter
 * increased (migrc_deferred_reclaim, or for migration
 * migrc_deferred_pages less what reclaim added to it): the deferral the
 * test is about happened, for unrelated too; with migrc on and the file
 * elsewhere, that counter did not increase and migrc_excluded_pages did.
 * With migrc off, or without migrc, only the first two.
 *
 * Environment: MIGRC_FS_DIR, MIGRC_TEST_PAGES, MIGRC_TEST_SECONDS (per
 * case, default 2; every group is changed at least once, whatever the
 * time), MIGRC_SLOW_WRITE_MS (dio_inflight).  Needs 2 CPUs, and 2
 * memory nodes for migrate; root only to raise the bounds.
 */
#include "../kselftest_harness.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/futex.h>
#include <linux/mempolicy.h>

#include "vm_util.h"
#include "migrc_util.h"

#define DEFAULT_DIR		"/mnt/migrc-ext4"
#define WQ_CPUMASK		"/sys/devices/virtual/workqueue/cpumask"
#define PROACTIVE		"/proc/sys/vm/compaction_proactiveness"
#define STAT_INTERVAL		"/proc/sys/vm/stat_interval"
#define DEFAULT_SECONDS		2.0
#define MAX_SECONDS		60.0
#define TEST_TIMEOUT		120
#define GROUP			8	/* pages changed per round */
#define DEFAULT_PAGES		64
#define MAX_PAGES		4096
#define MAX_READERS		8
#define GRACE_FACTOR		4
#define READER_WAIT_S		10.0
#define SUBPUNCH_LEN		512	/* less than any block */
#define LONG_AGE_MS		"2000"
#define BIG_PENDING		"32768"	/* pages, 128 MB */
#define MIGRC_SYSFS		"/sys/kernel/mm/migrc/"
#define MAGIC			0x6d67ULL
#define SLOW_ENV		"MIGRC_SLOW_WRITE_MS"
#define DIO_ROUNDS		3

enum method { RECLAIM, MIGRATE };

enum change {
	DIO, PWRITE, MMAP_WRITE, PUNCH, ZERO_RANGE, SUBPUNCH, TRUNCATE, CLONE,
	REMAP, COW, UNRELATED, DIO_INFLIGHT,
};

/* How the clone variant changes the file, decided by its first round. */
enum clone_how { CLONE_UNKNOWN, CLONE_IOCTL, CLONE_COPY };

struct env;

/* A cache line of its own each, for what the readers write. */
struct reader {
	alignas(64) pthread_t thread;
	int cpu;
	int pin_err;
	struct env *e;
	/* Written by the reader. */
	alignas(64) unsigned long sweeps;
	unsigned long stale;
	size_t s_page;		/* the first stale read */
	uint64_t s_got, s_ver;
};

/*
 * MMAP_WRITE: the request block shared with the writer process.  The main
 * thread fills in first and ver, then bumps seq; the writer sets done to
 * seq once its range is unmapped again.  Both wait on a futex, not in a
 * spin: they share the main CPU.
 */
struct ctl {
	int ready;		/* the writer mapped the file, or failed to */
	int pin_err, map_err;	/* how it failed to, errno values */
	int seq;
	int done;
	int err;		/* the writer's first failure, an errno */
	size_t first;
	uint64_t ver;
};

/* What the parent undoes once the test process is gone. */
struct saved {
	char path[300];				/* the test file */
	char path2[300];			/* the second file */
	char old_age[32], old_pending[32];	/* "": not changed */
	char old_wq_mask[64];			/* "": not changed */
	char old_proactive[16], old_stat[16];	/* DIO_INFLIGHT */
};

struct env {
	struct saved *s;
	enum method method;
	enum change how;
	int fd, dfd;
	int fd2;		/* REMAP, CLONE, UNRELATED: the second file */
	double slow_s;		/* DIO_INFLIGHT: how long the device holds writes */
	bool migrc_on;		/* migrc present and on */
	int rfd, rfd2;		/* read-only: what the readers' mapping maps */
	bool *alt;		/* REMAP: the group maps the second file */
	bool *cowed;		/* COW: the group holds anonymous copies */
	enum clone_how clone;
	struct ctl *ctl;	/* MMAP_WRITE */
	struct dio_job *dio;	/* DIO_INFLIGHT */
	pid_t writer;		/* MMAP_WRITE: the writer process, or 0 */
	int cpus[MAX_READERS + 1];
	int ncpus, nreaders;
	int nodes[2];		/* MIGRATE: the two nodes it moves between */
	size_t psz, npages;
	bool holes;		/* odd versions are holes */
	char dir[256], fstype[32];
	const uint64_t *map;
	char *scratch;		/* an anonymous page to zap */
	uint64_t *buf;		/* GROUP pages, aligned for O_DIRECT */
	uint64_t *pub;		/* published version of each page */
	int *quiet;		/* readers leave the page alone */
	struct reader *readers;
	bool running;
	/* Written by the main thread while the readers run. */
	alignas(64) int stop;
	unsigned long rounds, main_stale;
	unsigned long freed;	/* pages reclaimed or moved in step 3 */
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

static void *group_addr(const struct env *e, size_t first)
{
	return (void *)(e->map + first * (e->psz / sizeof(uint64_t)));
}

/*
 * mmap() of the file, without read-around: a fault then reads one page
 * into an order-0 folio, which reclaim can defer (see the top).
 */
static void *map_file(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off)
{
	void *p = mmap(addr, len, prot, flags, fd, off);

	if (p != MAP_FAILED && madvise(p, len, MADV_RANDOM)) {
		int err = errno;

		munmap(p, len);
		errno = err;
		return MAP_FAILED;
	}
	return p;
}

static long futex(int *uaddr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
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
			got = __atomic_load_n(&e->map[p * words],
					      __ATOMIC_RELAXED);
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
/* MMAP_WRITE's writer process */

/*
 * Runs in the child until it is killed; never returns.  It maps the file
 * after the fork, so it holds no PTE of it but the ones it writes through,
 * and drops those before it answers: MADV_PAGEOUT and move_pages() leave
 * alone a page that another process maps too.
 */
static void writer_main(struct env *e, pid_t parent)
{
	const size_t words = e->psz / sizeof(uint64_t);
	struct ctl *c = e->ctl;
	uint64_t *w;
	int seq = 0, err;
	size_t i;

	/* Dies with the test process, also when that one is killed. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	/* Where the main thread runs: never on a reader's CPU. */
	c->pin_err = -pin_self(e->cpus[0]);
	w = map_file(NULL, e->npages * e->psz, PROT_READ | PROT_WRITE,
		     MAP_SHARED, e->fd, 0);
	c->map_err = w == MAP_FAILED ? errno : 0;
	err = c->pin_err ?: c->map_err;
	c->err = err;
	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	futex(&c->ready, FUTEX_WAKE, 1, NULL);
	for (;;) {
		while (__atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) == seq)
			futex(&c->seq, FUTEX_WAIT, seq, NULL);
		seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (!err) {
			for (i = 0; i < GROUP; i++)
				__atomic_store_n(&w[(c->first + i) * words],
						 expected(e, c->first + i, c->ver),
						 __ATOMIC_RELAXED);
			if (madvise(w + c->first * words,
				    GROUP * e->psz, MADV_DONTNEED))
				err = errno;
		}
		if (err && !c->err)
			c->err = err;
		__atomic_store_n(&c->done, seq, __ATOMIC_RELEASE);
		futex(&c->done, FUTEX_WAKE, 1, NULL);
	}
}

/* Fork the writer process, wait until it mapped the file; 0 or -errno. */
static int start_writer(struct env *e)
{
	struct timespec ts = { .tv_nsec = 100 * 1000 * 1000 };
	double deadline = now_s() + READER_WAIT_S;
	pid_t parent = getpid();

	e->ctl = mmap(NULL, sizeof(*e->ctl), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (e->ctl == MAP_FAILED) {
		e->ctl = NULL;
		return -errno;
	}
	memset(e->ctl, 0, sizeof(*e->ctl));
	e->writer = fork();
	if (e->writer < 0) {
		e->writer = 0;
		return -errno;
	}
	if (!e->writer)
		writer_main(e, parent);
	while (!__atomic_load_n(&e->ctl->ready, __ATOMIC_ACQUIRE)) {
		if (now_s() > deadline)
			return -ETIMEDOUT;
		futex(&e->ctl->ready, FUTEX_WAIT, 0, &ts);
	}
	return -e->ctl->err;
}

/* One request to the writer; 0 or -errno. */
static int writer_request(struct env *e, size_t first, uint64_t ver)
{
	struct timespec ts = { .tv_nsec = 100 * 1000 * 1000 };
	double deadline = now_s() + READER_WAIT_S;
	struct ctl *c = e->ctl;
	int seq, done;

	c->first = first;
	c->ver = ver;
	seq = __atomic_add_fetch(&c->seq, 1, __ATOMIC_RELEASE);
	futex(&c->seq, FUTEX_WAKE, 1, NULL);
	while ((done = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) != seq) {
		if (now_s() > deadline)
			return -ETIMEDOUT;
		futex(&c->done, FUTEX_WAIT, done, &ts);
	}
	return -c->err;
}

/* The writer waits for nothing but requests: kill it and reap it. */
static void stop_writer(struct env *e)
{
	if (!e->writer)
		return;
	kill(e->writer, SIGKILL);
	waitpid(e->writer, NULL, 0);
	e->writer = 0;
}

/* ---------------------------------------------------------------------- */
/* The main thread's steps */

/*
 * Write version @ver of the group at @first through @fd, a page per
 * pwrite() (see map_file()); the number of bytes written, or -1.
 */
static void fill_group(struct env *e, size_t first, uint64_t ver)
{
	size_t i, words = e->psz / sizeof(uint64_t);

	memset(e->buf, 0, GROUP * e->psz);
	for (i = 0; i < GROUP; i++)
		e->buf[i * words] = expected(e, first + i, ver);
}

static ssize_t write_group(struct env *e, int fd, size_t first, uint64_t ver)
{
	size_t i, words = e->psz / sizeof(uint64_t);
	ssize_t ret, done = 0;

	fill_group(e, first, ver);
	for (i = 0; i < GROUP; i++) {
		ret = pwrite(fd, e->buf + i * words, e->psz,
			     (first + i) * e->psz);
		if (ret < 0)
			return ret;
		done += ret;
		if ((size_t)ret < e->psz)
			break;
	}
	return done;
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
		got = __atomic_load_n(&e->map[p * words], __ATOMIC_RELAXED);
		if (got != expected(e, p, ver) && !e->main_stale++) {
			e->m_page = p;
			e->m_got = got;
			e->m_ver = ver;
		}
	}
}

/* Step 3, reclaim: page the group out; how many pages left the cache. */
static void reclaim_group(struct __test_metadata *_metadata, struct env *e,
			  size_t first)
{
	void *addr = group_addr(e, first);
	unsigned char vec[GROUP];
	size_t p;

	ASSERT_EQ(madvise(addr, GROUP * e->psz, MADV_PAGEOUT), 0) {
		TH_LOG("MADV_PAGEOUT: %s", strerror(errno));
	}
	ASSERT_EQ(mincore(addr, GROUP * e->psz, vec), 0);
	for (p = 0; p < GROUP; p++)
		e->freed += !(vec[p] & 1);
}

/* Step 3, migrate: each page to the node it is not on. */
static void move_group(struct __test_metadata *_metadata, struct env *e,
		       size_t first)
{
	int where[GROUP], to[GROUP], status[GROUP];
	char *addr = group_addr(e, first);
	void *pages[GROUP];
	long ret;
	size_t p;

	for (p = 0; p < GROUP; p++)
		pages[p] = addr + p * e->psz;
	ASSERT_EQ(move_pages_sys(GROUP, pages, NULL, where, 0), 0) {
		TH_LOG("move_pages (query): %s", strerror(errno));
	}
	for (p = 0; p < GROUP; p++) {
		to[p] = where[p] == e->nodes[0] ? e->nodes[1] : e->nodes[0];
		status[p] = INT_MIN;
	}
	/* Not MPOL_MF_MOVE_ALL: the pages are this process's alone. */
	ret = move_pages_sys(GROUP, pages, to, status, MPOL_MF_MOVE);
	ASSERT_GE(ret, 0) {
		TH_LOG("move_pages: %s", strerror(errno));
	}
	for (p = 0; p < GROUP; p++)
		e->freed += status[p] == to[p];
}

/* REMAP: map the file the group does not map now over it. */
static int remap_group(struct env *e, size_t first)
{
	off_t off = first * e->psz, len = GROUP * e->psz;
	bool *alt = &e->alt[first / GROUP];
	void *p;

	p = map_file(group_addr(e, first), len, PROT_READ,
		     MAP_SHARED | MAP_FIXED, *alt ? e->rfd : e->rfd2, off);
	if (p == MAP_FAILED)
		return -errno;
	*alt = !*alt;
	return 0;
}

/* COW: write version @ver through the private mapping. */
static int cow_group(struct env *e, size_t first, uint64_t ver)
{
	uint64_t *w = group_addr(e, first);
	size_t i, words = e->psz / sizeof(uint64_t);

	for (i = 0; i < GROUP; i++)
		__atomic_store_n(&w[i * words], expected(e, first + i, ver),
				 __ATOMIC_RELAXED);
	e->cowed[first / GROUP] = true;
	return 0;
}

/* SUBPUNCH: a hole in the first bytes of each page, less than a block. */
static int subpunch_group(struct env *e, size_t first)
{
	int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	size_t p;

	for (p = first; p < first + GROUP; p++)
		if (fallocate(e->fd, mode, p * e->psz, SUBPUNCH_LEN))
			return -errno;
	return 0;
}

/* TRUNCATE: the group past EOF, then back as a hole. */
static int truncate_group(struct env *e, size_t first)
{
	if (ftruncate(e->fd, first * e->psz) ||
	    ftruncate(e->fd, e->npages * e->psz))
		return -errno;
	return 0;
}

/*
 * CLONE: the group's range of the second file into the file, by reflink
 * where the filesystem has it, else by copy_file_range().
 */
static int clone_group(struct env *e, size_t first)
{
	loff_t in = first * e->psz, out = in;
	size_t left = GROUP * e->psz;
	struct file_clone_range r = {
		.src_fd = e->fd2,
		.src_offset = in,
		.src_length = left,
		.dest_offset = out,
	};
	ssize_t n;

	if (e->clone != CLONE_COPY) {
		if (!ioctl(e->fd, FICLONERANGE, &r)) {
			e->clone = CLONE_IOCTL;
			return 0;
		}
		if (e->clone == CLONE_IOCTL ||
		    (errno != EOPNOTSUPP && errno != EXDEV &&
		     errno != EINVAL && errno != ENOTTY))
			return -errno;
		e->clone = CLONE_COPY;
	}
	while (left) {
		n = copy_file_range(e->fd2, &in, e->fd, &out, left, 0);
		if (n <= 0)
			return n ? -errno : -EIO;
		left -= n;
	}
	return 0;
}

/* The variant's change of the group at @first to version @ver. */
static int change(struct env *e, size_t first, uint64_t ver)
{
	off_t off = first * e->psz, len = GROUP * e->psz;
	int keep = FALLOC_FL_KEEP_SIZE;

	errno = EIO;		/* what a short write means */
	switch (e->how) {
	case DIO:
		return write_group(e, e->dfd, first, ver) == len ? 0 : -errno;
	case PWRITE:
		return write_group(e, e->fd, first, ver) == len ? 0 : -errno;
	case MMAP_WRITE:
		return writer_request(e, first, ver);
	case PUNCH:
		return fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | keep, off, len) ?
		       -errno : 0;
	case ZERO_RANGE:
		return fallocate(e->fd, FALLOC_FL_ZERO_RANGE | keep, off, len) ?
		       -errno : 0;
	case SUBPUNCH:
		return subpunch_group(e, first);
	case TRUNCATE:
		return truncate_group(e, first);
	case CLONE:
		return clone_group(e, first);
	case REMAP:
		return remap_group(e, first);
	case COW:
		return cow_group(e, first, ver);
	case UNRELATED:
		/* Not the mapped file: @ver is the version it holds. */
		return write_group(e, e->fd2, first, ver) == len ? 0 : -errno;
	case DIO_INFLIGHT:
		break;		/* dio_inflight() */
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

/*
 * DIO_INFLIGHT: the O_DIRECT writes, on a thread of their own that lives
 * as long as the readers.  Not one per write: a thread that exits frees
 * its stack with MADV_DONTNEED (glibc), whose zap completes the mm's
 * batched flush (flush_tlb_batched_pending()), reclaim's deferred one
 * included, and the readers' stale entries would be gone before they
 * look.
 */
struct dio_job {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool started;
	int seq;		/* asked for; -1: exit */
	int done;		/* the last seq completed */
	size_t first;
	ssize_t ret;
	int err;
};

static void *dio_main(void *arg)
{
	struct env *e = arg;
	struct dio_job *j = e->dio;
	int seq = 0;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		while (j->seq == seq)
			pthread_cond_wait(&j->cond, &j->lock);
		seq = j->seq;
		if (seq < 0)
			break;
		pthread_mutex_unlock(&j->lock);
		/* One write of the group: one bio, held once by the device. */
		errno = EIO;	/* what a short write means */
		j->ret = pwrite(e->dfd, e->buf, GROUP * e->psz,
				j->first * e->psz);
		j->err = errno;
		pthread_mutex_lock(&j->lock);
		j->done = seq;
		pthread_cond_broadcast(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* On this CPU, as this thread is: the readers' CPUs stay theirs. */
static int start_dio(struct env *e)
{
	struct dio_job *j = calloc(1, sizeof(*j));
	int err;

	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	e->dio = j;
	err = pthread_create(&j->thread, NULL, dio_main, e);
	j->started = !err;
	return -err;
}

static void stop_dio(struct env *e)
{
	struct dio_job *j = e->dio;

	if (!j || !j->started)
		return;
	pthread_mutex_lock(&j->lock);
	j->seq = -1;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->thread, NULL);
	j->started = false;
}

static bool dio_done(struct dio_job *j, int seq)
{
	bool done;

	pthread_mutex_lock(&j->lock);
	done = j->done == seq;
	pthread_mutex_unlock(&j->lock);
	return done;
}

/*
 * DIO_INFLIGHT, steps 3 and 4: reclaim while an O_DIRECT write of @ver is
 * in flight.  The write invalidates the group before it is issued (which
 * unmaps it, flushing the readers' entries whatever migrc does), then the
 * device holds it for e->slow_s.  Meanwhile the group is faulted in again
 * with the old data, the readers take entries for it, and reclaim frees
 * it with the flush deferred: the file is this group alone, so its cache
 * is empty when the write completes, invalidation after the write has
 * nothing to unmap, and only the barrier for an empty cache
 * (kiocb_invalidate_post_direct_write()) ends the stale entries.
 */
static void dio_inflight(struct __test_metadata *_metadata, struct env *e,
			 size_t first, uint64_t ver)
{
	struct dio_job *j = e->dio;
	double t0 = now_s(), late;
	long long deferred;
	unsigned long freed;
	int seq;
	bool held;

	fill_group(e, first, ver);
	pthread_mutex_lock(&j->lock);
	seq = ++j->seq;
	j->first = first;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	usleep(e->slow_s * 1e6 / 5);
	held = !dio_done(j, seq);
	if (held) {
		/* The old data back. */
		publish(e, first, ver - 1);
		/*
		 * The readers' entries, then reclaim, as late as the device
		 * allows: from their last read to the reclaim and on to
		 * their next read, any kernel thread that runs on a reader's
		 * CPU flushes its TLB (switching back from lazy TLB mode),
		 * and the readers would not see a missing barrier.
		 */
		late = t0 + e->slow_s * 0.9 - now_s();
		if (late > 0)
			usleep(late * 1e6);
		set_quiet(e, first, 0);
		sync_readers(_metadata, e, 2);
		set_quiet(e, first, 1);
		sync_readers(_metadata, e, 1);
		freed = e->freed;
		deferred = read_vmstat("migrc_deferred_reclaim");
		reclaim_group(_metadata, e, first);
		held = !dio_done(j, seq);
		/* The whole file: its cache is empty when the write ends. */
		ASSERT_EQ(e->freed - freed, (unsigned long)GROUP) {
			TH_LOG("reclaim freed %lu of the %d pages: the cache is not empty",
			       e->freed - freed, GROUP);
		}
		/* Freed by reclaim, not dropped by the write's invalidation. */
		if (e->migrc_on)
			ASSERT_EQ(read_vmstat("migrc_deferred_reclaim") - deferred,
				  GROUP);
	}
	pthread_mutex_lock(&j->lock);
	while (j->done != seq)
		pthread_cond_wait(&j->cond, &j->lock);
	pthread_mutex_unlock(&j->lock);
	ASSERT_EQ(j->ret, (ssize_t)(GROUP * e->psz)) {
		TH_LOG("O_DIRECT write of pages %zu-%zu: %s", first,
		       first + GROUP - 1, strerror(j->err));
	}
	ASSERT_TRUE(held) {
		TH_LOG("the write completed before the reclaim: raise %s (%.0f)",
		       SLOW_ENV, e->slow_s * 1000);
	}
}

/* One round, on the next group: the steps of the comment at the top. */
static void one_round(struct __test_metadata *_metadata, struct env *e)
{
	size_t first = e->rounds % (e->npages / GROUP) * GROUP;
	const ssize_t len = GROUP * e->psz;
	void *addr;
	uint64_t ver;
	int ret;

	/* Only the last group can go past EOF and come back alone. */
	if (e->how == TRUNCATE)
		first = e->npages - GROUP;
	addr = group_addr(e, first);
	ver = e->pub[first];
	if (e->holes && (ver & 1)) {
		/* A hole: data back first, out of the readers' sight. */
		set_quiet(e, first, 1);
		sync_readers(_metadata, e, 1);
		ASSERT_EQ(write_group(e, e->fd, first, ++ver), len);
		publish(e, first, ver);
		set_quiet(e, first, 0);
	}
	if (e->how == REMAP) {
		/* The next version into the file not mapped there. */
		int other = e->alt[first / GROUP] ? e->fd : e->fd2;

		ASSERT_EQ(write_group(e, other, first, ver + 1), len);
		ASSERT_EQ(fdatasync(other), 0);
	}
	if (e->how == CLONE) {
		/* The next version, where the clone takes it from. */
		ASSERT_EQ(write_group(e, e->fd2, first, ver + 1), len);
		ASSERT_EQ(fdatasync(e->fd2), 0);
	}
	if (e->how == COW && e->cowed[first / GROUP]) {
		/*
		 * The file under the group again, holding the version the
		 * anonymous copies hold: readers see no change.
		 */
		ASSERT_EQ(write_group(e, e->fd, first, ver), len);
		ASSERT_NE(map_file(addr, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_FIXED, e->fd,
				   first * e->psz), MAP_FAILED);
		e->cowed[first / GROUP] = false;
	}
	/* Clean: see the top. */
	ASSERT_EQ(fdatasync(e->fd), 0);

	/* 1. Complete the last round's batched flush; readers re-read. */
	e->scratch[0] = 1;
	ASSERT_EQ(madvise(e->scratch, e->psz, MADV_DONTNEED), 0);
	sync_readers(_metadata, e, 2);
	/* 2. Quiet: nobody reads the group now, the entries stay. */
	set_quiet(e, first, 1);
	sync_readers(_metadata, e, 1);
	if (e->how == DIO_INFLIGHT) {
		/* 3 and 4 at once. */
		dio_inflight(_metadata, e, first, ++ver);
	} else {
		/* 3. Reclaim or migrate. */
		if (e->method == RECLAIM)
			reclaim_group(_metadata, e, first);
		else
			move_group(_metadata, e, first);
		/* 4. The change; an unrelated write changes no version. */
		if (e->how != UNRELATED)
			ver++;
		ret = change(e, first, ver);
		ASSERT_EQ(ret, 0) {
			TH_LOG("change of pages %zu-%zu: %s", first,
			       first + GROUP - 1, strerror(-ret));
		}
	}
	/* 5. Publish, fault in, let the readers back. */
	publish(e, first, ver);
	set_quiet(e, first, 0);
	e->rounds++;
}

/* ---------------------------------------------------------------------- */
/* Setup and teardown, shared by the two fixtures */

/* Cheap checks only: whatever is created is created by the test. */
static void setup(struct __test_metadata *_metadata, struct env **ep,
		  struct saved *s, enum method m, enum change how)
{
	const char *dir = getenv("MIGRC_FS_DIR");
	int nodes[64], nnodes;
	struct env *e;
	cpu_set_t set;
	int i;

	ASSERT_EQ(posix_memalign((void **)ep, 64, sizeof(*e)), 0);
	e = *ep;
	memset(e, 0, sizeof(*e));
	e->s = s;
	e->method = m;
	e->how = how;
	e->fd = -1;
	e->dfd = -1;
	e->fd2 = -1;
	e->rfd = -1;
	e->rfd2 = -1;
	e->psz = psize();
	e->npages = env_double("MIGRC_TEST_PAGES", DEFAULT_PAGES, 2 * GROUP,
			       MAX_PAGES);
	e->npages -= e->npages % GROUP;
	if (how == DIO_INFLIGHT) {
		/* One group: reclaim empties the file's cache. */
		e->npages = GROUP;
		e->slow_s = env_double(SLOW_ENV, 0, 0, 60000) / 1000;
		if (e->slow_s < 0.05)
			SKIP(return, "needs %s >= 50 (scratch-fs ext4-slow)",
			     SLOW_ENV);
	}
	e->holes = how == PUNCH || how == ZERO_RANGE || how == SUBPUNCH ||
		   how == TRUNCATE;
	snprintf(e->dir, sizeof(e->dir), "%s", dir && *dir ? dir : DEFAULT_DIR);

	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (i = 0; i < CPU_SETSIZE && e->ncpus < MAX_READERS + 1; i++)
		if (CPU_ISSET(i, &set))
			e->cpus[e->ncpus++] = i;
	if (e->ncpus < 2)
		SKIP(return, "need at least 2 CPUs");
	e->nreaders = e->ncpus - 1;
	if (m == MIGRATE) {
		nnodes = memory_nodes(nodes, 64);
		if (nnodes < 2)
			SKIP(return, "need at least 2 memory nodes, found %d",
			     nnodes);
		e->nodes[0] = nodes[0];
		e->nodes[1] = nodes[1];
	}
	/*
	 * Keep NUMA balancing away from the test's mappings (an explicit
	 * task policy lacks MPOL_F_MOF): its scan would write-protect the
	 * readers' PTEs and flush their TLBs, and move pages on its own.
	 * Allocation stays local, as by default.
	 */
	ASSERT_EQ(syscall(SYS_set_mempolicy, MPOL_LOCAL, NULL, 0), 0) {
		TH_LOG("set_mempolicy(MPOL_LOCAL): %s", strerror(errno));
	}
	if (access(e->dir, W_OK))
		SKIP(return, "%s: %s (set MIGRC_FS_DIR to a writable directory)",
		     e->dir, strerror(errno));
	migrc_fs_type(e->dir, e->fstype, sizeof(e->fstype));
	if (m == RECLAIM && !strcmp(e->fstype, "tmpfs"))
		SKIP(return, "%s is on tmpfs, which reclaim can only swap out",
		     e->dir);
}

/*
 * In the parent, once the test process is gone, also after a failed
 * ASSERT (which skips FIXTURE_TEARDOWN in this harness): the bounds are
 * global and the files stay; threads, mappings and descriptors died with
 * the test process, and so did the writer process (PR_SET_PDEATHSIG),
 * which the test process reaps itself when it ends normally.
 */
static void teardown_parent(struct saved *s)
{
	if (s->old_wq_mask[0])
		write_str(WQ_CPUMASK, s->old_wq_mask);
	if (s->old_proactive[0])
		write_str(PROACTIVE, s->old_proactive);
	if (s->old_stat[0])
		write_str(STAT_INTERVAL, s->old_stat);
	if (s->old_age[0])
		write_str(MIGRC_SYSFS "max_age_ms", s->old_age);
	if (s->old_pending[0])
		write_str(MIGRC_SYSFS "max_pending_pages", s->old_pending);
	if (s->path[0])
		unlink(s->path);
	if (s->path2[0])
		unlink(s->path2);
}

/* Set @path to @val, @old keeping what it was; "" if it cannot be set. */
static void set_knob(const char *path, const char *val, char *old, size_t size)
{
	if (read_str(path, old, size) || write_str(path, val))
		old[0] = 0;
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

/* Skip the run if the filesystem lacks what the change needs. */
static void probe(struct __test_metadata *_metadata, struct env *e)
{
	int mode = FALLOC_FL_KEEP_SIZE;
	off_t len = e->psz;

	switch (e->how) {
	case PUNCH:
		mode |= FALLOC_FL_PUNCH_HOLE;
		break;
	case SUBPUNCH:
		mode |= FALLOC_FL_PUNCH_HOLE;
		len = SUBPUNCH_LEN;
		break;
	case ZERO_RANGE:
		mode |= FALLOC_FL_ZERO_RANGE;
		break;
	default:
		return;
	}
	if (fallocate(e->fd, mode, 0, len) && errno == EOPNOTSUPP)
		SKIP(return, "%s: fallocate() mode %#x of %lld bytes not supported",
		     e->fstype, mode, (long long)len);
}

/* Create the files, map, fault in, start the readers (and the writer). */
static void prepare(struct __test_metadata *_metadata, struct env *e)
{
	const ssize_t len = GROUP * e->psz;
	enum change how = e->how;
	size_t p;
	ssize_t ret;
	int i, err = 0;

	/*
	 * DIO_INFLIGHT needs the readers' CPUs free of kernel threads from
	 * the readers' last read before the reclaim to their next read after
	 * the held write, a tenth of the hold: proactive compaction (every
	 * 500 ms, kcompactd of the readers' node) and vmstat's per-CPU work
	 * would run there, and switching back to a reader flushes its TLB
	 * like the kworkers below.  First thing: a vmstat work armed with
	 * the old interval still runs once, during the setup's writes.
	 * Best effort, as below.
	 */
	if (how == DIO_INFLIGHT) {
		set_knob(PROACTIVE, "0", e->s->old_proactive,
			 sizeof(e->s->old_proactive));
		set_knob(STAT_INTERVAL, "3600", e->s->old_stat,
			 sizeof(e->s->old_stat));
	}
	/* Not unlinked at once: 9p cannot resize an unlinked file. */
	snprintf(e->s->path, sizeof(e->s->path), "%s/migrc_fschange.%d",
		 e->dir, getpid());
	e->fd = open(e->s->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_GE(e->fd, 0) {
		TH_LOG("create %s: %s", e->s->path, strerror(errno));
	}
	if (how == DIO || how == DIO_INFLIGHT) {
		e->dfd = open(e->s->path, O_RDWR | O_DIRECT);
		err = errno;
		if (e->dfd < 0 && err == EINVAL)
			SKIP(return, "%s: O_DIRECT not supported", e->fstype);
		ASSERT_GE(e->dfd, 0);
	}
	ASSERT_EQ(ftruncate(e->fd, e->npages * e->psz), 0) {
		TH_LOG("ftruncate %s: %s", e->s->path, strerror(errno));
	}
	probe(_metadata, e);
	if (_metadata->exit_code)
		return;
	ASSERT_EQ(posix_memalign((void **)&e->buf, e->psz, len), 0);
	for (p = 0; p < e->npages; p += GROUP) {
		/* DIO_INFLIGHT: buffered, one held writeback, not 8 writes. */
		ret = write_group(e, how == DIO ? e->dfd : e->fd, p, 0);
		if (ret < 0 && errno == EINVAL && how == DIO)
			SKIP(return, "%s: O_DIRECT write refused", e->fstype);
		ASSERT_EQ(ret, len);
	}
	ASSERT_EQ(fsync(e->fd), 0);
	if (how == REMAP || how == CLONE || how == UNRELATED) {
		snprintf(e->s->path2, sizeof(e->s->path2),
			 "%s/migrc_fschange.%d.2", e->dir, getpid());
		e->fd2 = open(e->s->path2, O_RDWR | O_CREAT | O_TRUNC, 0600);
		ASSERT_GE(e->fd2, 0) {
			TH_LOG("create %s: %s", e->s->path2, strerror(errno));
		}
		ASSERT_EQ(ftruncate(e->fd2, e->npages * e->psz), 0);
		e->rfd2 = open(e->s->path2, O_RDONLY);
		ASSERT_GE(e->rfd2, 0);
	}
	e->alt = calloc(e->npages / GROUP, sizeof(*e->alt));
	e->cowed = calloc(e->npages / GROUP, sizeof(*e->cowed));
	ASSERT_TRUE(e->alt && e->cowed);

	e->pub = calloc(e->npages, sizeof(*e->pub));
	e->quiet = calloc(e->npages, sizeof(*e->quiet));
	ASSERT_NE(e->pub, NULL);
	ASSERT_NE(e->quiet, NULL);
	/* Before the readers, before the file is mapped here. */
	if (how == MMAP_WRITE) {
		ret = start_writer(e);
		/* Uncached 9p refuses shared writable mappings. */
		if (e->ctl && (e->ctl->map_err == EINVAL ||
			       e->ctl->map_err == ENODEV)) {
			stop_writer(e);
			SKIP(return, "%s: no shared writable mapping: %s",
			     e->fstype, strerror(e->ctl->map_err));
		}
		ASSERT_EQ(ret, 0) {
			TH_LOG("cannot start the writer: %s", strerror(-ret));
		}
	}
	/* Through a read-only descriptor: uncached 9p maps only those. */
	e->rfd = open(e->s->path, O_RDONLY);
	ASSERT_GE(e->rfd, 0);
	if (how == COW)
		e->map = map_file(NULL, e->npages * e->psz,
				  PROT_READ | PROT_WRITE, MAP_PRIVATE, e->rfd,
				  0);
	else
		e->map = map_file(NULL, e->npages * e->psz, PROT_READ,
				  MAP_SHARED, e->rfd, 0);
	err = errno;
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
	if (how == DIO_INFLIGHT) {
		ret = start_dio(e);
		ASSERT_EQ(ret, 0) {
			TH_LOG("cannot start the O_DIRECT thread: %s",
			       strerror(-ret));
		}
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

/* ext4 and XFS declare FS_MIGRC_BARRIERS; tmpfs is shmem. */
static bool in_safe_set(const char *fstype)
{
	return !strcmp(fstype, "ext4") || !strcmp(fstype, "xfs") ||
	       !strcmp(fstype, "tmpfs");
}

static const char *clone_name(enum clone_how c)
{
	return c == CLONE_IOCTL ? "FICLONERANGE" :
	       c == CLONE_COPY ? "copy_file_range()" : "none";
}

/* The test of both fixtures. */
static void no_stale_read(struct __test_metadata *_metadata, struct env *e,
			  const char *name)
{
	const char *mname = e->method == RECLAIM ? "reclaim" : "migrate";
	long long d0, r0, x0, w0, deferred, reclaimed, excluded;
	char sd[24], sr[24], sx[24], sw[24], buf[16];
	double seconds, start, now, deadline, hard;
	unsigned long stale, min_rounds;
	bool has_counters, on, safe;
	int i;

	prepare(_metadata, e);
	if (_metadata->exit_code)
		return;
	has_counters = read_vmstat("migrc_deferred_reclaim") >= 0;
	on = has_counters &&
	     !read_str(MIGRC_SYSFS "enabled", buf, sizeof(buf)) &&
	     !strcmp(buf, "on");
	safe = in_safe_set(e->fstype);
	e->migrc_on = on;
	d0 = read_vmstat("migrc_deferred_pages");
	r0 = read_vmstat("migrc_deferred_reclaim");
	x0 = read_vmstat("migrc_excluded_pages");
	w0 = read_vmstat("migrc_flush_write");

	seconds = env_double("MIGRC_TEST_SECONDS", DEFAULT_SECONDS, 0.1,
			     MAX_SECONDS);
	start = now_s();
	deadline = start + seconds;
	hard = start + GRACE_FACTOR * seconds;
	/* Every group once; truncate changes only the last one. */
	min_rounds = e->how == TRUNCATE ? 1 : e->npages / GROUP;
	/*
	 * One group, one held write per round: a few rounds, each can catch
	 * a missing barrier, whatever the time per case.
	 */
	if (e->how == DIO_INFLIGHT) {
		min_rounds = DIO_ROUNDS;
		hard += DIO_ROUNDS * 2 * e->slow_s;
	}
	do {
		one_round(_metadata, e);
		now = now_s();
	} while (now < deadline || (e->rounds < min_rounds && now < hard));
	stop_readers(e);
	stop_writer(e);
	stop_dio(e);

	deferred = read_vmstat("migrc_deferred_pages");
	reclaimed = read_vmstat("migrc_deferred_reclaim");
	excluded = read_vmstat("migrc_excluded_pages");
	delta(sd, sizeof(sd), deferred, d0);
	delta(sr, sizeof(sr), reclaimed, r0);
	delta(sx, sizeof(sx), excluded, x0);
	delta(sw, sizeof(sw), read_vmstat("migrc_flush_write"), w0);
	/* Each method's own: reclaim counts in both counters. */
	reclaimed -= r0;
	deferred = e->method == RECLAIM ? reclaimed : deferred - d0 - reclaimed;
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
	TH_LOG("%s.%s: %.2f s, rounds=%lu %s=%lu/%lu stale=%lu",
	       mname, name, now - start, e->rounds,
	       e->method == RECLAIM ? "reclaimed" : "moved", e->freed,
	       e->rounds * GROUP, stale);
	TH_LOG("%s.%s: deferred_pages=%s deferred_reclaim=%s excluded=%s flush_write=%s",
	       mname, name, sd, sr, sx, sw);
	TH_LOG("%s.%s: %s on %s (%s the safe set), %d reader(s), migrc %s%s%s",
	       mname, name, e->dir, e->fstype, safe ? "in" : "outside",
	       e->nreaders, !has_counters ? "absent" : on ? "on" : "off",
	       e->how == CLONE ? ", clone by " : "",
	       e->how == CLONE ? clone_name(e->clone) : "");

	ASSERT_EQ(stale, 0UL);
	ASSERT_GT(e->freed, 0UL) {
		TH_LOG("%s freed no page: this run tested nothing",
		       e->method == RECLAIM ? "MADV_PAGEOUT" : "move_pages()");
	}
	if (!on)
		return;
	if (safe) {
		ASSERT_GT(deferred, 0LL) {
			TH_LOG("migrc on, %s in the safe set, but %s deferred nothing",
			       e->fstype, mname);
		}
	} else {
		/* Its filesystem does not declare FS_MIGRC_BARRIERS. */
		ASSERT_EQ(deferred, 0LL) {
			TH_LOG("%s deferred the flush of pages of a file on %s",
			       mname, e->fstype);
		}
		ASSERT_GT(excluded, 0LL) {
			TH_LOG("migrc_excluded_pages did not count the file's pages");
		}
	}
}

/* ---------------------------------------------------------------------- */
/* The fixtures: the method of step 3 */

FIXTURE(reclaim) {
	struct env *e;		/* the test process's own */
	struct saved s;		/* shared with the parent */
};

FIXTURE(migrate) {
	struct env *e;
	struct saved s;
};

FIXTURE_VARIANT(reclaim) {
	enum change how;
	const char *name;
};

FIXTURE_VARIANT(migrate) {
	enum change how;
	const char *name;
};

/* Every change under both methods. */
FIXTURE_VARIANT_ADD(reclaim, dio) {
	.how = DIO,
	.name = "dio",
};

FIXTURE_VARIANT_ADD(reclaim, pwrite) {
	.how = PWRITE,
	.name = "pwrite",
};

FIXTURE_VARIANT_ADD(reclaim, mmap_write) {
	.how = MMAP_WRITE,
	.name = "mmap_write",
};

FIXTURE_VARIANT_ADD(reclaim, punch) {
	.how = PUNCH,
	.name = "punch",
};

FIXTURE_VARIANT_ADD(reclaim, zero_range) {
	.how = ZERO_RANGE,
	.name = "zero_range",
};

FIXTURE_VARIANT_ADD(reclaim, subpunch) {
	.how = SUBPUNCH,
	.name = "subpunch",
};

FIXTURE_VARIANT_ADD(reclaim, truncate) {
	.how = TRUNCATE,
	.name = "truncate",
};

FIXTURE_VARIANT_ADD(reclaim, clone) {
	.how = CLONE,
	.name = "clone",
};

FIXTURE_VARIANT_ADD(reclaim, remap) {
	.how = REMAP,
	.name = "remap",
};

FIXTURE_VARIANT_ADD(reclaim, cow) {
	.how = COW,
	.name = "cow",
};

FIXTURE_VARIANT_ADD(reclaim, unrelated) {
	.how = UNRELATED,
	.name = "unrelated",
};

/*
 * Reclaim only: a migration leaves the destination in the cache, which
 * invalidation after the write unmaps (the dio case).
 */
FIXTURE_VARIANT_ADD(reclaim, dio_inflight) {
	.how = DIO_INFLIGHT,
	.name = "dio_inflight",
};

FIXTURE_VARIANT_ADD(migrate, dio) {
	.how = DIO,
	.name = "dio",
};

FIXTURE_VARIANT_ADD(migrate, pwrite) {
	.how = PWRITE,
	.name = "pwrite",
};

FIXTURE_VARIANT_ADD(migrate, mmap_write) {
	.how = MMAP_WRITE,
	.name = "mmap_write",
};

FIXTURE_VARIANT_ADD(migrate, punch) {
	.how = PUNCH,
	.name = "punch",
};

FIXTURE_VARIANT_ADD(migrate, zero_range) {
	.how = ZERO_RANGE,
	.name = "zero_range",
};

FIXTURE_VARIANT_ADD(migrate, subpunch) {
	.how = SUBPUNCH,
	.name = "subpunch",
};

FIXTURE_VARIANT_ADD(migrate, truncate) {
	.how = TRUNCATE,
	.name = "truncate",
};

FIXTURE_VARIANT_ADD(migrate, clone) {
	.how = CLONE,
	.name = "clone",
};

FIXTURE_VARIANT_ADD(migrate, remap) {
	.how = REMAP,
	.name = "remap",
};

FIXTURE_VARIANT_ADD(migrate, cow) {
	.how = COW,
	.name = "cow",
};

FIXTURE_VARIANT_ADD(migrate, unrelated) {
	.how = UNRELATED,
	.name = "unrelated",
};

FIXTURE_SETUP(reclaim)
{
	setup(_metadata, &self->e, &self->s, RECLAIM, variant->how);
}

FIXTURE_SETUP(migrate)
{
	setup(_metadata, &self->e, &self->s, MIGRATE, variant->how);
}

FIXTURE_TEARDOWN_PARENT(reclaim)
{
	teardown_parent(&self->s);
}

FIXTURE_TEARDOWN_PARENT(migrate)
{
	teardown_parent(&self->s);
}

TEST_F_TIMEOUT(reclaim, no_stale_read, TEST_TIMEOUT)
{
	no_stale_read(_metadata, self->e, variant->name);
}

TEST_F_TIMEOUT(migrate, no_stale_read, TEST_TIMEOUT)
{
	no_stale_read(_metadata, self->e, variant->name);
}

TEST_HARNESS_MAIN

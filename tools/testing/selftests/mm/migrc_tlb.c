// SPDX-License-Identifier: GPL-2.0
/*
 * migrc_tlb - stale TLB entry tests for deferred migration TLB flushing.
 *
 * With migrc, migrating a folio whose mappings are all read-only and clean
 * does not send the TLB shootdown at migration time.  Other CPUs may keep a
 * TLB entry that still points at the *source* page after the PTE has been
 * switched to the destination page and the source page has been freed.
 * That is only safe if the pending flush is done before the source page is
 * handed out again, before anything can write the destination page (which
 * the stale entry would hide), and before the mapping changes in any other
 * way that a reader could observe.
 *
 * Method.  Each test maps a small buffer (MIGRC_TEST_PAGES pages, default
 * 16) that reader threads read.  Each reader is pinned to its own CPU, not
 * the mover's, and does nothing but spin over the buffer with volatile 64-bit
 * loads, checking every word: no system calls, no sleeping, no context
 * switches, so nothing but a real TLB flush can drop a TLB entry it holds
 * (under QEMU TCG each vCPU keeps its software TLB until the guest flushes
 * it; on hardware a spinning reader keeps its entries hot).  The mover, the
 * test's main thread pinned to the first CPU, repeatedly moves the whole
 * buffer between two memory nodes with move_pages(), checks the per-page
 * status and queries where every page really is (a round in which no page
 * changed node proves nothing and is not counted as a move), and then does
 * the test's "hazard": something that reuses the freed source pages or
 * changes the bytes a reader should now see.  The mover then publishes, in
 * a separate word, what readers may see from now on, and waits until every
 * reader has done a full scan after the publication.
 *
 * Every word encodes its index and a generation number.  The check is exact,
 * with no grace period: a word read after the reader observed a publication
 * (acquire) must be the published generation or newer, or zero where the
 * hazard legitimately zeroes the page (hole punch, truncate,
 * MADV_DONTNEED).  Words torn by a write that is still in progress (the
 * kernel copies pwrite() data with byte-granular string instructions) are
 * recognised as a byte-wise mix of two consecutive generations and are not
 * stale.  No time bound is allowed because migrc also flushes after a
 * bounded time, which would otherwise hide a missing flush.
 *
 * Why a skipped flush fails these tests: a reader whose TLB entry survives
 * the migration keeps reading the source page.  If that page is reused
 * (test reuse), it sees the filler the new owner wrote; if the destination
 * page is written (all the write tests), it keeps seeing the generation the
 * page had at migration time, which is older than the published one.
 * Both are counted as stale reads, and every test asserts that there were
 * none and that pages really moved.
 *
 * The tests, one per obligation:
 *   reuse        freed source pages reallocated by another process (bound
 *                to the source node, same CPU) and filled with FILLER
 *   write_fault  write through a second, writable mapping of the same memfd
 *                in the same process (write fault installs a writable PTE)
 *   file_write   pwrite()/write() into the page cache (memfd and a file in
 *                MIGRC_TEST_DIR, default /tmp)
 *   other_mm     a child process writes through its own writable MAP_SHARED
 *                mapping of the memfd
 *   mprotect     the readers' own mapping is made writable and written
 *   cow          fork: the child's COW copy must stay invisible to the
 *                parent's readers (its copy may be the freed source page),
 *                the parent's own write must become visible
 *   punch        hole punch / truncate + extend: old data must be gone
 *   dontneed     MADV_DONTNEED on private anon memory, then new data
 *   failed_move  move_pages() that fails (invalid node; page pinned by
 *                vmsplice so migration is undone): data intact, later
 *                writes seen
 *   precise      writes to an unrelated file and its mappings while a
 *                deferral is pending: no write flush, the deferral stays
 *                pending; a write of the moved data then flushes
 *   large        reuse, mprotect and (shmem) write() again, on large
 *                folios: anonymous and shmem mTHPs of 16 kB and 64 kB, and
 *                a PMD-mapped THP.  Fails if the buffer is not made of
 *                them, before and after the test; with migrc=on, also if
 *                the mTHP moves were not deferred or the THP's PMD was
 *                not flushed at once (migrc_pmd_entries)
 *   pmd_file     a shmem folio of PMD size that the readers map by PTEs,
 *                written after each move by another process that maps it
 *                by a PMD (do_set_pmd(): writable, and no barrier): it
 *                must never be deferred (migrc_excluded_large)
 *   eof          a file on a filesystem with blocks smaller than a page
 *                (MIGRC_EOF_DIR: the harness makes a 1 kB-block ext4),
 *                its EOF inside the page: bytes stored past EOF through a
 *                shared mapping, the page moved, then written back (which
 *                zeroes past EOF) and the file extended over them by a
 *                write further on (pagecache_isize_extended()): they
 *                must read as zero
 *   counters     migrc_* vmstat counters: deferred pages are counted with
 *                migrc=on; with migrc off every counter stays 0
 *
 * Environment: MIGRC_TEST_SECONDS (per test case, default 2), MIGRC_TEST_PAGES
 * (buffer size in pages, default 16; not for large), MIGRC_TEST_DIR
 * (default /tmp), MIGRC_EOF_DIR (eof: a directory on a filesystem in the
 * safe set whose block size divides EOF_BYTES and is smaller than a page;
 * skipped without one).  Needs two CPUs and two memory nodes; the cow test needs
 * root (MPOL_MF_MOVE_ALL for pages mapped by two processes), the large
 * tests root and the per-size THP files of sysfs, pmd_file root and
 * THP_SYSFS/shmem_enabled; they change the THP settings and turn NUMA
 * balancing off while they run.
 */
#include "../kselftest_harness.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <linux/falloc.h>
#include <linux/kernel-page-flags.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>

#include "vm_util.h"
/* thp_settings.h declares functions returning const unsigned long. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-qualifiers"
#include "thp_settings.h"
#pragma GCC diagnostic pop
#include "migrc_util.h"

#ifndef MPOL_DEFAULT
#define MPOL_DEFAULT		0
#endif
#ifndef MPOL_BIND
#define MPOL_BIND		2
#endif
#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE		(1 << 1)
#endif
#ifndef MPOL_MF_MOVE_ALL
#define MPOL_MF_MOVE_ALL	(1 << 2)
#endif

#define DEFAULT_SECONDS		2.0
#define MAX_SECONDS		100.0
#define TEST_TIMEOUT		150
#define DEFAULT_PAGES		16
#define MAX_PAGES		256
#define MAX_READERS		4
#define MAX_NODE_WORDS		16	/* 1024 nodes */
#define READER_WAIT_S		5.0
#define NSAMPLES		8
#define INVALID_NODE		(1 << 20)

#define FILLER			0xdeadbeefcafef00dULL
#define CHILD_BIT		(1ULL << 63)

/* Publication word: sequence << 40 | generation << 8 | flags. */
#define PUB(seq, gen, fl)	(((uint64_t)(seq) << 40) | ((uint64_t)(gen) << 8) | (fl))
#define PUB_GEN(p)		(((p) >> 8) & 0xffffffffULL)
#define PUB_FLAGS(p)		((unsigned int)((p) & 0xff))
#define PUB_ZERO_OK		0x1	/* zero words are legitimate */
#define PUB_EXACT		0x2	/* only the published generation */

enum buf_kind {
	BUF_MEMFD,
	BUF_TMPFILE,
	BUF_ANON,
	BUF_SHM,	/* MAP_SHARED | MAP_ANONYMOUS: shmem */
};

/* A buffer laid out for large folios (fixture large). */
struct layout {
	int pages;		/* size in base pages */
	size_t align;		/* alignment of the whole VMA, in bytes */
	bool hugepage;		/* MADV_HUGEPAGE */
	bool misalign;		/* a file: mapped a page off the alignment */
};

struct reader {
	pthread_t thread;
	int cpu;
	struct env *e;
	int pin_err;
	/* Written by the reader. */
	uint64_t seen __attribute__((aligned(64)));
	unsigned long scans;
	unsigned long words;
	unsigned long stale;
	unsigned long torn;
	unsigned long sigbus;
	unsigned int nsamples;
	struct {
		size_t idx;
		uint64_t val;
		uint64_t pub;
	} sample[NSAMPLES];
} __attribute__((aligned(64)));

struct ctl {
	uint64_t pub __attribute__((aligned(64)));
	int stop __attribute__((aligned(64)));
};

struct env {
	enum buf_kind kind;
	int fd;
	size_t len;
	size_t nwords;
	int npages;
	size_t page_size;
	uint64_t *rbuf;		/* the mapping the readers read */
	uint64_t *wbuf;		/* writable alias of the same file */
	uint64_t *content;	/* staging buffer for pwrite() */
	void **pages;
	int *nodes;
	int *status;
	int *where;
	bool *pinned;
	int node[2];
	int cur;		/* index in node[] the pages were last moved to */
	int mover_cpu;
	int nreaders;
	struct reader *readers;
	struct ctl *ctl;
	bool readers_running;
	bool sigbus_ok;
	int move_flags;
	double seconds;
	uint64_t seq;
	uint64_t gen;
	long long deferred0;
	/*
	 * Large folios: vmstat read around every move with migrc=on, to see
	 * what the moves deferred (count_large).
	 */
	bool large;			/* the buffer is made of large folios */
	size_t align;			/* of the buffer's VMA */
	bool refresh;			/* new anonymous mTHPs every round */
	struct counters *short0, *short1;	/* around the first short move */
	bool count_large;
	unsigned long large_moves;	/* moves with the counters read */
	unsigned long large_moved;	/* pages they moved */
	unsigned long large_short;	/* moves deferring fewer pages */
	long long large_deferred;	/* migrc_deferred_pages growth */
	long long large_max_deferred;	/* the most any one move deferred */
	long long large_pmd;		/* migrc_pmd_entries growth */
	long long large_excluded;	/* migrc_excluded_large growth */
	unsigned long pmd_writes;	/* pmd_file: writes through a PMD */
	/* Page frame numbers, to see whether source pages were reused. */
	uint64_t *src_pfn;
	uint64_t *new_pfn;	/* MAP_SHARED, filled by a child process */
	int nnew_pfn;
	unsigned long reused;
	bool pfn_ok;
	/* Children and pipes used by some tests. */
	pid_t child;
	int cmd_fd;
	int ack_fd;
	int pin_pipe[2];
	/* Statistics. */
	unsigned long rounds;
	unsigned long move_calls;
	unsigned long moves;
	unsigned long moved_pages;
	unsigned long move_errors;
	unsigned long move_partial;
	unsigned long status_mismatch;
	unsigned long pinned_moved;
	unsigned long enodev;
	unsigned long checked;
	unsigned long lagged;
	int last_errno;
};

#define REUSE_FACTOR	4	/* the reuse helper allocates 4x the buffer */

/* ---------------------------------------------------------------------- */
/* Helpers */

static inline uint32_t word_lo(size_t i, uint64_t gen)
{
	return (0x5a17c0deU ^ (uint32_t)(i * 2654435761U)) ^
	       (uint32_t)(gen * 0x9e3779b9U);
}

/* The value word i holds at generation gen; never 0. */
static inline uint64_t word_enc(size_t i, uint64_t gen)
{
	return ((gen + 1) << 32) | word_lo(i, gen);
}

static void fill_words(volatile uint64_t *p, size_t n, uint64_t gen,
		       uint64_t or)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = word_enc(i, gen) | or;
}

static long bind_to_node(int node)
{
	unsigned long mask[MAX_NODE_WORDS] = { 0 };

	if (node < 0 || node >= MAX_NODE_WORDS * 64)
		return -EINVAL;
	mask[node / 64] = 1UL << (node % 64);
	return syscall(SYS_set_mempolicy, MPOL_BIND, mask,
		       MAX_NODE_WORDS * 64);
}

/*
 * The PFN of each of the n pages at addr, 0 where unknown: not present, or
 * hidden (pagemap shows PFNs only with CAP_SYS_ADMIN).
 */
static void record_pfns(uint64_t *out, const void *addr, int n,
			size_t page_size)
{
	int fd = open("/proc/self/pagemap", O_RDONLY), i;

	for (i = 0; i < n; i++) {
		unsigned long pfn = -1UL;

		if (fd >= 0)
			pfn = pagemap_get_pfn(fd, (char *)addr + i * page_size);
		out[i] = pfn == -1UL ? 0 : pfn;
	}
	if (fd >= 0)
		close(fd);
}

/* How many of the recorded source pages does the child now use? */
static void count_reused(struct env *e)
{
	int i, j;

	for (i = 0; i < e->npages; i++) {
		if (!e->src_pfn[i])
			continue;
		e->pfn_ok = true;
		for (j = 0; j < e->nnew_pfn; j++)
			if (e->new_pfn[j] == e->src_pfn[i])
				e->reused++;
	}
}

/* /proc/vmstat migrc_* counters */

#define MAX_COUNTERS 32

struct counters {
	int n;
	char name[MAX_COUNTERS][64];
	long long val[MAX_COUNTERS];
};

static void read_counters(struct counters *c)
{
	char line[256];
	FILE *f;

	c->n = 0;
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && c->n < MAX_COUNTERS) {
		char name[64];
		long long v;

		if (strncmp(line, "migrc_", 6))
			continue;
		if (sscanf(line, "%63s %lld", name, &v) != 2)
			continue;
		snprintf(c->name[c->n], sizeof(c->name[0]), "%s", name);
		c->val[c->n++] = v;
	}
	fclose(f);
}

static long long counter(const struct counters *c, const char *name)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->name[i], name))
			return c->val[i];
	return -1;
}

static long long read_counter(const char *name)
{
	struct counters c;

	read_counters(&c);
	return counter(&c, name);
}

static struct counters start_counters;

static void __attribute__((constructor)) snapshot_start_counters(void)
{
	read_counters(&start_counters);
}

static bool cmdline_has(const char *word)
{
	char buf[4096], *tok, *save;
	ssize_t len;
	int fd;

	fd = open("/proc/cmdline", O_RDONLY);
	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = 0;
	for (tok = strtok_r(buf, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, word))
			return true;
	return false;
}

/* ---------------------------------------------------------------------- */
/* Readers */

static __thread sigjmp_buf reader_jb;
static __thread volatile int reader_jb_armed;

static void sigbus_handler(int sig)
{
	if (reader_jb_armed)
		siglongjmp(reader_jb, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void __attribute__((noinline))
record_stale(struct reader *r, size_t i, uint64_t v, uint64_t pub)
{
	__atomic_add_fetch(&r->stale, 1, __ATOMIC_RELAXED);
	if (r->nsamples < NSAMPLES) {
		r->sample[r->nsamples].idx = i;
		r->sample[r->nsamples].val = v;
		r->sample[r->nsamples].pub = pub;
		r->nsamples++;
	}
}

/*
 * A word that is not the published generation: newer, zero where allowed,
 * torn by a write in progress, or stale.  No system calls here either.
 */
static void __attribute__((noinline))
slow_check(struct reader *r, size_t i, uint64_t v, uint64_t pub)
{
	uint64_t min = PUB_GEN(pub), cur, g, lo;
	unsigned int flags = PUB_FLAGS(pub);

	if (v == 0 && (flags & PUB_ZERO_OK))
		return;
	if (flags & PUB_EXACT)
		goto stale;
	if (!(v & CHILD_BIT) && (v >> 32)) {
		g = (v >> 32) - 1;
		if (g >= min && v == word_enc(i, g))
			return;
	}
	/*
	 * Torn by a write in progress: bytes of generation g and g + 1, where
	 * g is at least min and at most the generation published now.
	 */
	cur = PUB_GEN(__atomic_load_n(&r->e->ctl->pub, __ATOMIC_ACQUIRE));
	lo = cur > min + 64 ? cur - 64 : min;
	for (g = lo; g <= cur; g++) {
		if (byte_mix(v, word_enc(i, g), word_enc(i, g + 1))) {
			r->torn++;
			return;
		}
	}
	if ((flags & PUB_ZERO_OK) && byte_mix(v, 0, word_enc(i, min))) {
		r->torn++;
		return;
	}
stale:
	record_stale(r, i, v, pub);
}

static void scan(struct reader *r, const volatile uint64_t *buf, size_t n,
		 uint64_t pub)
{
	uint64_t gen = PUB_GEN(pub);
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = buf[i];

		if (__builtin_expect(v != word_enc(i, gen), 0))
			slow_check(r, i, v, pub);
	}
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct env *e = r->e;
	const volatile uint64_t *buf = e->rbuf;
	const size_t n = e->nwords;
	uint64_t pub;

	r->pin_err = pin_self(r->cpu);
	if (e->sigbus_ok)
		reader_jb_armed = 1;
	while (!__atomic_load_n(&e->ctl->stop, __ATOMIC_RELAXED)) {
		pub = __atomic_load_n(&e->ctl->pub, __ATOMIC_ACQUIRE);
		if (e->sigbus_ok) {
			if (sigsetjmp(reader_jb, 0)) {
				r->sigbus++;
				continue;
			}
		}
		scan(r, buf, n, pub);
		r->scans++;
		r->words += n;
		__atomic_store_n(&r->seen, pub, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void publish(struct env *e, uint64_t gen, unsigned int flags)
{
	e->seq++;
	e->gen = gen;
	__atomic_store_n(&e->ctl->pub, PUB(e->seq, gen, flags),
			 __ATOMIC_RELEASE);
}

/* Wait until every reader has done a full scan under the current pub. */
static bool wait_readers(struct env *e)
{
	uint64_t pub = __atomic_load_n(&e->ctl->pub, __ATOMIC_RELAXED);
	double deadline = now_s() + READER_WAIT_S;
	unsigned long spins = 0;
	int i;

	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->readers[i];

		while (__atomic_load_n(&r->seen, __ATOMIC_ACQUIRE) != pub) {
			if (!(++spins & 255) && now_s() > deadline) {
				e->lagged++;
				return false;
			}
			sched_yield();
		}
	}
	return true;
}

static void stop_readers(struct env *e)
{
	int i;

	if (!e->readers_running)
		return;
	__atomic_store_n(&e->ctl->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < e->nreaders; i++)
		pthread_join(e->readers[i].thread, NULL);
	e->readers_running = false;
}

static void start_readers(struct __test_metadata *_metadata, struct env *e)
{
	int i, ret;

	__atomic_store_n(&e->ctl->stop, 0, __ATOMIC_RELAXED);
	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->readers[i];

		r->e = e;
		r->seen = ~0ULL;
		ret = pthread_create(&r->thread, NULL, reader_main, r);
		ASSERT_EQ(ret, 0);
		e->readers_running = true;
	}
	/* Every reader has scanned the initial contents at least once. */
	ASSERT_TRUE(wait_readers(e)) {
		TH_LOG("readers did not start");
	}
	e->lagged = 0;
	for (i = 0; i < e->nreaders; i++) {
		ASSERT_EQ(e->readers[i].pin_err, 0) {
			TH_LOG("cannot pin reader to CPU %d",
			       e->readers[i].cpu);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Moving */

/* Query where each page is, update statistics; returns pages moved. */
static int account_move(struct env *e, long ret, int err)
{
	int i, moved = 0, pinned_moved = 0;
	int *q = e->nodes;	/* reuse as the query's status array */

	e->move_calls++;
	if (ret < 0) {
		e->move_errors++;
		e->last_errno = err;
	} else if (ret > 0) {
		e->move_partial++;
	}
	for (i = 0; i < e->npages; i++)
		q[i] = INT_MIN;
	if (move_pages_sys(e->npages, e->pages, NULL, q, 0)) {
		e->last_errno = errno;
		e->move_errors++;
		return 0;
	}
	for (i = 0; i < e->npages; i++) {
		if (q[i] < 0) {
			e->last_errno = -q[i];
			e->move_errors++;
			continue;
		}
		/*
		 * move_pages() isolates a large folio at its first page; the
		 * others find it isolated and report -EBUSY, yet move with it.
		 */
		if (e->large && e->status[i] == -EBUSY)
			e->status[i] = q[i];
		if (ret == 0 && e->status[i] < 0 && e->status[i] != INT_MIN) {
			e->last_errno = -e->status[i];
			e->move_errors++;
		} else if (ret == 0 && e->status[i] != q[i]) {
			e->status_mismatch++;
		}
		if (q[i] != e->where[i]) {
			moved++;
			if (e->pinned && e->pinned[i])
				pinned_moved++;
		}
		e->where[i] = q[i];
	}
	e->moved_pages += moved;
	e->pinned_moved += pinned_moved;
	if (moved)
		e->moves++;
	return moved;
}

static int move_all(struct env *e, int node)
{
	long ret;
	int i;

	for (i = 0; i < e->npages; i++) {
		e->nodes[i] = node;
		e->status[i] = INT_MIN;
	}
	ret = move_pages_sys(e->npages, e->pages, e->nodes, e->status,
			     e->move_flags);
	return account_move(e, ret, errno);
}

/* ---------------------------------------------------------------------- */
/* Setup */

static int open_tmpfile(void)
{
	const char *dir = getenv("MIGRC_TEST_DIR") ?: "/tmp";
	char path[4096];
	int fd;

	fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/migrc_tlb.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/*
 * An anonymous mapping whose VMA starts and ends exactly at @align: a large
 * folio is only allocated where it fits in the VMA at its natural alignment,
 * so the VMA's ends decide which sizes the faults get.
 */
static void *map_aligned(size_t len, size_t align, int flags)
{
	char *p, *start;

	p = mmap(NULL, len + align, PROT_READ | PROT_WRITE,
		 flags | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return p;
	start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (start > p)
		munmap(p, start - p);
	munmap(start + len, p + len + align - (start + len));
	return start;
}

/*
 * Map @fd read-only one page past an @align boundary, so that no part of
 * it can be mapped by a PMD (the file offset and the address differ by a
 * page modulo @align): a folio of PMD size is then mapped by PTEs.
 */
static void *map_file_misaligned(size_t len, size_t align, int fd)
{
	char *p, *start;
	size_t ps = getpagesize();

	p = mmap(NULL, len + 2 * align, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return p;
	start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	start += ps;
	if (mmap(start, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) !=
	    start) {
		munmap(p, len + 2 * align);
		return MAP_FAILED;
	}
	munmap(p, start - p);
	munmap(start + len, p + len + 2 * align - (start + len));
	return start;
}

/*
 * Returns false if the test was skipped.  @lay, if not NULL, sets the
 * buffer's size and alignment (MIGRC_TEST_PAGES does not apply).
 */
static bool env_setup_layout(struct __test_metadata *_metadata, struct env *e,
			     enum buf_kind kind, bool anon_ro,
			     const struct layout *lay)
{
	int nodes[8], nnodes, cpus[MAX_READERS + 1], ncpus = 0, i;
	cpu_set_t set;
	ssize_t ret;

	memset(e, 0, sizeof(*e));
	e->fd = -1;
	e->cmd_fd = -1;
	e->ack_fd = -1;
	e->pin_pipe[0] = e->pin_pipe[1] = -1;
	e->kind = kind;
	e->seconds = env_double("MIGRC_TEST_SECONDS", DEFAULT_SECONDS, 0.05,
				MAX_SECONDS);
	e->npages = lay ? lay->pages :
		    env_double("MIGRC_TEST_PAGES", DEFAULT_PAGES, 1, MAX_PAGES);
	e->page_size = getpagesize();
	e->len = e->npages * e->page_size;
	e->nwords = e->len / sizeof(uint64_t);
	e->move_flags = geteuid() == 0 ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;

	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (i = 0; i < CPU_SETSIZE && ncpus < MAX_READERS + 1; i++)
		if (CPU_ISSET(i, &set))
			cpus[ncpus++] = i;
	if (ncpus < 2) {
		SKIP(return false, "need at least 2 CPUs");
	}
	nnodes = memory_nodes(nodes, 8);
	if (nnodes < 2) {
		SKIP(return false, "need at least 2 NUMA nodes with memory");
	}
	e->node[0] = nodes[0];
	e->node[1] = nodes[1];

	e->mover_cpu = cpus[0];
	ASSERT_EQ(pin_self(e->mover_cpu), 0);
	e->nreaders = ncpus - 1;

	e->ctl = mmap(NULL, sizeof(*e->ctl), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->ctl, MAP_FAILED);
	e->readers = mmap(NULL, sizeof(*e->readers) * e->nreaders,
			  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);
	ASSERT_NE(e->readers, MAP_FAILED);
	for (i = 0; i < e->nreaders; i++)
		e->readers[i].cpu = cpus[i + 1];

	e->pages = calloc(e->npages, sizeof(*e->pages));
	e->nodes = calloc(e->npages, sizeof(int));
	e->status = calloc(e->npages, sizeof(int));
	e->where = calloc(e->npages, sizeof(int));
	e->content = malloc(e->len);
	e->src_pfn = calloc(e->npages, sizeof(uint64_t));
	ASSERT_TRUE(e->pages && e->nodes && e->status && e->where &&
		    e->content && e->src_pfn);
	e->new_pfn = mmap(NULL, REUSE_FACTOR * e->npages * sizeof(uint64_t),
			  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);
	ASSERT_NE(e->new_pfn, MAP_FAILED);

	if (kind == BUF_ANON || kind == BUF_SHM) {
		int flags = kind == BUF_ANON ? MAP_PRIVATE : MAP_SHARED;

		e->rbuf = map_aligned(e->len, lay ? lay->align : e->page_size,
				      flags);
		ASSERT_NE(e->rbuf, MAP_FAILED);
		if (lay && lay->hugepage)
			ASSERT_EQ(madvise(e->rbuf, e->len, MADV_HUGEPAGE), 0);
		/* Write faults: a read fault would map the zero page. */
		fill_words(e->rbuf, e->nwords, 0, 0);
		if (anon_ro)
			ASSERT_EQ(mprotect(e->rbuf, e->len, PROT_READ), 0);
	} else {
		if (kind == BUF_MEMFD)
			e->fd = memfd_create("migrc_tlb", 0);
		else
			e->fd = open_tmpfile();
		ASSERT_GE(e->fd, 0) {
			TH_LOG("cannot create the test file: %s",
			       strerror(errno));
		}
		ASSERT_EQ(ftruncate(e->fd, e->len), 0);
		fill_words(e->content, e->nwords, 0, 0);
		ret = pwrite(e->fd, e->content, e->len, 0);
		ASSERT_EQ(ret, (ssize_t)e->len);
		if (lay && lay->misalign)
			e->rbuf = map_file_misaligned(e->len, lay->align,
						      e->fd);
		else
			e->rbuf = mmap(NULL, e->len, PROT_READ, MAP_SHARED,
				       e->fd, 0);
		ASSERT_NE(e->rbuf, MAP_FAILED);
	}
	/*
	 * Helper processes must not share the buffer's pages: plain
	 * MPOL_MF_MOVE refuses pages mapped by two processes.
	 */
	ASSERT_EQ(madvise(e->rbuf, e->len, MADV_DONTFORK), 0);
	/* Fault every page in read-only, then put all pages on node[0]. */
	for (i = 0; i < e->npages; i++) {
		e->pages[i] = (char *)e->rbuf + i * e->page_size;
		(void)*(volatile uint64_t *)e->pages[i];
		e->where[i] = -1;
	}
	move_all(e, e->node[0]);
	e->cur = 0;
	for (i = 0; i < e->npages; i++) {
		ASSERT_GE(e->where[i], 0) {
			TH_LOG("move_pages() cannot query page %d: %s", i,
			       strerror(e->last_errno));
		}
	}
	e->move_calls = e->moves = e->moved_pages = e->move_errors = 0;
	e->move_partial = e->status_mismatch = 0;

	publish(e, 0, 0);
	return true;
}

static bool env_setup(struct __test_metadata *_metadata, struct env *e,
		      enum buf_kind kind, bool anon_ro)
{
	return env_setup_layout(_metadata, e, kind, anon_ro, NULL);
}

static void env_teardown(struct env *e)
{
	int st;

	if (e->ctl)
		stop_readers(e);
	if (e->child > 0) {
		kill(e->child, SIGKILL);
		waitpid(e->child, &st, 0);
		e->child = 0;
	}
	if (e->cmd_fd >= 0)
		close(e->cmd_fd);
	if (e->ack_fd >= 0)
		close(e->ack_fd);
	if (e->pin_pipe[0] >= 0)
		close(e->pin_pipe[0]);
	if (e->pin_pipe[1] >= 0)
		close(e->pin_pipe[1]);
	if (e->fd >= 0)
		close(e->fd);
}

/* Start a child pinned to the mover's CPU with a command and ack pipe. */
static pid_t spawn_child(struct __test_metadata *_metadata, struct env *e,
			 int *cmd_rd, int *ack_wr)
{
	int cmd[2], ack[2];
	pid_t pid;

	ASSERT_EQ(pipe(cmd), 0);
	ASSERT_EQ(pipe(ack), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(cmd[1]);
		close(ack[0]);
		*cmd_rd = cmd[0];
		*ack_wr = ack[1];
		return 0;
	}
	close(cmd[0]);
	close(ack[1]);
	e->child = pid;
	e->cmd_fd = cmd[1];
	e->ack_fd = ack[0];
	return pid;
}

static void child_cmd(struct __test_metadata *_metadata, struct env *e,
		      uint64_t cmd)
{
	uint64_t ack;

	ASSERT_EQ(write(e->cmd_fd, &cmd, sizeof(cmd)), (ssize_t)sizeof(cmd));
	ASSERT_EQ(read(e->ack_fd, &ack, sizeof(ack)), (ssize_t)sizeof(ack)) {
		TH_LOG("helper process died");
	}
	ASSERT_EQ(ack, cmd);
}

/* ---------------------------------------------------------------------- */
/* The common loop */

struct hazard {
	const char *what;
	void (*pre)(struct __test_metadata *_metadata, struct env *e,
		    int src, int dst);
	void (*post)(struct __test_metadata *_metadata, struct env *e,
		     int src, int dst);
};

static void report(struct __test_metadata *_metadata, struct env *e,
		   const char *what)
{
	unsigned long scans = 0, words = 0, stale = 0, torn = 0, sigbus = 0;
	long long deferred = read_counter("migrc_deferred_pages");
	char dbuf[32] = "n/a";
	int i, j;

	stop_readers(e);
	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->readers[i];

		scans += r->scans;
		words += r->words;
		stale += r->stale;
		torn += r->torn;
		sigbus += r->sigbus;
		for (j = 0; j < (int)r->nsamples; j++)
			TH_LOG("STALE: reader on CPU %d read word %zu = %#llx, expected gen >= %llu (%#llx) flags %#x",
			       r->cpu, r->sample[j].idx,
			       (unsigned long long)r->sample[j].val,
			       (unsigned long long)PUB_GEN(r->sample[j].pub),
			       (unsigned long long)word_enc(r->sample[j].idx,
					PUB_GEN(r->sample[j].pub)),
			       PUB_FLAGS(r->sample[j].pub));
	}
	if (deferred >= 0 && e->deferred0 >= 0)
		snprintf(dbuf, sizeof(dbuf), "+%lld", deferred - e->deferred0);
	TH_LOG("%s: %lu rounds, %lu moves (%lu pages changed node, %lu move_pages calls, %lu partial, %lu errors, last errno %d, %lu status mismatches), %lu/%lu rounds checked by every reader (%lu lagged)",
	       what, e->rounds, e->moves, e->moved_pages, e->move_calls,
	       e->move_partial, e->move_errors, e->last_errno,
	       e->status_mismatch, e->checked, e->rounds, e->lagged);
	TH_LOG("%s: %d reader(s): %lu scans, %lu words checked, %lu torn, %lu sigbus, %lu stale; migrc_deferred_pages %s",
	       what, e->nreaders, scans, words, torn, sigbus, stale, dbuf);
	if (e->nnew_pfn)
		TH_LOG("%s: freed source pages reallocated to the other process: %lu%s",
		       what, e->reused,
		       e->pfn_ok ? "" : " (PFNs not readable: not root?)");
	if (!e->moves)
		TH_LOG("no page ever changed node: this run tested nothing");
	ASSERT_GT(e->moves, 0UL);
	ASSERT_GT(e->checked, 0UL);
	/*
	 * A page may legitimately sit elsewhere than move_pages() reported
	 * by the time it is queried (a write fault after mprotect() may have
	 * replaced it, for one): logged above, not a failure.  Only what the
	 * readers saw decides.
	 */
	ASSERT_EQ(stale, 0UL);
}

/* What one move of the buffer deferred, and its PMD flushes. */
static void count_large_move(struct env *e, const struct counters *c0,
			     int moved)
{
	long long d, p, x;
	struct counters c1;

	if (!moved)
		return;
	read_counters(&c1);
	d = counter(&c1, "migrc_deferred_pages") -
	    counter(c0, "migrc_deferred_pages");
	p = counter(&c1, "migrc_pmd_entries") -
	    counter(c0, "migrc_pmd_entries");
	x = counter(&c1, "migrc_excluded_large") -
	    counter(c0, "migrc_excluded_large");
	e->large_moves++;
	e->large_moved += moved;
	e->large_excluded += x;
	e->large_deferred += d;
	if (d > e->large_max_deferred)
		e->large_max_deferred = d;
	if (d < moved && !e->large_short++) {
		*e->short0 = *c0;
		*e->short1 = c1;
	}
	/* The kernel may lack the counter: then it stays -1, failing. */
	e->large_pmd = counter(&c1, "migrc_pmd_entries") < 0 ? -1 :
		       e->large_pmd + p;
}

/*
 * 6.12 splits an anonymous mTHP at its second move: try_to_migrate()
 * unmaps it PTE by PTE, which leaves it partially mapped for a moment and
 * queues it for a deferred split; the destination inherits the queueing,
 * and the next migrate_pages() splits a partially mapped folio before it
 * moves it.  So before every move, give the readers new mTHPs with the
 * same data, on the node the buffer is on: built in a VMA of their own,
 * then moved over the buffer by mremap(), which keeps their PTEs.
 */
static void refresh_large(struct __test_metadata *_metadata, struct env *e)
{
	void *p;

	ASSERT_EQ(bind_to_node(e->node[e->cur]), 0);
	p = map_aligned(e->len, e->align, MAP_PRIVATE);
	ASSERT_NE(p, MAP_FAILED);
	fill_words(p, e->nwords, e->gen, 0);
	ASSERT_EQ(syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0), 0);
	ASSERT_EQ(mprotect(p, e->len, PROT_READ), 0);
	ASSERT_EQ(madvise(p, e->len, MADV_DONTFORK), 0);
	ASSERT_EQ(mremap(p, e->len, e->len, MREMAP_MAYMOVE | MREMAP_FIXED,
			 e->rbuf), (void *)e->rbuf);
}

static void run_test(struct __test_metadata *_metadata, struct env *e,
		     const struct hazard *hz)
{
	struct counters c0;
	double deadline;
	int moved;

	e->deferred0 = read_counter("migrc_deferred_pages");
	start_readers(_metadata, e);
	deadline = now_s() + e->seconds;
	while (now_s() < deadline) {
		int src = e->node[e->cur], dst = e->node[!e->cur];

		if (e->refresh)
			refresh_large(_metadata, e);
		if (hz->pre)
			hz->pre(_metadata, e, src, dst);
		record_pfns(e->src_pfn, e->rbuf, e->npages, e->page_size);
		if (e->count_large)
			read_counters(&c0);
		moved = move_all(e, dst);
		if (e->count_large)
			count_large_move(e, &c0, moved);
		e->cur = !e->cur;
		hz->post(_metadata, e, src, dst);
		if (wait_readers(e))
			e->checked++;
		e->rounds++;
	}
	report(_metadata, e, hz->what);
}

static void write_gen_pwrite(struct __test_metadata *_metadata, struct env *e,
			     uint64_t gen)
{
	ssize_t ret;

	fill_words(e->content, e->nwords, gen, 0);
	if (gen & 1) {
		ret = pwrite(e->fd, e->content, e->len, 0);
	} else {
		ASSERT_EQ(lseek(e->fd, 0, SEEK_SET), 0);
		ret = write(e->fd, e->content, e->len);
	}
	ASSERT_EQ(ret, (ssize_t)e->len);
}

/* ---------------------------------------------------------------------- */
/* 1. Reuse of the freed source pages */

static void reuse_helper(struct env *e, int cmd, int ack)
{
	size_t sz = REUSE_FACTOR * e->len, i;
	uint64_t node;
	void *old = NULL;

	while (read(cmd, &node, sizeof(node)) == sizeof(node)) {
		volatile uint64_t *p;

		/* Allocate the new area before freeing the old one. */
		bind_to_node(node);
		if (e->large) {
			/*
			 * Freed large folios are free blocks of their order,
			 * which order-0 allocations reach last: take folios
			 * of the buffer's sizes (a PMD THP needs the advice).
			 */
			p = map_aligned(sz, e->align, MAP_PRIVATE);
			if (p == MAP_FAILED ||
			    madvise((void *)p, sz, MADV_HUGEPAGE))
				_exit(1);
		} else {
			p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(1);
		}
		for (i = 0; i < sz / sizeof(*p); i++)
			p[i] = FILLER;
		if (old)
			munmap(old, sz);
		old = (void *)p;
		record_pfns(e->new_pfn, old, REUSE_FACTOR * e->npages,
			    e->page_size);
		if (write(ack, &node, sizeof(node)) != sizeof(node))
			_exit(1);
	}
	_exit(0);
}

static void reuse_post(struct __test_metadata *_metadata, struct env *e,
		       int src, int dst)
{
	child_cmd(_metadata, e, src);
	e->nnew_pfn = REUSE_FACTOR * e->npages;
	count_reused(e);
	publish(e, 0, PUB_EXACT);
}

FIXTURE(reuse) {
	struct env e;
};

FIXTURE_VARIANT(reuse) {
	enum buf_kind kind;
};

FIXTURE_VARIANT_ADD(reuse, memfd) {
	.kind = BUF_MEMFD,
};

FIXTURE_VARIANT_ADD(reuse, anon) {
	.kind = BUF_ANON,
};

FIXTURE_SETUP(reuse)
{
	env_setup(_metadata, &self->e, variant->kind, true);
}

FIXTURE_TEARDOWN(reuse)
{
	env_teardown(&self->e);
}

static void run_reuse(struct __test_metadata *_metadata, struct env *e)
{
	static const struct hazard hz = {
		.what = "reuse", .post = reuse_post,
	};
	int cmd, ack;

	if (!spawn_child(_metadata, e, &cmd, &ack))
		reuse_helper(e, cmd, ack);
	publish(e, 0, PUB_EXACT);
	run_test(_metadata, e, &hz);
	/*
	 * With PFNs readable, make sure that reuse really happened.  Not with
	 * migrc on: it frees deferred sources to the tail of the free lists,
	 * so they are rarely reused before their flush, and that the flush
	 * comes first when they are is what the debug kernel checks (and the
	 * inject test of the harness, which frees them untagged to the head).
	 */
	if (e->pfn_ok && !cmdline_has("migrc=on")) {
		ASSERT_GT(e->reused, 0UL);
	} else if (!e->reused) {
		TH_LOG("migrc=on: no freed source page was reused during the test");
	}
}

TEST_F_TIMEOUT(reuse, freed_source_pages, TEST_TIMEOUT)
{
	run_reuse(_metadata, &self->e);
}

/* ---------------------------------------------------------------------- */
/* 2. Write fault through a writable alias in the same process */

static void alias_post(struct __test_metadata *_metadata, struct env *e,
		       int src, int dst)
{
	uint64_t gen = e->gen + 1;

	fill_words(e->wbuf, e->nwords, gen, 0);
	/* No PTE in the alias at the next migration: keep it read-only. */
	ASSERT_EQ(madvise(e->wbuf, e->len, MADV_DONTNEED), 0);
	publish(e, gen, 0);
}

FIXTURE(write_fault) {
	struct env e;
};

FIXTURE_SETUP(write_fault)
{
	struct env *e = &self->e;

	if (!env_setup(_metadata, e, BUF_MEMFD, true))
		return;
	e->wbuf = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       e->fd, 0);
	ASSERT_NE(e->wbuf, MAP_FAILED);
}

FIXTURE_TEARDOWN(write_fault)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(write_fault, alias_write_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "write_fault", .post = alias_post,
	};

	run_test(_metadata, &self->e, &hz);
}

/* ---------------------------------------------------------------------- */
/* 3. write()/pwrite() into the page cache */

static void pwrite_post(struct __test_metadata *_metadata, struct env *e,
			int src, int dst)
{
	uint64_t gen = e->gen + 1;

	write_gen_pwrite(_metadata, e, gen);
	publish(e, gen, 0);
}

FIXTURE(file_write) {
	struct env e;
};

FIXTURE_VARIANT(file_write) {
	enum buf_kind kind;
};

FIXTURE_VARIANT_ADD(file_write, memfd) {
	.kind = BUF_MEMFD,
};

FIXTURE_VARIANT_ADD(file_write, tmpfile) {
	.kind = BUF_TMPFILE,
};

FIXTURE_SETUP(file_write)
{
	env_setup(_metadata, &self->e, variant->kind, true);
}

FIXTURE_TEARDOWN(file_write)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(file_write, pwrite_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "file_write", .post = pwrite_post,
	};

	run_test(_metadata, &self->e, &hz);
}

/* ---------------------------------------------------------------------- */
/* 4. Writable shared mapping in another process */

static void other_mm_child(struct env *e, int cmd, int ack)
{
	uint64_t gen;
	uint64_t *w;

	w = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
	if (w == MAP_FAILED)
		_exit(1);
	while (read(cmd, &gen, sizeof(gen)) == sizeof(gen)) {
		fill_words(w, e->nwords, gen, 0);
		/* Drop the writable PTEs before the next migration. */
		if (madvise(w, e->len, MADV_DONTNEED))
			_exit(1);
		if (write(ack, &gen, sizeof(gen)) != sizeof(gen))
			_exit(1);
	}
	_exit(0);
}

static void other_mm_post(struct __test_metadata *_metadata, struct env *e,
			  int src, int dst)
{
	uint64_t gen = e->gen + 1;

	child_cmd(_metadata, e, gen);
	publish(e, gen, 0);
}

FIXTURE(other_mm) {
	struct env e;
};

FIXTURE_SETUP(other_mm)
{
	env_setup(_metadata, &self->e, BUF_MEMFD, true);
}

FIXTURE_TEARDOWN(other_mm)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(other_mm, shared_writer_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "other_mm", .post = other_mm_post,
	};
	int cmd, ack;

	if (!spawn_child(_metadata, &self->e, &cmd, &ack))
		other_mm_child(&self->e, cmd, ack);
	run_test(_metadata, &self->e, &hz);
}

/* ---------------------------------------------------------------------- */
/* 5. mprotect() of the readers' mapping to writable */

static void mprotect_post(struct __test_metadata *_metadata, struct env *e,
			  int src, int dst)
{
	uint64_t gen = e->gen + 1;

	ASSERT_EQ(mprotect(e->rbuf, e->len, PROT_READ | PROT_WRITE), 0);
	fill_words(e->rbuf, e->nwords, gen, 0);
	ASSERT_EQ(mprotect(e->rbuf, e->len, PROT_READ), 0);
	/*
	 * A file page keeps its data: zap the now dirty PTEs so that the
	 * readers map it read-only and clean again before the next move.
	 */
	if (e->kind != BUF_ANON)
		ASSERT_EQ(madvise(e->rbuf, e->len, MADV_DONTNEED), 0);
	publish(e, gen, 0);
}

FIXTURE(mprotect) {
	struct env e;
};

FIXTURE_VARIANT(mprotect) {
	enum buf_kind kind;
};

FIXTURE_VARIANT_ADD(mprotect, anon) {
	.kind = BUF_ANON,
};

FIXTURE_VARIANT_ADD(mprotect, memfd) {
	.kind = BUF_MEMFD,
};

FIXTURE_SETUP(mprotect)
{
	env_setup(_metadata, &self->e, variant->kind, true);
}

FIXTURE_TEARDOWN(mprotect)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(mprotect, upgrade_write_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "mprotect", .post = mprotect_post,
	};

	run_test(_metadata, &self->e, &hz);
}

/* ---------------------------------------------------------------------- */
/* 6. fork() and COW */

static void cow_pre(struct __test_metadata *_metadata, struct env *e,
		    int src, int dst)
{
	uint64_t node;
	int cmd, ack;

	/* Fork before the move: the pages are COW-shared, read-only. */
	if (spawn_child(_metadata, e, &cmd, &ack))
		return;
	if (read(cmd, &node, sizeof(node)) != sizeof(node))
		_exit(1);
	/* Our COW copies come from the source node, maybe its freed pages. */
	bind_to_node(node);
	fill_words(e->rbuf, e->nwords, e->gen + 1, CHILD_BIT);
	record_pfns(e->new_pfn, e->rbuf, e->npages, e->page_size);
	if (write(ack, &node, sizeof(node)) != sizeof(node))
		_exit(1);
	_exit(0);
}

static void cow_post(struct __test_metadata *_metadata, struct env *e,
		     int src, int dst)
{
	uint64_t gen = e->gen + 1;
	int st;

	child_cmd(_metadata, e, src);
	e->nnew_pfn = e->npages;
	count_reused(e);
	ASSERT_EQ(waitpid(e->child, &st, 0), e->child);
	e->child = 0;
	close(e->cmd_fd);
	close(e->ack_fd);
	e->cmd_fd = e->ack_fd = -1;
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The parent's write must be seen. */
	fill_words(e->rbuf, e->nwords, gen, 0);
	publish(e, gen, 0);
}

FIXTURE(cow) {
	struct env e;
};

FIXTURE_SETUP(cow)
{
	if (geteuid() != 0)
		SKIP(return, "need root to move pages mapped by two processes");
	if (!env_setup(_metadata, &self->e, BUF_ANON, false))
		return;
	/* Here the child must share the pages. */
	ASSERT_EQ(madvise(self->e.rbuf, self->e.len, MADV_DOFORK), 0);
}

FIXTURE_TEARDOWN(cow)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(cow, child_invisible_parent_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "cow", .pre = cow_pre, .post = cow_post,
	};

	run_test(_metadata, &self->e, &hz);
}

/* ---------------------------------------------------------------------- */
/* 7. Hole punch and truncate */

static void punch_post(struct __test_metadata *_metadata, struct env *e,
		       int src, int dst)
{
	uint64_t gen = e->gen + 1;

	/* Zeros may appear from now on; wait until every reader knows. */
	publish(e, e->gen, PUB_ZERO_OK);
	wait_readers(e);
	if (e->sigbus_ok) {
		ASSERT_EQ(ftruncate(e->fd, 0), 0);
		ASSERT_EQ(ftruncate(e->fd, e->len), 0);
	} else {
		ASSERT_EQ(fallocate(e->fd, FALLOC_FL_PUNCH_HOLE |
				    FALLOC_FL_KEEP_SIZE, 0, e->len), 0);
	}
	/* The old data is gone: zeros, or the new data being written. */
	publish(e, gen, PUB_ZERO_OK);
	wait_readers(e);
	write_gen_pwrite(_metadata, e, gen);
	publish(e, gen, 0);
}

FIXTURE(punch) {
	struct env e;
};

FIXTURE_VARIANT(punch) {
	bool truncate;
};

FIXTURE_VARIANT_ADD(punch, hole) {
	.truncate = false,
};

FIXTURE_VARIANT_ADD(punch, truncate) {
	.truncate = true,
};

FIXTURE_SETUP(punch)
{
	struct sigaction sa = {
		.sa_handler = sigbus_handler,
		.sa_flags = SA_NODEFER,
	};

	if (!env_setup(_metadata, &self->e, BUF_MEMFD, true))
		return;
	if (variant->truncate) {
		/* Readers may touch the file while it is truncated. */
		self->e.sigbus_ok = true;
		ASSERT_EQ(sigaction(SIGBUS, &sa, NULL), 0);
	}
}

FIXTURE_TEARDOWN(punch)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(punch, old_data_gone, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "punch", .post = punch_post,
	};

	run_test(_metadata, &self->e, &hz);
}

/* ---------------------------------------------------------------------- */
/* 8. MADV_DONTNEED, then new data */

static void dontneed_post(struct __test_metadata *_metadata, struct env *e,
			  int src, int dst)
{
	uint64_t gen = e->gen + 1;

	/* Zeros may appear from now on; wait until every reader knows. */
	publish(e, e->gen, PUB_ZERO_OK);
	wait_readers(e);
	ASSERT_EQ(madvise(e->rbuf, e->len, MADV_DONTNEED), 0);
	publish(e, gen, PUB_ZERO_OK);
	wait_readers(e);
	fill_words(e->rbuf, e->nwords, gen, 0);
	publish(e, gen, 0);
}

FIXTURE(dontneed) {
	struct env e;
};

FIXTURE_SETUP(dontneed)
{
	env_setup(_metadata, &self->e, BUF_ANON, false);
}

FIXTURE_TEARDOWN(dontneed)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(dontneed, old_data_gone, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "dontneed", .post = dontneed_post,
	};

	run_test(_metadata, &self->e, &hz);
}

/* ---------------------------------------------------------------------- */
/* 9. Failed migration */

static void invalid_node_post(struct __test_metadata *_metadata,
			      struct env *e, int src, int dst)
{
	uint64_t gen = e->gen + 1;
	int i, half = e->npages / 2;
	long ret;

	/*
	 * The first half goes back to the source node, then an invalid node
	 * makes the call fail with -ENODEV.
	 */
	for (i = 0; i < e->npages; i++) {
		e->nodes[i] = i < half ? src : INVALID_NODE;
		e->status[i] = INT_MIN;
	}
	ret = move_pages_sys(e->npages, e->pages, e->nodes, e->status,
			     e->move_flags);
	if (ret == -1 && errno == ENODEV) {
		e->enodev++;
		ret = 1;	/* expected: count it as a partial move */
	}
	account_move(e, ret, errno);
	write_gen_pwrite(_metadata, e, gen);
	publish(e, gen, 0);
}

static void pinned_post(struct __test_metadata *_metadata, struct env *e,
			int src, int dst)
{
	uint64_t gen = e->gen + 1;

	write_gen_pwrite(_metadata, e, gen);
	publish(e, gen, 0);
}

FIXTURE(failed_move) {
	struct env e;
};

FIXTURE_VARIANT(failed_move) {
	bool pin;
};

FIXTURE_VARIANT_ADD(failed_move, invalid_node) {
	.pin = false,
};

FIXTURE_VARIANT_ADD(failed_move, pinned) {
	.pin = true,
};

FIXTURE_SETUP(failed_move)
{
	struct env *e = &self->e;
	struct iovec iov[MAX_PAGES];
	int i, n = 0;
	ssize_t ret;

	if (!env_setup(_metadata, e, BUF_MEMFD, true))
		return;
	if (!variant->pin)
		return;
	/* vmsplice() takes references on every other page: they cannot move. */
	e->pinned = calloc(e->npages, sizeof(bool));
	ASSERT_NE(e->pinned, NULL);
	ASSERT_EQ(pipe(e->pin_pipe), 0);
	fcntl(e->pin_pipe[1], F_SETPIPE_SZ, e->len);
	for (i = 0; i < e->npages; i += 2) {
		iov[n].iov_base = e->pages[i];
		iov[n].iov_len = e->page_size;
		e->pinned[i] = true;
		n++;
	}
	ret = vmsplice(e->pin_pipe[1], iov, n, 0);
	ASSERT_EQ(ret, (ssize_t)(n * e->page_size)) {
		TH_LOG("vmsplice: %s", strerror(errno));
	}
}

FIXTURE_TEARDOWN(failed_move)
{
	free(self->e.pinned);
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(failed_move, data_intact, TEST_TIMEOUT)
{
	static const struct hazard inval = {
		.what = "failed_move(invalid node)", .post = invalid_node_post,
	};
	static const struct hazard pin = {
		.what = "failed_move(pinned)", .post = pinned_post,
	};
	struct env *e = &self->e;

	run_test(_metadata, e, variant->pin ? &pin : &inval);
	if (variant->pin) {
		TH_LOG("%lu move_pages calls with unmovable pages, %lu pinned pages moved",
		       e->move_partial, e->pinned_moved);
		ASSERT_GT(e->move_partial, 0UL);
		ASSERT_EQ(e->pinned_moved, 0UL);
	} else {
		TH_LOG("%lu move_pages calls failed with ENODEV", e->enodev);
		ASSERT_EQ(e->enodev, e->rounds);
	}
}

/* ---------------------------------------------------------------------- */
/* 10. Precise barriers: writes elsewhere neither pay nor end the deferral */

#define MIGRC_SYSFS		"/sys/kernel/mm/migrc/"
#define PRECISE_AGE_MS		"10000"	/* the largest max_age_ms accepted */
#define PRECISE_PAGES		8	/* pages of the unrelated files */
#define PRECISE_TRIES		3

static long long pending_pages(void)
{
	char buf[32];

	return read_str(MIGRC_SYSFS "pending_pages", buf, sizeof(buf)) ? -1 :
	       atoll(buf);
}

/*
 * The writes of another program that touch none of the deferred data:
 * write() into its own file, write faults on a shared mapping of it, an
 * mprotect() that makes such a mapping writable.  Each goes through a
 * migrc barrier (generic_perform_write(), set_pte_range(),
 * change_pte_range()).
 */
static void unrelated_writes(struct __test_metadata *_metadata, int fd,
			     size_t page_size)
{
	size_t len = PRECISE_PAGES * page_size, i;
	char *map, buf[64];

	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < PRECISE_PAGES; i++)
		ASSERT_EQ(pwrite(fd, buf, sizeof(buf), i * page_size),
			  (ssize_t)sizeof(buf));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(map, MAP_FAILED);
	for (i = 0; i < PRECISE_PAGES; i++)
		map[i * page_size] = (char)i;
	ASSERT_EQ(mprotect(map, len, PROT_READ), 0);
	ASSERT_EQ(mprotect(map, len, PROT_READ | PROT_WRITE), 0);
	for (i = 0; i < PRECISE_PAGES; i++)
		map[i * page_size + 1] = (char)i;
	ASSERT_EQ(munmap(map, len), 0);
}

FIXTURE(precise) {
	struct env e;
	char old_age[32];
	bool age_set;
};

FIXTURE_SETUP(precise)
{
	self->age_set = false;
	if (!cmdline_has("migrc=on"))
		SKIP(return, "migrc is off: nothing is deferred");
	if (read_counter("migrc_writes_spared") < 0)
		SKIP(return, "kernel without migrc_writes_spared");
	ASSERT_EQ(read_str(MIGRC_SYSFS "max_age_ms", self->old_age,
			   sizeof(self->old_age)), 0);
	/* Only a write may end the deferral within the test. */
	ASSERT_EQ(write_str(MIGRC_SYSFS "max_age_ms", PRECISE_AGE_MS), 0);
	self->age_set = true;
	env_setup(_metadata, &self->e, BUF_MEMFD, true);
}

FIXTURE_TEARDOWN(precise)
{
	env_teardown(&self->e);
	if (self->age_set)
		write_str(MIGRC_SYSFS "max_age_ms", self->old_age);
}

/*
 * Move the buffer with readers on the other CPUs, so that its flush is
 * deferred, then write elsewhere: the deferral must stay pending and no
 * write flush may happen.  Then write the buffer itself: that must flush,
 * and the readers must see the write.  A write elsewhere may share a slot
 * of the kernel's key table with a deferred page (about 1 in 1000 here),
 * which costs a needless flush; so a try that saw one is repeated, up to
 * PRECISE_TRIES times.  With a barrier that flushes on every write, every
 * try fails.
 */
TEST_F_TIMEOUT(precise, unrelated_writes_spared, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	long long w0, w1, s0, s1, p1, p2, d0, d1;
	int other, try, ok = 0;

	other = memfd_create("migrc_precise", 0);
	ASSERT_GE(other, 0);
	ASSERT_EQ(ftruncate(other, PRECISE_PAGES * e->page_size), 0);
	start_readers(_metadata, e);
	for (try = 0; try < PRECISE_TRIES && !ok; try++) {
		ASSERT_EQ(write_str(MIGRC_SYSFS "flush", "1"), 0);
		d0 = read_counter("migrc_deferred_pages");
		ASSERT_GT(move_all(e, e->node[!e->cur]), 0);
		e->cur = !e->cur;
		d1 = read_counter("migrc_deferred_pages");
		if (d1 == d0 || pending_pages() <= 0) {
			TH_LOG("try %d: the move deferred nothing", try);
			continue;
		}
		w0 = read_counter("migrc_flush_write");
		s0 = read_counter("migrc_writes_spared");
		unrelated_writes(_metadata, other, e->page_size);
		w1 = read_counter("migrc_flush_write");
		s1 = read_counter("migrc_writes_spared");
		p1 = pending_pages();
		TH_LOG("try %d: %lld pages deferred; writes elsewhere: %lld write flushes, %lld spared, %lld pages still pending",
		       try, d1 - d0, w1 - w0, s1 - s0, p1);
		/* The buffer itself: this one must flush. */
		write_gen_pwrite(_metadata, e, e->gen + 1);
		publish(e, e->gen + 1, 0);
		p2 = pending_pages();
		TH_LOG("try %d: after a write of the moved data: %lld write flushes, %lld pages pending",
		       try, read_counter("migrc_flush_write") - w1, p2);
		if (p1 > 0)
			ASSERT_GT(read_counter("migrc_flush_write"), w1);
		ASSERT_EQ(p2, 0);
		if (wait_readers(e))
			e->checked++;
		e->rounds++;
		ok = w1 == w0 && s1 > s0 && p1 > 0;
	}
	close(other);
	report(_metadata, e, "precise");
	ASSERT_TRUE(ok) {
		TH_LOG("every try: a write elsewhere flushed the deferral");
	}
}

/* ---------------------------------------------------------------------- */
/* 11. The time bound: after max_age_ms, no barrier is left to do it */

#define EXPIRED_AGE_MS		20

/*
 * Let the deferral expire, then write: the write's barrier finds the
 * generation done and flushes nothing, so the readers see the write only
 * if the time bound really removed their stale entries, by an IPI or by
 * the flush their CPU's tick did.
 */
static void expired_post(struct __test_metadata *_metadata, struct env *e,
			 int src, int dst)
{
	uint64_t gen = e->gen + 1;

	usleep(3 * EXPIRED_AGE_MS * 1000);
	write_gen_pwrite(_metadata, e, gen);
	publish(e, gen, 0);
}

FIXTURE(expired) {
	struct env e;
	char old_age[32];
	bool age_set;
};

FIXTURE_SETUP(expired)
{
	char age[16];

	self->age_set = false;
	if (cmdline_has("migrc=on")) {
		ASSERT_EQ(read_str(MIGRC_SYSFS "max_age_ms", self->old_age,
				   sizeof(self->old_age)), 0);
		snprintf(age, sizeof(age), "%d", EXPIRED_AGE_MS);
		ASSERT_EQ(write_str(MIGRC_SYSFS "max_age_ms", age), 0);
		self->age_set = true;
	}
	env_setup(_metadata, &self->e, BUF_MEMFD, true);
}

FIXTURE_TEARDOWN(expired)
{
	env_teardown(&self->e);
	if (self->age_set)
		write_str(MIGRC_SYSFS "max_age_ms", self->old_age);
}

TEST_F_TIMEOUT(expired, write_after_timeout_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "expired", .post = expired_post,
	};
	long long t0 = read_counter("migrc_tick_flushes");
	long long s0 = read_counter("migrc_cpus_skipped_tick");

	run_test(_metadata, &self->e, &hz);
	if (t0 >= 0)
		TH_LOG("tick flushes %lld, CPUs a timeout left out for them %lld",
		       read_counter("migrc_tick_flushes") - t0,
		       read_counter("migrc_cpus_skipped_tick") - s0);
}

/* ---------------------------------------------------------------------- */
/* 12. Large folios: the same hazards on anonymous and shmem mTHP, PMD THP */

#define THP_SYSFS		"/sys/kernel/mm/transparent_hugepage/"
#define NUMA_BALANCING		"/proc/sys/kernel/numa_balancing"
#define MTHP_SMALL_KB		16
#define MTHP_LARGE_KB		64

/* What the fixture changed, to restore. */
struct large_state {
	bool thp_pushed;	/* THP settings */
	char numab[16];		/* NUMA balancing mode, or "" */
};

FIXTURE(large) {
	struct env e;
	struct large_state st;
};

FIXTURE_VARIANT(large) {
	enum buf_kind kind;
	bool pmd;	/* one PMD-mapped THP, else 64 kB and 16 kB mTHPs */
};

FIXTURE_VARIANT_ADD(large, anon_mthp) {
	.kind = BUF_ANON,
};

FIXTURE_VARIANT_ADD(large, shmem_mthp) {
	.kind = BUF_SHM,
};

FIXTURE_VARIANT_ADD(large, anon_thp) {
	.kind = BUF_ANON,
	.pmd = true,
};

static int kb_order(unsigned long kb)
{
	return __builtin_ctzl(kb * 1024 / getpagesize());
}

static bool thp_size_file(unsigned long kb, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), THP_SYSFS "hugepages-%lukB/%s", kb,
		 name);
	return !access(path, W_OK);
}

FIXTURE_SETUP(large)
{
	const char *name = variant->kind == BUF_SHM ? "shmem_enabled" :
			   "enabled";
	unsigned long pmd_kb = read_pmd_pagesize() / 1024;

	self->st.thp_pushed = false;
	self->st.numab[0] = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root: THP settings, /proc/kpageflags");
	if (!pmd_kb || !thp_size_file(pmd_kb, name))
		SKIP(return, "no " THP_SYSFS "hugepages-<PMD size>kB/%s", name);
	if (!variant->pmd && (!thp_size_file(MTHP_SMALL_KB, name) ||
			      !thp_size_file(MTHP_LARGE_KB, name)))
		SKIP(return, "no " THP_SYSFS "hugepages-{%d,%d}kB/%s",
		     MTHP_SMALL_KB, MTHP_LARGE_KB, name);
	/*
	 * Only saved here: a setup that fails is not torn down, so the
	 * settings change in large_env(), within the test.
	 */
	thp_save_settings();
}

/* Undo large_env() and the fixture's setup. */
static void large_undo(struct env *e, struct large_state *st)
{
	/* Until env_setup() has begun, its descriptors are not -1 yet. */
	if (e->ctl)
		env_teardown(e);
	if (st->thp_pushed)
		thp_restore_settings();
	if (st->numab[0])
		write_str(NUMA_BALANCING, st->numab);
}

FIXTURE_TEARDOWN(large)
{
	large_undo(&self->e, &self->st);
}

/*
 * Folio sizes of the buffer, from the PFN of each page and its flags in
 * /proc/kpageflags: a folio is a compound head followed by the tails at
 * the next PFNs.  Every page must be in a large folio (KPF_THP); the mTHP
 * buffer must hold both sizes, the PMD one a single PMD-mapped THP.  Run
 * after faulting the buffer in and again after the test: a move whose
 * large destination could not be allocated splits the folio, and the test
 * would then have moved order-0 pages.
 */
static void check_large(struct __test_metadata *_metadata, struct env *e,
			bool pmd, const char *when)
{
	int pm, kf, i, nr = 0, folios[3] = { 0 }, small = 0, lens[3];
	uint64_t flags, head = 0;
	unsigned long pfn;

	lens[0] = MTHP_SMALL_KB * 1024 / e->page_size;
	lens[1] = MTHP_LARGE_KB * 1024 / e->page_size;
	lens[2] = read_pmd_pagesize() / e->page_size;
	pm = open("/proc/self/pagemap", O_RDONLY);
	kf = open("/proc/kpageflags", O_RDONLY);
	ASSERT_TRUE(pm >= 0 && kf >= 0) {
		TH_LOG("cannot open pagemap or kpageflags: %s",
		       strerror(errno));
	}
	for (i = 0; i <= e->npages; i++) {
		flags = 0;
		pfn = 0;
		if (i < e->npages) {
			(void)*(volatile uint64_t *)e->pages[i];
			pfn = pagemap_get_pfn(pm, e->pages[i]);
			ASSERT_NE(pfn, -1UL);
			ASSERT_EQ(pread(kf, &flags, sizeof(flags),
					pfn * sizeof(flags)),
				  (ssize_t)sizeof(flags));
		}
		if (nr && (flags & (1ULL << KPF_COMPOUND_TAIL)) &&
		    pfn == head + nr) {
			nr++;
			continue;
		}
		/* A folio ended at page i - 1. */
		if (nr == lens[0])
			folios[0]++;
		else if (nr == lens[1])
			folios[1]++;
		else if (nr == lens[2])
			folios[2]++;
		else
			small += nr;
		nr = 0;
		if (i == e->npages)
			break;
		if ((flags & (1ULL << KPF_COMPOUND_HEAD)) &&
		    (flags & (1ULL << KPF_THP))) {
			head = pfn;
			nr = 1;
		} else {
			small++;
		}
	}
	close(pm);
	close(kf);
	TH_LOG("%s: %d pages in %d kB folios, %d in %d kB, %d in PMD THPs, %d in other folios",
	       when, folios[0] * lens[0], MTHP_SMALL_KB,
	       folios[1] * lens[1], MTHP_LARGE_KB, folios[2] * lens[2], small);
	ASSERT_EQ(small, 0) {
		TH_LOG("the buffer is not (only) made of large folios");
	}
	if (pmd && e->kind == BUF_ANON) {
		ASSERT_EQ(folios[2], 1);
		/* AnonHugePages: mapped by a PMD, not by PTEs. */
		ASSERT_TRUE(check_huge_anon(e->rbuf, 1, read_pmd_pagesize()));
	} else if (pmd) {
		/* pmd_file's memfd of PMD size, mapped a page off alignment. */
		ASSERT_TRUE(e->kind == BUF_MEMFD);
		ASSERT_EQ(folios[2], 1);
		/* A file of PMD size that the readers map by PTEs only. */
		ASSERT_TRUE(check_huge_shmem(e->rbuf, 0, read_pmd_pagesize()));
	} else {
		ASSERT_TRUE(folios[0] && folios[1]);
	}
}

/*
 * Set the THP sizes, create the buffer and check its folios.  mTHP: a
 * 64 kB aligned VMA of 64 kB + 2 x 16 kB with only those sizes enabled
 * gets one 64 kB folio and, where 64 kB no longer fits, two of 16 kB; the
 * PMD size is off, so that nothing (khugepaged) makes a PMD of them.
 * PMD: one 2 MB aligned, MADV_HUGEPAGE THP and no mTHP size.
 */
static bool large_env(struct __test_metadata *_metadata, struct env *e,
		      struct large_state *st, enum buf_kind kind, bool pmd)
{
	int pmd_order = kb_order(read_pmd_pagesize() / 1024), i;
	size_t ps = getpagesize();
	struct thp_settings s;
	struct layout lay;

	thp_read_settings(&s);
	s.thp_enabled = THP_MADVISE;
	s.thp_defrag = THP_DEFRAG_MADVISE;
	for (i = 0; i < NR_ORDERS; i++) {
		s.hugepages[i].enabled = THP_NEVER;
		s.shmem_hugepages[i].enabled = SHMEM_NEVER;
	}
	if (pmd && kind == BUF_MEMFD) {
		/*
		 * A memfd's folios follow the top-level shmem_enabled; the
		 * pwrite() of env_setup_layout() allocates the THP, with no
		 * VMA to advise it: let it compact, so that the setup does
		 * not depend on how fragmented memory is.
		 */
		s.shmem_enabled = SHMEM_ALWAYS;
		s.thp_defrag = THP_DEFRAG_ALWAYS;
		lay = (struct layout) {
			.pages = read_pmd_pagesize() / ps,
			.align = read_pmd_pagesize(),
			.misalign = true,
		};
	} else if (pmd) {
		s.hugepages[pmd_order].enabled = THP_INHERIT;
		lay = (struct layout) {
			.pages = read_pmd_pagesize() / ps,
			.align = read_pmd_pagesize(),
			.hugepage = true,
		};
	} else {
		s.hugepages[kb_order(MTHP_SMALL_KB)].enabled = THP_ALWAYS;
		s.hugepages[kb_order(MTHP_LARGE_KB)].enabled = THP_ALWAYS;
		s.shmem_hugepages[kb_order(MTHP_SMALL_KB)].enabled =
			SHMEM_ALWAYS;
		s.shmem_hugepages[kb_order(MTHP_LARGE_KB)].enabled =
			SHMEM_ALWAYS;
		lay = (struct layout) {
			.pages = (MTHP_LARGE_KB + 2 * MTHP_SMALL_KB) * 1024 / ps,
			.align = MTHP_LARGE_KB * 1024,
		};
	}
	thp_push_settings(&s);
	st->thp_pushed = true;
	/*
	 * NUMA balancing's scanner write-protects the buffer at random
	 * moments, which rightly keeps a move from deferring
	 * (migrc_wp_in_flight), and its faults move the pages behind the
	 * mover's back: the counts below are the mover's only without it.
	 */
	if (!read_str(NUMA_BALANCING, st->numab, sizeof(st->numab)) &&
	    write_str(NUMA_BALANCING, "0"))
		st->numab[0] = 0;
	if (!env_setup_layout(_metadata, e, kind, true, &lay))
		return false;
	e->large = true;
	e->align = lay.align;
	e->refresh = kind == BUF_ANON && !pmd;
	e->short0 = calloc(2, sizeof(*e->short0));
	ASSERT_NE(e->short0, NULL);
	e->short1 = e->short0 + 1;
	check_large(_metadata, e, pmd, "faulted in");
	e->count_large = cmdline_has("migrc=on");
	return true;
}

/*
 * With migrc=on, what the moves deferred.  A PTE-mapped large folio
 * unmapped read-only, with a reader on another CPU holding its TLB
 * entries, is deferred: the moves must defer at least 7/8 of the pages
 * they moved.  Not all: a write-protect of the process that happens to be
 * in flight rightly makes a move flush at once (migrc_wp_in_flight: seen
 * in 1 move of 300 while NUMA balancing scanned, before the fixture
 * turned it off; the margin keeps the test from depending on there being
 * no other such writer).  A kernel that flushes large folios at once
 * defers none of them, one that defers only the 16 kB folios a third.
 * A PMD-mapped THP is flushed at once: each move flushes
 * its PMD (migrc_pmd_entries) and defers none of its pages, so no move
 * may defer as many pages as the THP has (fewer is other activity in
 * the system, which the global counter also sees).
 */
static void check_large_counters(struct __test_metadata *_metadata,
				 struct env *e, bool pmd)
{
	int i;

	if (!e->count_large)
		return;
	TH_LOG("migrc=on: %lu moves of %lu pages deferred %lld pages, at most %lld in one move",
	       e->large_moves, e->large_moved, e->large_deferred,
	       e->large_max_deferred);
	TH_LOG("migrc=on: %lu moves deferred fewer pages than moved; %lld PMD flushes at once",
	       e->large_short, e->large_pmd);
	/* Why a move of mTHPs flushed at once: what else it counted. */
	for (i = 0; !pmd && e->large_short && i < e->short1->n; i++) {
		long long d = e->short1->val[i] -
			      counter(e->short0, e->short1->name[i]);

		if (d)
			TH_LOG("first move that deferred fewer pages than it moved: %s +%lld",
			       e->short1->name[i], d);
	}
	ASSERT_GT(e->large_moves, 0UL);
	if (pmd) {
		ASSERT_GE(e->large_pmd, (long long)e->large_moves) {
			TH_LOG("migrc_pmd_entries missing or short");
		}
		ASSERT_LT(e->large_max_deferred, (long long)e->npages);
	} else {
		ASSERT_GE(e->large_deferred,
			  (long long)(e->large_moved - e->large_moved / 8)) {
			TH_LOG("moves of read-only mTHPs were flushed at once");
		}
	}
}

/* The freed sources of large folios reused by another process. */
TEST_F_TIMEOUT(large, freed_source_pages, TEST_TIMEOUT)
{
	if (!large_env(_metadata, &self->e, &self->st, variant->kind,
		       variant->pmd))
		return;
	run_reuse(_metadata, &self->e);
	check_large(_metadata, &self->e, variant->pmd, "after the test");
	check_large_counters(_metadata, &self->e, variant->pmd);
}

/* The readers' mapping made writable and written (mprotect hazard). */
TEST_F_TIMEOUT(large, mprotect_write_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "mprotect", .post = mprotect_post,
	};

	if (!large_env(_metadata, &self->e, &self->st, variant->kind,
		       variant->pmd))
		return;
	run_test(_metadata, &self->e, &hz);
	check_large(_metadata, &self->e, variant->pmd, "after the test");
	check_large_counters(_metadata, &self->e, variant->pmd);
}

/*
 * write() into the shmem file behind the mapping (its page cache, not
 * the page tables), through /proc/self/map_files.
 */
TEST_F_TIMEOUT(large, pwrite_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "file_write", .post = pwrite_post,
	};
	struct env *e = &self->e;
	char path[64];

	if (variant->kind != BUF_SHM)
		SKIP(return, "anonymous memory has no file to write");
	if (!large_env(_metadata, &self->e, &self->st, variant->kind,
		       variant->pmd))
		return;
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx",
		 (unsigned long)e->rbuf, (unsigned long)e->rbuf + e->len);
	e->fd = open(path, O_RDWR);
	ASSERT_GE(e->fd, 0) {
		TH_LOG("%s: %s", path, strerror(errno));
	}
	run_test(_metadata, e, &hz);
	check_large(_metadata, e, variant->pmd, "after the test");
	check_large_counters(_metadata, e, variant->pmd);
}

/* ---------------------------------------------------------------------- */
/*
 * 13. A shmem folio of PMD size: the readers map it by PTEs (their mapping
 * is a page off the PMD alignment), and after every move another process
 * writes it through a PMD-aligned shared mapping.  Its write fault maps
 * the whole folio by one writable PMD (do_set_pmd()), which no barrier of
 * migrc's sees: if the move had deferred the readers' entries, they would
 * go on reading the source.  So migrc must flush such a folio at once
 * (migrc_folio_eligible(), counted in migrc_excluded_large); the debug
 * fault attribute defer_pmd_file lifts that and must make this fail.
 */

#define SHMEM_ENABLED	THP_SYSFS "shmem_enabled"

/*
 * The writer: map the file PMD-aligned, write the generation it is sent,
 * and answer it with CHILD_BIT set if the mapping was a PMD; then zap it,
 * so that the next move sees the readers' PTEs only.
 */
static void pmd_file_writer(struct env *e, int cmd, int ack)
{
	size_t align = read_pmd_pagesize();
	uint64_t gen, *w;
	char *p;

	p = mmap(NULL, e->len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	w = (uint64_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (mmap(w, e->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 e->fd, 0) != w)
		_exit(1);
	while (read(cmd, &gen, sizeof(gen)) == sizeof(gen)) {
		fill_words(w, e->nwords, gen, 0);
		if (check_huge_shmem(w, 1, align))
			gen |= CHILD_BIT;
		if (madvise(w, e->len, MADV_DONTNEED))
			_exit(1);
		if (write(ack, &gen, sizeof(gen)) != sizeof(gen))
			_exit(1);
	}
	_exit(0);
}

static void pmd_file_post(struct __test_metadata *_metadata, struct env *e,
			  int src, int dst)
{
	uint64_t gen = e->gen + 1, ack;

	ASSERT_EQ(write(e->cmd_fd, &gen, sizeof(gen)), (ssize_t)sizeof(gen));
	ASSERT_EQ(read(e->ack_fd, &ack, sizeof(ack)), (ssize_t)sizeof(ack)) {
		TH_LOG("the writer process died");
	}
	ASSERT_EQ(ack & ~CHILD_BIT, gen);
	if (ack & CHILD_BIT)
		e->pmd_writes++;
	publish(e, gen, 0);
}

FIXTURE(pmd_file) {
	struct env e;
	struct large_state st;
};

FIXTURE_SETUP(pmd_file)
{
	unsigned long pmd_kb = read_pmd_pagesize() / 1024;

	self->st.thp_pushed = false;
	self->st.numab[0] = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root: THP settings, /proc/kpageflags");
	if (!pmd_kb || access(SHMEM_ENABLED, W_OK))
		SKIP(return, "no writable " SHMEM_ENABLED);
	/* A writer that died fails the test through EPIPE, not SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	thp_save_settings();
}

FIXTURE_TEARDOWN(pmd_file)
{
	large_undo(&self->e, &self->st);
}

TEST_F_TIMEOUT(pmd_file, other_mm_pmd_write_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "pmd_file", .post = pmd_file_post,
	};
	struct env *e = &self->e;
	int cmd, ack;

	if (!large_env(_metadata, e, &self->st, BUF_MEMFD, true))
		return;
	if (!spawn_child(_metadata, e, &cmd, &ack))
		pmd_file_writer(e, cmd, ack);
	run_test(_metadata, e, &hz);
	check_large(_metadata, e, true, "after the test");
	TH_LOG("pmd_file: %lu of %lu rounds wrote through a PMD",
	       e->pmd_writes, e->rounds);
	ASSERT_EQ(e->pmd_writes, e->rounds) {
		TH_LOG("the writer did not always write through a PMD");
	}
	if (!e->count_large)
		return;
	TH_LOG("migrc=on: %lu moves of %lu pages deferred %lld pages, at most %lld in one move",
	       e->large_moves, e->large_moved, e->large_deferred,
	       e->large_max_deferred);
	TH_LOG("migrc=on: migrc_excluded_large +%lld", e->large_excluded);
	ASSERT_GT(e->large_moves, 0UL);
	/* No move deferred the folio; each counted it as excluded. */
	ASSERT_LT(e->large_max_deferred, (long long)e->npages);
	ASSERT_GE(e->large_excluded, (long long)e->large_moved);
}

/* ---------------------------------------------------------------------- */
/*
 * 14. The file grows over a partial page.  With blocks smaller than a
 * page, the bytes of the EOF page past EOF are not file data: a shared
 * mapping may store anything there, and writeback zeroes them
 * (ext4_bio_write_folio(), block_write_full_folio(), iomap).  When the file
 * grows, they become file data, zeroed by that writeback and not by a
 * write that passes a barrier: pagecache_isize_extended() runs migrc's
 * write barrier on the EOF folio for it.  Each round stores past EOF,
 * moves the page, writes the file back and extends it; the readers must
 * then read the tail as zero, not the bytes the stale entry of the
 * source still shows.
 */

#define EOF_BYTES	1024	/* EOF inside the page, on a block boundary */
/*
 * The data before EOF is written once, before the readers start, at a
 * generation at least as new as any the test publishes, so that every
 * check accepts it: only the bytes past EOF change.
 */
#define EOF_DATA_GEN	0x7fff0000ULL

static void eof_pre(struct __test_metadata *_metadata, struct env *e,
		    int src, int dst)
{
	size_t i;

	/* The shrink zeroes the tail: let every reader know first. */
	publish(e, e->gen, PUB_ZERO_OK);
	wait_readers(e);
	ASSERT_EQ(ftruncate(e->fd, EOF_BYTES), 0);
	/*
	 * Past EOF, the published generation (a word the readers catch
	 * half stored or half zeroed is then recognised as torn).
	 */
	for (i = EOF_BYTES / sizeof(uint64_t); i < e->nwords; i++)
		e->wbuf[i] = word_enc(i, e->gen);
	/* Only the readers' read-only PTEs map the page when it moves. */
	ASSERT_EQ(madvise(e->wbuf, e->len, MADV_DONTNEED), 0);
}

/*
 * A write two pages on moves EOF past the page: the write passes its
 * barrier for the folio it writes, another page; only
 * pagecache_isize_extended() looks at the EOF page.  (ftruncate() would
 * pass truncate_pagecache()'s barrier too, which covers the whole file.)
 */
static void eof_post(struct __test_metadata *_metadata, struct env *e,
		     int src, int dst)
{
	uint64_t word = 1;

	/* Writeback zeroes the destination past EOF; then EOF moves on. */
	ASSERT_EQ(fsync(e->fd), 0);
	ASSERT_EQ(pwrite(e->fd, &word, sizeof(word), 2 * e->len),
		  (ssize_t)sizeof(word));
	/* The tail is file data now, and zero: what it held is stale. */
	publish(e, e->gen + 1, PUB_ZERO_OK);
}

FIXTURE(eof) {
	struct env e;
};

FIXTURE_SETUP(eof)
{
	const struct layout lay = { .pages = 1, .align = getpagesize() };
	const char *dir = getenv("MIGRC_EOF_DIR");
	struct statfs sf;

	if (!dir)
		SKIP(return, "MIGRC_EOF_DIR unset: no filesystem with blocks smaller than a page");
	ASSERT_EQ(statfs(dir, &sf), 0) {
		TH_LOG("%s: %s", dir, strerror(errno));
	}
	/*
	 * EOF on a block boundary: inside a block, the extending write
	 * would zero the rest of that block itself (ext4_zero_partial_blocks())
	 * and pass that zeroing's barrier, and the test would not depend on
	 * pagecache_isize_extended()'s.
	 */
	if (sf.f_bsize >= getpagesize() || EOF_BYTES % sf.f_bsize)
		SKIP(return, "%s has %ld-byte blocks: not smaller than a page, or not dividing %d",
		     dir, (long)sf.f_bsize, EOF_BYTES);
	ASSERT_EQ(setenv("MIGRC_TEST_DIR", dir, 1), 0);
	if (!env_setup_layout(_metadata, &self->e, BUF_TMPFILE, true, &lay))
		return;
	self->e.wbuf = mmap(NULL, self->e.len, PROT_READ | PROT_WRITE,
			    MAP_SHARED, self->e.fd, 0);
	ASSERT_NE(self->e.wbuf, MAP_FAILED);
	/* With migrc=on, what each move deferred (count_large_move()). */
	self->e.count_large = cmdline_has("migrc=on");
	self->e.short0 = calloc(2, sizeof(*self->e.short0));
	ASSERT_NE(self->e.short0, NULL);
	self->e.short1 = self->e.short0 + 1;
	fill_words(self->e.content, EOF_BYTES / sizeof(uint64_t),
		   EOF_DATA_GEN, 0);
	ASSERT_EQ(pwrite(self->e.fd, self->e.content, EOF_BYTES, 0),
		  EOF_BYTES);
}

FIXTURE_TEARDOWN(eof)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(eof, extend_zeroes_seen, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "eof", .pre = eof_pre, .post = eof_post,
	};
	struct env *e = &self->e;

	run_test(_metadata, e, &hz);
	if (!e->count_large)
		return;
	/*
	 * With migrc=on, most moves deferred the page: else this tested
	 * nothing.  Not necessarily all (see check_large_counters()).
	 */
	TH_LOG("migrc=on: %lu moves of %lu pages deferred %lld pages",
	       e->large_moves, e->large_moved, e->large_deferred);
	ASSERT_GT(e->large_moves, 0UL);
	ASSERT_GE(e->large_deferred,
		  (long long)(e->large_moved - e->large_moved / 8));
}

/* ---------------------------------------------------------------------- */
/* 15. Counters; keep this fixture last so that it sees every other test. */

FIXTURE(counters) {
	struct env e;
};

FIXTURE_SETUP(counters)
{
	struct counters c;

	read_counters(&c);
	if (!c.n)
		SKIP(return, "kernel has no migrc_* counters in /proc/vmstat");
	env_setup(_metadata, &self->e, BUF_MEMFD, true);
}

FIXTURE_TEARDOWN(counters)
{
	env_teardown(&self->e);
}

TEST_F_TIMEOUT(counters, vmstat, TEST_TIMEOUT)
{
	static const struct hazard hz = {
		.what = "counters", .post = pwrite_post,
	};
	bool on = cmdline_has("migrc=on");
	struct counters c0, c1;
	int i;

	read_counters(&c0);
	run_test(_metadata, &self->e, &hz);
	read_counters(&c1);
	for (i = 0; i < c1.n; i++)
		TH_LOG("%s: program start %lld, test start %lld, end %lld",
		       c1.name[i], counter(&start_counters, c1.name[i]),
		       counter(&c0, c1.name[i]), c1.val[i]);
	if (on) {
		ASSERT_GT(counter(&c1, "migrc_deferred_pages"),
			  counter(&c0, "migrc_deferred_pages"));
		return;
	}
	/* migrc off: nothing is ever deferred, every counter stays 0. */
	for (i = 0; i < start_counters.n; i++) {
		EXPECT_EQ(start_counters.val[i], 0) {
			TH_LOG("%s is %lld at program start with migrc off",
			       start_counters.name[i], start_counters.val[i]);
		}
	}
	for (i = 0; i < c1.n; i++) {
		EXPECT_EQ(c1.val[i], 0) {
			TH_LOG("%s is %lld with migrc off", c1.name[i],
			       c1.val[i]);
		}
	}
}

TEST_HARNESS_MAIN

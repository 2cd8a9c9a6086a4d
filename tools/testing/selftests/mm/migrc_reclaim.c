// SPDX-License-Identifier: GPL-2.0
/*
 * migrc_reclaim - stale TLB entry test for deferred reclaim TLB flushing.
 *
 * With migrc, reclaim that unmaps a folio whose mappings are all read-only
 * and clean (shrink_folio_list() -> try_to_unmap()) does not send the TLB
 * shootdown before freeing it: the folio is freed tagged, and the flush must
 * happen before the page is handed out again (or after max_age_ms).  A CPU
 * that still holds a TLB entry for the freed page reads whatever the page's
 * next owner writes there if that flush is missing.
 *
 * Method.  The test process moves itself into a child memory cgroup whose
 * memory.max is much smaller than a read-only MAP_SHARED mapping of a large
 * regular file on a disk-like filesystem (not tmpfs, which could only be
 * reclaimed to swap): in the test VM, the host's root over 9p with a page
 * cache, or an ext4 filesystem on a loop device (harness/guest/scratch-ext4).
 * The expected content of every page of the window is first read with
 * pread() into a table of per-page checksums.  Reader threads,
 * each pinned to its own CPU other than the first, stream over the mapping
 * and check every page against its checksum with volatile loads, no system
 * calls (only page faults), so nothing but a real TLB flush drops their TLB
 * entries (under QEMU TCG each vCPU keeps its software TLB until the guest
 * flushes it).  The mapping does not fit in the cgroup, so the readers'
 * own refaults keep reclaiming the pages they mapped a moment ago.
 * Meanwhile a filler process in the parent cgroup (not limited), pinned to
 * the first CPU, keeps allocating anonymous memory, filling it with a
 * FILLER pattern and freeing it, so that the freed page cache pages are
 * quickly reused.  A reader that reads through a stale entry after its page
 * was reused sees the filler (or other data) and the page's checksum does
 * not match.
 *
 * Variants:
 *   limit      reclaim driven by memory.max only: the readers reclaim in
 *              their own page faults (with a single reader, little of it is
 *              deferrable: while the mm is loaded on the reader's CPU only,
 *              the unmap flushes locally at once)
 *   proactive  in addition the main thread, on the first CPU, writes to
 *              memory.reclaim (so reclaim also runs on a CPU other than the
 *              readers', and the readers' CPUs are the ones deferred), and
 *              migrc's max_age_ms and max_pending_pages are raised (1 s,
 *              128 MB) so that neither the timeout nor the pressure flush
 *              can hide a missing allocation flush: a reader comes back to
 *              a reclaimed page well within that time
 *
 * Asserts: no mismatch; every reader completed at least one full pass and
 * all together at least MIN_PASSES (on a slow host the run is extended to
 * at most GRACE_FACTOR times MIGRC_TEST_SECONDS for that); the cgroup
 * really reclaimed (pgsteal); with migrc on and the file on a filesystem
 * in migrc's safe set (ext4), migrc_deferred_reclaim increased (the test
 * exercised the deferral; in the limit variant only with two readers or
 * more, see above); with migrc on and the file outside it (the host root
 * over 9p in the test VM), migrc_deferred_reclaim stayed 0 and
 * migrc_excluded_pages increased; with migrc off (kernel with migrc
 * counters), every migrc_* counter stayed 0.  harness/run-selftests runs
 * the test on both kinds of file.
 *
 * The method suits QEMU TCG, whose software TLB keeps a vCPU's entries
 * until the guest flushes it; a hardware TLB is much smaller than the
 * window and drops most entries before the reader comes back to a
 * reclaimed page, so there the test is weaker.
 *
 * Environment: MIGRC_TEST_SECONDS (per variant, default 4),
 * MIGRC_RECLAIM_FILE (default /usr/src/linux-source-6.12.tar.xz, else the
 * first regular file of at least the window size found under /usr),
 * MIGRC_RECLAIM_MB (window, default 48), MIGRC_RECLAIM_LIMIT_MB (memory.max,
 * default 20).  Needs root, the cgroup v2 memory controller and 2 CPUs.
 */
#include "../kselftest_harness.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "migrc_util.h"

#define DEFAULT_SECONDS		4.0
#define MAX_SECONDS		60.0
#define TEST_TIMEOUT		300
#define DEFAULT_WINDOW_MB	48
#define DEFAULT_LIMIT_MB	20
#define FILLER_MB		32
#define MAX_READERS		8
#define MIN_PASSES		2
#define GRACE_FACTOR		4
#define NSAMPLES		8
#define SEARCH_DEPTH		5
#define RECLAIM_CHUNK		"4M"
#define RECLAIM_PERIOD_MS	10
#define LONG_AGE_MS		1000
#define BIG_PENDING		32768	/* pages, 128 MB */

#define FILLER			0xdeadbeefcafef00dULL
#define CGROOT			"/sys/fs/cgroup"
#define CG_PATH_MAX		(PATH_MAX / 2)
#define MIGRC_SYSFS		"/sys/kernel/mm/migrc/"
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC		0x01021994
#endif

struct sample {
	size_t page;
	uint64_t expect;
	uint64_t got;
	uint64_t again;		/* checksum of a second read at once */
	uint64_t word0;		/* first word of the page, second read */
};

struct reader {
	pthread_t thread;
	int cpu;
	int pin_err;
	size_t start;		/* first page of each pass */
	struct env *e;
	/* Written by the reader. */
	unsigned long passes __attribute__((aligned(64)));
	unsigned long pages;
	unsigned long mismatches;
	unsigned long transient;	/* matched when read again at once */
	unsigned long filler_seen;
	unsigned int nsamples;
	struct sample sample[NSAMPLES];
} __attribute__((aligned(64)));

struct env {
	int fd;
	const char *path;
	bool safe_fs;		/* on a filesystem in migrc's safe set */
	char fstype[32];
	char pathbuf[PATH_MAX];
	size_t page_size;
	size_t len;
	size_t npages;
	size_t limit;
	double seconds;
	const volatile uint64_t *map;
	uint64_t *sum;		/* expected checksum of every page */
	int cpus[MAX_READERS + 1];
	int ncpus;
	int nreaders;
	struct reader *readers;
	bool readers_running;
	int stop __attribute__((aligned(64)));
	/* cgroups */
	char parent[CG_PATH_MAX];
	char child[CG_PATH_MAX + 32];
	bool child_made;
	bool moved;
	bool enabled_memory;
	/* filler */
	pid_t filler;
	volatile unsigned long *filler_rounds;
	/* migrc tunable */
	char old_age[32];
	bool age_changed;
	char old_pending[32];
	bool pending_changed;
};

/* ---------------------------------------------------------------------- */
/* Helpers */

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Read a small file into buf, NUL-terminated, without the final newline. */
static int read_file(const char *path, char *buf, size_t size)
{
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, size - 1);
	if (len < 0) {
		len = -errno;
		close(fd);
		return len;
	}
	close(fd);
	buf[len] = 0;
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = 0;
	return 0;
}

static int write_file(const char *path, const char *val)
{
	ssize_t len = strlen(val), ret;
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, val, len);
	if (ret != len) {
		ret = ret < 0 ? -errno : -EIO;
		close(fd);
		return ret;
	}
	close(fd);
	return 0;
}

static int cg_write(const char *cg, const char *file, const char *val)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return write_file(path, val);
}

/* Value of "key value" in a flat keyed file (memory.stat, memory.events). */
static long long cg_key(const char *cg, const char *file, const char *key)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return read_keyed(path, key);
}

static bool word_in(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		if ((p == list || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return true;
		p += n;
	}
	return false;
}

/* The cgroup v2 directory this process is in. */
static bool own_cgroup(char *out, size_t size)
{
	char line[CG_PATH_MAX - 32];
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		if (strncmp(line, "0::/", 4))
			continue;
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		snprintf(out, size, CGROOT "%s", line + 3);
		len = strlen(out);
		if (len > 1 && out[len - 1] == '/')
			out[len - 1] = 0;
		found = true;
		break;
	}
	fclose(f);
	return found;
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

static struct counters start_counters;

static void __attribute__((constructor)) snapshot_start_counters(void)
{
	read_counters(&start_counters);
}

static bool cmdline_has(const char *word)
{
	char buf[4096];

	if (read_file("/proc/cmdline", buf, sizeof(buf)))
		return false;
	return word_in(buf, word);
}

/* Is migrc on?  The sysfs state if there is one, else the command line. */
static bool migrc_on(void)
{
	char buf[16];

	if (!read_file(MIGRC_SYSFS "enabled", buf, sizeof(buf)))
		return !strcmp(buf, "on");
	return cmdline_has("migrc=on");
}

/* ---------------------------------------------------------------------- */
/* The file */

static size_t want_size;
static char found_path[PATH_MAX];

static bool file_ok(const char *path, const struct stat *st, size_t size)
{
	struct statfs sfs;

	if (!S_ISREG(st->st_mode) || (size_t)st->st_size < size)
		return false;
	if (statfs(path, &sfs) || sfs.f_type == TMPFS_MAGIC)
		return false;
	return access(path, R_OK) == 0;
}

static int search_cb(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	if (type == FTW_D && ftw->level >= SEARCH_DEPTH)
		return FTW_SKIP_SUBTREE;
	if (type == FTW_F && file_ok(path, st, want_size)) {
		snprintf(found_path, sizeof(found_path), "%s", path);
		return FTW_STOP;
	}
	return FTW_CONTINUE;
}

/* The file to map, or NULL with the reason in why. */
static const char *find_file(size_t size, const char **why)
{
	static const char * const dirs[] = {
		"/usr/src", "/usr/lib", "/usr/share", "/usr",
	};
	const char *env = getenv("MIGRC_RECLAIM_FILE");
	struct stat st;
	unsigned int i;

	if (env && *env) {
		if (stat(env, &st) || !file_ok(env, &st, size)) {
			*why = "MIGRC_RECLAIM_FILE is not a readable regular file of the window size outside tmpfs";
			return NULL;
		}
		return env;
	}
	if (!stat("/usr/src/linux-source-6.12.tar.xz", &st) &&
	    file_ok("/usr/src/linux-source-6.12.tar.xz", &st, size))
		return "/usr/src/linux-source-6.12.tar.xz";
	want_size = size;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (nftw(dirs[i], search_cb, 16,
			 FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL) == FTW_STOP)
			return found_path;
	*why = "no regular file of the window size found under /usr (set MIGRC_RECLAIM_FILE)";
	return NULL;
}

/*
 * Position-dependent page checksum (Fletcher-like over 64-bit words).  A
 * page of FILLER, of zeros or of another page's data does not match.
 */
static inline uint64_t page_sum(const volatile uint64_t *p, size_t n)
{
	uint64_t a = 0x9e3779b97f4a7c15ULL, b = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		a += p[i];
		b += a;
	}
	return a ^ (b * 0xff51afd7ed558ccdULL);
}

/* ---------------------------------------------------------------------- */
/* Readers */

static void __attribute__((noinline))
record_mismatch(struct reader *r, size_t page, uint64_t got)
{
	struct env *e = r->e;
	const volatile uint64_t *p = e->map + page * (e->page_size / 8);
	uint64_t again = page_sum(p, e->page_size / 8);
	uint64_t w0 = p[0];

	r->mismatches++;
	if (again == e->sum[page])
		r->transient++;
	if (w0 == FILLER)
		r->filler_seen++;
	if (r->nsamples < NSAMPLES) {
		struct sample *s = &r->sample[r->nsamples++];

		s->page = page;
		s->expect = e->sum[page];
		s->got = got;
		s->again = again;
		s->word0 = w0;
	}
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct env *e = r->e;
	const size_t words = e->page_size / 8, n = e->npages;
	size_t k, page;

	r->pin_err = pin_self(r->cpu);
	while (!__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) {
		for (k = 0; k < n; k++) {
			uint64_t got;

			if (__atomic_load_n(&e->stop, __ATOMIC_RELAXED))
				break;
			page = r->start + k;
			if (page >= n)
				page -= n;
			got = page_sum(e->map + page * words, words);
			if (__builtin_expect(got != e->sum[page], 0))
				record_mismatch(r, page, got);
			r->pages++;
		}
		if (k == n)
			__atomic_add_fetch(&r->passes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Every reader did a full pass, and all together MIN_PASSES. */
static bool enough_passes(struct env *e)
{
	unsigned long total = 0, p;
	int i;

	for (i = 0; i < e->nreaders; i++) {
		p = __atomic_load_n(&e->readers[i].passes, __ATOMIC_RELAXED);
		if (!p)
			return false;
		total += p;
	}
	return total >= MIN_PASSES;
}

static void stop_readers(struct env *e)
{
	int i;

	if (!e->readers_running)
		return;
	__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < e->nreaders; i++)
		if (e->readers[i].thread)
			pthread_join(e->readers[i].thread, NULL);
	e->readers_running = false;
}

/* ---------------------------------------------------------------------- */
/* Filler: reuses freed pages quickly, from the parent cgroup, first CPU */

static void __attribute__((noreturn)) filler_main(struct env *e)
{
	size_t sz = (size_t)FILLER_MB << 20, i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	pin_self(e->cpus[0]);
	for (;;) {
		volatile uint64_t *p;

		p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			sleep_ms(1);
			continue;
		}
		for (i = 0; i < sz / sizeof(*p); i++)
			p[i] = FILLER;
		munmap((void *)p, sz);
		(*e->filler_rounds)++;
	}
}

/* ---------------------------------------------------------------------- */
/* Fixture */

FIXTURE(reclaim) {
	struct env e;
};

FIXTURE_VARIANT(reclaim) {
	bool proactive;
	unsigned int max_age_ms;	/* 0: leave it */
	unsigned long max_pending;	/* 0: leave it */
};

FIXTURE_VARIANT_ADD(reclaim, limit) {
	.proactive = false,
	.max_age_ms = 0,
	.max_pending = 0,
};

FIXTURE_VARIANT_ADD(reclaim, proactive) {
	.proactive = true,
	.max_age_ms = LONG_AGE_MS,
	.max_pending = BIG_PENDING,
};

/* Cheap checks only: whatever is created is created by the test. */
FIXTURE_SETUP(reclaim)
{
	struct env *e = &self->e;
	char buf[4096];
	const char *why = NULL;
	cpu_set_t set;
	int i;

	memset(e, 0, sizeof(*e));
	e->fd = -1;
	e->page_size = getpagesize();
	e->seconds = env_double("MIGRC_TEST_SECONDS", DEFAULT_SECONDS, 0.2,
				MAX_SECONDS);
	e->len = (size_t)env_double("MIGRC_RECLAIM_MB", DEFAULT_WINDOW_MB,
				    4, 4096) << 20;
	e->limit = (size_t)env_double("MIGRC_RECLAIM_LIMIT_MB",
				      DEFAULT_LIMIT_MB, 4, 4096) << 20;
	e->npages = e->len / e->page_size;

	if (geteuid() != 0)
		SKIP(return, "need root to create a memory cgroup");
	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	for (i = 0; i < CPU_SETSIZE && e->ncpus < MAX_READERS + 1; i++)
		if (CPU_ISSET(i, &set))
			e->cpus[e->ncpus++] = i;
	if (e->ncpus < 2)
		SKIP(return, "need at least 2 CPUs");
	if (e->limit >= e->len)
		SKIP(return, "MIGRC_RECLAIM_LIMIT_MB must be below MIGRC_RECLAIM_MB");
	if (!own_cgroup(e->parent, sizeof(e->parent)))
		SKIP(return, "not in a cgroup v2 hierarchy");
	snprintf(buf, sizeof(buf), "%s/cgroup.controllers", e->parent);
	if (read_file(buf, buf, sizeof(buf)))
		SKIP(return, "no cgroup v2 mounted at " CGROOT);
	if (!word_in(buf, "memory"))
		SKIP(return, "cgroup v2 memory controller not available");
	e->path = find_file(e->len, &why);
	if (!e->path)
		SKIP(return, "%s", why);
	snprintf(e->pathbuf, sizeof(e->pathbuf), "%s", e->path);
	e->path = e->pathbuf;
	/* ext4 is the one disk filesystem in the safe set today. */
	migrc_fs_type(e->path, e->fstype, sizeof(e->fstype));
	e->safe_fs = !strcmp(e->fstype, "ext4");
}

FIXTURE_TEARDOWN(reclaim)
{
	struct env *e = &self->e;
	char buf[64];
	int st, i;

	stop_readers(e);
	if (e->filler > 0) {
		kill(e->filler, SIGKILL);
		waitpid(e->filler, &st, 0);
		e->filler = 0;
	}
	if (e->map)
		munmap((void *)e->map, e->len);
	if (e->fd >= 0)
		close(e->fd);
	if (e->moved) {
		snprintf(buf, sizeof(buf), "%d", getpid());
		if (cg_write(e->parent, "cgroup.procs", buf))
			TH_LOG("cannot move back to %s", e->parent);
	}
	if (e->child_made) {
		for (i = 0; i < 100; i++) {
			if (!rmdir(e->child) || errno == ENOENT)
				break;
			sleep_ms(20);
		}
		if (i == 100)
			TH_LOG("cannot remove %s: %s", e->child,
			       strerror(errno));
	}
	if (e->enabled_memory)
		cg_write(e->parent, "cgroup.subtree_control", "-memory");
	if (e->age_changed)
		write_file(MIGRC_SYSFS "max_age_ms", e->old_age);
	if (e->pending_changed)
		write_file(MIGRC_SYSFS "max_pending_pages", e->old_pending);
}

/* Create the child cgroup and the filler, move in, build the table. */
static void prepare(struct __test_metadata *_metadata, struct env *e,
		    const FIXTURE_VARIANT(reclaim) *variant)
{
	size_t off, chunk = 1 << 20, words = e->page_size / 8, resident = 0;
	unsigned char *vec;
	char buf[4096];
	uint64_t *tmp;
	ssize_t ret;
	int err, i;

	snprintf(buf, sizeof(buf), "%s/cgroup.subtree_control", e->parent);
	ASSERT_EQ(read_file(buf, buf, sizeof(buf)), 0);
	if (!word_in(buf, "memory")) {
		err = cg_write(e->parent, "cgroup.subtree_control", "+memory");
		if (err)
			SKIP(return, "cannot enable +memory in %.512s: %s",
			     e->parent, strerror(-err));
		e->enabled_memory = true;
	}
	snprintf(e->child, sizeof(e->child), "%s/migrc_reclaim.%d", e->parent,
		 getpid());
	ASSERT_EQ(mkdir(e->child, 0755), 0) {
		TH_LOG("mkdir %s: %s", e->child, strerror(errno));
	}
	e->child_made = true;
	snprintf(buf, sizeof(buf), "%zu", e->limit);
	ASSERT_EQ(cg_write(e->child, "memory.max", buf), 0);
	cg_write(e->child, "memory.swap.max", "0");

	if (variant->max_age_ms &&
	    !read_file(MIGRC_SYSFS "max_age_ms", e->old_age,
		       sizeof(e->old_age))) {
		snprintf(buf, sizeof(buf), "%u", variant->max_age_ms);
		ASSERT_EQ(write_file(MIGRC_SYSFS "max_age_ms", buf), 0);
		e->age_changed = true;
	}
	/* Best effort: the limit is capped at a quarter of the RAM. */
	if (variant->max_pending &&
	    !read_file(MIGRC_SYSFS "max_pending_pages", e->old_pending,
		       sizeof(e->old_pending))) {
		snprintf(buf, sizeof(buf), "%lu", variant->max_pending);
		e->pending_changed = true;
		if (write_file(MIGRC_SYSFS "max_pending_pages", buf))
			TH_LOG("cannot set max_pending_pages to %s", buf);
	}

	/* The filler stays in the parent cgroup. */
	e->filler_rounds = mmap(NULL, e->page_size, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(e->filler_rounds, MAP_FAILED);
	e->filler = fork();
	ASSERT_GE(e->filler, 0);
	if (e->filler == 0)
		filler_main(e);

	ASSERT_EQ(pin_self(e->cpus[0]), 0);
	snprintf(buf, sizeof(buf), "%d", getpid());
	err = cg_write(e->child, "cgroup.procs", buf);
	ASSERT_EQ(err, 0) {
		TH_LOG("cannot move into %s: %s", e->child, strerror(-err));
	}
	e->moved = true;

	e->fd = open(e->path, O_RDONLY);
	ASSERT_GE(e->fd, 0) {
		TH_LOG("open %s: %s", e->path, strerror(errno));
	}
	e->map = mmap(NULL, e->len, PROT_READ, MAP_SHARED, e->fd, 0);
	ASSERT_NE(e->map, MAP_FAILED);
	/*
	 * Page cache left by an earlier run may be charged elsewhere (to the
	 * parent, after the earlier cgroup went away) and would never be
	 * reclaimed here: drop it, so that what we read is charged to us.
	 */
	posix_fadvise(e->fd, 0, e->len, POSIX_FADV_DONTNEED);
	vec = malloc(e->npages);
	ASSERT_NE(vec, NULL);
	if (!mincore((void *)e->map, e->len, vec))
		for (off = 0; off < e->npages; off++)
			resident += vec[off] & 1;
	free(vec);

	e->sum = malloc(e->npages * sizeof(*e->sum));
	tmp = malloc(chunk);
	ASSERT_TRUE(e->sum && tmp);
	for (off = 0; off < e->len; off += chunk) {
		size_t n = e->len - off < chunk ? e->len - off : chunk, p;

		ret = pread(e->fd, tmp, n, off);
		ASSERT_EQ(ret, (ssize_t)n) {
			TH_LOG("pread %s at %zu: %s", e->path, off,
			       ret < 0 ? strerror(errno) : "short read");
		}
		for (p = 0; p < n / e->page_size; p++)
			e->sum[off / e->page_size + p] =
				page_sum(tmp + p * words, words);
	}
	free(tmp);
	TH_LOG("file %s, window %zu MB, memory.max %zu MB, %zu pages resident after FADV_DONTNEED, readers on %d CPU(s)",
	       e->path, e->len >> 20, e->limit >> 20, resident,
	       e->ncpus - 1);

	e->nreaders = e->ncpus - 1;
	ASSERT_EQ(posix_memalign((void **)&e->readers, 64,
				 e->nreaders * sizeof(*e->readers)), 0);
	memset(e->readers, 0, e->nreaders * sizeof(*e->readers));
	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->readers[i];

		r->e = e;
		r->cpu = e->cpus[i + 1];
		r->start = e->npages * i / e->nreaders;
	}
}

TEST_F_TIMEOUT(reclaim, no_stale_reads, TEST_TIMEOUT)
{
	struct env *e = &self->e;
	unsigned long passes = 0, pages = 0, mismatches = 0, transient = 0;
	unsigned long filler_seen = 0, reclaim_calls = 0;
	long long steal0, steal1, refault0, refault1, oom, deferred, excluded;
	bool has_counters, on;
	struct counters c0, c1;
	double start, deadline, hard, elapsed;
	int i, j, ret;

	prepare(_metadata, e, variant);
	if (_metadata->exit_code == KSFT_SKIP)
		return;

	has_counters = counter(&start_counters, "migrc_deferred_reclaim") >= 0;
	on = has_counters && migrc_on();
	read_counters(&c0);
	steal0 = cg_key(e->child, "memory.stat", "pgsteal");
	refault0 = cg_key(e->child, "memory.stat", "workingset_refault_file");

	start = now_s();
	deadline = start + e->seconds;
	for (i = 0; i < e->nreaders; i++) {
		ret = pthread_create(&e->readers[i].thread, NULL, reader_main,
				     &e->readers[i]);
		ASSERT_EQ(ret, 0);
		e->readers_running = true;
	}
	/*
	 * Run for the time asked; on a slow or loaded host, go on for at most
	 * GRACE_FACTOR times as long until the readers did the minimum work.
	 */
	hard = start + GRACE_FACTOR * e->seconds;
	for (;;) {
		double t = now_s();

		if (t >= hard || (t >= deadline && enough_passes(e)))
			break;
		if (variant->proactive) {
			cg_write(e->child, "memory.reclaim", RECLAIM_CHUNK);
			reclaim_calls++;
		}
		sleep_ms(RECLAIM_PERIOD_MS);
	}
	stop_readers(e);
	elapsed = now_s() - start;

	read_counters(&c1);
	steal1 = cg_key(e->child, "memory.stat", "pgsteal");
	refault1 = cg_key(e->child, "memory.stat", "workingset_refault_file");
	oom = cg_key(e->child, "memory.events", "oom_kill");

	for (i = 0; i < e->nreaders; i++) {
		struct reader *r = &e->readers[i];

		ASSERT_EQ(r->pin_err, 0) {
			TH_LOG("cannot pin a reader to CPU %d", r->cpu);
		}
		passes += r->passes;
		pages += r->pages;
		mismatches += r->mismatches;
		transient += r->transient;
		filler_seen += r->filler_seen;
		TH_LOG("reader on CPU %d: %lu passes, %lu pages checked, %lu mismatches",
		       r->cpu, r->passes, r->pages, r->mismatches);
		for (j = 0; j < (int)r->nsamples; j++)
			TH_LOG("MISMATCH: reader on CPU %d, page %zu (file offset %#zx): checksum %#llx, expected %#llx, read again %#llx, first word %#llx%s",
			       r->cpu, r->sample[j].page,
			       r->sample[j].page * e->page_size,
			       (unsigned long long)r->sample[j].got,
			       (unsigned long long)r->sample[j].expect,
			       (unsigned long long)r->sample[j].again,
			       (unsigned long long)r->sample[j].word0,
			       r->sample[j].word0 == FILLER ? " (FILLER)" : "");
	}
	deferred = counter(&c1, "migrc_deferred_reclaim") -
		   counter(&c0, "migrc_deferred_reclaim");
	excluded = counter(&c1, "migrc_excluded_pages") -
		   counter(&c0, "migrc_excluded_pages");
	TH_LOG("file %s on %s, %s migrc's safe set", e->path, e->fstype,
	       e->safe_fs ? "in" : "outside");
	TH_LOG("%.1f s: %lu passes (%.1f MB/s), %lu mismatches (%lu transient, %lu with FILLER), filler rounds %lu, memory.reclaim writes %lu",
	       elapsed, passes, pages * (double)e->page_size / elapsed / 1e6,
	       mismatches, transient, filler_seen, *e->filler_rounds,
	       reclaim_calls);
	TH_LOG("cgroup: pgsteal +%lld, workingset_refault_file +%lld, oom_kill %lld",
	       steal1 - steal0, refault1 - refault0, oom);
	for (i = 0; i < c1.n; i++)
		if (c1.val[i] != counter(&c0, c1.name[i]))
			TH_LOG("%s +%lld", c1.name[i],
			       c1.val[i] - counter(&c0, c1.name[i]));
	TH_LOG("migrc %s%s", !has_counters ? "absent" : on ? "on" : "off",
	       has_counters ? "" : " (no migrc_deferred_reclaim in /proc/vmstat)");

	ASSERT_EQ(mismatches, 0UL);
	for (i = 0; i < e->nreaders; i++)
		ASSERT_GT(e->readers[i].passes, 0UL);
	ASSERT_GE(passes, (unsigned long)MIN_PASSES);
	if (steal0 >= 0)
		ASSERT_GT(steal1 - steal0, 0LL) {
			TH_LOG("the cgroup reclaimed nothing: this run tested nothing");
		}
	if (!has_counters)
		return;
	if (on && !e->safe_fs) {
		/*
		 * A file whose filesystem does not declare every way its data
		 * changes (FS_MIGRC_BARRIERS) is never deferred, and counted.
		 */
		ASSERT_EQ(deferred, 0LL) {
			TH_LOG("reclaim deferred the flush of pages of a file outside the safe set");
		}
		ASSERT_GT(excluded, 0LL) {
			TH_LOG("migrc_excluded_pages did not count the file's pages");
		}
		return;
	}
	if (on) {
		/*
		 * A lone reader reclaiming in its own faults mostly has the mm
		 * loaded on its own CPU only: nothing to defer then.
		 */
		if (!variant->proactive && e->nreaders < 2)
			return;
		ASSERT_GT(deferred, 0LL) {
			TH_LOG("migrc is on but reclaim deferred no flush");
		}
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

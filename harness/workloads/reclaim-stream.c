// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim-stream: a page-cache-heavy workload for reclaim.
 *
 * Reader threads, one per CPU, stream over a read-only shared mapping of a
 * large regular file (the "data set") and verify every page against a
 * checksum taken with pread() beforehand.  The process runs in its own
 * memory cgroup whose memory.max is smaller than the mapping, so every pass
 * refaults the file and reclaim keeps unmapping read-only, clean page cache
 * pages that the readers' TLBs hold: the shootdowns migrc defers for
 * reclaim.  An optional filler process in the parent cgroup keeps
 * allocating and freeing anonymous memory, reusing the freed pages.
 *
 * The work is fixed (a number of passes over the mapping, all readers
 * together), so runs compare.  Prints one line
 *
 *   reclaim-stream: passes=... bytes=... GBps=... mismatches=...
 *
 * and exits 1 if any page ever read wrong, 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

#define CGROOT		"/sys/fs/cgroup"
#define CG_PATH_MAX	(PATH_MAX / 2)
#define FILLER		0xdeadbeefcafef00dULL
#define MAX_READERS	256
#define NSAMPLES	4
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC	0x01021994
#endif

static struct {
	const char *file;
	size_t size;		/* bytes mapped */
	size_t limit;		/* memory.max, 0: no cgroup */
	unsigned long passes;
	unsigned int readers;
	size_t filler;		/* bytes, 0: no filler */
	bool quiet;
} opt = {
	.file = "/usr/src/linux-source-6.12.tar.xz",
	.size = 64UL << 20,
	.limit = 24UL << 20,
	.passes = 8,
	.filler = 0,
};

struct reader {
	pthread_t thread;
	unsigned int cpu;
	size_t start;
	unsigned long passes;
	unsigned long mismatches;
	unsigned int nsamples;
	struct {
		size_t page;
		uint64_t got, expect;
	} sample[NSAMPLES];
} __attribute__((aligned(64)));

static const volatile uint64_t *map;
static uint64_t *sums;
static size_t page_size, npages;
static atomic_ulong claimed;

static char parent_cg[CG_PATH_MAX], child_cg[CG_PATH_MAX + 32];
static bool child_made, moved, enabled_memory;
static pid_t filler_pid;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: reclaim-stream [-f FILE] [-s MB] [-l MB] [-p PASSES] [-r READERS]\n"
		"                      [-F MB] [-q]\n"
		"Stream over a read-only mapping of FILE, larger than the memory cgroup\n"
		"the workload runs in, verifying every page: reclaim unmaps read-only\n"
		"clean page cache pages all the time.\n"
		"  -f  file to map, a regular file not on tmpfs\n"
		"      (default /usr/src/linux-source-6.12.tar.xz)\n"
		"  -s  size of the mapping in MB (default 64)\n"
		"  -l  memory.max of the workload's own cgroup in MB (default 24);\n"
		"      0: no cgroup (then reclaim only under global pressure)\n"
		"  -p  passes over the mapping, all readers together (default 8, about\n"
		"      10 s in the 2-vCPU TCG test VM):\n"
		"      a fixed amount of work, so that runs compare\n"
		"  -r  reader threads, one per CPU (default: all CPUs)\n"
		"  -F  filler: a process in the parent cgroup that allocates, fills\n"
		"      and frees this many MB of anonymous memory in a loop (default 0:\n"
		"      none)\n"
		"  -q  print only the result line\n"
		"  -h, --help  this text\n"
		"Needs root for the cgroup (cgroup v2 mounted at " CGROOT ").\n"
		"Prints 'reclaim-stream: passes=N bytes=N GBps=X mismatches=N'; exits\n"
		"0 if every page read right, 1 on any mismatch, 2 on a usage or setup\n"
		"error.\n");
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

static int write_file(const char *path, const char *val)
{
	ssize_t len = strlen(val), ret;
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, val, len);
	ret = ret == len ? 0 : ret < 0 ? -errno : -EIO;
	close(fd);
	return ret;
}

static int read_file(const char *path, char *buf, size_t size)
{
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len < 0)
		return -EIO;
	buf[len] = 0;
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = 0;
	return 0;
}

static int cg_write(const char *cg, const char *file, const char *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return write_file(path, val);
}

static long long cg_key(const char *cg, const char *file, const char *key)
{
	char path[PATH_MAX], line[256], name[128];
	long long v, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lld", name, &v) == 2 &&
		    !strcmp(name, key)) {
			ret = v;
			break;
		}
	fclose(f);
	return ret;
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

static int own_cgroup(char *out, size_t size)
{
	char line[CG_PATH_MAX - 32];
	int ret = -1;
	FILE *f;

	f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return -1;
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
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

static void cgroup_cleanup(void)
{
	char buf[32];
	int i;

	if (filler_pid > 0) {
		kill(filler_pid, SIGKILL);
		waitpid(filler_pid, NULL, 0);
		filler_pid = 0;
	}
	if (moved) {
		snprintf(buf, sizeof(buf), "%d", getpid());
		if (cg_write(parent_cg, "cgroup.procs", buf))
			fprintf(stderr, "reclaim-stream: cannot move back to %s\n",
				parent_cg);
		moved = false;
	}
	if (child_made) {
		for (i = 0; i < 100; i++) {
			if (!rmdir(child_cg) || errno == ENOENT)
				break;
			usleep(20000);
		}
		if (i == 100)
			fprintf(stderr, "reclaim-stream: cannot remove %s: %s\n",
				child_cg, strerror(errno));
		child_made = false;
	}
	if (enabled_memory) {
		cg_write(parent_cg, "cgroup.subtree_control", "-memory");
		enabled_memory = false;
	}
}

static int cgroup_setup(void)
{
	char buf[4096], val[32];
	int err;

	if (own_cgroup(parent_cg, sizeof(parent_cg))) {
		fprintf(stderr, "reclaim-stream: not in a cgroup v2 hierarchy (use -l 0)\n");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s/cgroup.controllers", parent_cg);
	if (read_file(buf, buf, sizeof(buf)) || !word_in(buf, "memory")) {
		fprintf(stderr, "reclaim-stream: no cgroup v2 memory controller at %s (use -l 0)\n",
			parent_cg);
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s/cgroup.subtree_control", parent_cg);
	if (read_file(buf, buf, sizeof(buf)))
		return -1;
	if (!word_in(buf, "memory")) {
		err = cg_write(parent_cg, "cgroup.subtree_control", "+memory");
		if (err) {
			fprintf(stderr, "reclaim-stream: cannot enable +memory in %s: %s\n",
				parent_cg, strerror(-err));
			return -1;
		}
		enabled_memory = true;
	}
	snprintf(child_cg, sizeof(child_cg), "%s/reclaim-stream.%d",
		 parent_cg, getpid());
	if (mkdir(child_cg, 0755)) {
		fprintf(stderr, "reclaim-stream: mkdir %s: %s\n", child_cg,
			strerror(errno));
		return -1;
	}
	child_made = true;
	snprintf(val, sizeof(val), "%zu", opt.limit);
	err = cg_write(child_cg, "memory.max", val);
	if (err) {
		fprintf(stderr, "reclaim-stream: memory.max: %s\n", strerror(-err));
		return -1;
	}
	cg_write(child_cg, "memory.swap.max", "0");
	return 0;
}

static int cgroup_enter(void)
{
	char val[32];
	int err;

	snprintf(val, sizeof(val), "%d", getpid());
	err = cg_write(child_cg, "cgroup.procs", val);
	if (err) {
		fprintf(stderr, "reclaim-stream: cannot move into %s: %s\n",
			child_cg, strerror(-err));
		return -1;
	}
	moved = true;
	return 0;
}

static void __attribute__((noreturn)) filler_main(void)
{
	size_t i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		volatile uint64_t *p;

		p = mmap(NULL, opt.filler, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			usleep(1000);
			continue;
		}
		for (i = 0; i < opt.filler / sizeof(*p); i++)
			p[i] = FILLER;
		munmap((void *)p, opt.filler);
	}
}

/* Position-dependent checksum of one page (Fletcher-like). */
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

static void *reader(void *arg)
{
	struct reader *r = arg;
	const size_t words = page_size / sizeof(uint64_t);
	size_t k, page;

	pin(r->cpu);
	while (atomic_fetch_add(&claimed, 1) < opt.passes) {
		for (k = 0; k < npages; k++) {
			uint64_t got;

			page = r->start + k;
			if (page >= npages)
				page -= npages;
			got = page_sum(map + page * words, words);
			if (__builtin_expect(got != sums[page], 0)) {
				if (r->nsamples < NSAMPLES) {
					r->sample[r->nsamples].page = page;
					r->sample[r->nsamples].got = got;
					r->sample[r->nsamples].expect = sums[page];
					r->nsamples++;
				}
				r->mismatches++;
			}
		}
		r->passes++;
	}
	return NULL;
}

static int checksum_file(int fd)
{
	const size_t chunk = 1 << 20, words = page_size / sizeof(uint64_t);
	uint64_t *buf = malloc(chunk);
	size_t off, p;

	if (!buf || !sums)
		return -1;
	for (off = 0; off < opt.size; off += chunk) {
		size_t n = opt.size - off < chunk ? opt.size - off : chunk;
		ssize_t ret = pread(fd, buf, n, off);

		if (ret != (ssize_t)n) {
			fprintf(stderr, "reclaim-stream: pread %s at %zu: %s\n",
				opt.file, off,
				ret < 0 ? strerror(errno) : "short read");
			free(buf);
			return -1;
		}
		for (p = 0; p < n / page_size; p++)
			sums[off / page_size + p] = page_sum(buf + p * words,
							     words);
	}
	free(buf);
	return 0;
}

static bool parse_mb(const char *s, size_t *out, bool zero_ok)
{
	unsigned long v;

	if (!parse_ul(s, zero_ok ? 0 : 1, 1UL << 20, &v))
		return false;
	*out = v << 20;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int cpus[MAX_READERS], ncpus = 0, i, j;
	unsigned long passes = 0, mismatches = 0;
	long long steal0 = -1, steal1 = -1, refault0 = -1, refault1 = -1;
	struct reader *readers;
	struct statfs sfs;
	struct stat st;
	double start, elapsed;
	cpu_set_t set;
	unsigned long v;
	int fd, c, rc = 2;

	while ((c = getopt_long(argc, argv, "f:s:l:p:r:F:qh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'f':
			opt.file = optarg;
			break;
		case 's':
			if (!parse_mb(optarg, &opt.size, false))
				goto bad;
			break;
		case 'l':
			if (!parse_mb(optarg, &opt.limit, true))
				goto bad;
			break;
		case 'p':
			if (!parse_ul(optarg, 1, ULONG_MAX, &v))
				goto bad;
			opt.passes = v;
			break;
		case 'r':
			if (!parse_ul(optarg, 1, MAX_READERS, &v))
				goto bad;
			opt.readers = v;
			break;
		case 'F':
			if (!parse_mb(optarg, &opt.filler, true))
				goto bad;
			break;
		case 'q':
			opt.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
bad:
		usage(stderr);
		return 2;
	}

	page_size = sysconf(_SC_PAGESIZE);
	npages = opt.size / page_size;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 2;
	for (i = 0; i < CPU_SETSIZE && ncpus < MAX_READERS; i++)
		if (CPU_ISSET(i, &set))
			cpus[ncpus++] = i;
	if (!opt.readers || opt.readers > ncpus)
		opt.readers = ncpus;

	if (stat(opt.file, &st) || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size < opt.size) {
		fprintf(stderr, "reclaim-stream: %s: not a regular file of at least %zu MB\n",
			opt.file, opt.size >> 20);
		return 2;
	}
	if (!statfs(opt.file, &sfs) && sfs.f_type == TMPFS_MAGIC) {
		fprintf(stderr, "reclaim-stream: %s is on tmpfs: its pages cannot be reclaimed without swap\n",
			opt.file);
		return 2;
	}
	fd = open(opt.file, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "reclaim-stream: open %s: %s\n", opt.file,
			strerror(errno));
		return 2;
	}

	if (opt.limit && cgroup_setup())
		goto out;
	if (opt.filler) {
		/* Forked before we move: it stays in the parent cgroup. */
		filler_pid = fork();
		if (filler_pid < 0)
			goto out;
		if (!filler_pid)
			filler_main();
	}
	if (opt.limit && cgroup_enter())
		goto out;

	map = mmap(NULL, opt.size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "reclaim-stream: mmap: %s\n", strerror(errno));
		goto out;
	}
	/*
	 * Drop page cache that an earlier run left charged elsewhere: what we
	 * read now is charged to our cgroup, and reclaimed there.
	 */
	posix_fadvise(fd, 0, opt.size, POSIX_FADV_DONTNEED);
	sums = malloc(npages * sizeof(*sums));
	if (checksum_file(fd))
		goto out;

	readers = aligned_alloc(64, sizeof(*readers) * opt.readers);
	if (!readers)
		goto out;
	memset(readers, 0, sizeof(*readers) * opt.readers);
	if (opt.limit) {
		steal0 = cg_key(child_cg, "memory.stat", "pgsteal");
		refault0 = cg_key(child_cg, "memory.stat",
				  "workingset_refault_file");
	}
	start = now();
	for (i = 0; i < opt.readers; i++) {
		readers[i].cpu = cpus[i];
		readers[i].start = npages * i / opt.readers;
		if (pthread_create(&readers[i].thread, NULL, reader,
				   &readers[i])) {
			fprintf(stderr, "reclaim-stream: pthread_create failed\n");
			exit(2);
		}
	}
	for (i = 0; i < opt.readers; i++) {
		pthread_join(readers[i].thread, NULL);
		passes += readers[i].passes;
		mismatches += readers[i].mismatches;
		for (j = 0; j < readers[i].nsamples; j++)
			fprintf(stderr, "reclaim-stream: MISMATCH reader on CPU %u: page %zu checksum %#llx, expected %#llx\n",
				readers[i].cpu, readers[i].sample[j].page,
				(unsigned long long)readers[i].sample[j].got,
				(unsigned long long)readers[i].sample[j].expect);
	}
	elapsed = now() - start;
	if (opt.limit) {
		steal1 = cg_key(child_cg, "memory.stat", "pgsteal");
		refault1 = cg_key(child_cg, "memory.stat",
				  "workingset_refault_file");
	}

	if (!opt.quiet)
		printf("reclaim-stream: file=%s size=%zuMB limit=%zuMB readers=%u filler=%zuMB seconds=%.2f pgsteal=%lld refaults=%lld\n",
		       opt.file, opt.size >> 20, opt.limit >> 20, opt.readers,
		       opt.filler >> 20, elapsed,
		       steal0 >= 0 && steal1 >= 0 ? steal1 - steal0 : -1,
		       refault0 >= 0 && refault1 >= 0 ? refault1 - refault0 : -1);
	printf("reclaim-stream: passes=%lu bytes=%llu GBps=%.3f mismatches=%lu\n",
	       passes, (unsigned long long)passes * opt.size,
	       passes * (double)opt.size / elapsed / 1e9, mismatches);
	fflush(stdout);
	rc = mismatches ? 1 : 0;
out:
	if (map && map != MAP_FAILED)
		munmap((void *)map, opt.size);
	close(fd);
	cgroup_cleanup();
	return rc;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ro-stream: a llama.cpp-like workload for tiered memory.
 *
 * Reader threads, one per CPU, stream over a read-only shared mapping of a
 * file (the "model weights") and verify every word, while a tiering thread
 * moves a chunk of it between two NUMA nodes every few milliseconds, the
 * way a tiering daemon or NUMA balancing promotes and demotes pages.  Each
 * move unmaps read-only pages that the readers' TLBs hold: the shootdowns
 * migrc defers.
 *
 * With -w it is the write-heavy counterpart: the mapping is writable and
 * every thread rewrites its own slice with a new generation on each pass and
 * reads it back.  Migration then finds dirty, writable entries, which migrc
 * never defers: this run shows what migrc costs where it cannot help.
 *
 * With -k there is no tiering thread: the kernel's own tiering (NUMA
 * balancing, DAMON, kswapd demotion) is left to move the pages.  With -H
 * and -d the readers stream over a window of the file that goes round it,
 * as a mixture-of-experts model's active experts do: the pages behind the
 * window go cold and the pages entering it hot, so that the kernel keeps
 * demoting and promoting.  Streaming all of it makes every page equally
 * hot, and DAMON then moves it in a few bursts of its quota after the
 * setup (2026-12-06, 1.5 GB against a 1 GB node 0: 383 to 100,000 pages
 * in 120 s between boots; with -H 40 -D 120, 412,080 pages in 90 s).
 *
 * "ro-stream: reading" marks the end of the setup (writing and mapping the
 * file, which already migrates when it is bigger than the fast node), so
 * that a measurement can start there (harness/guest/steady-window), and
 * SIGINT or SIGTERM ends the run early with its results, so that it can
 * end once the kernel has done a given amount of work.
 *
 * Prints the threads' throughput and the number of moves; exits 1 if any
 * thread ever saw a wrong word, 2 on a usage or setup error.
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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "stop.h"

#define PAGE		4096UL
#define MAX_THREADS	1024
#define MAX_NODE	1023	/* MAX_NUMNODES - 1 with NODES_SHIFT 10 */
#define WORD(i)		((uint64_t)(i) * 0x9e3779b97f4a7c15ULL)

static struct {
	size_t size;
	unsigned int seconds, readers, interval_ms, chunk, hot_pct, drift;
	unsigned long max_moves;
	int node_a, node_b;
	const char *dir;
	bool write, kernel_tiers;
} opt = { 64 << 20, 10, 0, 5, 256, 100, 0, 0, 0, 1, "/tmp", false, false };

static volatile uint64_t *map;
static atomic_bool stop;
static double reads_start;
static atomic_ulong bytes_read, bad_words;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ro-stream [-s MB] [-t SECONDS] [-n MOVES] [-r READERS] [-i MS]\n"
		"                 [-c PAGES] [-a NODE] [-b NODE] [-d DIR] [-w] [-k]\n"
		"                 [-H PERCENT -D SECONDS]\n"
		"  -s  size of the mapped file in MB (default 64)\n"
		"  -t  run time in seconds (default 10; SIGINT or SIGTERM ends it sooner)\n"
		"  -n  stop after this many moves, for runs that compare (default: no limit)\n"
		"  -r  reader threads, one per CPU (default or 0: all CPUs)\n"
		"  -i  milliseconds between moves (default 5)\n"
		"  -c  pages moved per move (default 256)\n"
		"  -a, -b  the two nodes to move between (default 0 and 1)\n"
		"  -d  directory for the file (default /tmp)\n"
		"  -w  write-heavy: each thread rewrites and checks its own slice\n"
		"  -k  no tiering thread: only read (or write), for -t seconds, and\n"
		"      leave the moves to the kernel (NUMA balancing, DAMON, kswapd)\n"
		"  -H  read only a window of PERCENT of the file (1-99), which\n"
		"  -D  goes once round the file every SECONDS (not with -w)\n"
		"  -h, --help  this text\n");
}

/* A bad option value: say which, and exit with the usage status. */
static int bad_value(int c, const char *arg)
{
	fprintf(stderr, "ro-stream: invalid -%c value '%s'\n", c, arg);
	usage(stderr);
	return 2;
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

/*
 * The first word of the window for a pass starting now: it has slid
 * (t / drift) of the way round the file since the reads began.
 */
static size_t window_first(size_t words)
{
	double lap;

	if (!opt.drift)
		return 0;
	lap = (now() - reads_start) / opt.drift;
	lap -= (unsigned long)lap;
	return (size_t)(lap * (words / (PAGE / sizeof(uint64_t)))) *
	       (PAGE / sizeof(uint64_t)) % words;
}

static void *reader(void *arg)
{
	size_t words = opt.size / sizeof(uint64_t), i, w, first;
	size_t span = words / 100 * opt.hot_pct;
	unsigned long bad = 0;

	if (opt.hot_pct == 100)
		span = words;
	pin((unsigned long)arg);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		first = window_first(words);
		for (w = 0, i = first; w < span; w++, i = i + 1 == words ? 0 : i + 1)
			if (map[i] != WORD(i))
				bad++;
		atomic_fetch_add(&bytes_read, span * sizeof(uint64_t));
	}
	atomic_fetch_add(&bad_words, bad);
	return NULL;
}

/*
 * A writer owns words [first, last) of the mapping: each pass stores a new
 * generation there and reads it back.
 */
static void *writer(void *arg)
{
	unsigned long id = (unsigned long)arg;
	size_t words = opt.size / sizeof(uint64_t);
	size_t first = words / opt.readers * id;
	size_t last = id + 1 == opt.readers ? words : first + words / opt.readers;
	unsigned long bad = 0;
	uint64_t gen = 0, i;

	pin(id % sysconf(_SC_NPROCESSORS_ONLN));
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		gen++;
		for (i = first; i < last; i++)
			map[i] = WORD(i) + gen;
		for (i = first; i < last; i++)
			if (map[i] != WORD(i) + gen)
				bad++;
		atomic_fetch_add(&bytes_read, 2 * (last - first) * sizeof(uint64_t));
	}
	atomic_fetch_add(&bad_words, bad);
	return NULL;
}

static int make_file(void)
{
	char path[4096];
	uint64_t *buf;
	size_t i;
	int fd;

	snprintf(path, sizeof(path), "%s/ro-stream.XXXXXX", opt.dir);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "ro-stream: cannot create a file in %s: %s\n",
			opt.dir, strerror(errno));
		return -1;
	}
	unlink(path);
	buf = malloc(1 << 20);
	if (!buf)
		return -1;
	for (size_t off = 0; off < opt.size; off += 1 << 20) {
		for (i = 0; i < (1 << 20) / sizeof(uint64_t); i++)
			buf[i] = WORD(off / sizeof(uint64_t) + i);
		if (pwrite(fd, buf, 1 << 20, off) != 1 << 20) {
			fprintf(stderr, "ro-stream: write: %s\n", strerror(errno));
			return -1;
		}
	}
	free(buf);
	return fd;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	unsigned long moves = 0, moved = 0, failed = 0, pages, v;
	unsigned int i, nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	sigset_t old;
	double setup, start, elapsed;
	pthread_t *threads;
	void **addrs;
	int *nodes, *status, fd, c;
	size_t next = 0;

	while ((c = getopt_long(argc, argv, "s:t:n:r:i:c:a:b:d:wkH:D:h",
				longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!parse_ul(optarg, 1, 1UL << 20, &v))
				return bad_value(c, optarg);
			opt.size = v << 20;
			break;
		case 't':
			if (!parse_ul(optarg, 1, 1UL << 30, &v))
				return bad_value(c, optarg);
			opt.seconds = v;
			break;
		case 'n':
			if (!parse_ul(optarg, 0, ULONG_MAX, &opt.max_moves))
				return bad_value(c, optarg);
			break;
		case 'r':
			if (!parse_ul(optarg, 0, MAX_THREADS, &v))
				return bad_value(c, optarg);
			opt.readers = v;
			break;
		case 'i':
			if (!parse_ul(optarg, 0, 60000, &v))
				return bad_value(c, optarg);
			opt.interval_ms = v;
			break;
		case 'c':
			if (!parse_ul(optarg, 1, 1UL << 20, &v))
				return bad_value(c, optarg);
			opt.chunk = v;
			break;
		case 'a':
			if (!parse_ul(optarg, 0, MAX_NODE, &v))
				return bad_value(c, optarg);
			opt.node_a = v;
			break;
		case 'b':
			if (!parse_ul(optarg, 0, MAX_NODE, &v))
				return bad_value(c, optarg);
			opt.node_b = v;
			break;
		case 'd':
			opt.dir = optarg;
			break;
		case 'w':
			opt.write = true;
			break;
		case 'k':
			opt.kernel_tiers = true;
			break;
		case 'H':
			if (!parse_ul(optarg, 1, 99, &v))
				return bad_value(c, optarg);
			opt.hot_pct = v;
			break;
		case 'D':
			if (!parse_ul(optarg, 1, 1UL << 20, &v))
				return bad_value(c, optarg);
			opt.drift = v;
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
		fprintf(stderr, "ro-stream: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if ((opt.hot_pct < 100) != (opt.drift > 0) || (opt.drift && opt.write)) {
		fprintf(stderr, "ro-stream: invalid: %s\n",
			"-H and -D go together (a still window never cools), not with -w");
		usage(stderr);
		return 2;
	}
	if (opt.node_a == opt.node_b) {
		fprintf(stderr, "ro-stream: -a and -b name the same node\n");
		return 2;
	}
	if (!opt.readers)
		opt.readers = nr_cpus;
	pages = opt.size / PAGE;
	if (opt.chunk > pages)
		opt.chunk = pages;

	setup = now();
	fd = make_file();
	if (fd < 0)
		return 2;
	map = mmap(NULL, opt.size, opt.write ? PROT_READ | PROT_WRITE : PROT_READ,
		   MAP_SHARED | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED) {
		perror("ro-stream: mmap");
		return 2;
	}
	addrs = calloc(opt.chunk, sizeof(*addrs));
	nodes = calloc(opt.chunk, sizeof(*nodes));
	status = calloc(opt.chunk, sizeof(*status));
	threads = calloc(opt.readers, sizeof(*threads));
	if (!addrs || !nodes || !status || !threads)
		return 2;

	/*
	 * SIGINT and SIGTERM end the run early: only the main thread takes
	 * them, and a move_pages() call in flight completes first.
	 */
	stop_signals_block(&old);
	reads_start = now();
	for (i = 0; i < opt.readers; i++)
		pthread_create(&threads[i], NULL, opt.write ? writer : reader,
			       (void *)(unsigned long)(opt.write ? i : i % nr_cpus));
	stop_signals_unblock(&old);

	/* The tiering thread: the main thread, on the last CPU. */
	pin(nr_cpus - 1);
	start = now();
	printf("ro-stream: reading (setup took %.1f s)\n", start - setup);
	fflush(stdout);
	while (opt.kernel_tiers && now() - start < opt.seconds &&
	       !atomic_load(&interrupted))
		usleep(100 * 1000);
	while (!opt.kernel_tiers && now() - start < opt.seconds &&
	       !atomic_load(&interrupted) &&
	       (!opt.max_moves || moves < opt.max_moves)) {
		int node = (moves & 1) ? opt.node_a : opt.node_b;

		for (i = 0; i < opt.chunk; i++) {
			addrs[i] = (void *)((const char *)map +
					    ((next + i) % pages) * PAGE);
			nodes[i] = node;
		}
		if (move_pages(0, opt.chunk, addrs, nodes, status,
			       MPOL_MF_MOVE) < 0) {
			if (errno == EINTR && atomic_load(&interrupted))
				break;
			fprintf(stderr, "ro-stream: move_pages: %s\n", strerror(errno));
			return 2;
		}
		for (i = 0; i < opt.chunk; i++) {
			if (status[i] == node)
				moved++;
			else
				failed++;
		}
		moves++;
		if (moves % 2 == 0)
			next = (next + opt.chunk) % pages;
		usleep(opt.interval_ms * 1000);
	}
	elapsed = now() - start;
	atomic_store(&stop, true);
	for (i = 0; i < opt.readers; i++)
		pthread_join(threads[i], NULL);

	printf("ro-stream: size=%zuMB readers=%u seconds=%.1f moves=%lu pages_moved=%lu pages_not_moved=%lu%s\n",
	       opt.size >> 20, opt.readers, elapsed, moves, moved, failed,
	       atomic_load(&interrupted) ? " interrupted" : "");
	printf("ro-stream: %s_GBps=%.3f bad_words=%lu\n",
	       opt.write ? "write" : "read",
	       atomic_load(&bytes_read) / elapsed / 1e9, atomic_load(&bad_words));
	if (!moved && !opt.kernel_tiers) {
		fprintf(stderr, "ro-stream: no page moved: is there a node %d and %d?\n",
			opt.node_a, opt.node_b);
		return 2;
	}
	return atomic_load(&bad_words) ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * alloc-lat: page allocation latency while pages are being migrated.
 *
 * A mover thread keeps moving a read-only mapped file between two nodes
 * (so that, with migrc, deferred flushes are pending and freed source
 * pages are tagged), while the main thread, on another CPU, allocates
 * fresh anonymous pages by touching them one at a time and times every
 * touch: a page fault, the allocation (where migrc may have to flush
 * first), zeroing and mapping.  Prints percentiles in nanoseconds.
 *
 * Exit status: 0 ok, 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
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

#define PAGE	4096UL

static atomic_bool stop;
static char *file_map;
static size_t file_pages;
static unsigned long moves;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *mover(void *arg)
{
	size_t chunk = file_pages < 256 ? file_pages : 256, i;
	void **addrs = calloc(chunk, sizeof(*addrs));
	int *nodes = calloc(chunk, sizeof(*nodes));
	int *status = calloc(chunk, sizeof(*status));
	volatile char sink;

	pin(0);
	while (!atomic_load(&stop)) {
		for (i = 0; i < chunk; i++) {
			addrs[i] = file_map + i * PAGE;
			nodes[i] = moves & 1;
			sink = file_map[i * PAGE];	/* keep it mapped */
		}
		move_pages(0, chunk, addrs, nodes, status, MPOL_MF_MOVE);
		moves++;
	}
	(void)sink;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned long n = 20000;
	size_t i;
	uint64_t *lat, t0;
	pthread_t th;
	char path[] = "/tmp/alloc-lat.XXXXXX";
	char *buf;
	int fd;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: alloc-lat [PAGES]  (default 20000)\n");
		return 0;
	}
	if (argc > 2 || (argc > 1 && !parse_ul(argv[1], 1, 1UL << 24, &n))) {
		fprintf(stderr, "usage: alloc-lat [PAGES]  (default 20000)\n");
		return 2;
	}
	file_pages = 2048;
	fd = mkstemp(path);
	if (fd < 0) {
		perror("alloc-lat: file");
		return 2;
	}
	unlink(path);
	buf = malloc(PAGE);
	memset(buf, 0x5a, PAGE);
	for (i = 0; i < file_pages; i++)
		if (pwrite(fd, buf, PAGE, i * PAGE) != (ssize_t)PAGE) {
			perror("alloc-lat: write");
			return 2;
		}
	free(buf);
	file_map = mmap(NULL, file_pages * PAGE, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	lat = calloc(n, sizeof(*lat));
	buf = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (file_map == MAP_FAILED || buf == MAP_FAILED || !lat) {
		perror("alloc-lat: mmap");
		return 2;
	}
	madvise(buf, n * PAGE, MADV_NOHUGEPAGE);
	pthread_create(&th, NULL, mover, NULL);
	pin(sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0);
	usleep(100000);
	for (i = 0; i < n; i++) {
		t0 = now_ns();
		buf[i * PAGE] = 1;
		lat[i] = now_ns() - t0;
	}
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("alloc-lat: pages=%zu moves=%lu p50_ns=%llu p90_ns=%llu p99_ns=%llu p999_ns=%llu max_ns=%llu\n",
	       n, moves, (unsigned long long)lat[n / 2],
	       (unsigned long long)lat[n * 9 / 10],
	       (unsigned long long)lat[n * 99 / 100],
	       (unsigned long long)lat[n * 999 / 1000],
	       (unsigned long long)lat[n - 1]);
	return 0;
}

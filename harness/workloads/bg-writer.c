// SPDX-License-Identifier: GPL-2.0
/*
 * bg-writer: an unrelated program that keeps writing while others migrate.
 *
 * Mode "bg" (the default): every period (default 1 ms) it write()s 4 KiB
 * into its own file, at the next of 64 page offsets, and touches a fresh
 * anonymous page (mapped, written once, unmapped).  Neither touches data
 * anybody migrates, so with migrc's precise barriers its writes must
 * neither pay for a deferred flush nor end one; before them, each of its
 * write()s ended every pending deferral (migrc_flush_write).
 *
 * Mode "write1", after will-it-scale's write1: a 1-byte pwrite() at
 * offset 0 of its file, each period (-p 0: back to back).  Mode "fault3",
 * after page_fault3: a MAP_SHARED mapping of 64 pages of its file, one
 * byte written into each page (a write fault each), unmapped, again.
 * Each write or fault is one operation.
 *
 * Runs until killed or for -t seconds, then prints the operations it did
 * and their rate ("ops_per_s=").
 *
 * Exit status: 0 ok, 1 a write or mapping failed, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

#define PAGE		4096UL
#define FILE_PAGES	64

enum mode { MODE_BG, MODE_WRITE1, MODE_FAULT3 };

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

/* One operation of @mode, counted in *@ops; 0 or an errno. */
static int one_op(enum mode mode, int fd, char *buf, unsigned long *ops)
{
	unsigned long i;
	char *map;

	switch (mode) {
	case MODE_BG:
		if (pwrite(fd, buf, PAGE, (*ops % FILE_PAGES) * PAGE) !=
		    (ssize_t)PAGE)
			return errno ? errno : EIO;
		map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED)
			return errno;
		map[0] = (char)*ops;
		munmap(map, PAGE);
		++*ops;
		return 0;
	case MODE_WRITE1:
		if (pwrite(fd, buf, 1, 0) != 1)
			return errno ? errno : EIO;
		++*ops;
		return 0;
	case MODE_FAULT3:
		map = mmap(NULL, FILE_PAGES * PAGE, PROT_READ | PROT_WRITE,
			   MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			return errno;
		for (i = 0; i < FILE_PAGES && !stop; i++) {
			map[i * PAGE] = (char)i;
			++*ops;
		}
		munmap(map, FILE_PAGES * PAGE);
		return 0;
	}
	return EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bg-writer [-m bg|write1|fault3] [-f FILE] [-p PERIOD_US]\n"
		"                 [-t SECONDS]\n"
		"  -m MODE       bg: a 4 KiB write() and a fresh anonymous page\n"
		"                per period (default); write1: a 1-byte\n"
		"                pwrite(); fault3: write faults on 64 pages of a\n"
		"                shared mapping of the file\n"
		"  -f FILE       the file to write (created, truncated; default\n"
		"                /tmp/bg-writer.PID, removed at exit)\n"
		"  -p PERIOD_US  one operation per period, 0 (back to back) or\n"
		"                10..1000000 (default 1000)\n"
		"  -t SECONDS    stop after this long, 1..86400 (default: until\n"
		"                SIGTERM or SIGINT)\n");
}

int main(int argc, char **argv)
{
	unsigned long period = 1000, seconds = 0, ops = 0;
	char path[256] = "", buf[PAGE];
	struct timespec start, next, end = { 0 }, now;
	enum mode mode = MODE_BG;
	bool own = false;
	double secs;
	int opt, fd;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	while ((opt = getopt(argc, argv, "m:f:p:t:h")) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "bg")) {
				mode = MODE_BG;
			} else if (!strcmp(optarg, "write1")) {
				mode = MODE_WRITE1;
			} else if (!strcmp(optarg, "fault3")) {
				mode = MODE_FAULT3;
			} else {
				fprintf(stderr, "bg-writer: invalid mode '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'f':
			if (!*optarg || strlen(optarg) >= sizeof(path)) {
				fprintf(stderr, "bg-writer: invalid file name\n");
				return 2;
			}
			snprintf(path, sizeof(path), "%s", optarg);
			break;
		case 'p':
			if (!parse_ul(optarg, 0, 1000000, &period) ||
			    (period && period < 10)) {
				fprintf(stderr, "bg-writer: invalid period '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 't':
			if (!parse_ul(optarg, 1, 86400, &seconds)) {
				fprintf(stderr, "bg-writer: invalid seconds '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bg-writer: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/bg-writer.%d", getpid());
		own = true;
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		fprintf(stderr, "bg-writer: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (ftruncate(fd, FILE_PAGES * PAGE)) {
		fprintf(stderr, "bg-writer: %s: %s\n", path, strerror(errno));
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	memset(buf, 0x5a, sizeof(buf));
	clock_gettime(CLOCK_MONOTONIC, &start);
	next = start;
	if (seconds) {
		end = start;
		end.tv_sec += seconds;
	}
	while (!stop) {
		int err = one_op(mode, fd, buf, &ops);

		if (err) {
			fprintf(stderr, "bg-writer: %s\n", strerror(err));
			return 1;
		}
		if (period) {
			next.tv_nsec += period * 1000;
			while (next.tv_nsec >= 1000000000L) {
				next.tv_nsec -= 1000000000L;
				next.tv_sec++;
			}
		} else if (!(ops & 255)) {
			clock_gettime(CLOCK_MONOTONIC, &next);
		}
		if (seconds && (next.tv_sec > end.tv_sec ||
				(next.tv_sec == end.tv_sec &&
				 next.tv_nsec >= end.tv_nsec)))
			break;
		if (period)
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
					NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	secs = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
	close(fd);
	if (own)
		unlink(path);
	printf("bg-writer: mode=%s ops=%lu seconds=%.2f ops_per_s=%.0f\n",
	       mode == MODE_BG ? "bg" : mode == MODE_WRITE1 ? "write1" :
	       "fault3", ops, secs, secs > 0 ? ops / secs : 0.0);
	return 0;
}

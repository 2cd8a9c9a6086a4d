// SPDX-License-Identifier: GPL-2.0
/*
 * bg-writer: an unrelated program that keeps writing while others migrate.
 *
 * Every period (default 1 ms) it write()s 4 KiB into its own file, at the
 * next of 64 page offsets, and touches a fresh anonymous page (mapped,
 * written once, unmapped).  Neither touches data anybody migrates, so with
 * migrc's precise barriers its writes must neither pay for a deferred
 * flush nor end one; before them, each of its write()s ended every
 * pending deferral (migrc_flush_write).  Runs until killed or for -t
 * seconds, then prints how many writes and pages it did.
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

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bg-writer [-f FILE] [-p PERIOD_US] [-t SECONDS]\n"
		"  -f FILE       the file to write (created, truncated; default\n"
		"                /tmp/bg-writer.PID, removed at exit)\n"
		"  -p PERIOD_US  one 4 KiB write() and one fresh anonymous page\n"
		"                per period, 10..1000000 (default 1000)\n"
		"  -t SECONDS    stop after this long, 1..86400 (default: until\n"
		"                SIGTERM or SIGINT)\n");
}

int main(int argc, char **argv)
{
	unsigned long period = 1000, seconds = 0, writes = 0, pages = 0;
	char path[256] = "", buf[PAGE];
	struct timespec next, end = { 0 };
	bool own = false;
	int opt, fd;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	while ((opt = getopt(argc, argv, "f:p:t:h")) != -1) {
		switch (opt) {
		case 'f':
			if (!*optarg || strlen(optarg) >= sizeof(path)) {
				fprintf(stderr, "bg-writer: invalid file name\n");
				return 2;
			}
			snprintf(path, sizeof(path), "%s", optarg);
			break;
		case 'p':
			if (!parse_ul(optarg, 10, 1000000, &period)) {
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
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	memset(buf, 0x5a, sizeof(buf));
	clock_gettime(CLOCK_MONOTONIC, &next);
	if (seconds) {
		end = next;
		end.tv_sec += seconds;
	}
	while (!stop) {
		char *anon;

		if (pwrite(fd, buf, PAGE, (writes % FILE_PAGES) * PAGE) !=
		    (ssize_t)PAGE) {
			fprintf(stderr, "bg-writer: write: %s\n", strerror(errno));
			return 1;
		}
		writes++;
		anon = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (anon == MAP_FAILED) {
			fprintf(stderr, "bg-writer: mmap: %s\n", strerror(errno));
			return 1;
		}
		anon[0] = (char)writes;
		munmap(anon, PAGE);
		pages++;

		next.tv_nsec += period * 1000;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		if (seconds && (next.tv_sec > end.tv_sec ||
				(next.tv_sec == end.tv_sec &&
				 next.tv_nsec >= end.tv_nsec)))
			break;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	close(fd);
	if (own)
		unlink(path);
	printf("bg-writer: %lu writes, %lu anonymous pages\n", writes, pages);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * waitfor - wait for a line in a log, for a number of migrated pages, or
 * for a process to end, in one process.
 *
 * The guest scripts that bound a measurement window (anon-steady,
 * steady-window) used to poll once a second with grep, awk, date and
 * sleep: four fork()+exec()s a second.  In the tiered VM that alone
 * made anon-ro's readers run at half their untraced rate and nearly stop
 * for a minute (2026-12-06: no tracing, migrc=off, 7 intervals of 10 s
 * under a tenth of the median), so the windows measured a perturbed
 * system.  waitfor reads its files every 200 ms and starts nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

#define POLL_NS		200000000L
#define VMSTAT		"/proc/vmstat"

static void show_usage(FILE *f)
{
	fputs("usage: waitfor [-f FILE -e REGEX] [-m PAGES] [-k PID] -t SECONDS\n"
	      "\n"
	      "Wait, without starting any process, until the first of:\n"
	      "  -f FILE -e REGEX  a line of FILE matches REGEX (POSIX extended, as\n"
	      "                    grep -E); FILE may not exist yet\n"
	      "  -m PAGES          pgmigrate_success in /proc/vmstat has grown by PAGES\n"
	      "                    since waitfor started\n"
	      "  -k PID            process PID has ended\n"
	      "  -t SECONDS        have passed (required, 1-86400)\n"
	      "Only whole lines (ended by a newline) are matched.  Numbers are decimal.\n"
	      "Checks every 200 ms.  Then prints one line on stdout:\n"
	      "  waitfor: CAUSE after T s, N pages migrated\n"
	      "where CAUSE is line, pages, exited or timeout, and N is the growth of\n"
	      "pgmigrate_success (0 if the kernel has no migration).\n"
	      "\n"
	      "Exit status: 0 line or pages; 1 exited or timeout; 2 bad arguments\n"
	      "(an invalid WAITFOR_PID too); 3 FILE or /proc/vmstat could not be read,\n"
	      "or /proc/vmstat is not lines of \"name number\".\n"
	      "Environment: WAITFOR_PID, when set, is -k's PID (a command line that is\n"
	      "the same in every run, for migrc compare); WAITFOR_VMSTAT replaces\n"
	      "/proc/vmstat (for tests).\n",
	      f);
}

/*
 * A decimal number in [@min, @max]: the scripts that call waitfor check
 * their numbers as decimal digits, so "010" must be ten here too, not
 * parse_ul()'s octal eight.
 */
static bool parse_dec(const char *s, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	const char *c;

	for (c = s; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	while (s[0] == '0' && s[1])
		s++;
	return *s && parse_ul(s, min, max, out);
}

static void die_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "waitfor: invalid %s '%s'\n", msg, arg);
	show_usage(stderr);
	exit(2);
}

/* pgmigrate_success, or 0 when the kernel has none; -1 on a read error. */
static long long migrated(const char *path)
{
	char key[64];
	long long v, found = 0;
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return -1;
	while ((n = fscanf(f, "%63s %lld", key, &v)) == 2)
		if (!strcmp(key, "pgmigrate_success"))
			found = v;
	fclose(f);
	/* A line that is not "name number" is a malformed file. */
	return n == EOF ? found : -1;
}

/*
 * Whether a line of @path matches @re.  @off is where the last look
 * ended, so that each line is read once; a line still being written
 * (no newline yet) is read again next time.
 */
static int line_found(const char *path, const regex_t *re, long *off)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int hit = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return errno == ENOENT ? 0 : -1;
	if (fseek(f, *off, SEEK_SET)) {
		fclose(f);
		return -1;
	}
	while (!hit && (len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] != '\n')
			break;
		*off += len;
		line[len - 1] = '\0';
		hit = !regexec(re, line, 0, NULL, 0);
	}
	free(line);
	fclose(f);
	return hit;
}

/* Gone, or a zombie its parent has not reaped yet (kill -0 says alive). */
static bool ended(unsigned long pid)
{
	char path[32], buf[512], *p;
	bool gone;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%lu/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	/* The state follows the command name, which may hold ')' itself. */
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	gone = p && (p[1] == ' ') && (p[2] == 'Z' || p[2] == 'X');
	fclose(f);
	return gone;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *file = NULL, *expr = NULL, *cause = NULL;
	const char *vmstat = getenv("WAITFOR_VMSTAT") ?: VMSTAT;
	const char *envpid = getenv("WAITFOR_PID");
	unsigned long pages = 0, secs = 0, pid = 0;
	struct timespec tick = { 0, POLL_NS };
	long long m0, m = 0;
	double t0;
	long off = 0;
	regex_t re;
	int o, rc;

	if (envpid && !parse_dec(envpid, 1, 1UL << 22, &pid))
		die_usage("WAITFOR_PID", envpid);
	if (argc == 2 && !strcmp(argv[1], "--help")) {
		show_usage(stdout);
		return 0;
	}
	while ((o = getopt(argc, argv, "f:e:m:k:t:h")) != -1) {
		switch (o) {
		case 'f':
			file = optarg;
			break;
		case 'e':
			expr = optarg;
			break;
		case 'm':
			if (!parse_dec(optarg, 1, 1UL << 40, &pages))
				die_usage("-m", optarg);
			break;
		case 'k':
			if (!parse_dec(optarg, 1, 1UL << 22, &pid))
				die_usage("-k", optarg);
			break;
		case 't':
			if (!parse_dec(optarg, 1, 86400, &secs))
				die_usage("-t", optarg);
			break;
		case 'h':
			show_usage(stdout);
			return 0;
		default:
			show_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		die_usage("argument", argv[optind]);
	if (!secs)
		die_usage("-t", "(missing)");
	if (!file != !expr)
		die_usage("-f/-e", "give both or neither");
	if (expr && (!*expr || regcomp(&re, expr, REG_EXTENDED | REG_NOSUB)))
		die_usage("-e", expr);

	errno = 0;
	m0 = migrated(vmstat);
	if (m0 < 0) {
		fprintf(stderr, "waitfor: cannot read %s: %s\n", vmstat,
			errno ? strerror(errno) : "malformed");
		return 3;
	}
	t0 = now();
	for (;;) {
		m = migrated(vmstat);
		if (m < 0) {
			fprintf(stderr, "waitfor: cannot read %s\n", vmstat);
			return 3;
		}
		m -= m0;
		rc = expr ? line_found(file, &re, &off) : 0;
		if (rc < 0) {
			fprintf(stderr, "waitfor: cannot read %s: %s\n", file,
				strerror(errno));
			return 3;
		}
		if (rc)
			cause = "line";
		else if (pages && m >= (long long)pages)
			cause = "pages";
		else if (pid && ended(pid))
			/* It may have written the line just before it ended. */
			cause = expr && line_found(file, &re, &off) > 0 ?
				"line" : "exited";
		else if (now() - t0 >= secs)
			cause = "timeout";
		if (cause)
			break;
		nanosleep(&tick, NULL);
	}
	printf("waitfor: %s after %.0f s, %lld pages migrated\n", cause,
	       now() - t0, m);
	return strcmp(cause, "line") && strcmp(cause, "pages");
}

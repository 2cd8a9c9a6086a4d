// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - measure TLB shootdowns, tlb_flush events, TLB misses and
 * migration counters for a command or a time window, compare runs, and
 * record the migrc tracepoints.  See migrc.8.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "migrc.h"

static void main_usage(FILE *f)
{
	fputs("usage: migrc <command> [options]\n"
	      "\n"
	      "  stat     measure a command (or, with -a -I, the system for a time window)\n"
	      "  compare  compare result files BEFORE / AFTER, as table, CSV, JSON or SVG\n"
	      "  trace    record the migrc tracepoints: flush reasons and flush age histogram,\n"
	      "           and where migration batches spend their time (mm_migrate_batch)\n"
	      "\n"
	      "'migrc <command> --help' describes each command; 'man ./migrc.8' all of them.\n"
	      "Exit codes: 0 ok, 1 usage, 2 system or input error, 3 feature absent,\n"
	      "4 compare: runs not comparable; stat with a command: the command's status,\n"
	      "125 migrc failed, 126/127 the command could not be executed / found.\n", f);
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		main_usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		main_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("migrc %s (result format version %d)\n", MIGRC_VERSION_STR,
		       MIGRC_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc - 1, argv + 1);
	if (!strcmp(cmd, "compare"))
		return cmd_compare(argc - 1, argv + 1);
	if (!strcmp(cmd, "trace"))
		return cmd_trace(argc - 1, argv + 1);
	errmsg("unknown command '%s'", cmd);
	main_usage(stderr);
	return EXIT_USAGE;
}

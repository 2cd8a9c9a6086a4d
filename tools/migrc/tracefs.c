// SPDX-License-Identifier: GPL-2.0
/*
 * migrc - locate tracefs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migrc.h"

static char why[512] = "tracefs not found (mount it on /sys/kernel/tracing, or set "
		       "MIGRC_TRACEFS)";

const char *tracefs_why(void)
{
	return why;
}

static bool has_events_dir(const char *root)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events", root);
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return true;
	if (errno == EACCES || errno == EPERM)
		snprintf(why, sizeof(why), "tracefs %s is not accessible (%s): needs root",
			 root, strerror(errno));
	return false;
}

/*
 * MIGRC_TRACEFS wins (tests).  Otherwise the usual mount points; as root,
 * mount tracefs on /sys/kernel/tracing if nothing is mounted yet (minimal
 * guests often boot without it).
 */
const char *tracefs_root(bool try_mount)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	const char *env = getenv("MIGRC_TRACEFS");
	size_t i;

	if (env && *env)
		return has_events_dir(env) ? env : NULL;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (has_events_dir(dirs[i]))
			return dirs[i];
	if (!try_mount || geteuid() != 0 || strstr(why, "accessible"))
		return NULL;
	if (mount("nodev", dirs[0], "tracefs", 0, NULL)) {
		snprintf(why, sizeof(why), "tracefs is not mounted and mounting it on %s "
			 "failed: %s", dirs[0], strerror(errno));
		return NULL;
	}
	warnmsg("mounted tracefs on %s (it was not mounted)", dirs[0]);
	return has_events_dir(dirs[0]) ? dirs[0] : NULL;
}

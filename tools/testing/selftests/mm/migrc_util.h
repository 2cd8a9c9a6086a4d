/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the migrc selftests (migrc_tlb, migrc_copy,
 * migrc_reclaim, migrc_faults, migrc_fschange, migrc_fork,
 * migrc_anon_reclaim).  What upstream already has is taken from vm_util.h
 * (pagemap_get_pfn(), check_huge_anon()) and thp_settings.h
 * (thp_is_enabled()); this header holds only the rest.
 *
 * Include it after kselftest_harness.h, which defines _GNU_SOURCE for
 * sched_setaffinity() and the CPU_* macros.
 */
#ifndef __MIGRC_UTIL_H__
#define __MIGRC_UTIL_H__

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

/* Read a small file into buf without the trailing newline; 0 or -errno. */
static inline int read_str(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[n] = 0;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return 0;
}

/* Write s to path in one write(); 0 or -errno. */
static inline int write_str(const char *path, const char *s)
{
	ssize_t n, len = strlen(s);
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	return n == len ? 0 : -EIO;
}

/* The number in a small file (a sysfs knob), LLONG_MIN if none. */
static inline long long read_ll(const char *path)
{
	char buf[64], *end;
	long long v;

	if (read_str(path, buf, sizeof(buf)))
		return LLONG_MIN;
	errno = 0;
	v = strtoll(buf, &end, 0);
	if (errno || end == buf)
		return LLONG_MIN;
	return v;
}

/*
 * The value of "@key value" in a flat keyed file (/proc/vmstat,
 * memory.stat, memory.events); -1 if the file or the key is missing.
 */
static inline long long read_keyed(const char *path, const char *key)
{
	char line[256], name[128];
	long long v, ret = -1;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lld", name, &v) == 2 &&
		    !strcmp(name, key)) {
			ret = v;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* /proc/vmstat: the value of counter @name, -1 if the kernel lacks it. */
static inline long long read_vmstat(const char *name)
{
	return read_keyed("/proc/vmstat", name);
}

/* Seconds on CLOCK_MONOTONIC. */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The number in environment variable @name, clamped to [@min, @max]
 * (anything that is not a number counts as @min); @def if unset or empty.
 */
static inline double env_double(const char *name, double def, double min,
				double max)
{
	const char *s = getenv(name);
	double v;

	if (!s || !*s)
		return def;
	v = strtod(s, NULL);
	if (!(v >= min))
		v = min;
	if (v > max)
		v = max;
	return v;
}

/* Run the calling thread on @cpu only: 0 or -errno. */
static inline int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/*
 * Is every byte of @v the byte of @a or of @b at the same position?  A
 * word torn by a byte-granular copy that is still running is such a mix.
 */
static inline bool byte_mix(uint64_t v, uint64_t a, uint64_t b)
{
	int s;

	for (s = 0; s < 64; s += 8) {
		uint64_t x = (v >> s) & 0xff;

		if (x != ((a >> s) & 0xff) && x != ((b >> s) & 0xff))
			return false;
	}
	return true;
}

/*
 * Parse a sysfs list such as "0-2,4" into @out (at most @max entries);
 * returns how many were stored.
 */
static inline int parse_list(const char *s, int *out, int max)
{
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (; a <= b && n < max; a++)
			out[n++] = a;
		s = end;
		if (*s == ',')
			s++;
	}
	return n;
}

/* The nodes with memory, at most @max of them, into @out: how many. */
static inline int memory_nodes(int *out, int max)
{
	char buf[4096];
	ssize_t len;
	int fd;

	fd = open("/sys/devices/system/node/has_memory", O_RDONLY);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	return parse_list(buf, out, max);
}

/* move_pages(2) on the calling process, without libnuma's wrapper. */
static inline long move_pages_sys(int count, void **pages, const int *nodes,
				  int *status, int flags)
{
	return syscall(SYS_move_pages, 0, count, pages, nodes, status, flags);
}

/*
 * The type of the filesystem @path is on ("ext4", "9p", ...; "unknown" if
 * not found), from the mount whose device is @path's in
 * /proc/self/mountinfo.  statfs() cannot tell 9p: it reports the f_type
 * of the filesystem it exports.  It is the fallback for the mounts whose
 * files have a device of their own (a btrfs subvolume's anonymous one).
 */
static inline void migrc_fs_type(const char *path, char *type, size_t size)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} magics[] = {
		{ 0x58465342, "xfs" },
		{ 0x9123683e, "btrfs" },
		{ 0x65735546, "fuse" },
		{ 0x01021997, "9p" },
		{ 0x01021994, "tmpfs" },
	};
	char line[4096], *sep;
	unsigned int maj, min, i;
	struct statfs sfs;
	struct stat st;
	bool found = false;
	FILE *f;

	snprintf(type, size, "unknown");
	if (stat(path, &st))
		return;
	f = fopen("/proc/self/mountinfo", "r");
	if (f) {
		while (!found && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%*s %*s %u:%u", &maj, &min) != 2 ||
			    makedev(maj, min) != st.st_dev)
				continue;
			sep = strstr(line, " - ");
			found = sep && sscanf(sep + 3, "%31s", type) == 1;
		}
		fclose(f);
	}
	if (found || statfs(path, &sfs))
		return;
	for (i = 0; i < ARRAY_SIZE(magics); i++)
		if ((unsigned long)sfs.f_type == magics[i].magic)
			snprintf(type, size, "%s", magics[i].name);
}

#endif /* __MIGRC_UTIL_H__ */

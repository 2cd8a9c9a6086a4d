/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Command-line number parsing shared by the harness workloads.
 *
 * strtoul() alone accepts "12abc" as 12, "" as 0 and "-1" as ULONG_MAX;
 * a workload that ran with such a value would measure something other than
 * what was asked.  parse_ul() takes a whole number or nothing.
 */
#ifndef MIGRC_HARNESS_ARGS_H
#define MIGRC_HARNESS_ARGS_H

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/*
 * Parse all of @s as an unsigned number (decimal, 0x hex or 0 octal) in
 * [@min, @max] into *@out.  Returns false, leaving *@out alone, otherwise.
 */
static inline bool parse_ul(const char *s, unsigned long min,
			    unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '-')
		return false;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

#endif /* MIGRC_HARNESS_ARGS_H */

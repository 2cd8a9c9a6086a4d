/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Why a deferred migrc flush was finally performed.  One list, expanded
 * into enum migrc_flush_reason, the migrc_flush_* vmstat counters and
 * their names, and the symbols of the migrc:migrc_flush tracepoint, so
 * that they cannot drift apart.  EM(NAME, name) expands each entry;
 * EMe() the last one.
 */
#ifndef _LINUX_MIGRC_TYPES_H
#define _LINUX_MIGRC_TYPES_H

/*
 * ALLOC	a tagged page is leaving the allocator
 * WRITE	something may write data that a stale entry reads
 * TIMEOUT	the oldest deferral reached max_age_ms
 * PRESSURE	more than max_pending_pages were deferred
 * OTHER	page isolation, offlining, a busy source
 */
#define MIGRC_FLUSH_REASONS(EM, EMe)	\
	EM(ALLOC,	alloc)		\
	EM(WRITE,	write)		\
	EM(TIMEOUT,	timeout)	\
	EM(PRESSURE,	pressure)	\
	EMe(OTHER,	other)

#define MIGRC_FLUSH_ENUM(NAME, name)	MIGRC_FLUSH_##NAME,
enum migrc_flush_reason {
	MIGRC_FLUSH_REASONS(MIGRC_FLUSH_ENUM, MIGRC_FLUSH_ENUM)
	NR_MIGRC_FLUSH_REASONS
};
#undef MIGRC_FLUSH_ENUM

#endif /* _LINUX_MIGRC_TYPES_H */

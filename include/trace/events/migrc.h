/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM migrc

#if !defined(_TRACE_MIGRC_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_MIGRC_H

#include <linux/tracepoint.h>
#include <linux/migrc.h>
#include <linux/migrate.h>

#ifndef __MIGRC_REASON_NAME
#define __MIGRC_REASON_NAME
/* A batch's reason by name, from upstream's one list (trace/events/migrate.h). */
static inline const char *migrc_reason_name(int reason)
{
	if (reason == MIGRC_REASON_RECLAIM)
		return "reclaim";
	if (reason >= 0 && reason < MR_TYPES)
		return migrate_reason_names[reason];
	return "unknown";
}
#endif

/* Export the flush reasons to user space, then map them to their names. */
#undef EM
#undef EMe
#define EM(NAME, name)	TRACE_DEFINE_ENUM(MIGRC_FLUSH_##NAME);
#define EMe(NAME, name)	TRACE_DEFINE_ENUM(MIGRC_FLUSH_##NAME);

MIGRC_FLUSH_REASONS(EM, EMe)

#undef EM
#undef EMe
#define EM(NAME, name)	{ MIGRC_FLUSH_##NAME, #name },
#define EMe(NAME, name)	{ MIGRC_FLUSH_##NAME, #name }

/*
 * A batch of read-only unmaps whose TLB shootdown was deferred: its
 * generation, how many source pages it tagged, and how many CPUs may hold
 * stale entries for them.
 */
TRACE_EVENT(migrc_defer,

	TP_PROTO(unsigned long gen, unsigned long nr_pages,
		 unsigned int nr_cpus, int reason),

	TP_ARGS(gen, nr_pages, nr_cpus, reason),

	TP_STRUCT__entry(
		__field(unsigned long,	gen)
		__field(unsigned long,	nr_pages)
		__field(unsigned int,	nr_cpus)
		__field(int,		reason)
		__string(reason_name,	migrc_reason_name(reason))
	),

	TP_fast_assign(
		__entry->gen		= gen;
		__entry->nr_pages	= nr_pages;
		__entry->nr_cpus	= nr_cpus;
		__entry->reason		= reason;
		__assign_str(reason_name);
	),

	TP_printk("gen=%lu nr_pages=%lu nr_cpus=%u reason=%s",
		  __entry->gen, __entry->nr_pages, __entry->nr_cpus,
		  __get_str(reason_name))
);

/*
 * A deferred flush performed: why, up to which generation, how many CPUs
 * were sent the shootdown and how many were skipped because they had
 * flushed since, how many pages it covered, and how long the oldest of
 * them waited.
 */
TRACE_EVENT(migrc_flush,

	TP_PROTO(int reason, unsigned long gen, unsigned int nr_cpus,
		 unsigned int nr_skipped, unsigned long nr_pages,
		 unsigned long age_us),

	TP_ARGS(reason, gen, nr_cpus, nr_skipped, nr_pages, age_us),

	TP_STRUCT__entry(
		__field(int,		reason)
		__field(unsigned long,	gen)
		__field(unsigned int,	nr_cpus)
		__field(unsigned int,	nr_skipped)
		__field(unsigned long,	nr_pages)
		__field(unsigned long,	age_us)
	),

	TP_fast_assign(
		__entry->reason		= reason;
		__entry->gen		= gen;
		__entry->nr_cpus	= nr_cpus;
		__entry->nr_skipped	= nr_skipped;
		__entry->nr_pages	= nr_pages;
		__entry->age_us		= age_us;
	),

	TP_printk("reason=%s gen=%lu nr_cpus=%u nr_skipped=%u nr_pages=%lu age_us=%lu",
		  __print_symbolic(__entry->reason,
				   MIGRC_FLUSH_REASONS(EM, EMe)),
		  __entry->gen, __entry->nr_cpus, __entry->nr_skipped,
		  __entry->nr_pages, __entry->age_us)
);

#endif /* _TRACE_MIGRC_H */

/* This part must be outside protection */
#include <trace/define_trace.h>

/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM migrc

#if !defined(_TRACE_MIGRC_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_MIGRC_H

#include <linux/tracepoint.h>
#include <linux/migrc.h>

TRACE_DEFINE_ENUM(MIGRC_FLUSH_ALLOC);
TRACE_DEFINE_ENUM(MIGRC_FLUSH_WRITE);
TRACE_DEFINE_ENUM(MIGRC_FLUSH_TIMEOUT);
TRACE_DEFINE_ENUM(MIGRC_FLUSH_PRESSURE);
TRACE_DEFINE_ENUM(MIGRC_FLUSH_OTHER);

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
	),

	TP_fast_assign(
		__entry->gen		= gen;
		__entry->nr_pages	= nr_pages;
		__entry->nr_cpus	= nr_cpus;
		__entry->reason		= reason;
	),

	TP_printk("gen=%lu nr_pages=%lu nr_cpus=%u migrate_reason=%d",
		  __entry->gen, __entry->nr_pages, __entry->nr_cpus,
		  __entry->reason)
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
				   { MIGRC_FLUSH_ALLOC,		"alloc" },
				   { MIGRC_FLUSH_WRITE,		"write" },
				   { MIGRC_FLUSH_TIMEOUT,	"timeout" },
				   { MIGRC_FLUSH_PRESSURE,	"pressure" },
				   { MIGRC_FLUSH_OTHER,		"other" }),
		  __entry->gen, __entry->nr_cpus, __entry->nr_skipped,
		  __entry->nr_pages, __entry->age_us)
);

#endif /* _TRACE_MIGRC_H */

/* This part must be outside protection */
#include <trace/define_trace.h>

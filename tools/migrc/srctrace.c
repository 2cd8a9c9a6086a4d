// SPDX-License-Identifier: GPL-2.0
/*
 * migrc stat --sources - record the events sources.c attributes
 * shootdowns from, in a private tracefs instance (libtracefs), and decode
 * them (libtraceevent).  A thread drains the buffers every 100 ms while
 * stat waits for its command or window.
 *
 * tlb:tlb_flush is required; every other event is optional and, when
 * absent, named in the run's notes together with what it costs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "migrc.h"

enum {
	EV_TLB, EV_MIG_START, EV_MIG_END, EV_SYS_ENTER, EV_SYS_EXIT,
	EV_RECLAIM,			/* 4 begin/end pairs */
	NR_EVS = EV_RECLAIM + 8
};

#define NO_MIG	"no migration attribution (CONFIG_MIGRATION off?)"
#define NO_SYS	"syscall attribution unavailable (CONFIG_FTRACE_SYSCALLS off?)"
#define SOFT	"mm_vmscan_memcg_softlimit_reclaim_"

/* system, name, and what its absence costs (NULL: required) */
static const char *const events[NR_EVS][3] = {
	[EV_TLB] = { "tlb", "tlb_flush", NULL },
	[EV_MIG_START] = { "migrate", "mm_migrate_pages_start", NO_MIG },
	[EV_MIG_END] = { "migrate", "mm_migrate_pages", NO_MIG },
	[EV_SYS_ENTER] = { "raw_syscalls", "sys_enter", NO_SYS },
	[EV_SYS_EXIT] = { "raw_syscalls", "sys_exit", NO_SYS },
	[EV_RECLAIM + 0] = { "vmscan", "mm_vmscan_direct_reclaim_begin", "" },
	[EV_RECLAIM + 1] = { "vmscan", "mm_vmscan_direct_reclaim_end", "" },
	[EV_RECLAIM + 2] = { "vmscan", "mm_vmscan_memcg_reclaim_begin", "" },
	[EV_RECLAIM + 3] = { "vmscan", "mm_vmscan_memcg_reclaim_end", "" },
	[EV_RECLAIM + 4] = { "vmscan", SOFT "begin", "" },
	[EV_RECLAIM + 5] = { "vmscan", SOFT "end", "" },
	[EV_RECLAIM + 6] = { "vmscan", "mm_vmscan_node_reclaim_begin", "" },
	[EV_RECLAIM + 7] = { "vmscan", "mm_vmscan_node_reclaim_end", "" },
};

/* The 6.12 values, for a format without a __print_symbolic() table. */
static const char *const mr_names_612[] = {
	"compaction", "memory_failure", "memory_hotplug", "syscall_or_cpuset",
	"mempolicy_mbind", "numa_misplaced", "contig_range", "longterm_pin",
	"demotion", "damon",
};

struct src_rec {
	const char *root;
	struct tep_handle *tep;
	struct tracefs_instance *inst;
	char name[64];
	struct tep_event *ev[NR_EVS];
	struct tep_format_field *tlb_reason, *mig_reason, *sys_id;
	long long send_val, recv_val, local_val[2];
	int nmr;
	struct tp_sym mr[MAX_SYMS];
	struct trace_events migrc;	/* migrc_flush, if there is one */
	struct src_state st;
	struct strlist notes;
	pthread_t thread;
	bool running;
	atomic_bool stop;
	uint64_t lost;
	bool lost_unknown;
};

/* ---- decoding ---- */

static bool read_num(struct tep_format_field *f, struct tep_record *rec,
		     long long *out)
{
	unsigned long long v;

	if (!f || tep_read_number_field(f, rec->data, &v))
		return false;
	*out = (long long)v;
	if (f->size == 4 && (f->flags & TEP_FIELD_IS_SIGNED))
		*out = (int32_t)v;
	return true;
}

static int ev_index(const struct src_rec *r, const struct tep_event *ev)
{
	int i;

	for (i = 0; i < NR_EVS; i++)
		if (r->ev[i] && r->ev[i] == ev)
			return i;
	return -1;
}

static bool decode_tlb(const struct src_rec *r, struct tep_record *rec,
		       struct src_event *e)
{
	long long v;

	if (!read_num(r->tlb_reason, rec, &v))
		return false;
	if (v == r->send_val)
		e->type = SRC_SEND;
	else if (v == r->recv_val)
		e->type = SRC_RECV;
	else if (v == r->local_val[0] || v == r->local_val[1])
		e->type = SRC_LOCAL;
	else
		return false;
	return true;
}

static bool decode_mig_start(const struct src_rec *r, struct tep_record *rec,
			     struct src_event *e, char *buf, size_t len)
{
	long long v = -1;

	e->type = SRC_MIG_START;
	read_num(r->mig_reason, rec, &v);
	if (r->nmr > 0)
		e->name = tp_sym_str(r->mr, r->nmr, v, buf, len);
	else if (v >= 0 && v < (long long)ARRAY_SIZE(mr_names_612))
		e->name = mr_names_612[v];
	return true;
}

/* The src_event of a record; false if the attribution has no use for it. */
static bool decode(const struct src_rec *r, struct tep_event *ev,
		   struct tep_record *rec, struct src_event *e, char *buf,
		   size_t len)
{
	int i = ev_index(r, ev);
	long long v;

	memset(e, 0, sizeof(*e));
	e->pid = tep_data_pid(r->tep, rec);
	e->cpu = rec->cpu;
	if (ev && ev == r->migrc.flush) {
		e->type = SRC_MIGRC_FLUSH;
		e->name = trace_flush_reason(&r->migrc, rec, buf, len);
		e->arg = read_num(r->migrc.cpus, rec, &v) ? v : 1;
		return true;
	}
	switch (i) {
	case EV_TLB:
		return decode_tlb(r, rec, e);
	case EV_MIG_START:
		return decode_mig_start(r, rec, e, buf, len);
	case EV_MIG_END:
		e->type = SRC_MIG_END;
		return true;
	case EV_SYS_ENTER:
		e->type = SRC_SYS_ENTER;
		if (!read_num(r->sys_id, rec, &v) || v < 0)
			return false;
		e->arg = v;
		return true;
	case EV_SYS_EXIT:
		e->type = SRC_SYS_EXIT;
		return true;
	case -1:
		return false;
	default:
		e->type = SRC_RECLAIM_BEGIN;
		if ((i - EV_RECLAIM) % 2)
			e->type = SRC_RECLAIM_END;
		return true;
	}
}

static int on_record(struct tep_event *ev, struct tep_record *rec, int cpu,
		     void *data)
{
	struct src_rec *r = data;
	struct src_event e;
	char buf[NAMELEN];

	(void)cpu;
	if (rec->missed_events > 0)
		r->lost += rec->missed_events;
	else if (rec->missed_events < 0)
		r->lost_unknown = true;
	if (decode(r, ev, rec, &e, buf, sizeof(buf)))
		src_feed(&r->st, &e);
	return 0;
}

/* ---- formats ---- */

/* The tlb_flush reason values, by name from the format, else 6.12's. */
static void tlb_values(struct src_rec *r)
{
	struct tp_sym syms[MAX_SYMS];
	char name[NAMELEN];
	int i, n = tp_symbols(r->ev[EV_TLB], "reason", syms, MAX_SYMS);

	r->recv_val = 1;
	r->local_val[0] = 2;
	r->local_val[1] = 3;
	r->send_val = 4;
	for (i = 0; i < n; i++) {
		tlb_reason_name(syms[i].str, name, sizeof(name));
		if (!strcmp(name, "TLB_REMOTE_SEND_IPI"))
			r->send_val = syms[i].value;
		else if (!strcmp(name, "TLB_REMOTE_SHOOTDOWN"))
			r->recv_val = syms[i].value;
		else if (!strcmp(name, "TLB_LOCAL_SHOOTDOWN"))
			r->local_val[0] = syms[i].value;
		else if (!strcmp(name, "TLB_LOCAL_MM_SHOOTDOWN"))
			r->local_val[1] = syms[i].value;
	}
	r->tlb_reason = tep_find_field(r->ev[EV_TLB], "reason");
}

static void note_once(struct strlist *l, const char *s)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return;
	strlist_add(l, s);
}

/* Load the formats; false if tlb_flush is unusable (the message in @err). */
static bool load_formats(struct src_rec *r, char *err, size_t errlen)
{
	char msg[ERRLEN];
	int i;

	r->tep = tp_open(true, err, errlen);
	if (!r->tep)
		return false;
	for (i = 0; i < NR_EVS; i++) {
		const char *sys = events[i][0], *name = events[i][1];

		r->ev[i] = tp_load(r->tep, sys, name, msg, sizeof(msg));
		if (r->ev[i])
			continue;
		if (!events[i][2]) {
			snprintf(err, errlen, "%s:%s: %.200s", sys, name, msg);
			return false;
		}
		if (*events[i][2])
			note_once(&r->notes, events[i][2]);
	}
	if (!r->ev[EV_RECLAIM] && !r->ev[EV_RECLAIM + 2])
		note_once(&r->notes,
			  "direct and memcg reclaim not seen (no vmscan events)");
	if (!r->ev[EV_MIG_START] || !r->ev[EV_MIG_END])
		r->ev[EV_MIG_START] = r->ev[EV_MIG_END] = NULL;
	if (!r->ev[EV_SYS_ENTER] || !r->ev[EV_SYS_EXIT])
		r->ev[EV_SYS_ENTER] = r->ev[EV_SYS_EXIT] = NULL;
	if (!tp_load(r->tep, "migrc", "migrc_flush", msg, sizeof(msg)))
		note_once(&r->notes,
			  "migrc's own flushes not told apart (no migrc_flush)");
	trace_events_init(&r->migrc, r->tep);
	tlb_values(r);
	if (r->ev[EV_MIG_START]) {
		r->mig_reason = tep_find_field(r->ev[EV_MIG_START], "reason");
		r->nmr = tp_symbols(r->ev[EV_MIG_START], "reason", r->mr,
				    MAX_SYMS);
	}
	if (r->ev[EV_SYS_ENTER])
		r->sys_id = tep_find_field(r->ev[EV_SYS_ENTER], "id");
	return true;
}

/* ---- the instance ---- */

static bool enable(struct src_rec *r, struct tep_event *ev, char *err,
		   size_t errlen)
{
	errno = 0;
	if (!ev || !tracefs_event_enable(r->inst, ev->system, ev->name))
		return true;
	snprintf(err, errlen,
		 "cannot enable %s:%s in tracefs instance %s/instances/%s%s%s",
		 ev->system, ev->name, r->root, r->name, errno ? ": " : "",
		 errno ? strerror(errno) : "");
	return false;
}

static bool instance_setup(struct src_rec *r, char *err, size_t errlen)
{
	int i;

	snprintf(r->name, sizeof(r->name), "migrc-src-%d", (int)getpid());
	errno = 0;
	r->inst = tracefs_instance_create(r->name);
	if (!r->inst || !tracefs_instance_is_new(r->inst)) {
		snprintf(err, errlen,
			 "cannot create tracefs instance %s/instances/%s: %s",
			 r->root, r->name,
			 r->inst ? "it exists already" : strerror(errno));
		tracefs_instance_free(r->inst);
		r->inst = NULL;
		return false;
	}
	tracefs_instance_set_buffer_size(r->inst, 8192, -1);
	/* Task switches flush too, often: leave them out. */
	tracefs_event_file_write(r->inst, "tlb", "tlb_flush", "filter",
				 "reason != 0");
	for (i = 0; i < NR_EVS; i++)
		if (!enable(r, r->ev[i], err, errlen))
			return false;
	return enable(r, r->migrc.flush, err, errlen);
}

static void instance_destroy(struct src_rec *r)
{
	if (!r->inst)
		return;
	tracefs_event_disable(r->inst, NULL, NULL);
	if (tracefs_instance_destroy(r->inst))
		warnmsg("could not remove tracefs instance %s/instances/%s: %s",
			r->root, r->name, strerror(errno));
	tracefs_instance_free(r->inst);
	r->inst = NULL;
}

static void drain(struct src_rec *r)
{
	tracefs_iterate_raw_events(r->tep, r->inst, NULL, 0, on_record, r);
}

/* The drain thread's own syscalls are not worth recording: they feed it. */
static void exclude_self(struct src_rec *r)
{
	char filter[64];

	if (!r->ev[EV_SYS_ENTER])
		return;
	snprintf(filter, sizeof(filter), "common_pid != %d && common_pid != %d",
		 (int)getpid(), (int)gettid());
	tracefs_event_file_write(r->inst, "raw_syscalls", "sys_enter",
				 "filter", filter);
	tracefs_event_file_write(r->inst, "raw_syscalls", "sys_exit",
				 "filter", filter);
}

static void *drainer(void *arg)
{
	const struct timespec tick = { 0, 100 * 1000 * 1000 };
	struct src_rec *r = arg;

	exclude_self(r);
	while (!atomic_load(&r->stop)) {
		drain(r);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

static void rec_free(struct src_rec *r)
{
	instance_destroy(r);
	tep_free(r->tep);
	src_state_free(&r->st);
	strlist_free(&r->notes);
	free(r);
}

/* The drain thread takes no signal: stat's own handling stays as it is. */
static bool start_thread(struct src_rec *r)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r->running = !pthread_create(&r->thread, NULL, drainer, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r->running;
}

/*
 * Start recording.  NULL if shootdowns cannot be attributed here: the
 * reason is printed and added to @absent, and stat goes on without.
 */
struct src_rec *src_start(struct strlist *absent)
{
	struct src_rec *r = xcalloc(1, sizeof(*r));
	char err[ERRLEN];

	r->root = tracing_root(true);
	if (!r->root) {
		snprintf(err, sizeof(err), "%s", tracing_why());
		goto fail;
	}
	if (!load_formats(r, err, sizeof(err)) ||
	    !instance_setup(r, err, sizeof(err)))
		goto fail;
	src_init(&r->st, r->ev[EV_SYS_ENTER] != NULL);
	if (!start_thread(r)) {
		snprintf(err, sizeof(err), "cannot start a thread: %s",
			 strerror(errno));
		goto fail;
	}
	return r;
fail:
	warnmsg("--sources: shootdowns cannot be attributed: %s", err);
	strlist_addf(absent, "sources: %s", err);
	rec_free(r);
	return NULL;
}

/*
 * Stop, read what is left, attribute.  The events are disabled first: on
 * a busy system they may come faster than they are read, and a drain cut
 * short would drop the records of the pages it had already taken.
 */
void src_stop(struct src_rec *r, struct src_result *out)
{
	int i;

	tracefs_event_disable(r->inst, NULL, NULL);
	atomic_store(&r->stop, true);
	if (r->running)
		pthread_join(r->thread, NULL);
	drain(r);
	memset(out, 0, sizeof(*out));
	src_finish(&r->st, out);
	out->lost = r->lost;
	for (i = 0; i < r->notes.n; i++)
		strlist_add(&out->notes, r->notes.v[i]);
	if (r->lost || r->lost_unknown)
		strlist_addf(&out->notes,
			     "trace buffers overflowed: %s%llu events lost, %s",
			     r->lost_unknown ? "at least " : "",
			     (unsigned long long)r->lost, "attribution approximate");
	rec_free(r);
}

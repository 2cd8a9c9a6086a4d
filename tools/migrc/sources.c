// SPDX-License-Identifier: GPL-2.0
/*
 * migrc stat --sources - attribute TLB shootdowns to what sent them.
 *
 * Not by stack: by the context each task is in, as the event stream says.
 * A task is inside a migrate_pages() call between mm_migrate_pages_start
 * and mm_migrate_pages, inside reclaim between the vmscan *_reclaim_begin
 * and *_end events (or always, if it is kswapd), inside a syscall between
 * raw_syscalls sys_enter and sys_exit.  A tlb_flush "remote ipi send"
 * event, fired in the sending task once per flush_tlb_multi(), counts for
 * the innermost of these:
 *
 *   migrc's own flush    the send is followed, in the same task, by a
 *                        migrc_flush event that targeted CPUs, with at
 *                        most one local flush in between (the sender's
 *                        own TLB, flushed by the same flush_tlb_multi())
 *   migration            by MR_ reason: demotion, promotion (NUMA
 *                        hinting), damon, migration_other
 *   reclaim              direct/memcg/node reclaim, kswapd
 *   damon                kdamond outside a migration (DAMOS pageout)
 *   syscall              munmap, mprotect, madvise, syscall:NAME
 *   user task otherwise  numa_scan_fault: a fault, or task_work on the
 *                        way back to user space (task_numa_work()'s
 *                        change_prot_numa()); "user" if there are no
 *                        syscall events to tell a syscall from a fault
 *   anything else        other (kernel threads)
 *
 * A send waits ("pending") for the task's next event to know whether it
 * was migrc's; the context it is counted in is the one it was sent in,
 * because every event that changes the context first settles it.
 * Events of the idle tasks (pid 0) are kept apart per CPU.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "migrc.h"

#define PF_KTHREAD	0x00200000	/* include/linux/sched.h */

enum task_kind { KIND_UNKNOWN, KIND_USER, KIND_KTHREAD, KIND_GONE };

struct src_task {
	int key;		/* pid, or -1 - cpu for pid 0; 0 = free slot */
	const char *mig;	/* source of the open migrate_pages() call */
	int reclaim;		/* open reclaim brackets */
	long sys;		/* syscall being executed, -1 outside */
	bool seen_sys;		/* ever seen in a syscall event */
	bool pending;		/* a send not yet attributed */
	int locals;		/* local flushes since that send */
	enum task_kind kind;
	char comm[16];
};

/* Sources always listed, in this order; others appear as they are seen. */
static const char *const base_sources[] = {
	"demotion", "promotion", "damon", "migration_other", "reclaim",
	"numa_scan_fault", "munmap", "mprotect", "madvise", "other",
};

void src_init(struct src_state *s, bool has_sys)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->has_sys = has_sys;
	s->cap = 256;
	s->tasks = xcalloc(s->cap, sizeof(*s->tasks));
	ctrlist_init(&s->sends);
	for (i = 0; i < ARRAY_SIZE(base_sources); i++)
		ctrlist_add(&s->sends, base_sources[i], 0, true);
}

void src_state_free(struct src_state *s)
{
	free(s->tasks);
	free(s->recv);
	ctrlist_free(&s->sends);
	memset(s, 0, sizeof(*s));
}

void src_result_free(struct src_result *r)
{
	ctrlist_free(&r->sends);
	free(r->recv);
	strlist_free(&r->notes);
	memset(r, 0, sizeof(*r));
}

/* ---- names ---- */

/* The source of a migrate_pages() call, by its MR_ reason's trace name. */
const char *src_migrate_source(const char *mr_name)
{
	if (!mr_name)
		return "migration_other";
	if (!strcmp(mr_name, "demotion"))
		return "demotion";
	if (!strcmp(mr_name, "numa_misplaced"))
		return "promotion";
	if (!strcmp(mr_name, "damon"))
		return "damon";
	return "migration_other";
}

static const struct {
	long nr;
	const char *name;
} syscalls[] = {
	{ SYS_munmap, "munmap" },
	{ SYS_mprotect, "mprotect" },
	{ SYS_madvise, "madvise" },
	{ SYS_mmap, "syscall:mmap" },
	{ SYS_brk, "syscall:brk" },
	{ SYS_mremap, "syscall:mremap" },
	{ SYS_clone, "syscall:clone" },
#ifdef SYS_fork
	{ SYS_fork, "syscall:fork" },
#endif
	{ SYS_clone3, "syscall:clone3" },
	{ SYS_execve, "syscall:execve" },
	{ SYS_exit, "syscall:exit" },
	{ SYS_exit_group, "syscall:exit_group" },
	{ SYS_mbind, "syscall:mbind" },
	{ SYS_migrate_pages, "syscall:migrate_pages" },
	{ SYS_move_pages, "syscall:move_pages" },
	{ SYS_pkey_mprotect, "syscall:pkey_mprotect" },
	{ SYS_process_madvise, "syscall:process_madvise" },
	{ SYS_ioctl, "syscall:ioctl" },
	{ SYS_read, "syscall:read" },
	{ SYS_write, "syscall:write" },
	{ SYS_pwrite64, "syscall:pwrite64" },
	{ SYS_fallocate, "syscall:fallocate" },
	{ SYS_ftruncate, "syscall:ftruncate" },
};

/* munmap, mprotect and madvise by name, the other syscalls as syscall:NAME. */
const char *src_syscall_source(long nr, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(syscalls); i++)
		if (syscalls[i].nr == nr)
			return syscalls[i].name;
	snprintf(buf, len, "syscall:%ld", nr);
	return buf;
}

/* ---- tasks ---- */

static struct src_task *slot(struct src_task *tab, int cap, int key)
{
	unsigned int h = (unsigned int)key * 2654435761u;
	int i;

	i = h & (cap - 1);
	while (tab[i].key && tab[i].key != key)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static void grow(struct src_state *s)
{
	struct src_task *old = s->tasks;
	int i, cap = s->cap;

	s->cap *= 2;
	s->tasks = xcalloc(s->cap, sizeof(*s->tasks));
	for (i = 0; i < cap; i++)
		if (old[i].key)
			*slot(s->tasks, s->cap, old[i].key) = old[i];
	free(old);
}

static struct src_task *task_get(struct src_state *s, int key)
{
	struct src_task *t;

	if (2 * (s->ntasks + 1) > s->cap)
		grow(s);
	t = slot(s->tasks, s->cap, key);
	if (!t->key) {
		t->key = key;
		t->sys = -1;
		s->ntasks++;
	}
	return t;
}

static int task_key(int pid, int cpu)
{
	return pid > 0 ? pid : -1 - cpu;
}

/* For the tests and for tasks known otherwise: name and kind of a pid. */
void src_set_task(struct src_state *s, int pid, const char *comm, bool kthread)
{
	struct src_task *t = task_get(s, task_key(pid, 0));

	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	t->kind = kthread ? KIND_KTHREAD : KIND_USER;
}

/* Name and PF_KTHREAD from /proc/PID/stat, looked up once per task. */
static void task_lookup(struct src_task *t)
{
	char rel[64], path[4096], err[ERRLEN];
	unsigned long flags;
	char *buf, *open, *close;

	if (t->kind != KIND_UNKNOWN)
		return;
	t->kind = KIND_GONE;
	if (t->key < 0) {		/* the idle task */
		t->kind = KIND_KTHREAD;
		return;
	}
	snprintf(rel, sizeof(rel), "%d/stat", t->key);
	proc_path(rel, path, sizeof(path));
	buf = read_file(path, NULL, err, sizeof(err));
	if (!buf)
		return;
	open = strchr(buf, '(');
	close = strrchr(buf, ')');
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (open && close > open &&
	    sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1) {
		snprintf(t->comm, sizeof(t->comm), "%.*s",
			 (int)(close - open - 1), open + 1);
		t->kind = (flags & PF_KTHREAD) ? KIND_KTHREAD : KIND_USER;
	}
	free(buf);
}

/* ---- attribution ---- */

static const char *classify(struct src_state *s, struct src_task *t,
			    char *buf, size_t len)
{
	if (t->mig)
		return t->mig;
	if (t->reclaim > 0)
		return "reclaim";
	if (t->sys >= 0)
		return src_syscall_source(t->sys, buf, len);
	task_lookup(t);
	if (!strncmp(t->comm, "kswapd", 6))
		return "reclaim";
	if (!strncmp(t->comm, "kdamond", 7))
		return "damon";
	/* A task gone before the lookup: a syscall says it was a user's. */
	if (t->kind == KIND_USER || (t->kind == KIND_GONE && t->seen_sys))
		return s->has_sys ? "numa_scan_fault" : "user";
	return "other";
}

static void count(struct src_state *s, const char *source)
{
	struct ctr *c = ctrlist_find(&s->sends, source);

	if (!c)
		c = ctrlist_add(&s->sends, source, 0, true);
	c->val++;
}

/* Count the task's pending send in the context it is in. */
static void settle(struct src_state *s, struct src_task *t)
{
	char buf[NAMELEN];

	if (!t->pending)
		return;
	t->pending = false;
	count(s, classify(s, t, buf, sizeof(buf)));
}

static void on_migrc_flush(struct src_state *s, struct src_task *t,
			   const struct src_event *e)
{
	char name[NAMELEN];

	if (!t->pending || e->arg <= 0) {
		settle(s, t);
		return;
	}
	t->pending = false;
	snprintf(name, sizeof(name), "migrc:%s", e->name ? e->name : "?");
	count(s, name);
}

static void on_recv(struct src_state *s, int cpu)
{
	int n;

	if (cpu < 0 || cpu >= MAX_CPUS)
		return;
	if (cpu >= s->nrecv) {
		n = cpu + 1;
		s->recv = xrealloc(s->recv, n * sizeof(*s->recv));
		memset(s->recv + s->nrecv, 0,
		       (n - s->nrecv) * sizeof(*s->recv));
		s->nrecv = n;
	}
	s->recv[cpu]++;
}

void src_feed(struct src_state *s, const struct src_event *e)
{
	struct src_task *t;

	/* Received: in the interrupted task, whose context it is not. */
	if (e->type == SRC_RECV) {
		on_recv(s, e->cpu);
		return;
	}
	t = task_get(s, task_key(e->pid, e->cpu));
	switch (e->type) {
	case SRC_SEND:
		settle(s, t);
		t->pending = true;
		t->locals = 0;
		return;
	case SRC_LOCAL:
		if (t->pending && ++t->locals > 1)
			settle(s, t);
		return;
	case SRC_MIGRC_FLUSH:
		on_migrc_flush(s, t, e);
		return;
	default:
		break;
	}
	settle(s, t);
	switch (e->type) {
	case SRC_MIG_START:
		t->mig = src_migrate_source(e->name);
		break;
	case SRC_MIG_END:
		t->mig = NULL;
		break;
	case SRC_RECLAIM_BEGIN:
		t->reclaim++;
		break;
	case SRC_RECLAIM_END:
		if (t->reclaim > 0)
			t->reclaim--;
		break;
	case SRC_SYS_ENTER:
		t->sys = e->arg;
		t->seen_sys = true;
		break;
	case SRC_SYS_EXIT:
		t->sys = -1;
		t->seen_sys = true;
		break;
	default:
		break;
	}
}

/* Settle what is pending and hand the counts over, with their total. */
void src_finish(struct src_state *s, struct src_result *out)
{
	int64_t total = 0;
	int i;

	for (i = 0; i < s->cap; i++)
		if (s->tasks[i].key)
			settle(s, &s->tasks[i]);
	ctrlist_init(&out->sends);
	for (i = 0; i < s->sends.n; i++) {
		const struct ctr *c = &s->sends.v[i];

		ctrlist_add(&out->sends, c->name, c->val, true);
		total += c->val;
	}
	ctrlist_add(&out->sends, "total", total, true);
	out->recv = s->recv;
	out->nrecv = s->nrecv;
	out->recv_total = 0;
	for (i = 0; i < s->nrecv; i++)
		out->recv_total += s->recv[i];
	s->recv = NULL;
	s->nrecv = 0;
}

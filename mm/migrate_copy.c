// SPDX-License-Identifier: GPL-2.0
/*
 * Batched, multithreaded folio copy for migrate_pages_batch().
 *
 * After a batch has been unmapped and its TLB flush point passed, the data
 * of every folio that can take it is copied in one step by the selected
 * backend; the per-folio move then skips its copy.  The "mt" backend splits
 * the batch over idle CPUs of the source (push) or destination (pull) node
 * that the caller may run on, one per LLC domain first.  Anything that does
 * not fit (a busy system, a small batch, an error) degrades to the serial
 * copy of today, never to something slower.
 *
 * Documentation/mm/migrate_copy.rst describes the design and the knobs in
 * /sys/kernel/mm/migrate/.
 */

#define pr_fmt(fmt) "migrate_copy: " fmt

#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fault-inject.h>
#include <linux/highmem.h>
#include <linux/kobject.h>
#include <linux/migrate.h>
#include <linux/migrate_copy.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/sysfs.h>
#include <linux/topology.h>
#include <linux/vmstat.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "internal.h"

#include <trace/events/migrate.h>

/* Chunks of a pulled copy: see migrate_copy_chunk_pages(). */
#define MIGRATE_COPY_CHUNKS_PER_CPU	4

DEFINE_STATIC_KEY_FALSE(migrate_copy_key);

enum migrate_copy_policy {
	MIGRATE_COPY_AUTO,	/* destination node if it has CPUs, else source */
	MIGRATE_COPY_PUSH,	/* CPUs of the source node */
	MIGRATE_COPY_PULL,	/* CPUs of the destination node */
};

static const char * const policy_names[] = {
	[MIGRATE_COPY_AUTO] = "auto",
	[MIGRATE_COPY_PUSH] = "push",
	[MIGRATE_COPY_PULL] = "pull",
};

static DEFINE_MUTEX(backend_lock);
static LIST_HEAD(backends);
DEFINE_STATIC_SRCU(backend_srcu);
static struct migrate_copy_backend __rcu *backend_cur;

static unsigned int copy_threads;		/* 0: as many as useful */
static unsigned int copy_policy = MIGRATE_COPY_AUTO;
static unsigned int copy_min_pages = 32;

/*
 * Where a CPU is in the batch: the item holding its next page, and the
 * batch page number of that item's first page.  The chunks one CPU claims
 * only ever move forward, so each CPU walks the items once in all, not
 * once per chunk (the ceiling copies tens of thousands of small folios).
 */
struct copy_cursor {
	unsigned int item;
	unsigned long first;
};

/* Copy pages [start, end) of the batch, numbered across its folios. */
static int copy_range(struct migrate_copy_job *job, struct copy_cursor *cur,
		      unsigned long start, unsigned long end)
{
	for (; cur->item < job->nr_items && start < end; cur->item++) {
		struct migrate_copy_item *it = &job->items[cur->item];
		unsigned long last = cur->first + it->nr_pages;

		for (; start < end && start < last; start++) {
			unsigned long n = start - cur->first;

			if (copy_mc_highpage(folio_page(it->dst, n),
					     folio_page(it->src, n)))
				return -EHWPOISON;
			if (!(n & 63))
				cond_resched();
		}
		if (start < last)
			break;		/* the chunk ends inside this item */
		cur->first = last;
	}
	return 0;
}

static int serial_copy(struct migrate_copy_job *job)
{
	struct copy_cursor cur = { };
	u64 t0 = ktime_get_ns();
	int err = copy_range(job, &cur, 0, job->nr_pages);

	job->threads = 1;
	job->cpu_ns = ktime_get_ns() - t0;
	return err;
}

static struct migrate_copy_backend serial_backend = {
	.name = "serial",
	.copy = serial_copy,
};

/**
 * migrate_copy_chunk_pages - pages per chunk of a pulled batch copy
 * @nr_pages: pages in the batch
 * @nr_cpus: CPUs that will pull chunks, the caller included
 *
 * About four chunks per CPU, so that a CPU that copies more slowly (across
 * the interconnect, or interrupted) leaves its share to the others; never
 * below MIGRATE_COPY_MIN_THREAD_PAGES, where one claim (an atomic on a
 * shared line) would no longer be small next to the copy; never above
 * MIGRATE_COPY_MAX_CHUNK_PAGES (2 MB, a PMD-sized folio on x86), which
 * bounds how long a helper stalled in the middle of its chunk can hold up
 * the batch.  Pure, for KUnit.
 *
 * Return: the chunk size in pages, from MIGRATE_COPY_MIN_THREAD_PAGES to
 * MIGRATE_COPY_MAX_CHUNK_PAGES.
 */
unsigned long migrate_copy_chunk_pages(unsigned long nr_pages,
				       unsigned int nr_cpus)
{
	unsigned long chunk;

	chunk = DIV_ROUND_UP(nr_pages, MIGRATE_COPY_CHUNKS_PER_CPU *
					 max(nr_cpus, 1U));
	return clamp(chunk, (unsigned long)MIGRATE_COPY_MIN_THREAD_PAGES,
		     (unsigned long)MIGRATE_COPY_MAX_CHUNK_PAGES);
}
EXPORT_SYMBOL_IF_KUNIT(migrate_copy_chunk_pages);

unsigned int migrate_copy_pick_cpus(const struct cpumask *candidates,
				    const struct cpumask *idle,
				    int (*llc_id)(unsigned int cpu),
				    unsigned int want, unsigned int *out)
{
	unsigned int cpu, n = 0, j, pass;

	/* Pass 0: one idle CPU per LLC domain; pass 1: any other idle CPU. */
	for (pass = 0; pass < 2 && n < want; pass++) {
		for_each_cpu_and(cpu, candidates, idle) {
			bool taken = false, shared = false;

			for (j = 0; j < n; j++) {
				taken |= out[j] == cpu;
				shared |= llc_id(out[j]) == llc_id(cpu);
			}
			if (taken || (pass == 0 && shared))
				continue;
			out[n++] = cpu;
			if (n == want)
				break;
		}
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(migrate_copy_pick_cpus);

static int cpu_llc_id(unsigned int cpu)
{
	/* The first CPU of the LLC domain names it; no per-vendor code. */
	return cpumask_first(cpu_coregroup_mask(cpu));
}

/*
 * A batch copied by several CPUs.  The pages, numbered across the batch's
 * folios, are claimed a chunk at a time from @next by the caller and by
 * every helper that gets to run (pull), rather than cut into one fixed
 * range per CPU: a chunk no helper has claimed is copied by whichever CPU
 * is free, so a helper that is slow to start, or stalls, holds up the batch
 * by at most the chunk it holds.  The caller waits only for @done to reach
 * @nr_pages, never for a helper that holds no chunk; such a helper may run
 * after the caller has returned, so this is reference counted and a helper
 * touches the job only through a chunk it claimed.
 */
struct mt_copy_ctl {
	struct migrate_copy_job *job;
	unsigned long nr_pages;
	unsigned long chunk;
	atomic_long_t next;		/* first page of the next chunk */
	atomic_long_t done;		/* pages copied (or failed) */
	atomic64_t cpu_ns;		/* time spent copying, all CPUs */
	atomic_t threads;		/* CPUs that copied a chunk */
	atomic_t err;			/* the first error */
	struct completion all_done;
	refcount_t ref;			/* the caller and each queued helper */
	struct mt_helper {
		struct work_struct work;
		struct mt_copy_ctl *ctl;
	} helpers[];
};

static void mt_copy_put(struct mt_copy_ctl *ctl)
{
	if (refcount_dec_and_test(&ctl->ref))
		kfree(ctl);
}

/*
 * Copy chunks until none is left; false if there was none to copy.  After
 * an error a chunk is only counted, not copied: the batch has failed as a
 * whole and the per-folio path copies it again.
 */
static bool mt_pull(struct mt_copy_ctl *ctl)
{
	struct copy_cursor cur = { };
	bool counted = false;
	unsigned long start;

	while ((start = atomic_long_fetch_add(ctl->chunk, &ctl->next)) <
	       ctl->nr_pages) {
		unsigned long end = min(start + ctl->chunk, ctl->nr_pages);

		if (!atomic_read(&ctl->err)) {
			u64 t0 = ktime_get_ns();
			int err = copy_range(ctl->job, &cur, start, end);

			if (err)
				atomic_cmpxchg(&ctl->err, 0, err);
			atomic64_add(ktime_get_ns() - t0, &ctl->cpu_ns);
		}
		if (!counted) {
			atomic_inc(&ctl->threads);
			counted = true;
		}
		/* The last chunk to finish releases the caller. */
		if (atomic_long_add_return(end - start, &ctl->done) ==
		    ctl->nr_pages)
			complete(&ctl->all_done);
	}
	return counted;
}

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
/* debugfs fail_migrate_copy/helper_stall_ms, see below. */
static u32 helper_stall_ms;

/* A helper delayed as if its CPU had been taken away (preempted vCPU). */
static void mt_helper_stall(void)
{
	u32 ms = READ_ONCE(helper_stall_ms);

	if (ms)
		msleep(min(ms, 10000U));
}
#else
static inline void mt_helper_stall(void) { }
#endif

static void mt_helper_fn(struct work_struct *work)
{
	struct mt_helper *h = container_of(work, struct mt_helper, work);
	struct mt_copy_ctl *ctl = h->ctl;

	mt_helper_stall();
	/* Started after the others had copied everything. */
	if (!mt_pull(ctl))
		count_vm_event(PGMIGRATE_COPY_HELPER_LATE);
	mt_copy_put(ctl);
}

/**
 * migrate_copy_mt_on - copy a job on the caller and on given helper CPUs
 * @job: the batch
 * @cpus: the helpers' CPUs
 * @nr_cpus: how many
 *
 * The caller and the helpers pull chunks until none is left; the caller
 * returns when every page is copied.  Sets @job->threads and ->cpu_ns.
 *
 * Context: Process context; sleeps until the helpers' chunks are copied.
 * Return: 0, the first copy error, or -ENOMEM (nothing copied) if the
 * control block cannot be allocated.
 */
int migrate_copy_mt_on(struct migrate_copy_job *job, const unsigned int *cpus,
		       unsigned int nr_cpus)
{
	struct mt_copy_ctl *ctl;
	unsigned int i;
	int err;

	job->threads = 0;
	job->cpu_ns = 0;
	if (!job->nr_pages)
		return 0;	/* no chunk would ever complete all_done */
	ctl = kzalloc(struct_size(ctl, helpers, nr_cpus),
		      GFP_NOWAIT | __GFP_NOWARN);
	if (!ctl)
		return -ENOMEM;
	ctl->job = job;
	ctl->nr_pages = job->nr_pages;
	ctl->chunk = migrate_copy_chunk_pages(job->nr_pages, nr_cpus + 1);
	init_completion(&ctl->all_done);
	refcount_set(&ctl->ref, nr_cpus + 1);
	for (i = 0; i < nr_cpus; i++) {
		ctl->helpers[i].ctl = ctl;
		INIT_WORK(&ctl->helpers[i].work, mt_helper_fn);
		queue_work_on(cpus[i], system_highpri_wq, &ctl->helpers[i].work);
	}

	mt_pull(ctl);
	/* Helpers that never started: their chunks are copied already. */
	for (i = 0; i < nr_cpus; i++) {
		if (cancel_work(&ctl->helpers[i].work)) {
			count_vm_event(PGMIGRATE_COPY_HELPER_LATE);
			mt_copy_put(ctl);
		}
	}
	/* Those that did: only for the chunks they hold. */
	wait_for_completion(&ctl->all_done);

	job->threads = atomic_read(&ctl->threads);
	job->cpu_ns = atomic64_read(&ctl->cpu_ns);
	err = atomic_read(&ctl->err);
	mt_copy_put(ctl);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(migrate_copy_mt_on);

/* The node whose CPUs copy, from the policy and what has CPUs. */
static int copy_node(struct migrate_copy_job *job)
{
	switch (READ_ONCE(copy_policy)) {
	case MIGRATE_COPY_PUSH:
		return job->src_nid;
	case MIGRATE_COPY_PULL:
		return job->dst_nid;
	default:
		if (job->dst_nid != NUMA_NO_NODE && node_state(job->dst_nid, N_CPU))
			return job->dst_nid;
		return job->src_nid;
	}
}

static int mt_copy(struct migrate_copy_job *job)
{
	unsigned int cpus[MIGRATE_COPY_MAX_THREADS];
	unsigned int want, nr_cpus, i;
	cpumask_var_t cand, idle;
	int nid, cpu, err;

	/*
	 * Reclaim (demotion) and compaction run PF_MEMALLOC: waiting there for
	 * a worker that may need memory to start is how reclaim deadlocks.
	 */
	if (current->flags & PF_MEMALLOC)
		return serial_copy(job);

	want = READ_ONCE(copy_threads) ?: MIGRATE_COPY_MAX_THREADS;
	want = min3(want, (unsigned int)MIGRATE_COPY_MAX_THREADS,
		    (unsigned int)(job->nr_pages / MIGRATE_COPY_MIN_THREAD_PAGES));
	if (want <= 1)
		return serial_copy(job);

	if (!zalloc_cpumask_var(&cand, GFP_NOWAIT | __GFP_NOWARN))
		return serial_copy(job);
	if (!zalloc_cpumask_var(&idle, GFP_NOWAIT | __GFP_NOWARN)) {
		free_cpumask_var(cand);
		return serial_copy(job);
	}

	/* Helpers: idle CPUs of the chosen node that the caller may use. */
	cpumask_and(idle, current->cpus_ptr, cpu_online_mask);
	cpu = get_cpu();
	cpumask_clear_cpu(cpu, idle);
	put_cpu();
	for_each_cpu(i, idle)
		if (!idle_cpu(i))
			cpumask_clear_cpu(i, idle);
	nid = copy_node(job);
	if (nid != NUMA_NO_NODE)
		cpumask_and(cand, cpumask_of_node(nid), idle);
	nr_cpus = migrate_copy_pick_cpus(cand, idle, cpu_llc_id, want - 1, cpus);
	/*
	 * auto: when that node has no idle CPU to spare (the caller may be
	 * its only one), any other idle CPU helps; it copies across the
	 * interconnect, which still beats leaving it idle.  push and pull
	 * keep to their node.
	 */
	if (nr_cpus < want - 1 && READ_ONCE(copy_policy) == MIGRATE_COPY_AUTO) {
		cpumask_andnot(cand, idle, cand);
		nr_cpus += migrate_copy_pick_cpus(cand, idle, cpu_llc_id,
						  want - 1 - nr_cpus,
						  cpus + nr_cpus);
	}
	free_cpumask_var(cand);
	free_cpumask_var(idle);
	if (!nr_cpus)
		return serial_copy(job);

	err = migrate_copy_mt_on(job, cpus, nr_cpus);
	return err == -ENOMEM ? serial_copy(job) : err;
}

static struct migrate_copy_backend mt_backend = {
	.name = "mt",
	.copy = mt_copy,
};

/**
 * migrate_copy_register - offer a batched copy backend
 * @backend: the backend; ->name and ->copy must be set
 *
 * The backend becomes selectable in /sys/kernel/mm/migrate/copy_backend.
 *
 * Return: 0, -EINVAL if @backend is incomplete, -EEXIST if its name is
 * taken.
 */
int migrate_copy_register(struct migrate_copy_backend *backend)
{
	struct migrate_copy_backend *b;

	if (!backend->name || !backend->copy)
		return -EINVAL;
	mutex_lock(&backend_lock);
	list_for_each_entry(b, &backends, list) {
		if (!strcmp(b->name, backend->name)) {
			mutex_unlock(&backend_lock);
			return -EEXIST;
		}
	}
	list_add_tail(&backend->list, &backends);
	mutex_unlock(&backend_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(migrate_copy_register);

/**
 * migrate_copy_unregister - withdraw a batched copy backend
 * @backend: a registered backend
 *
 * If it is the selected one, batched copying stops (migration copies
 * folio by folio).  Returns once no copy through @backend is running.
 */
void migrate_copy_unregister(struct migrate_copy_backend *backend)
{
	mutex_lock(&backend_lock);
	if (rcu_access_pointer(backend_cur) == backend) {
		static_branch_disable(&migrate_copy_key);
		rcu_assign_pointer(backend_cur, NULL);
	}
	list_del(&backend->list);
	mutex_unlock(&backend_lock);
	/* No copy through it may still be running. */
	synchronize_srcu(&backend_srcu);
}
EXPORT_SYMBOL_GPL(migrate_copy_unregister);

/*
 * Only folios whose ->migrate_folio() is known to copy in __migrate_folio()
 * can skip that copy; anything else keeps the per-folio path.  The refcount
 * check is the one __migrate_folio() makes before copying: the source is
 * locked and unmapped, so with no extra reference nobody can change its
 * data until the move, which checks again and freezes the count.
 */
static bool folio_batch_copyable(struct folio *src)
{
	struct address_space *mapping;

	if (__folio_test_movable(src) || folio_test_hugetlb(src))
		return false;
	mapping = folio_mapping(src);
	if (mapping && mapping->a_ops->migrate_folio != migrate_folio &&
	    mapping->a_ops->migrate_folio != filemap_migrate_folio)
		return false;
	return folio_ref_count(src) == folio_expected_ref_count(src) + 1;
}

/*
 * debugfs fail_migrate_copy/: make batched copies fail, to test the
 * fallback to the per-folio copy.  A fault_attr, driven like
 * fail_page_alloc (Documentation/fault-injection/fault-injection.rst).
 */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
static DECLARE_FAULT_ATTR(fail_migrate_copy);

static bool copy_should_fail(void)
{
	return should_fail(&fail_migrate_copy, 1);
}

/*
 * fail_migrate_copy/helper_stall_ms: every mt helper sleeps this long
 * before it claims its first chunk, as a vCPU the host has preempted or a
 * CPU an interrupt storm holds would; 0 (the default) is off.  The pulled
 * copy must then finish about as fast as the serial one.
 */
static void __init copy_fault_init(void)
{
	struct dentry *dir;

	dir = fault_create_debugfs_attr("fail_migrate_copy", NULL,
					&fail_migrate_copy);
	if (!IS_ERR(dir))
		debugfs_create_u32("helper_stall_ms", 0600, dir,
				   &helper_stall_ms);
}
#else
static inline bool copy_should_fail(void) { return false; }
static inline void copy_fault_init(void) { }
#endif

/**
 * migrate_folios_batch_copy - copy the data of a batch of unmapped folios
 * @srcs: the unmapped source folios
 * @dsts: their destinations, in the same order
 *
 * Copies what it can in one step and moves those pairs to the front of
 * both lists.  Returns how many pairs, from the front, hold their data in
 * the destination already (0 if none, or on any failure: the per-folio
 * path then copies as it always did).
 */
unsigned int migrate_folios_batch_copy(struct list_head *srcs,
				       struct list_head *dsts)
{
	struct folio *src, *src2, *dst, *dst2;
	struct migrate_copy_backend *backend;
	struct migrate_copy_job job = {
		.src_nid = NUMA_NO_NODE,
		.dst_nid = NUMA_NO_NODE,
	};
	unsigned int n = 0, nr_pages = 0;
	u64 t0, ns;
	int idx, err;

	list_for_each_entry(src, srcs, lru) {
		if (folio_batch_copyable(src))
			nr_pages += folio_nr_pages(src);
		n++;
	}
	if (!n || nr_pages < READ_ONCE(copy_min_pages))
		return 0;

	job.items = kmalloc_array(n, sizeof(*job.items), GFP_NOWAIT | __GFP_NOWARN);
	if (!job.items)
		return 0;

	/* Copyable pairs go to the front of both lists, in the same order. */
	dst = list_first_entry(dsts, struct folio, lru);
	dst2 = list_next_entry(dst, lru);
	list_for_each_entry_safe(src, src2, srcs, lru) {
		if (folio_batch_copyable(src)) {
			struct migrate_copy_item *it = &job.items[job.nr_items++];

			it->src = src;
			it->dst = dst;
			it->nr_pages = folio_nr_pages(src);
			job.nr_pages += it->nr_pages;
			if (job.src_nid == NUMA_NO_NODE) {
				job.src_nid = folio_nid(src);
				job.dst_nid = folio_nid(dst);
			}
			list_move(&src->lru, srcs);
			list_move(&dst->lru, dsts);
		}
		dst = dst2;
		dst2 = list_next_entry(dst, lru);
	}

	t0 = ktime_get_ns();
	idx = srcu_read_lock(&backend_srcu);
	backend = srcu_dereference(backend_cur, &backend_srcu);
	if (!backend)
		err = -ENODEV;
	else if (copy_should_fail())
		err = -EIO;
	else
		err = backend->copy(&job);
	srcu_read_unlock(&backend_srcu, idx);
	ns = ktime_get_ns() - t0;

	trace_mm_migrate_batch_copy(job.nr_items, job.nr_pages << PAGE_SHIFT,
				    job.threads, ns, job.cpu_ns, err);
	if (err) {
		count_vm_event(PGMIGRATE_COPY_FALLBACK);
		n = 0;
	} else {
		count_vm_event(PGMIGRATE_COPY_BATCHES);
		count_vm_events(PGMIGRATE_COPY_PAGES, job.nr_pages);
		count_vm_events(PGMIGRATE_COPY_THREADS, job.threads);
		count_vm_events(PGMIGRATE_COPY_CPU_US, div_u64(job.cpu_ns, NSEC_PER_USEC));
		n = job.nr_items;
	}
	kfree(job.items);
	return n;
}

/* sysfs: /sys/kernel/mm/migrate/ */
static ssize_t copy_backend_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	struct migrate_copy_backend *b, *cur;
	int len;

	mutex_lock(&backend_lock);
	cur = rcu_dereference_protected(backend_cur, lockdep_is_held(&backend_lock));
	len = sysfs_emit(buf, cur ? "off" : "[off]");
	list_for_each_entry(b, &backends, list)
		len += sysfs_emit_at(buf, len, b == cur ? " [%s]" : " %s", b->name);
	len += sysfs_emit_at(buf, len, "\n");
	mutex_unlock(&backend_lock);
	return len;
}

static ssize_t copy_backend_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	struct migrate_copy_backend *b, *found = NULL;

	if (sysfs_streq(buf, "off")) {
		mutex_lock(&backend_lock);
		static_branch_disable(&migrate_copy_key);
		rcu_assign_pointer(backend_cur, NULL);
		mutex_unlock(&backend_lock);
		synchronize_srcu(&backend_srcu);
		return count;
	}
	mutex_lock(&backend_lock);
	list_for_each_entry(b, &backends, list)
		if (sysfs_streq(buf, b->name))
			found = b;
	if (found) {
		rcu_assign_pointer(backend_cur, found);
		static_branch_enable(&migrate_copy_key);
	}
	mutex_unlock(&backend_lock);
	return found ? count : -EINVAL;
}
static struct kobj_attribute copy_backend_attr = __ATTR_RW(copy_backend);

static ssize_t copy_threads_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(copy_threads));
}

static ssize_t copy_threads_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	unsigned int val;

	if (kstrtouint(buf, 0, &val) || val > MIGRATE_COPY_MAX_THREADS)
		return -EINVAL;
	WRITE_ONCE(copy_threads, val);
	return count;
}
static struct kobj_attribute copy_threads_attr = __ATTR_RW(copy_threads);

static ssize_t copy_policy_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	unsigned int cur = READ_ONCE(copy_policy), i;
	int len = 0;

	for (i = 0; i < ARRAY_SIZE(policy_names); i++)
		len += sysfs_emit_at(buf, len, i == cur ? "%s[%s]" : "%s%s",
				     i ? " " : "", policy_names[i]);
	return len + sysfs_emit_at(buf, len, "\n");
}

static ssize_t copy_policy_store(struct kobject *kobj,
				 struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	int i = sysfs_match_string(policy_names, buf);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(copy_policy, i);
	return count;
}
static struct kobj_attribute copy_policy_attr = __ATTR_RW(copy_policy);

static ssize_t copy_min_pages_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(copy_min_pages));
}

static ssize_t copy_min_pages_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	unsigned int val;

	if (kstrtouint(buf, 0, &val) || val < 1 || val > 65536)
		return -EINVAL;
	WRITE_ONCE(copy_min_pages, val);
	return count;
}
static struct kobj_attribute copy_min_pages_attr = __ATTR_RW(copy_min_pages);

static struct attribute *migrate_copy_attrs[] = {
	&copy_backend_attr.attr,
	&copy_threads_attr.attr,
	&copy_policy_attr.attr,
	&copy_min_pages_attr.attr,
	NULL,
};

static const struct attribute_group migrate_copy_group = {
	.attrs = migrate_copy_attrs,
};

static int __init migrate_copy_init(void)
{
	struct kobject *kobj;
	int err;

	migrate_copy_register(&serial_backend);
	migrate_copy_register(&mt_backend);

	kobj = kobject_create_and_add("migrate", mm_kobj);
	if (!kobj)
		return -ENOMEM;
	err = sysfs_create_group(kobj, &migrate_copy_group);
	if (err) {
		kobject_put(kobj);
		return err;
	}
	copy_fault_init();
	return 0;
}
subsys_initcall(migrate_copy_init);

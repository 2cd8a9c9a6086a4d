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

#include <linux/fault-inject.h>
#include <linux/highmem.h>
#include <linux/kobject.h>
#include <linux/migrate.h>
#include <linux/migrate_copy.h>
#include <linux/mm.h>
#include <linux/mutex.h>
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

/* At most this many CPUs copy one batch. */
#define MIGRATE_COPY_MAX_THREADS	32
/* A thread is only worth its wakeup for at least this many pages. */
#define MIGRATE_COPY_MIN_THREAD_PAGES	16

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

/* Copy pages [start, end) of the batch, numbered across its folios. */
static int copy_range(struct migrate_copy_job *job, unsigned long start,
		      unsigned long end)
{
	unsigned long first = 0;
	unsigned int i;

	for (i = 0; i < job->nr_items && start < end; i++) {
		struct migrate_copy_item *it = &job->items[i];
		unsigned long last = first + it->nr_pages;

		for (; start < end && start < last; start++) {
			unsigned long n = start - first;

			if (copy_mc_highpage(folio_page(it->dst, n),
					     folio_page(it->src, n)))
				return -EHWPOISON;
			if (!(n & 63))
				cond_resched();
		}
		first = last;
	}
	return 0;
}

static int serial_copy(struct migrate_copy_job *job)
{
	u64 t0 = ktime_get_ns();
	int err = copy_range(job, 0, job->nr_pages);

	job->threads = 1;
	job->cpu_ns = ktime_get_ns() - t0;
	return err;
}

static struct migrate_copy_backend serial_backend = {
	.name = "serial",
	.copy = serial_copy,
};

unsigned int migrate_copy_split(const unsigned int *item_pages,
				unsigned int nr_items, unsigned int threads,
				unsigned long *ends)
{
	unsigned long total = 0, prev = 0;
	unsigned int i, t, n = 0;

	for (i = 0; i < nr_items; i++)
		total += item_pages[i];
	if (!total || !threads)
		return 0;
	threads = min_t(unsigned long, threads, total);

	for (t = 1; t <= threads; t++) {
		unsigned long end = total * t / threads;

		/* Enough folios: whole folios per thread. */
		if (nr_items >= threads && t < threads) {
			unsigned long acc = 0;

			for (i = 0; i < nr_items; i++) {
				if (acc + item_pages[i] > end)
					break;
				acc += item_pages[i];
			}
			/* Round to the nearer folio boundary. */
			if (i < nr_items && end - acc > acc + item_pages[i] - end)
				acc += item_pages[i];
			end = acc;
		}
		if (end > prev) {
			ends[n++] = end;
			prev = end;
		}
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(migrate_copy_split);

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

struct mt_chunk {
	struct work_struct work;
	struct migrate_copy_job *job;
	unsigned long start, end;
	int err;
	u64 ns;
};

static void mt_chunk_fn(struct work_struct *work)
{
	struct mt_chunk *c = container_of(work, struct mt_chunk, work);
	u64 t0 = ktime_get_ns();

	c->err = copy_range(c->job, c->start, c->end);
	c->ns = ktime_get_ns() - t0;
}

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
	unsigned long ends[MIGRATE_COPY_MAX_THREADS];
	unsigned int *item_pages, want, nr_cpus, nr, i;
	cpumask_var_t cand, idle;
	struct mt_chunk *chunks;
	int nid, cpu, err = 0;
	u64 t0;

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

	item_pages = kmalloc_array(job->nr_items, sizeof(*item_pages),
				   GFP_NOWAIT | __GFP_NOWARN);
	chunks = kcalloc(nr_cpus, sizeof(*chunks), GFP_NOWAIT | __GFP_NOWARN);
	if (!item_pages || !chunks) {
		kfree(item_pages);
		kfree(chunks);
		return serial_copy(job);
	}
	for (i = 0; i < job->nr_items; i++)
		item_pages[i] = job->items[i].nr_pages;
	nr = migrate_copy_split(item_pages, job->nr_items, nr_cpus + 1, ends);
	kfree(item_pages);

	/* Ranges 1.. go to the helpers, range 0 is the caller's own. */
	for (i = 1; i < nr; i++) {
		struct mt_chunk *c = &chunks[i - 1];

		c->job = job;
		c->start = ends[i - 1];
		c->end = ends[i];
		INIT_WORK(&c->work, mt_chunk_fn);
		queue_work_on(cpus[i - 1], system_highpri_wq, &c->work);
	}
	t0 = ktime_get_ns();
	err = copy_range(job, 0, ends[0]);
	job->cpu_ns = ktime_get_ns() - t0;
	for (i = 1; i < nr; i++) {
		struct mt_chunk *c = &chunks[i - 1];

		flush_work(&c->work);
		err = err ?: c->err;
		job->cpu_ns += c->ns;
	}
	job->threads = nr;
	kfree(chunks);
	return err;
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

static void __init copy_fault_init(void)
{
	fault_create_debugfs_attr("fail_migrate_copy", NULL,
				  &fail_migrate_copy);
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

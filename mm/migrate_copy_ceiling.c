// SPDX-License-Identifier: GPL-2.0
/*
 * The batched migration copy's ceiling: how fast this kernel copies the
 * same kind of folios between two nodes on one CPU, and on several CPUs
 * at once, with nothing else of a migration around it.  Migration's copy
 * phase (mm_migrate_batch_copy) is judged as a fraction of this, not of a
 * user-space memcpy(), whose instructions and page size differ.
 *
 * debugfs migrate_copy/ceiling:
 *   echo "NR_FOLIOS ORDER SRC_NID DST_NID [CPUS]" > ceiling
 *   cat ceiling
 * The write allocates NR_FOLIOS folios of ORDER on each node, fills the
 * sources, copies them once untimed (the first touch of fresh memory is
 * not the copy), then once on the writing CPU alone and once on CPUS
 * CPUs (default: every online CPU; the writer and the others, idle or
 * not, through the mt backend's pulled chunks), and frees them; the read
 * gives the last result.  Bad input fails with -EINVAL, an allocation
 * failure with -ENOMEM, a fatal signal during the allocation with -EINTR,
 * and none of them changes the last result.  The writer stays on its CPU
 * and CPU hotplug is held off while the copies run.
 */

#define pr_fmt(fmt) "migrate_copy: " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/ktime.h>
#include <linux/migrate_copy.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "internal.h"

/* At most 1 GB on each node. */
#define CEILING_MAX_PAGES	(SZ_1G >> PAGE_SHIFT)

struct ceiling_result {
	unsigned int nr_folios, order, cpus, threads;
	int src_nid, dst_nid;
	u64 serial_ns, parallel_ns;
};

static DEFINE_MUTEX(ceiling_lock);
static struct ceiling_result ceiling_last;

static void ceiling_free(struct migrate_copy_item *items, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (items[i].src)
			folio_put(items[i].src);
		if (items[i].dst)
			folio_put(items[i].dst);
	}
	kvfree(items);
}

static struct folio *ceiling_alloc(int nid, unsigned int order)
{
	/*
	 * Movable, as migration's destinations are: from the same zones and
	 * pageblocks, and a CPU-less memory node onlined movable (CXL, as a
	 * rule) has no other memory.  Held for one write and freed at its
	 * end.  (Unmovable THPs, tried, copied at a quarter of the speed of
	 * migration's in the TCG guest: not the same memory.)  No retrying:
	 * a failed run costs one -ENOMEM.
	 */
	return __folio_alloc_node(GFP_HIGHUSER_MOVABLE | __GFP_THISNODE |
				  __GFP_NORETRY | __GFP_NOWARN, order, nid);
}

/* Time one copy of @job by the caller and @nr_cpus helpers. */
static int ceiling_time(struct migrate_copy_job *job, const unsigned int *cpus,
			unsigned int nr_cpus, u64 *ns)
{
	u64 t0 = ktime_get_ns();
	int err = migrate_copy_mt_on(job, cpus, nr_cpus);

	*ns = ktime_get_ns() - t0;
	return err;
}

static int ceiling_run(struct ceiling_result *res)
{
	unsigned int helpers[MIGRATE_COPY_MAX_THREADS], nr_helpers = 0;
	unsigned int i, p, cpu, self;
	struct migrate_copy_job job = {
		.src_nid = res->src_nid,
		.dst_nid = res->dst_nid,
	};
	struct migrate_copy_item *items;
	int err = -ENOMEM;

	items = kvcalloc(res->nr_folios, sizeof(*items), GFP_KERNEL);
	if (!items)
		return -ENOMEM;
	job.items = items;
	for (i = 0; i < res->nr_folios; i++) {
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			goto out;
		}
		items[i].src = ceiling_alloc(res->src_nid, res->order);
		items[i].dst = ceiling_alloc(res->dst_nid, res->order);
		if (!items[i].src || !items[i].dst)
			goto out;
		items[i].nr_pages = 1U << res->order;
		for (p = 0; p < items[i].nr_pages; p++)
			memset_page(folio_page(items[i].src, p), 0, i + p,
				    PAGE_SIZE);
		job.nr_items++;
		job.nr_pages += items[i].nr_pages;
		cond_resched();
	}

	/*
	 * The writer and up to cpus - 1 other online CPUs, which must stay
	 * online, and the writer on its CPU, until the last run: a serial
	 * run that moved to a helper's CPU would be timed against itself.
	 */
	cpus_read_lock();
	migrate_disable();
	self = smp_processor_id();
	for_each_online_cpu(cpu)
		if (cpu != self && nr_helpers + 1 < res->cpus &&
		    nr_helpers < ARRAY_SIZE(helpers))
			helpers[nr_helpers++] = cpu;

	/* Untimed first: the first touch of fresh memory is not the copy. */
	err = ceiling_time(&job, helpers, nr_helpers, &res->parallel_ns);
	if (!err)
		err = ceiling_time(&job, NULL, 0, &res->serial_ns);
	if (!err)
		err = ceiling_time(&job, helpers, nr_helpers, &res->parallel_ns);
	migrate_enable();
	cpus_read_unlock();
	res->cpus = nr_helpers + 1;
	res->threads = job.threads;
out:
	ceiling_free(items, res->nr_folios);
	return err;
}

static ssize_t ceiling_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	struct ceiling_result res = { .cpus = num_online_cpus() };
	char buf[64];
	int n, err;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	n = sscanf(buf, "%u %u %d %d %u", &res.nr_folios, &res.order,
		   &res.src_nid, &res.dst_nid, &res.cpus);
	if (n < 4 || !res.nr_folios || res.order > MAX_PAGE_ORDER ||
	    !res.cpus || res.cpus > num_online_cpus() ||
	    res.nr_folios > CEILING_MAX_PAGES >> res.order ||
	    res.src_nid < 0 || res.src_nid >= MAX_NUMNODES ||
	    res.dst_nid < 0 || res.dst_nid >= MAX_NUMNODES ||
	    !node_state(res.src_nid, N_MEMORY) ||
	    !node_state(res.dst_nid, N_MEMORY))
		return -EINVAL;

	/* A run takes seconds under emulation: a second writer may give up. */
	if (mutex_lock_interruptible(&ceiling_lock))
		return -EINTR;
	err = ceiling_run(&res);
	if (!err)
		ceiling_last = res;
	mutex_unlock(&ceiling_lock);
	return err ?: count;
}

static int ceiling_show(struct seq_file *m, void *v)
{
	struct ceiling_result r;

	mutex_lock(&ceiling_lock);
	r = ceiling_last;
	mutex_unlock(&ceiling_lock);
	if (!r.nr_folios)
		return 0;
	seq_printf(m, "nr_folios=%u order=%u bytes=%lu src_nid=%d dst_nid=%d serial_ns=%llu cpus=%u threads=%u parallel_ns=%llu\n",
		   r.nr_folios, r.order,
		   ((unsigned long)r.nr_folios << r.order) << PAGE_SHIFT,
		   r.src_nid, r.dst_nid, r.serial_ns, r.cpus, r.threads,
		   r.parallel_ns);
	return 0;
}

static int ceiling_open(struct inode *inode, struct file *file)
{
	return single_open(file, ceiling_show, NULL);
}

static const struct file_operations ceiling_fops = {
	.owner		= THIS_MODULE,
	.open		= ceiling_open,
	.read		= seq_read,
	.write		= ceiling_write,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static int __init migrate_copy_ceiling_init(void)
{
	struct dentry *dir = debugfs_create_dir("migrate_copy", NULL);

	debugfs_create_file("ceiling", 0600, dir, NULL, &ceiling_fops);
	return 0;
}
late_initcall(migrate_copy_ceiling_init);

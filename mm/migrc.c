// SPDX-License-Identifier: GPL-2.0
/*
 * migrc: deferred TLB shootdown for read-only mappings of migrated folios.
 *
 * When every mapping of a folio that migration unmaps is read-only and
 * clean, a CPU that still caches one of those translations can only read
 * the source page, and the source page holds exactly the data that was
 * copied to the destination.  Such a stale entry is harmless until either
 *
 *  - the source page is handed out again by the page allocator, or
 *  - the data at that file offset or anonymous address may change, so
 *    that a reader through the stale entry would miss the change.
 *
 * So instead of sending the shootdown at the batch's flush point, the
 * CPUs are folded into one pending mask, the batch gets a generation, the
 * freed source pages are tagged with it (page->index, see migrc_tag()),
 * and the flush is done when a tagged page is allocated, before a write
 * can change it (migrc_folio_write()), after max_age_ms, or when more than
 * max_pending_pages are pending.  A flush trims the mask to the CPUs that
 * have not flushed their TLB since the newest pending generation (the
 * architecture tracks that per CPU), often to nothing.
 *
 * Documentation/mm/migrc.rst has the full correctness argument.
 */

#define pr_fmt(fmt) "migrc: " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/fault-inject.h>
#include <linux/hash.h>
#include <linux/init.h>
#include <linux/jhash.h>
#include <linux/kobject.h>
#include <linux/memcontrol.h>
#include <linux/migrate.h>
#include <linux/migrc.h>
#include <linux/mm.h>
#include <linux/page_ref.h>
#include <linux/rcupdate.h>
#include <linux/rmap.h>
#include <linux/sched.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/vmstat.h>
#include <linux/workqueue.h>
#include <asm/tlbflush.h>
#include <kunit/visibility.h>

#include "internal.h"

#define CREATE_TRACE_POINTS
#include <trace/events/migrc.h>

DEFINE_STATIC_KEY_FALSE(migrc_key);
EXPORT_SYMBOL_GPL(migrc_key);

static bool migrc_boot_on __initdata;

struct migrc_gens migrc_gens;
EXPORT_SYMBOL_GPL(migrc_gens);

/* Tunables, /sys/kernel/mm/migrc/ */
VISIBLE_IF_KUNIT unsigned int migrc_max_age_ms = 50;
EXPORT_SYMBOL_IF_KUNIT(migrc_max_age_ms);
static unsigned long migrc_max_pending_pages = 8192;

/*
 * Everything deferred and not yet flushed, as one batch: the union of the
 * CPUs that may hold stale entries, the newest generation folded in, and
 * enough to report what a flush covered.  The lock is taken once per
 * migration batch and once per flush, never on the "nothing pending" path.
 */
static struct {
	spinlock_t lock;		/* serialises commits and flushes */
	struct arch_tlbflush_unmap_batch cpus;
	struct arch_tlbflush_unmap_batch scratch;
	unsigned long nr_pages;
	unsigned long oldest;		/* jiffies of the oldest deferral */
	unsigned long evicted_pages;	/* of pending gens the ring dropped */
} migrc_pending_batch = {
	.lock = __SPIN_LOCK_UNLOCKED(migrc_pending_batch.lock),
};

#ifdef CONFIG_MIGRC_DEBUG
static void migrc_debug_alloc(struct page *page, unsigned int order);
static void migrc_debug_note_dst(unsigned long src, unsigned long dst,
				 unsigned long nr, unsigned long gen);
static void migrc_debug_note_src(struct page *src, struct page *dst,
				 unsigned long nr, unsigned long gen);
static void migrc_debug_flushed(unsigned long done);
#else
static inline void migrc_debug_alloc(struct page *page, unsigned int order) { }
static inline void migrc_debug_note_dst(unsigned long src, unsigned long dst,
					unsigned long nr, unsigned long gen) { }
static inline void migrc_debug_note_src(struct page *src, struct page *dst,
					unsigned long nr, unsigned long gen) { }
static inline void migrc_debug_flushed(unsigned long done) { }
#endif

/*
 * Fault injection, to prove that the tests and the debug checks catch a
 * missed flush.  Debug kernels only: it breaks what migrc promises.  Each
 * is a fault_attr under debugfs migrc/, driven like fail_page_alloc
 * (Documentation/fault-injection/fault-injection.rst: probability,
 * interval, times, verbose, task-filter):
 *
 *  skip_alloc_flush	hand out a tagged page without its flush
 *  skip_write_flush	let a write pass the write barrier unflushed
 *  free_untagged	free sources untagged and unflushed to the per-CPU
 *			lists, where they are reused at once
 *  skip_tick_flush	let the tick record its CPU flushed without flushing
 *  skip_wp_check	defer the flush of a read-only entry even while a
 *			write-protect of its mm is in flight
 *  defer_lazyfree	let reclaim defer the flush of a lazily freed
 *			anonymous folio, which it discards
 *  skip_move_flush	let UFFDIO_MOVE take a swap entry away without
 *			flushing the entries reclaim deferred for it
 *  defer_pmd_file	let migration defer the PTE entries of a page cache
 *			or shmem folio of PMD size, which another process
 *			may map by a writable PMD without a barrier
 */
enum migrc_inject {
	MIGRC_INJECT_SKIP_ALLOC,
	MIGRC_INJECT_SKIP_WRITE,
	MIGRC_INJECT_UNTAGGED,
	MIGRC_INJECT_SKIP_WP,
	MIGRC_INJECT_SKIP_TICK,
	MIGRC_INJECT_LAZYFREE,
	MIGRC_INJECT_SKIP_MOVE,
	MIGRC_INJECT_PMD_FILE,
	NR_MIGRC_INJECT
};

#if defined(CONFIG_MIGRC_DEBUG) && defined(CONFIG_FAULT_INJECTION_DEBUG_FS)
static struct fault_attr migrc_inject_attr[NR_MIGRC_INJECT] = {
	[0 ... NR_MIGRC_INJECT - 1] = FAULT_ATTR_INITIALIZER,
};

static const char * const migrc_inject_name[NR_MIGRC_INJECT] = {
	[MIGRC_INJECT_SKIP_ALLOC]	= "skip_alloc_flush",
	[MIGRC_INJECT_SKIP_WRITE]	= "skip_write_flush",
	[MIGRC_INJECT_UNTAGGED]		= "free_untagged",
	[MIGRC_INJECT_SKIP_WP]		= "skip_wp_check",
	[MIGRC_INJECT_SKIP_TICK]	= "skip_tick_flush",
	[MIGRC_INJECT_LAZYFREE]		= "defer_lazyfree",
	[MIGRC_INJECT_SKIP_MOVE]	= "skip_move_flush",
	[MIGRC_INJECT_PMD_FILE]		= "defer_pmd_file",
};

static bool migrc_injected(enum migrc_inject what)
{
	return should_fail(&migrc_inject_attr[what], 1);
}

static void __init migrc_inject_init(void)
{
	struct dentry *dir = debugfs_create_dir("migrc", NULL);
	int i;

	for (i = 0; i < NR_MIGRC_INJECT; i++)
		fault_create_debugfs_attr(migrc_inject_name[i], dir,
					  &migrc_inject_attr[i]);
}
#else
static inline bool migrc_injected(enum migrc_inject what) { return false; }
static inline void migrc_inject_init(void) { }
#endif

static void migrc_timeout_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(migrc_timeout_work, migrc_timeout_fn);

static struct migrc_stamp migrc_ring[MIGRC_RING_SIZE];

/* Stamp a new generation: under the lock, before it is published. */
static void migrc_stamp_commit(unsigned long gen, unsigned long nr_pages,
			       unsigned long now)
{
	struct migrc_stamp *s = &migrc_ring[gen % MIGRC_RING_SIZE];

	if (s->gen && !migrc_gen_covers(migrc_gens.done, s->gen))
		migrc_pending_batch.evicted_pages += s->nr_pages;
	WRITE_ONCE(s->gen, 0);
	/* A lockless reader sees 0, or the new when only with the new gen. */
	smp_wmb();
	WRITE_ONCE(s->when, now);
	s->nr_pages = nr_pages;
	/* Pairs with migrc_stamp_expired()'s first smp_rmb(). */
	smp_wmb();
	WRITE_ONCE(s->gen, gen);
}

/*
 * The pages of the generations after migrc_gens.done up to @gen, a partial
 * flush's share: those the ring still stamps, and those it dropped, which
 * are older than all of them.
 */
static unsigned long migrc_ring_pages(unsigned long gen)
{
	unsigned long g = migrc_gens.done, pages;

	pages = migrc_pending_batch.evicted_pages;
	if (migrc_gens.latest - g > MIGRC_RING_SIZE)
		g = migrc_gens.latest - MIGRC_RING_SIZE;
	/* Callers expire from the ring: an older @gen would never end. */
	if (WARN_ON_ONCE(migrc_gen_after(g, gen)))
		return pages;
	while (g != gen) {
		const struct migrc_stamp *s = &migrc_ring[++g % MIGRC_RING_SIZE];

		if (s->gen == g)
			pages += s->nr_pages;
	}
	return pages;
}

/*
 * Complete the pending generations up to @gen.  Called with the lock held;
 * the caller has checked that @gen is pending.  Up to migrc_gens.latest,
 * the pending mask and page count start over.  Short of it (the time
 * bound: only what has expired), both stay, for the generations after
 * @gen: the mask is a union, and CPUs that this flush reached drop out of
 * the next one by their flushed generation.
 */
static void __migrc_flush_upto(unsigned long gen,
			       enum migrc_flush_reason reason)
{
	struct arch_tlbflush_unmap_batch *scratch = &migrc_pending_batch.scratch;
	bool all = gen == migrc_gens.latest;
	unsigned long age_us, pages;
	unsigned int skipped, by_tick, targeted;

	lockdep_assert_held(&migrc_pending_batch.lock);

	arch_tlbbatch_clear(scratch);
	arch_tlbbatch_fold(scratch, &migrc_pending_batch.cpus);
	skipped = arch_tlbbatch_trim(scratch, gen, &by_tick);
	targeted = arch_tlbbatch_nr_cpus(scratch);
	if (targeted) {
		count_vm_events(MIGRC_CPUS_INTERRUPTED,
				arch_tlbbatch_nr_remote(scratch));
		arch_tlbbatch_flush(scratch);
	}
	pages = all ? migrc_pending_batch.nr_pages : migrc_ring_pages(gen);

	/* Readers of migrc_gens.done may now hand out the pages. */
	smp_store_release(&migrc_gens.done, gen);
	migrc_debug_flushed(gen);

	age_us = jiffies_to_usecs(jiffies - migrc_pending_batch.oldest);
	trace_migrc_flush(reason, gen, targeted, skipped, pages, age_us);
	/* One list (migrc_types.h) makes the counters follow the reasons. */
	count_vm_event(MIGRC_FLUSHES_ALLOC + reason);
	count_vm_events(MIGRC_FLUSHED_PAGES, pages);
	count_vm_events(MIGRC_CPUS_TARGETED, targeted);
	count_vm_events(MIGRC_CPUS_SKIPPED, skipped);
	count_vm_events(MIGRC_CPUS_SKIPPED_TICK, by_tick);

	migrc_pending_batch.evicted_pages = 0;
	if (all) {
		arch_tlbbatch_clear(&migrc_pending_batch.cpus);
		migrc_pending_batch.nr_pages = 0;
	} else {
		migrc_pending_batch.nr_pages -= min(pages,
					migrc_pending_batch.nr_pages);
		/* gen + 1 is newer than anything the ring dropped. */
		migrc_pending_batch.oldest =
			migrc_ring[(gen + 1) % MIGRC_RING_SIZE].when;
	}
}

static void __migrc_flush(enum migrc_flush_reason reason)
{
	__migrc_flush_upto(migrc_gens.latest, reason);
}

/**
 * migrc_flush - complete the deferred flushes up to a generation
 * @gen: the generation that must be covered
 * @reason: why, for the counters and the tracepoint
 *
 * One flush completes every pending generation.  Must be called from a
 * context that may send IPIs and wait for them.
 */
void migrc_flush(unsigned long gen, enum migrc_flush_reason reason)
{
	/* Pairs with __migrc_flush_upto()'s release: the flush is complete. */
	if (migrc_gen_covers(smp_load_acquire(&migrc_gens.done), gen))
		return;

	spin_lock(&migrc_pending_batch.lock);
	if (!migrc_gen_covers(migrc_gens.done, gen))
		__migrc_flush(reason);
	spin_unlock(&migrc_pending_batch.lock);
}

/**
 * migrc_flush_all - complete every pending deferred flush
 * @reason: why, for the counters and the tracepoint
 *
 * A no-op when migrc is off or nothing is pending.  Must be called from a
 * context that may send IPIs and wait for them.
 */
void migrc_flush_all(enum migrc_flush_reason reason)
{
	if (!migrc_enabled() || !migrc_pending())
		return;
	migrc_flush(READ_ONCE(migrc_gens.latest), reason);
}

static unsigned long migrc_max_age_jiffies(void)
{
	return msecs_to_jiffies(READ_ONCE(migrc_max_age_ms));
}

/*
 * The time bound completes only the generations committed max_age_ms ago
 * or earlier, and is armed again for the oldest one left.  Under
 * continuous tiering, new generations are committed all the time: a
 * bound that completed everything up to the newest would find every CPU
 * behind it and interrupt them all, while the CPUs that ran since the
 * expired ones were committed have flushed them from their tick
 * (__migrc_tick()), and drop out of this flush.
 */
static void __migrc_expire(unsigned long now)
{
	unsigned long age = migrc_max_age_jiffies(), gen;

	lockdep_assert_held(&migrc_pending_batch.lock);
	if (migrc_pending()) {
		gen = migrc_ring_expired(migrc_ring, migrc_gens.done,
					 migrc_gens.latest, now - age);
		if (gen != migrc_gens.done)
			__migrc_flush_upto(gen, MIGRC_FLUSH_TIMEOUT);
	}
	if (migrc_pending()) {
		unsigned long due = migrc_pending_batch.oldest + age;

		mod_delayed_work(system_unbound_wq, &migrc_timeout_work,
				 time_after(due, now) ? due - now : 0);
	}
}

/**
 * migrc_set_max_age_ms - change the time bound, for what is pending too
 * @ms: the new bound, in milliseconds
 *
 * The timeout was armed with the old bound, up to 10 s away: run it now,
 * and it completes what the new bound has expired and is armed again.
 */
VISIBLE_IF_KUNIT void migrc_set_max_age_ms(unsigned int ms)
{
	WRITE_ONCE(migrc_max_age_ms, ms);
	if (migrc_enabled() && migrc_pending())
		mod_delayed_work(system_unbound_wq, &migrc_timeout_work, 0);
}
EXPORT_SYMBOL_IF_KUNIT(migrc_set_max_age_ms);

/* The time bound at a given time: KUnit moves the clock. */
VISIBLE_IF_KUNIT void migrc_expire(unsigned long now)
{
	spin_lock(&migrc_pending_batch.lock);
	__migrc_expire(now);
	spin_unlock(&migrc_pending_batch.lock);
}
EXPORT_SYMBOL_IF_KUNIT(migrc_expire);

static void migrc_timeout_fn(struct work_struct *work)
{
	/*
	 * The time is read under the lock: another flush may have held it
	 * through its IPI round, and generations expired meanwhile.
	 */
	spin_lock(&migrc_pending_batch.lock);
	__migrc_expire(jiffies);
	spin_unlock(&migrc_pending_batch.lock);
}

/**
 * __migrc_tick - flush this CPU's TLB if it holds an expiring generation
 *
 * From the scheduler tick, interrupts off, while something is pending.  A
 * CPU in the pending mask whose oldest unflushed generation is due within
 * a tick flushes its own TLB, and records the newest generation, read
 * before the flush (see arch_migrc_flush_local()): the timeout then
 * finds it caught up.  One local flush per CPU per max_age_ms at most,
 * as it covers every generation committed before it.  A CPU outside the
 * mask holds no stale entry of a pending generation (the mask is folded
 * before the generation is published) and needs nothing.
 *
 * The oldest generation this CPU may hold is the one after both its own
 * flushed generation and migrc_gens.done: a CPU that keeps running one
 * mm records no flush while the generations of other mms complete
 * without it, and starting from its own record alone would find that
 * one done and never flush again.  The cheap tests come first: the ring
 * is written by every commit, the mask by every fold.
 */
void __migrc_tick(void)
{
	/* The stamps and the mask folded before latest are visible. */
	unsigned long latest = smp_load_acquire(&migrc_gens.latest);
	unsigned long done = READ_ONCE(migrc_gens.done);
	unsigned long next = arch_migrc_flushed_gen();

	if (migrc_gen_after(done, next))
		next = done;
	next++;
	if (migrc_gen_after(next, latest))
		return;
	/* Folds up to latest are visible; a racing clear ends all pending. */
	if (!data_race(arch_tlbbatch_has_cpu(&migrc_pending_batch.cpus,
					     smp_processor_id())))
		return;
	if (!migrc_stamp_expired(migrc_ring, next,
				 jiffies + 1 - migrc_max_age_jiffies()))
		return;
	arch_migrc_flush_local(latest,
			       migrc_injected(MIGRC_INJECT_SKIP_TICK));
	count_vm_event(MIGRC_TICK_FLUSHES);
}

/* The newest generation an allocation skipped pages for: only raised. */
static unsigned long migrc_alloc_need;

static void migrc_alloc_fn(struct work_struct *work)
{
	/* What was skipped, not what was deferred since: that has its bound. */
	migrc_flush(READ_ONCE(migrc_alloc_need), MIGRC_FLUSH_ALLOC);
}

static DECLARE_WORK(migrc_alloc_work, migrc_alloc_fn);

/**
 * migrc_alloc_kick - have the flush done for allocations that skip tags
 *
 * Called by the page allocator after an allocation that may not flush
 * (see migrc_gfp_can_flush()) had to skip tagged blocks.  Where most free
 * pages are freed sources, as on a fast tier under demotion, waiting
 * max_age_ms for the timeout would fail atomic allocations all that
 * time: a worker finishes the flush now instead.  queue_work() only takes
 * the workqueue's locks and may wake a worker, as the allocator already
 * does for kswapd from the same contexts.
 */
void migrc_alloc_kick(void)
{
	unsigned long gen = READ_ONCE(migrc_gens.latest);
	unsigned long old = READ_ONCE(migrc_alloc_need);

	if (!migrc_pending())
		return;
	while (migrc_gen_after(gen, old) &&
	       !try_cmpxchg(&migrc_alloc_need, &old, gen))
		;
	queue_work(system_unbound_wq, &migrc_alloc_work);
}

/*
 * Write side.  A stale entry left by a migration reads the source, whose
 * data lives on in the destination page and, for a file or shmem folio,
 * in its mapping: a barrier needs to finish a deferral only if what it is
 * about to change is one of those.  So a migration records its generation
 * under two keys, the destination's PFN and the mapping (see
 * migrc_key_raise()), and a write, a PTE becoming writable or a direct
 * I/O reads the slot of its own key: writers elsewhere neither pay for
 * the flush nor end the deferral.
 *
 * The table is allocated at boot when migrc is on; with MIGRC_KEY_BITS 14
 * it holds 16384 slots (128 KiB on 64-bit).  An unrelated key pays for a
 * flush only where two pending keys share its slot, or where a pending
 * key signs as it does (1 in 65535): with n keys pending, a fraction
 * 1 - e^-x (1 + x) of the slots, x = n / 16384.  At the default bound of
 * 8192 pending pages that is 9% (without signatures every occupied slot
 * would count: 39%), at 2048 under 1%, and at the tens to hundreds of
 * pages that tiering keeps pending within max_age_ms, next to nothing.
 *
 * Reclaim has no destination: the data comes back in a new page, which
 * no PFN key names.  A reclaim deferral of a file folio is recorded under
 * the file's reclaim key instead (migrc_reclaim_key()), and every barrier
 * that may change data of a file reads that key too:
 *  - a write or a writable mapping of one of its folios (a write(), a
 *    write fault, GUP, mprotect(), a NUMA hinting fault: the folio's own
 *    mapping, see __migrc_write_barrier());
 *  - direct I/O, fallocate() and truncation (__migrc_mapping_barrier());
 *  - a copy-on-write fault that fills a private mapping of the file from
 *    the page cache where reclaim cleared the PTE: the new page is
 *    anonymous and names no file, so finish_fault() passes the file's
 *    mapping (migrc_cow_barrier()).
 * A reclaim deferral of an anonymous folio (a clean one in the swap cache)
 * is recorded under the key of its anon_vma family, the root anon_vma:
 * its data comes back by swap-in into a page of a VMA of that family, and
 * every way to write it passes a barrier that reads that key:
 *  - do_swap_page() mapping the page writable, with the family of the
 *    faulting VMA (migrc_swapin_write()): the folio may be new and not in
 *    the rmap yet;
 *  - once it is mapped, a write fault, GUP, mprotect(), a NUMA hinting
 *    fault: the folio's own anon_vma, whose root is the same.
 * A reclaim batch that deferred folios under more than one key before its
 * commit commits unkeyed (migrc_gens.unkeyed): until it is flushed, every
 * barrier finishes it.  (New data at the same address
 * after munmap(), mremap() or MADV_DONTNEED needs no barrier of ours: the
 * deferred entries stay counted in mm->tlb_flush_batched, so those flush
 * the mm in flush_tlb_batched_pending(), as they do after reclaim's
 * ordinary batched flush.)
 */
static unsigned long *migrc_keys __read_mostly;

static unsigned long *migrc_key_slot(unsigned long key)
{
	return &migrc_keys[migrc_key_index(key)];
}

/*
 * The generation deferrals recorded under @key may still be pending for,
 * or @none if none.
 */
static unsigned long migrc_key_gen(unsigned long key, unsigned long none)
{
	/*
	 * Acquire: orders the read of latest after the slot (the slot's
	 * generation is at most latest + 1), and a barrier that finds the
	 * slot taken over by another key (migrc_slot_merge()) after the
	 * flush that let it: that key's raise read done, released by
	 * __migrc_flush_upto() once complete, before its cmpxchg.
	 */
	unsigned long slot = smp_load_acquire(migrc_key_slot(key));

	return migrc_slot_read(slot, migrc_key_sig(key),
			       READ_ONCE(migrc_gens.latest) + 1, none);
}

static void migrc_key_raise(unsigned long key, unsigned long gen)
{
	/* A stale done costs a shared slot, no more; the cmpxchg orders it. */
	migrc_slot_raise(migrc_key_slot(key), migrc_key_sig(key), gen,
			 READ_ONCE(migrc_gens.done), &migrc_gens.latest);
}

/* The generation a barrier for @key must finish. */
static unsigned long migrc_key_need(unsigned long key)
{
	unsigned long unkeyed = READ_ONCE(migrc_gens.unkeyed);

	return migrc_gen_newer(migrc_key_gen(key, unkeyed), unkeyed);
}

/*
 * The key of reclaim's deferrals of the data of @owner, a file's mapping
 * or a root anon_vma: apart from the key a file's migrations record (the
 * mapping itself, read by the mapping barrier only), so that a write of
 * one folio of a file does not finish the migration of another.  Both are
 * word aligned: + 1 is neither, and 0 is no key.
 */
static unsigned long migrc_reclaim_key(const void *owner)
{
	return owner ? (unsigned long)owner + 1 : 0;
}

/* The key of anonymous data mapped by @vma: its family's root anon_vma. */
static unsigned long migrc_anon_key(struct vm_area_struct *vma)
{
	struct anon_vma *anon_vma = READ_ONCE(vma->anon_vma);

	return anon_vma ? migrc_reclaim_key(anon_vma->root) : 0;
}

/* @need, or what reclaim deferred under @key if that is newer. */
static unsigned long migrc_reclaim_need(unsigned long key, unsigned long need)
{
	if (!key)
		return need;
	return migrc_gen_newer(migrc_key_gen(key, need), need);
}

/* Finish every generation up to @need, unless it is done already. */
static void migrc_barrier(unsigned long need)
{
	/* Pairs with __migrc_flush_upto()'s release: the flush is complete. */
	if (migrc_gen_covers(smp_load_acquire(&migrc_gens.done), need)) {
		count_vm_event(MIGRC_WRITES_SPARED);
		return;
	}
	if (migrc_injected(MIGRC_INJECT_SKIP_WRITE))
		return;
	migrc_flush(need, MIGRC_FLUSH_WRITE);
}

/*
 * The file a folio's data belongs to, for its reclaim key: NULL for an
 * anonymous, KSM or movable folio (their mapping field is tagged), or one
 * not in the page cache.  Read without the folio lock: the callers hold
 * the PTE lock of a present entry or the folio lock, so the folio is not
 * freed, and a folio that truncation takes out of its file at the same
 * time has its data changed by the truncation, which passes the mapping
 * barrier itself.
 */
static struct address_space *migrc_file_of(struct folio *folio)
{
	struct address_space *mapping = READ_ONCE(folio->mapping);

	if ((unsigned long)mapping & PAGE_MAPPING_FLAGS)
		return NULL;
	return mapping;
}

/*
 * The reclaim key of the data a folio holds: its file's, or for an
 * anonymous folio its anon_vma family's; 0 for a KSM or movable folio, or
 * one in no file.  An anonymous folio is written or made writable under
 * the PTE lock of an entry that maps it (do_swap_page(), which may map a
 * folio not in the rmap yet, passes its VMA instead: see
 * migrc_swapin_write()), so the VMA of that entry links to the folio's
 * anon_vma and keeps it alive.  RCU (anon_vmas are SLAB_TYPESAFE_BY_RCU)
 * only keeps the read from faulting; the key is right because the folio
 * is mapped.
 */
static unsigned long migrc_data_key(struct folio *folio)
{
	unsigned long mapping = (unsigned long)READ_ONCE(folio->mapping);
	unsigned long key = 0;

	if ((mapping & PAGE_MAPPING_FLAGS) == PAGE_MAPPING_ANON) {
		struct anon_vma *anon_vma;

		rcu_read_lock();
		anon_vma = (struct anon_vma *)(mapping - PAGE_MAPPING_ANON);
		key = migrc_reclaim_key(READ_ONCE(anon_vma->root));
		rcu_read_unlock();
	} else if (!(mapping & PAGE_MAPPING_FLAGS)) {
		key = migrc_reclaim_key((void *)mapping);
	}
	return key;
}

/**
 * __migrc_write_barrier - finish the deferrals a write of a folio must not hide
 * @folio: the folio about to be written or mapped writable
 * @pfn: the page of it concerned (its destination key)
 *
 * Something is pending (the caller checked): flush if a deferral recorded
 * under @pfn, one reclaim recorded under the key of the folio's data (its
 * file, or its anon_vma family: the folio may be that data come back
 * after reclaim freed the page a stale entry still reads), or one
 * committed without keys, is not done yet.  The caller holds the folio
 * lock or the PTE lock, which orders it after the record
 * (migrc_note_dst(), reclaim's commit).
 */
void __migrc_write_barrier(struct folio *folio, unsigned long pfn)
{
	migrc_barrier(migrc_reclaim_need(migrc_data_key(folio),
					 migrc_key_need(pfn)));
}
EXPORT_SYMBOL_GPL(__migrc_write_barrier);

/**
 * __migrc_swapin_barrier - before do_swap_page() maps a folio writable
 * @vma: the VMA of the fault
 * @folio: the folio swapped in, locked, maybe not in the rmap yet
 *
 * The data of the swap entry is the family's of @vma: reclaim recorded its
 * deferral under the key of the VMA that mapped it (migrc_defer_pte()),
 * whose root anon_vma is the one of every VMA that maps the entry.
 */
void __migrc_swapin_barrier(struct vm_area_struct *vma, struct folio *folio)
{
	migrc_barrier(migrc_reclaim_need(migrc_anon_key(vma),
					 migrc_key_need(folio_pfn(folio))));
}
EXPORT_SYMBOL_GPL(__migrc_swapin_barrier);

/**
 * __migrc_swap_move - before UFFDIO_MOVE takes a swap entry away
 * @mm: the mm of the entry, whose page table lock is held
 *
 * Reclaim counts the entries it deferred in mm->tlb_flush_batched, as its
 * batched ones always were; flush_tlb_batched_pending() finishes them, as
 * mremap()'s move_ptes() does before it moves entries.  Not keyed: the
 * move is rare, and the count is the mm's.
 */
void __migrc_swap_move(struct mm_struct *mm)
{
	if (migrc_injected(MIGRC_INJECT_SKIP_MOVE))
		return;
	flush_tlb_batched_pending(mm);
}

/**
 * __migrc_pte_barrier - before a present PTE becomes writable
 * @vma: its VMA
 * @addr: its address
 * @pte: the new entry
 *
 * Only a normal page (vm_normal_page()) can hold data migrc deferred, and
 * only its folio's mapping field says what that data is: the page of a
 * VM_PFNMAP or VM_IO mapping (device memory, which may have no struct page
 * at all, or a kernel page a driver remaps, whose mapping field is
 * something else) and the zero page never are.  The PTE lock of the
 * present entry keeps the folio.
 */
void __migrc_pte_barrier(struct vm_area_struct *vma, unsigned long addr,
			 pte_t pte)
{
	struct page *page = vm_normal_page(vma, addr, pte);

	if (page)
		__migrc_write_barrier(page_folio(page), pte_pfn(pte));
}
EXPORT_SYMBOL_GPL(__migrc_pte_barrier);

/**
 * __migrc_cow_barrier - before a private copy of file data is mapped
 * @mapping: the file a private mapping copies from
 *
 * finish_fault() maps a new anonymous page where a copy-on-write fault
 * found no PTE; reclaim may have cleared it and deferred the flush, and
 * a stale entry would go on reading the file's old page instead of the
 * copy now written.  The new page names no file, so the fault names it.
 */
void __migrc_cow_barrier(struct address_space *mapping)
{
	migrc_barrier(migrc_reclaim_need(migrc_reclaim_key(mapping),
					 READ_ONCE(migrc_gens.unkeyed)));
}

/*
 * Page allocator side.  A tagged page records the generation whose flush
 * must complete before anyone else may use it.  A tag whose generation is
 * done is stale and simply cleared.
 */
static unsigned long migrc_pages_need(struct page *page, unsigned int order,
				      bool *found)
{
	/* Pairs with the commit's release; migrc_tag_gen() widens tags by it. */
	unsigned long latest = smp_load_acquire(&migrc_gens.latest);

	return migrc_block_need(page, 1UL << order, latest,
				READ_ONCE(migrc_gens.done), found);
}

/**
 * migrc_page_tagged - does handing out a free block first need a flush?
 * @page: the first page of the block
 * @order: the order of the block
 *
 * For allocations that may not flush (see migrc_gfp_can_flush()), which
 * skip such a block.  Lockless; one read of the generations when nothing
 * is pending.
 *
 * Return: true if a page of the block is tagged with a generation whose
 * flush is not done.
 */
bool migrc_page_tagged(struct page *page, unsigned int order)
{
	bool found;

	if (!migrc_pending())
		return false;
	migrc_pages_need(page, order, &found);
	return found;
}

/**
 * migrc_prep_new_page - finish the flush a block needs before its reuse
 * @page: the first page of the block being allocated
 * @order: the order of the block
 *
 * Called first thing in post_alloc_hook(), before anything can write the
 * block: finishes the flush its tags need and clears them.  The allocator
 * only gets here with a tagged block from contexts that may sleep (see
 * migrc_gfp_can_flush()), compaction and alloc_contig_range().
 */
void migrc_prep_new_page(struct page *page, unsigned int order)
{
	unsigned long need, i;
	bool found;

	migrc_debug_alloc(page, order);
	/*
	 * Nothing pending: every tag left on the block is already covered
	 * (migrc_tag_gen() rebuilds it as done), so there is nothing to scan.
	 */
	if (!migrc_pending())
		return;
	need = migrc_pages_need(page, order, &found);
	if (found) {
		VM_WARN_ONCE(in_interrupt() || irqs_disabled(),
			     "migrc: tagged page allocated in atomic context");
		if (!migrc_injected(MIGRC_INJECT_SKIP_ALLOC))
			migrc_flush(need, MIGRC_FLUSH_ALLOC);
		VM_WARN_ONCE(IS_ENABLED(CONFIG_MIGRC_DEBUG) &&
			     !migrc_gen_covers(READ_ONCE(migrc_gens.done), need),
			     "migrc_debug: page %#lx allocated before its flush (gen %lu)\n",
			     page_to_pfn(page), need);
	}
	for (i = 0; i < (1UL << order); i++)
		if (migrc_is_tag(page[i].index))
			page[i].index = 0;
}

/*
 * Migration side.  The batch lives for one migrate_pages_batch() call and
 * is reached through current->migrc_batch.
 */
struct migrc_batch {
	struct arch_tlbflush_unmap_batch *folio; /* the folio being unmapped */
	struct arch_tlbflush_unmap_batch *ro;	/* all deferrable entries */
	bool active;		/* collecting for an eligible folio */
	bool folio_ok;		/* its mappings so far were read-only, clean */
	int reason;
	unsigned long nr_pages;	/* deferred since the last commit */
	unsigned long gen;	/* of the last commit, covering all before */
	/* Reclaim: the key of what it deferred since the last commit, */
	unsigned long key;
	bool unkeyed;		/* or more than one key, or none */
	/* and of the folio being unmapped, if anonymous (its VMAs') */
	bool folio_anon;
	bool folio_mixed;	/* its VMAs gave different keys, or none */
	unsigned long folio_key;
	unsigned long masks[];	/* what folio and ro point to */
};

/*
 * One batch per migrate_pages_batch() or shrink_folio_list() call, from
 * GFP_NOWAIT: its two CPU masks are sized for the CPUs the machine can
 * have (arch_tlbbatch_size()), not for NR_CPUS, which would make them
 * 2 KiB with a distribution's NR_CPUS=8192.
 */
static struct migrc_batch *migrc_batch_alloc(int reason)
{
	size_t size = ALIGN(arch_tlbbatch_size(), sizeof(long));
	struct migrc_batch *batch;

	/*
	 * Never recurse into reclaim for this, and never dip into the
	 * reserves (reclaim and kswapd run with PF_MEMALLOC); without a
	 * batch, the caller flushes as today.
	 */
	batch = kzalloc(struct_size(batch, masks, 2 * size / sizeof(long)),
			GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC);
	if (!batch)
		return NULL;
	batch->folio = (void *)batch->masks;
	batch->ro = (void *)batch->masks + size;
	batch->reason = reason;
	return batch;
}

/*
 * Read-only entries may be deferred in any mapping but hugetlb and x86
 * shadow stacks, whose PTEs are read-only (W=0) and yet written by
 * shadow-stack accesses.  A shadow-stack PTE is also dirty, which reclaim
 * excludes anyway; but fork() moves D to SavedDirty when it write-protects
 * one, so only the VMA flag is a sure test for migration.  Shared
 * anonymous memory is shmem: like any shmem or file mapping, it can only
 * be written through a PTE that is writable at unmap (then the folio is
 * not deferred) or made writable later (then the write barrier runs
 * first), so it needs no exclusion.
 */
static bool migrc_vma_ok(struct vm_area_struct *vma)
{
	return !is_vm_hugetlb_page(vma) && !(vma->vm_flags & VM_SHADOW_STACK);
}

/*
 * May a CPU still cache a writable entry for a PTE of @mm that is
 * read-only now?  Only while a write-protect whose flush is still to come
 * is in flight: mprotect(), NUMA scanning, uffd-wp, clear_refs and
 * mapping_dirty_helpers count theirs in mm->tlb_flush_pending, fork() in
 * mm->migrc_wp_pending; every other path that clears W flushes before it
 * drops the PTE lock (Documentation/mm/migrc.rst lists them).  The caller
 * holds the PTE lock under which it found the entry read-only, which
 * orders these reads after the write-protector's increment.
 */
static bool migrc_wp_in_flight(struct mm_struct *mm)
{
	if (migrc_injected(MIGRC_INJECT_SKIP_WP))
		return false;
	return mm_tlb_flush_pending(mm) || atomic_read(&mm->migrc_wp_pending);
}

/* Is every way the data of @mapping can change known?  See below. */
static bool migrc_mapping_safe(struct address_space *mapping)
{
	if (shmem_mapping(mapping))
		return true;
	return mapping->host &&
	       (mapping->host->i_sb->s_type->fs_flags & FS_MIGRC_BARRIERS);
}

/**
 * migrc_folio_safe - is every way the folio's data can change known?
 * @folio: a locked folio, so its mapping is stable
 *
 * A stale read-only entry goes on reading the old page until its flush,
 * so a deferral is sound only if every path that can change the data a
 * reader expects there passes a barrier first.  Anonymous memory changes
 * only through its page tables (write faults, GUP, userfaultfd), shmem
 * also through its write path; all of those are hooked.  The page cache of
 * a filesystem changes in more ways: direct I/O and fallocate() that never
 * touch a cached folio, sub-block zeroing, reflink, changes made by another
 * node.  Only a filesystem that declares all of those covered
 * (FS_MIGRC_BARRIERS, see Documentation/mm/migrc.rst) is in the set;
 * every other file, and block devices, are flushed as today.
 *
 * Return: true if the folio may have its flush deferred.
 */
static bool migrc_folio_safe(struct folio *folio)
{
	if (folio_test_anon(folio))
		return true;
	return folio->mapping && migrc_mapping_safe(folio->mapping);
}

/*
 * Reclaim discards a lazily freed anonymous folio (MADV_FREE, and
 * VM_DROPPABLE ones) instead of swapping it, and leaves its PTEs none.
 * The next fault at such an address maps a new zeroed page
 * (do_anonymous_page()), which no key names, and a fault does not look at
 * mm->tlb_flush_batched: no barrier would see the first write to it, and
 * a stale entry would go on reading the discarded data.  The folio is
 * stable here: reclaim holds its lock and has isolated it, and only
 * try_to_unmap_one() sets it swap-backed again (and then keeps it).
 */
static bool migrc_reclaim_discards(struct migrc_batch *batch,
				   struct folio *folio)
{
	return batch->reason == MIGRC_REASON_RECLAIM &&
	       folio_test_anon(folio) && !folio_test_swapbacked(folio) &&
	       !migrc_injected(MIGRC_INJECT_LAZYFREE);
}

/*
 * Reclaim writes a dirty folio back (or keeps it when it cannot) and keeps
 * a folio under writeback: neither is freed in this pass.  Its entries
 * would stay deferred for nothing, and shrink_folio_list() would have to
 * finish every pending deferral for the kept folio, which may later be
 * freed untagged: flush them as today instead.  A folio dirtied by the
 * walk itself (a dirty PTE) is refused by migrc_pte_blocks().
 */
static bool migrc_reclaim_keeps(struct migrc_batch *batch,
				struct folio *folio)
{
	return batch->reason == MIGRC_REASON_RECLAIM &&
	       (folio_test_dirty(folio) || folio_test_writeback(folio));
}

/**
 * __migrc_mapping_barrier - finish deferrals before file data changes
 * @mapping: the file whose data is about to change without a cached folio
 *
 * Direct I/O, fallocate() and truncation of a file in the safe set change
 * its data without writing a cached folio, so no folio hook sees them.
 * They all pass invalidate_inode_pages2_range() or
 * truncate_inode_pages_range(), which call this after their walk of the
 * page cache.  Reclaim commits a deferral before the folio can leave the
 * page cache (shrink_folio_list()), so a walk that no longer finds the
 * folio orders after the commit, and the full barrier makes the commit
 * visible to migrc_pending() here.
 */
void __migrc_mapping_barrier(struct address_space *mapping)
{
	if (!migrc_mapping_safe(mapping))
		return;		/* nothing of it was deferred */
	/* Orders the caller's page cache walk before the pending check. */
	smp_mb();
	if (migrc_pending()) {
		unsigned long need = migrc_key_need((unsigned long)mapping);

		migrc_barrier(migrc_reclaim_need(migrc_reclaim_key(mapping),
						 need));
	}
}

static bool migrc_folio_eligible(struct migrc_batch *batch,
				 struct folio *folio)
{
	if (folio_test_hugetlb(folio))
		return false;
	/*
	 * A large folio is freed as one block with every page tagged
	 * (free_migrc_folio()), and its destination is keyed page by page
	 * (__migrc_note_dst()).  Its PMD mappings are flushed at once by
	 * set_pmd_migration_entry(); only its PTE mappings can be deferred.
	 * Reclaim keeps to order 0: the large folios it frees clean are the
	 * page cache of filesystems outside the safe set (XFS) and lazily
	 * freed anonymous mTHP, neither of which is tested here.
	 */
	if (folio_test_large(folio) && batch->reason == MIGRC_REASON_RECLAIM) {
		count_vm_events(MIGRC_EXCLUDED_LARGE, folio_nr_pages(folio));
		return false;
	}
	/*
	 * A page cache or shmem folio of PMD size may be mapped by a PMD in
	 * another process, and do_set_pmd(), remove_migration_pmd(),
	 * change_huge_pmd() and do_huge_pmd_numa_page() map it writable
	 * without a barrier of ours (a shared shmem mapping gets a writable
	 * PMD even on a read fault).  An anonymous one can only be mapped
	 * writable while one mm maps it, whose PMD then is its only mapping.
	 */
	if (folio_test_pmd_mappable(folio) && !folio_test_anon(folio) &&
	    !migrc_injected(MIGRC_INJECT_PMD_FILE)) {
		count_vm_events(MIGRC_EXCLUDED_LARGE, folio_nr_pages(folio));
		return false;
	}
	if (migrc_reclaim_keeps(batch, folio))
		return false;
	if (folio_is_zone_device(folio) || folio_test_ksm(folio))
		return false;
	/*
	 * These write to or unmap the page when it is freed, which a stale
	 * entry would observe.
	 */
	if (want_init_on_free() || debug_pagealloc_enabled() ||
	    page_poisoning_enabled_static() || kasan_hw_tags_enabled())
		return false;
	if (!migrc_folio_safe(folio) || migrc_reclaim_discards(batch, folio)) {
		count_vm_events(MIGRC_EXCLUDED_PAGES, folio_nr_pages(folio));
		return false;
	}
	return true;
}

/* See migrc_batch_open(). */
struct migrc_batch *__migrc_batch_open(int reason, bool batched)
{
	struct migrc_batch *batch, *outer = current->migrc_batch;

	current->migrc_batch = NULL;
	if (!batched)
		return outer;
	/*
	 * The source goes straight to the caller of alloc_contig_range(), and
	 * memory_failure() handles the source itself: nothing to gain.  A
	 * long-term pin (memfd_pin_folios() for udmabuf, FOLL_LONGTERM GUP)
	 * pins the destination next, and memfd_pin_folios() finds it in the
	 * page cache without a page table walk, so no barrier runs before a
	 * device or a kernel mapping writes it: never defer for one.
	 */
	if (reason == MR_CONTIG_RANGE || reason == MR_MEMORY_FAILURE ||
	    reason == MR_LONGTERM_PIN)
		return outer;
	batch = migrc_batch_alloc(reason);
	if (!batch)
		return outer;
	current->migrc_batch = batch;
	return outer;
}

/* See migrc_batch_close(). */
void __migrc_batch_close(struct migrc_batch *outer)
{
	struct migrc_batch *batch = current->migrc_batch;

	if (batch) {
		/* A batch that never reached its flush point defers nothing. */
		if (!arch_tlbbatch_empty(batch->ro)) {
			arch_tlbbatch_fold(&current->tlb_ubc.arch, batch->ro);
			current->tlb_ubc.flush_required = true;
			try_to_unmap_flush();
		}
		kfree(batch);
	}
	current->migrc_batch = outer;
}

/**
 * __migrc_unmap_begin - start collecting the entries of one folio
 * @folio: the folio try_to_migrate() is about to unmap, locked
 *
 * Only an eligible folio (migrc_folio_eligible()) in an open
 * batch is collected; the entries of any other are flushed as today.
 */
void __migrc_unmap_begin(struct folio *folio)
{
	struct migrc_batch *batch = current->migrc_batch;

	if (!batch || !migrc_folio_eligible(batch, folio))
		return;
	batch->active = true;
	batch->folio_ok = true;
	batch->folio_anon = folio_test_anon(folio);
	batch->folio_mixed = false;
	batch->folio_key = 0;
}

/*
 * Reclaim of an anonymous folio: the key of the VMA an entry of it was
 * found in (migrc_anon_key()).  Called under the rmap walk's anon_vma
 * lock, so the VMA and its anon_vma are stable.  Every VMA that maps an
 * anonymous folio belongs to one family; a KSM folio, whose VMAs may not,
 * is never deferred.
 */
static void migrc_batch_note_vma(struct migrc_batch *batch,
				 struct vm_area_struct *vma)
{
	unsigned long key = migrc_anon_key(vma);

	if (!key || (batch->folio_key && batch->folio_key != key))
		batch->folio_mixed = true;
	else
		batch->folio_key = key;
}

/*
 * Reclaim: the key the next commit records, the folio's file's or its
 * anon_vma family's.  The folio is locked, so its mapping is stable.
 * Reclaim commits each deferred folio before __remove_mapping(), so a
 * second key before a commit is rare; it makes the commit unkeyed.
 */
static void migrc_batch_note_key(struct migrc_batch *batch,
				 struct folio *folio)
{
	unsigned long key;

	if (batch->folio_anon)
		key = batch->folio_mixed ? 0 : batch->folio_key;
	else
		key = migrc_reclaim_key(migrc_file_of(folio));
	if (!key || (batch->key && batch->key != key))
		batch->unkeyed = true;
	else
		batch->key = key;
}

/**
 * __migrc_unmap_end - decide the fate of one folio's entries
 * @folio: the folio whose rmap walk is done
 *
 * If all its entries were deferrable, keep them deferred; otherwise hand
 * them to the ordinary batch, flushed at the flush point as today.
 *
 * Return: true if the entries are deferred and the caller must release
 * the source with migrc_put_source() once moved.
 */
bool __migrc_unmap_end(struct folio *folio)
{
	struct migrc_batch *batch = current->migrc_batch;
	bool deferred;

	if (!batch || !batch->active)
		return false;
	batch->active = false;
	if (arch_tlbbatch_empty(batch->folio))
		return false;

	deferred = batch->folio_ok;
	if (deferred) {
		arch_tlbbatch_fold(batch->ro, batch->folio);
		batch->nr_pages += folio_nr_pages(folio);
		if (batch->reason == MIGRC_REASON_RECLAIM)
			migrc_batch_note_key(batch, folio);
		if (folio_test_large(folio))
			count_vm_events(MIGRC_DEFERRED_LARGE,
					folio_nr_pages(folio));
	} else {
		arch_tlbbatch_fold(&current->tlb_ubc.arch, batch->folio);
		current->tlb_ubc.flush_required = true;
	}
	arch_tlbbatch_clear(batch->folio);
	return deferred;
}

/*
 * Could the folio be written through @pteval once it is remapped, or, for
 * reclaim, was it written?  Migration copies whatever the source holds,
 * so a dirty entry is as good as a clean one there once it is read-only.
 * Reclaim writes a dirty folio back instead of freeing it.
 */
static bool migrc_pte_blocks(struct migrc_batch *batch, pte_t pteval)
{
	return pte_write(pteval) ||
	       (batch->reason == MIGRC_REASON_RECLAIM && pte_dirty(pteval));
}

/**
 * __migrc_note_pte - see every entry try_to_migrate() clears
 * @pteval: the entry, as it was when cleared
 *
 * A writable entry (for reclaim, also a dirty one), even one flushed at
 * once, keeps the folio from being deferred.
 */
void __migrc_note_pte(pte_t pteval)
{
	struct migrc_batch *batch = current->migrc_batch;

	if (!batch || !batch->active || !migrc_pte_blocks(batch, pteval))
		return;
	batch->folio_ok = false;
	count_vm_event(MIGRC_WRITABLE_ENTRIES);
}

/* See migrc_note_pmd(). */
void __migrc_note_pmd(bool writable)
{
	struct migrc_batch *batch = current->migrc_batch;

	count_vm_event(MIGRC_PMD_ENTRIES);
	if (writable && batch && batch->active) {
		batch->folio_ok = false;
		count_vm_event(MIGRC_WRITABLE_ENTRIES);
	}
}

/**
 * migrc_defer_pte - take a cleared entry's flush for deferral
 * @vma: the mapping the entry belonged to
 * @pteval: the entry, as it was when cleared
 * @uaddr: its user address
 *
 * Called by set_tlb_ubc_flush_pending() for every accessible entry that
 * try_to_migrate() cleared with a batched flush.
 *
 * Return: true if the entry's flush was taken for deferral, false if the
 * caller must batch it as usual.
 */
bool migrc_defer_pte(struct vm_area_struct *vma, pte_t pteval,
		     unsigned long uaddr)
{
	struct migrc_batch *batch = current->migrc_batch;

	if (!batch || !batch->active)
		return false;
	if (migrc_pte_blocks(batch, pteval) || !migrc_vma_ok(vma)) {
		batch->folio_ok = false;
		return false;
	}
	if (migrc_wp_in_flight(vma->vm_mm)) {
		batch->folio_ok = false;
		count_vm_event(MIGRC_WP_IN_FLIGHT);
		return false;
	}
	if (batch->reason == MIGRC_REASON_RECLAIM && batch->folio_anon)
		migrc_batch_note_vma(batch, vma);
	arch_tlbbatch_add_pending(batch->folio, vma->vm_mm, uaddr);
	return true;
}

/**
 * __migrc_batch_commit - publish the deferral of current's batch
 *
 * At the batch's flush point, right after try_to_unmap_flush(): give the
 * entries deferred since the last commit a generation and fold them into
 * the pending batch.  The generation is published after the PTEs were
 * cleared and mm->tlb_gen was bumped, which is what the per-CPU tracking
 * relies on.  Arms the time bound, or flushes at once when
 * max_pending_pages would be exceeded.  Reclaim commits each folio before
 * it can leave the page cache, so a batch may commit many times; the
 * batch's generation is then the newest, which covers all of them.
 */
void __migrc_batch_commit(void)
{
	struct migrc_batch *batch = current->migrc_batch;
	unsigned long gen, now;
	unsigned int nr_cpus;
	bool first, force;

	if (!batch)
		return;
	if (!batch->nr_pages) {
		if (!batch->gen)
			batch->gen = READ_ONCE(migrc_gens.done);
		return;
	}

	nr_cpus = arch_tlbbatch_nr_cpus(batch->ro);
	spin_lock(&migrc_pending_batch.lock);
	now = jiffies;
	first = !migrc_pending();
	if (first)
		migrc_pending_batch.oldest = now;
	arch_tlbbatch_fold(&migrc_pending_batch.cpus, batch->ro);
	force = migrc_over_limit(migrc_pending_batch.nr_pages, batch->nr_pages,
				 READ_ONCE(migrc_max_pending_pages));
	migrc_pending_batch.nr_pages += batch->nr_pages;
	gen = migrc_gens.latest + 1;
	migrc_stamp_commit(gen, batch->nr_pages, now);
	/* No destination to key it by: see migrc_reclaim_key(). */
	if (batch->reason == MIGRC_REASON_RECLAIM) {
		if (batch->unkeyed || !batch->key)
			WRITE_ONCE(migrc_gens.unkeyed, gen);
		else
			migrc_key_raise(batch->key, gen);
		batch->key = 0;
		batch->unkeyed = false;
	}
	/* Publishes the pending CPUs and pages before the generation. */
	smp_store_release(&migrc_gens.latest, gen);
	batch->gen = gen;
	trace_migrc_defer(gen, batch->nr_pages, nr_cpus, batch->reason);
	count_vm_events(MIGRC_DEFERRED_PAGES, batch->nr_pages);
	if (batch->reason == MIGRC_REASON_RECLAIM)
		count_vm_events(MIGRC_DEFERRED_RECLAIM, batch->nr_pages);
	count_vm_event(MIGRC_DEFERRED_BATCHES);
	count_vm_events(MIGRC_CPUS_DEFERRED, nr_cpus);
	if (force)
		__migrc_flush(MIGRC_FLUSH_PRESSURE);
	else if (first)
		/* Under the lock: a preempted committer cannot delay it. */
		mod_delayed_work(system_unbound_wq, &migrc_timeout_work,
				 migrc_max_age_jiffies());
	spin_unlock(&migrc_pending_batch.lock);
	/* Published: what the batch defers next needs a commit of its own. */
	arch_tlbbatch_clear(batch->ro);
	batch->nr_pages = 0;
}

/*
 * The generation a destination must be flushed for: @gen (0 if its own
 * migration was not deferred), or @carried, what its source was still
 * pending for, if that is newer and not done.
 */
static unsigned long migrc_gen_carry(unsigned long gen, unsigned long carried,
				     unsigned long done)
{
	if (!migrc_gen_covers(done, carried) &&
	    (!gen || migrc_gen_after(carried, gen)))
		return carried;
	return gen;
}

/* See migrc_note_dst(). */
void __migrc_note_dst(struct folio *src, struct folio *dst, bool deferred)
{
	struct migrc_batch *batch = current->migrc_batch;
	unsigned long spfn = folio_pfn(src), dpfn = folio_pfn(dst);
	unsigned long nr = folio_nr_pages(src), gen = 0, i;
	unsigned long done = READ_ONCE(migrc_gens.done);

	if (deferred && !WARN_ON_ONCE(!batch))
		gen = batch->gen;
	migrc_debug_note_dst(spfn, dpfn, nr, gen);
	/*
	 * A source page still under a pending key is the destination of an
	 * earlier deferral (migrated again within max_age_ms): its stale
	 * entries still read the older data, so the new destination must
	 * flush for them as well.  One generation for the whole folio, the
	 * newest: a write to any part of it is a write to its first page's
	 * key (migrc_folio_write()).
	 */
	for (i = 0; i < nr; i++)
		gen = migrc_gen_carry(gen, migrc_key_gen(spfn + i, done), done);
	if (!gen)
		return;
	migrc_debug_note_src(&src->page, &dst->page, nr, gen);
	/*
	 * Every page's key, not only the folio's first: a PTE made writable
	 * names its own page (migrc_pte_write()), and a split of the
	 * destination makes each page the first of a folio of its own.
	 */
	for (i = 0; i < nr; i++)
		migrc_key_raise(dpfn + i, gen);
	if (!folio_test_anon(dst) && dst->mapping)
		migrc_key_raise((unsigned long)dst->mapping, gen);
}

/**
 * migrc_put_source - release a moved source whose flush was deferred
 * @src: the source folio, unlocked, with migration's reference
 *
 * Only when ours is the last reference can the page go back tagged with
 * the batch's generation (free_migrc_page()); anyone else holding one (a
 * speculative lookup) would free it untagged, so flush first then.
 */
void migrc_put_source(struct folio *src)
{
	struct migrc_batch *batch = current->migrc_batch;
	unsigned long gen;

	if (batch && batch->nr_pages)
		__migrc_batch_commit();	/* never free under an older generation */
	gen = batch ? batch->gen : READ_ONCE(migrc_gens.latest);
	if (migrc_injected(MIGRC_INJECT_UNTAGGED)) {
		folio_put(src);
		return;
	}
	if (!folio_ref_freeze(src, 1)) {
		migrc_flush(gen, MIGRC_FLUSH_OTHER);
		folio_put(src);
		return;
	}
	migrc_debug_note_src(&src->page, NULL, folio_nr_pages(src), gen);
	free_migrc_folio(src, gen);
}

#ifdef CONFIG_MIGRC_DEBUG
/*
 * The destinations of deferred migrations, by pfn, with the generation
 * that must be flushed before they may be written.  Checked where a page
 * is mapped writable (set_ptes()) or written (migrc_folio_write()): an
 * entry still pending there means a path got there without the barrier.
 *
 * A direct-mapped table under a raw spinlock, not an xarray: it is used
 * from the page allocator, in any context, and must never allocate.  A
 * collision drops the older record, which loses a check, never adds one.
 */
#define MIGRC_DEBUG_SLOTS	16384
static struct {
	unsigned long pfn_plus_one;
	unsigned long gen;
} migrc_debug_slot[MIGRC_DEBUG_SLOTS];
static DEFINE_RAW_SPINLOCK(migrc_debug_lock);

static void migrc_debug_record(unsigned long pfn, unsigned long gen)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&migrc_debug_lock, flags);
	migrc_debug_slot[pfn % MIGRC_DEBUG_SLOTS].pfn_plus_one = pfn + 1;
	migrc_debug_slot[pfn % MIGRC_DEBUG_SLOTS].gen = gen;
	raw_spin_unlock_irqrestore(&migrc_debug_lock, flags);
}

/* The pending generation recorded for @pfn, removing it; false if none. */
static bool migrc_debug_take(unsigned long pfn, unsigned long *gen, bool erase)
{
	unsigned long flags;
	bool found;

	raw_spin_lock_irqsave(&migrc_debug_lock, flags);
	found = migrc_debug_slot[pfn % MIGRC_DEBUG_SLOTS].pfn_plus_one == pfn + 1;
	if (found) {
		*gen = migrc_debug_slot[pfn % MIGRC_DEBUG_SLOTS].gen;
		if (erase)
			migrc_debug_slot[pfn % MIGRC_DEBUG_SLOTS].pfn_plus_one = 0;
	}
	raw_spin_unlock_irqrestore(&migrc_debug_lock, flags);
	return found;
}

/*
 * Records @dst's pending generation: @gen, the batch's when its flush was
 * deferred, or the one still recorded for @src if @src is itself the
 * destination of a deferral not flushed yet.  By exact pfn, not by key
 * slot as __migrc_note_dst() carries it: a slot that @src shares with
 * another pfn only costs the barrier a needless flush, but would make
 * this check report a writable destination that no stale entry can read.
 */
static void migrc_debug_note_dst(unsigned long src, unsigned long dst,
				 unsigned long nr, unsigned long gen)
{
	unsigned long carried, i;

	for (i = 0; i < nr; i++) {
		unsigned long need = gen;

		if (migrc_debug_take(src + i, &carried, false))
			need = migrc_gen_carry(gen, carried,
					       READ_ONCE(migrc_gens.done));
		if (need)
			migrc_debug_record(dst + i, need);
	}
}

/*
 * The sources of deferred flushes, by pfn: a hash of the data they held
 * when they left their mappings, and the generation whose flush ends
 * their stale entries.  A read-only stale entry cannot change a source; a
 * writable one (a write-protect still in flight when the entry was judged
 * read-only, or a path that upgraded it without the barrier) writes to
 * the freed source, and the write is lost: the destination (migration)
 * or the file (reclaim) never sees it.  No other check can see this, as
 * nothing maps or writes the source by the book.  So the source is
 * hashed where its data leaves it: for migration from the destination,
 * locked and not yet mapped, and compared with the source then; for
 * reclaim from the clean page itself, when it is freed.  It is compared
 * again when its generation's flush completes, or when the page is
 * reused, whichever comes first; after either, no stale entry is left.
 *
 * The same direct-mapped table design as the destinations' above.  Off
 * when freeing or allocating writes or unmaps pages (init_on_free, page
 * poisoning, debug_pagealloc), whose patterns would read as writes.
 */
#define MIGRC_DEBUG_SRC_SLOTS	4096
static struct migrc_debug_src {
	unsigned long pfn_plus_one;
	unsigned long dst_pfn;		/* the pfn itself after reclaim */
	unsigned long gen;
	u32 hash;
} migrc_debug_src[MIGRC_DEBUG_SRC_SLOTS];
static unsigned int migrc_debug_nr_src;		/* slots in use */

static bool migrc_debug_data_stable(void)
{
	return !want_init_on_free() && !page_poisoning_enabled_static() &&
	       !debug_pagealloc_enabled_static();
}

static u32 migrc_debug_hash(struct page *page)
{
	u32 *data = kmap_local_page(page), hash;

	hash = jhash2(data, PAGE_SIZE / sizeof(u32), 0);
	kunmap_local(data);
	return hash;
}

/* Compare the source with its hash and forget it; migrc_debug_lock held. */
static void migrc_debug_check_src(struct migrc_debug_src *rec,
				  const char *when)
{
	unsigned long pfn = rec->pfn_plus_one - 1;

	WARN_ONCE(migrc_debug_hash(pfn_to_page(pfn)) != rec->hash,
		  "migrc_debug: pfn %#lx written through a stale TLB entry after its data went to pfn %#lx (gen %lu, seen %s)\n",
		  pfn, rec->dst_pfn, rec->gen, when);
	rec->pfn_plus_one = 0;
	migrc_debug_nr_src--;
}

/*
 * @src keeps its data until generation @gen is flushed: from @dst, at the
 * move, or from itself (@dst NULL) when it is freed; a source already
 * recorded at its move only takes the generation it is freed under.
 */
static void migrc_debug_note_src_page(struct page *src, struct page *dst,
				      unsigned long gen)
{
	unsigned long pfn = page_to_pfn(src), flags;
	struct migrc_debug_src *rec;
	u32 hash;

	if (!migrc_debug_data_stable())
		return;
	rec = &migrc_debug_src[pfn % MIGRC_DEBUG_SRC_SLOTS];
	raw_spin_lock_irqsave(&migrc_debug_lock, flags);
	if (!dst && rec->pfn_plus_one == pfn + 1) {
		rec->gen = gen;
		goto out;
	}
	hash = migrc_debug_hash(dst ?: src);
	/* A collision drops the older record. */
	if (!rec->pfn_plus_one)
		migrc_debug_nr_src++;
	*rec = (struct migrc_debug_src) {
		.pfn_plus_one = pfn + 1, .dst_pfn = page_to_pfn(dst ?: src),
		.gen = gen, .hash = hash,
	};
	/* Written between the copy and the move? */
	if (dst && migrc_debug_hash(src) != hash)
		migrc_debug_check_src(rec, "at the move");
out:
	raw_spin_unlock_irqrestore(&migrc_debug_lock, flags);
}

/* The same for each of the @nr pages of a folio: each has its record. */
static void migrc_debug_note_src(struct page *src, struct page *dst,
				 unsigned long nr, unsigned long gen)
{
	unsigned long i;

	for (i = 0; i < nr; i++)
		migrc_debug_note_src_page(nth_page(src, i),
					  dst ? nth_page(dst, i) : NULL, gen);
}

/*
 * migrc_gens.done reached @done: check the sources it covers.  Under the
 * pending lock, after done's release store; no such source can be reused
 * meanwhile, since its allocation takes migrc_debug_lock first (below).
 */
static void migrc_debug_flushed(unsigned long done)
{
	unsigned long flags;
	unsigned int i;

	if (!READ_ONCE(migrc_debug_nr_src))
		return;
	raw_spin_lock_irqsave(&migrc_debug_lock, flags);
	for (i = 0; i < MIGRC_DEBUG_SRC_SLOTS && migrc_debug_nr_src; i++) {
		struct migrc_debug_src *rec = &migrc_debug_src[i];

		if (rec->pfn_plus_one && migrc_gen_covers(done, rec->gen))
			migrc_debug_check_src(rec, "at its flush");
	}
	raw_spin_unlock_irqrestore(&migrc_debug_lock, flags);
}

/* A new life for these pages: forget what their previous one recorded. */
static void migrc_debug_alloc(struct page *page, unsigned int order)
{
	unsigned long pfn = page_to_pfn(page), i, gen, flags;

	for (i = 0; i < (1UL << order); i++) {
		struct migrc_debug_src *rec =
			&migrc_debug_src[(pfn + i) % MIGRC_DEBUG_SRC_SLOTS];

		migrc_debug_take(pfn + i, &gen, true);
		if (READ_ONCE(rec->pfn_plus_one) != pfn + i + 1)
			continue;
		raw_spin_lock_irqsave(&migrc_debug_lock, flags);
		if (rec->pfn_plus_one == pfn + i + 1)
			migrc_debug_check_src(rec, "at its reuse");
		raw_spin_unlock_irqrestore(&migrc_debug_lock, flags);
	}
}

/**
 * migrc_debug_set_ptes - check the PTEs being installed by set_ptes()
 * @pte: the first new entry
 * @nr: how many entries, mapping consecutive pages of one folio
 *
 * Warns if an entry maps writable a recorded destination whose flush is
 * still pending: a path made it writable without the write barrier.
 */
void migrc_debug_set_ptes(pte_t pte, unsigned int nr)
{
	unsigned long pfn, gen, i;

	if (!migrc_enabled() || !pte_present(pte) || !pte_write(pte))
		return;
	for (i = 0, pfn = pte_pfn(pte); i < nr; i++, pfn++) {
		if (!migrc_debug_take(pfn, &gen, false))
			continue;
		/* Pairs with __migrc_flush_upto()'s release, as in migrc_flush(). */
		WARN_ONCE(!migrc_gen_covers(smp_load_acquire(&migrc_gens.done), gen),
			  "migrc_debug: pfn %#lx mapped writable while its flush (gen %lu, done %lu) is pending\n",
			  pfn, gen, READ_ONCE(migrc_gens.done));
	}
}
EXPORT_SYMBOL_GPL(migrc_debug_set_ptes);

/**
 * migrc_debug_check_folio - check a folio about to be written
 * @folio: the folio
 * @ip: the caller, for the report
 *
 * Called by migrc_folio_write() after its barrier; warns if a flush
 * recorded for @folio is still pending.  Exported, as migrc_gens is: the
 * inline migrc_folio_write() runs in filesystems that may be modules.
 */
void migrc_debug_check_folio(struct folio *folio, unsigned long ip)
{
	unsigned long pfn = folio_pfn(folio), gen, i;

	/*
	 * Nothing pending: no record can be pending either.  The folio is
	 * locked or its PTE lock held, so no deferral of it is committed
	 * meanwhile.  Spares a 2 MB folio 512 lock round trips per write.
	 */
	if (!migrc_pending())
		return;

	for (i = 0; i < folio_nr_pages(folio); i++, pfn++) {
		if (!migrc_debug_take(pfn, &gen, true))
			continue;
		/* Pairs with __migrc_flush_upto()'s release, as in migrc_flush(). */
		WARN_ONCE(!migrc_gen_covers(smp_load_acquire(&migrc_gens.done), gen),
			  "migrc_debug: pfn %#lx written at %pS while its flush (gen %lu, done %lu) is pending\n",
			  pfn, (void *)ip, gen, READ_ONCE(migrc_gens.done));
	}
}
EXPORT_SYMBOL_GPL(migrc_debug_check_folio);
#endif

/**
 * migrc_free_frozen - free a folio reclaim unmapped with its flush deferred
 * @folio: the folio, whose references reclaim froze to zero
 *	   (__remove_mapping())
 *
 * Commits what current's batch deferred since its last commit, if
 * anything, then frees the page tagged with the batch's generation.
 */
void migrc_free_frozen(struct folio *folio)
{
	struct migrc_batch *batch = current->migrc_batch;

	VM_WARN_ON_ONCE_FOLIO(folio_ref_count(folio), folio);
	if (WARN_ON_ONCE(!batch))
		return;			/* leak rather than hand it out */
	if (batch->nr_pages)
		__migrc_batch_commit();
	migrc_debug_note_src(&folio->page, NULL, folio_nr_pages(folio),
			     batch->gen);
	free_migrc_folio(folio, batch->gen);
}

/* Boot parameter and sysfs. */
static int __init migrc_setup(char *str)
{
	if (!str)
		goto bad;
	if (!strcmp(str, "on")) {
		migrc_boot_on = true;
		return 0;
	}
	if (!strcmp(str, "off")) {
		migrc_boot_on = false;
		return 0;
	}
bad:
	pr_warn("ignoring invalid migrc=%s (expected on or off); migrc stays %s\n",
		str ? str : "", migrc_boot_on ? "on" : "off");
	return 0;
}
early_param("migrc", migrc_setup);

#ifdef CONFIG_SYSFS
static ssize_t enabled_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", migrc_enabled() ? "on" : "off");
}
static struct kobj_attribute enabled_attr = __ATTR_RO(enabled);

static ssize_t max_age_ms_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(migrc_max_age_ms));
}

static ssize_t max_age_ms_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	unsigned int val;

	if (kstrtouint(buf, 0, &val) || val < 1 || val > 10000)
		return -EINVAL;
	migrc_set_max_age_ms(val);
	return count;
}
static struct kobj_attribute max_age_ms_attr = __ATTR_RW(max_age_ms);

static ssize_t max_pending_pages_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lu\n", READ_ONCE(migrc_max_pending_pages));
}

static ssize_t max_pending_pages_store(struct kobject *kobj,
				       struct kobj_attribute *attr,
				       const char *buf, size_t count)
{
	unsigned long val;

	if (kstrtoul(buf, 0, &val) || val < 1 || val > totalram_pages() / 4)
		return -EINVAL;
	WRITE_ONCE(migrc_max_pending_pages, val);
	return count;
}
static struct kobj_attribute max_pending_pages_attr =
	__ATTR_RW(max_pending_pages);

/* Writing anything flushes everything pending; for tests and debugging. */
static ssize_t flush_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	return count;
}
static struct kobj_attribute flush_attr = __ATTR_WO(flush);

static ssize_t pending_pages_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lu\n",
			  migrc_pending() ? READ_ONCE(migrc_pending_batch.nr_pages) : 0);
}
static struct kobj_attribute pending_pages_attr = __ATTR_RO(pending_pages);

static struct attribute *migrc_attrs[] = {
	&enabled_attr.attr,
	&max_age_ms_attr.attr,
	&max_pending_pages_attr.attr,
	&flush_attr.attr,
	&pending_pages_attr.attr,
	NULL,
};

static const struct attribute_group migrc_attr_group = {
	.attrs = migrc_attrs,
};

static int __init migrc_sysfs_init(void)
{
	struct kobject *kobj;
	int err;

	kobj = kobject_create_and_add("migrc", mm_kobj);
	if (!kobj)
		return -ENOMEM;
	err = sysfs_create_group(kobj, &migrc_attr_group);
	if (err)
		kobject_put(kobj);
	return err;
}
#else
static inline int migrc_sysfs_init(void) { return 0; }
#endif

static int __init migrc_init(void)
{
	/* A slot's generation bits outlast any run of pending ones. */
	BUILD_BUG_ON(MIGRC_SLOT_GEN_BITS < 48);
	if (migrc_boot_on) {
		migrc_keys = kvcalloc(1UL << MIGRC_KEY_BITS, sizeof(*migrc_keys),
				      GFP_KERNEL);
		/* Without its table, migrc stays off (reported below). */
		if (!migrc_keys)
			migrc_boot_on = false;
	}
	if (migrc_boot_on)
		static_branch_enable(&migrc_key);
	migrc_inject_init();
	pr_info("deferred TLB flush for migration %s\n",
		migrc_boot_on ? "on" : "off");
	return migrc_sysfs_init();
}
subsys_initcall(migrc_init);

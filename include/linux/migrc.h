/* SPDX-License-Identifier: GPL-2.0 */
/*
 * migrc: defer the TLB shootdown for read-only mappings of folios that
 * migration has unmapped, until the source page is reused or the data it
 * held may change.  See Documentation/mm/migrc.rst.
 */
#ifndef _LINUX_MIGRC_H
#define _LINUX_MIGRC_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/bitops.h>
#include <linux/hash.h>
#include <linux/jiffies.h>
#include <linux/jump_label.h>
#include <linux/gfp_types.h>
#include <linux/mm_types.h>
#include <linux/cpumask.h>
#include <linux/migrate_mode.h>
#include <linux/migrc_types.h>

struct page;
struct folio;
struct address_space;
struct vm_area_struct;
struct arch_tlbflush_unmap_batch;

/*
 * A reclaim batch has no migrate_reason; it reports this value instead,
 * which no enum migrate_reason value can take.
 */
#define MIGRC_REASON_RECLAIM	(-1)

/*
 * Generations.  Every batch of deferred shootdowns gets the next value of a
 * 64-bit counter; a flush completes every generation up to the newest one
 * pending.  A free page carries the low MIGRC_TAG_BITS bits of its
 * generation in page->index, next to a magic value that no page cache or
 * anon index, and no kernel pointer, can have (see migrc_tag()); the full
 * generation is rebuilt relative to the newest one, which it cannot be
 * ahead of.  A tag more than 2^MIGRC_TAG_BITS generations old would be
 * rebuilt as a younger generation: that costs a needless flush, never a
 * missed one.
 */
#define MIGRC_TAG_BITS		48
#define MIGRC_TAG_MASK		GENMASK_ULL(MIGRC_TAG_BITS - 1, 0)
#define MIGRC_TAG_MAGIC		(0x6d67ULL << MIGRC_TAG_BITS)	/* "mg" */

/* Is generation @a newer than @b? */
static inline bool migrc_gen_after(unsigned long a, unsigned long b)
{
	return (long)(a - b) > 0;
}

/* Does having completed generation @done cover generation @gen? */
static inline bool migrc_gen_covers(unsigned long done, unsigned long gen)
{
	return !migrc_gen_after(gen, done);
}

/* The value a tagged free page holds in page->index. */
static inline unsigned long migrc_tag(unsigned long gen)
{
	return MIGRC_TAG_MAGIC | (gen & MIGRC_TAG_MASK);
}

static inline bool migrc_is_tag(unsigned long index)
{
	return (index & ~MIGRC_TAG_MASK) == MIGRC_TAG_MAGIC;
}

/* The full generation of a tag, given the newest generation handed out. */
static inline unsigned long migrc_tag_gen(unsigned long index,
					  unsigned long latest)
{
	return latest - ((latest - index) & MIGRC_TAG_MASK);
}

/**
 * migrc_block_need - the flush a free block needs before its reuse
 * @page: the first page of the block
 * @nr: the number of pages in the block
 * @latest: the newest generation handed out
 * @done: the newest generation flushed
 * @found: set if a page of the block holds a tag that @done does not cover
 *
 * Reads only the pages' index words: a pure function, so that KUnit can
 * check it on a made-up block.
 *
 * Return: the newest generation a tag of the block needs, or @done if none
 * does.
 */
static inline unsigned long migrc_block_need(const struct page *page,
					     unsigned long nr,
					     unsigned long latest,
					     unsigned long done, bool *found)
{
	unsigned long need = done, i;

	*found = false;
	for (i = 0; i < nr; i++) {
		unsigned long index = page[i].index, gen;

		if (likely(!migrc_is_tag(index)))
			continue;
		gen = migrc_tag_gen(index, latest);
		if (migrc_gen_covers(done, gen))
			continue;
		*found = true;
		if (migrc_gen_after(gen, need))
			need = gen;
	}
	return need;
}

/*
 * When a recent generation was committed, and how many pages it deferred:
 * a ring indexed by generation, written under the pending lock at commit
 * and read locklessly by the tick (gen is 0 while a slot is rewritten).
 * It lets the time bound complete only the generations that have expired
 * (migrc_ring_expired()), and a CPU's tick find out whether the oldest
 * generation it has not flushed is about to (migrc_stamp_expired()).
 */
struct migrc_stamp {
	unsigned long gen;
	unsigned long when;		/* jiffies */
	unsigned long nr_pages;
};

#define MIGRC_RING_SIZE		128

/*
 * Has @gen been pending since @cutoff (jiffies) or earlier?  A slot that
 * no longer holds @gen was taken by a generation MIGRC_RING_SIZE newer:
 * @gen is older than every stamp the ring holds, and counting it expired
 * only completes it early, never late.
 */
static inline bool migrc_stamp_expired(const struct migrc_stamp *ring,
				       unsigned long gen, unsigned long cutoff)
{
	const struct migrc_stamp *s = &ring[gen % MIGRC_RING_SIZE];
	unsigned long when;

	if (READ_ONCE(s->gen) != gen)
		return true;
	/* Pairs with migrc_stamp_commit(): gen, when, gen again. */
	smp_rmb();
	when = READ_ONCE(s->when);
	/* A when read before the slot was rewritten shows in gen. */
	smp_rmb();
	if (READ_ONCE(s->gen) != gen)
		return true;
	return !time_after(when, cutoff);
}

/**
 * migrc_ring_expired - the newest pending generation that has expired
 * @ring: the commit stamps
 * @done: the newest generation flushed
 * @latest: the newest generation committed
 * @cutoff: generations committed at or before this (jiffies) have expired
 *
 * Stamps only grow with the generation, so the expired ones are a prefix
 * of (@done, @latest].  Those older than the ring have expired.  Reads at
 * most MIGRC_RING_SIZE stamps.  A pure function, for KUnit.
 *
 * Return: the newest expired generation, or @done if none is.
 */
static inline unsigned long migrc_ring_expired(const struct migrc_stamp *ring,
					       unsigned long done,
					       unsigned long latest,
					       unsigned long cutoff)
{
	unsigned long gen = done;

	if (latest - done > MIGRC_RING_SIZE)
		gen = latest - MIGRC_RING_SIZE;
	while (gen != latest && migrc_stamp_expired(ring, gen + 1, cutoff))
		gen++;
	return gen;
}

/* Bounds on deferral: a pure function so that KUnit can check it. */
static inline bool migrc_over_limit(unsigned long pending_pages,
				    unsigned long new_pages,
				    unsigned long max_pages)
{
	return pending_pages + new_pages > max_pages;
}

/*
 * Drop from @mask the CPUs whose flushed generation covers @gen: they have
 * no stale entry left for it.  Returns how many were dropped.
 */
static inline unsigned int
migrc_trim_cpus(struct cpumask *mask, unsigned long gen,
		unsigned long (*flushed_gen)(unsigned int cpu))
{
	unsigned int cpu, dropped = 0;

	for_each_cpu(cpu, mask) {
		if (migrc_gen_covers(flushed_gen(cpu), gen)) {
			cpumask_clear_cpu(cpu, mask);
			dropped++;
		}
	}
	return dropped;
}

/*
 * Keys.  A migration records its generation in a slot of a table indexed
 * by a hash of the destination's PFN, and of the mapping for a file or
 * shmem folio; a barrier reads only the slot of what it is about to
 * change.  Many keys share a slot, so a slot also holds a signature of
 * its key, more bits of the same hash: a barrier whose key signs
 * differently passes.  When a second key with a pending deferral meets a
 * slot, the slot becomes shared, and every key of it must finish the
 * newer generation; once the flushed generation covers the slot, it has
 * expired and the next key takes it over with its own signature.  So for
 * every key with a deferral not yet done, its slot holds that key's
 * signature, or the shared one, and a generation at least as new: a
 * collision can cost a needless flush, never a missed one.
 *
 * A slot is one word, so that it is read and raised locklessly: the
 * signature in its top MIGRC_SLOT_SIG_BITS, the low bits of the
 * generation below (MIGRC depends on 64BIT: 48 of them).  The generation
 * is rebuilt as the newest one not after @ref, the newest generation a
 * slot can hold when it is read: migrc_gens.latest + 1, read after the
 * slot (reclaim raises its slot under the commit lock before it
 * publishes the generation).  A slot older than 2^48 generations aliases
 * a newer one, never one after @ref, which costs at most one needless
 * flush.
 */
#define MIGRC_KEY_BITS		14
#define MIGRC_SLOT_SIG_BITS	16
#define MIGRC_SLOT_SIG_MASK	GENMASK(MIGRC_SLOT_SIG_BITS - 1, 0)
#define MIGRC_SLOT_SHARED	MIGRC_SLOT_SIG_MASK
#define MIGRC_SLOT_GEN_BITS	(BITS_PER_LONG - MIGRC_SLOT_SIG_BITS)
#define MIGRC_SLOT_GEN_MASK	GENMASK(MIGRC_SLOT_GEN_BITS - 1, 0)

/*
 * The multiplicative hash of @key, all 64 bits: its slot, then its
 * signature (hash_64() returns 32 bits at most).
 */
static inline unsigned long migrc_key_hash(unsigned long key)
{
	return key * GOLDEN_RATIO_64;
}

static inline unsigned long migrc_key_index(unsigned long key)
{
	return migrc_key_hash(key) >> (BITS_PER_LONG - MIGRC_KEY_BITS);
}

/* Never the shared signature: a key signs for itself alone. */
static inline unsigned int migrc_key_sig(unsigned long key)
{
	unsigned int sig = (migrc_key_hash(key) >>
			    (BITS_PER_LONG - MIGRC_KEY_BITS - MIGRC_SLOT_SIG_BITS)) &
			   MIGRC_SLOT_SIG_MASK;

	return sig == MIGRC_SLOT_SHARED ? sig - 1 : sig;
}

static inline unsigned long migrc_slot_pack(unsigned int sig, unsigned long gen)
{
	return (unsigned long)sig << MIGRC_SLOT_GEN_BITS |
	       (gen & MIGRC_SLOT_GEN_MASK);
}

static inline unsigned int migrc_slot_owner(unsigned long slot)
{
	return slot >> MIGRC_SLOT_GEN_BITS;
}

/* The generation @slot holds: the newest one not after @ref. */
static inline unsigned long migrc_slot_gen(unsigned long slot,
					   unsigned long ref)
{
	return ref - ((ref - slot) & MIGRC_SLOT_GEN_MASK);
}

/*
 * The generation a barrier for a key signed @sig must finish, given its
 * slot and @ref: the slot's if the key may own it, else @none.
 */
static inline unsigned long migrc_slot_read(unsigned long slot,
					    unsigned int sig,
					    unsigned long ref,
					    unsigned long none)
{
	unsigned int owner = migrc_slot_owner(slot);

	if (owner != sig && owner != MIGRC_SLOT_SHARED)
		return none;
	return migrc_slot_gen(slot, ref);
}

/*
 * @slot once a key signed @sig has recorded @gen in it (newer than @done):
 * the key's own if the slot has expired, else the newer generation, under
 * the shared signature if another key holds it.
 */
static inline unsigned long migrc_slot_merge(unsigned long slot,
					     unsigned int sig,
					     unsigned long gen,
					     unsigned long done,
					     unsigned long ref)
{
	unsigned long held = migrc_slot_gen(slot, ref);
	unsigned int owner = migrc_slot_owner(slot);

	if (migrc_gen_covers(done, held))
		return migrc_slot_pack(sig, gen);
	if (owner != sig)
		owner = MIGRC_SLOT_SHARED;
	return migrc_slot_pack(owner, migrc_gen_after(gen, held) ? gen : held);
}

/*
 * Record @gen under a key signed @sig in @slot.  @done may be stale (an
 * expired slot then only looks shared); @latest is read after the slot,
 * each time it is, for the slot's @ref.
 */
static inline void migrc_slot_raise(unsigned long *slot, unsigned int sig,
				    unsigned long gen, unsigned long done,
				    const unsigned long *latest)
{
	unsigned long old, new, ref;

	if (migrc_gen_covers(done, gen))
		return;		/* finished already: nothing to record */
	old = READ_ONCE(*slot);
	do {
		/* The slot, then latest: see the comment above. */
		smp_rmb();
		ref = READ_ONCE(*latest) + 1;
		new = migrc_slot_merge(old, sig, gen, done, ref);
		if (new == old)
			return;
	} while (!try_cmpxchg(slot, &old, new));
}

/* The newer of two generations a barrier must finish. */
static inline unsigned long migrc_gen_newer(unsigned long a, unsigned long b)
{
	return migrc_gen_after(a, b) ? a : b;
}

#ifdef CONFIG_MIGRC

DECLARE_STATIC_KEY_FALSE(migrc_key);

static __always_inline bool migrc_enabled(void)
{
	return static_branch_unlikely(&migrc_key);
}

/*
 * The newest generation handed out, read by the arch code at TLB flushes,
 * the newest one flushed, and the newest one committed without keys
 * (reclaim of folios under more than one key; see migrc_reclaim_key()),
 * which every barrier must finish.
 * Written once per batch and once per flush; read everywhere else: they
 * get a cache line of their own.
 */
struct migrc_gens {
	unsigned long latest;
	unsigned long done;
	unsigned long unkeyed;
} ____cacheline_aligned_in_smp;
extern struct migrc_gens migrc_gens;

static inline unsigned long migrc_gen_snapshot(void)
{
	return migrc_enabled() ? smp_load_acquire(&migrc_gens.latest) : 0;
}

/*
 * Lockless and read-only: the cheap "nothing pending" check.  A caller
 * that must see a deferral committed before it (a writer, ordered after
 * the commit by the folio lock or the PTE lock) reads a latest that
 * covers it; done can only equal that if the flush completed, whichever
 * order the two loads are performed in.  That the caller's later stores
 * are ordered after the flush it observed through done relies on x86's
 * TSO (loads are not reordered with later stores); ARCH_HAS_MIGRC is x86
 * only, and another architecture would need smp_load_acquire() here.
 */
static inline bool migrc_pending(void)
{
	return READ_ONCE(migrc_gens.done) != READ_ONCE(migrc_gens.latest);
}

void migrc_flush(unsigned long gen, enum migrc_flush_reason reason);
void migrc_flush_all(enum migrc_flush_reason reason);

void __migrc_tick(void);
#if IS_ENABLED(CONFIG_KUNIT)
/* For mm/migrc_kunit.c: the time bound, run as if at @now, or changed. */
extern unsigned int migrc_max_age_ms;
void migrc_expire(unsigned long now);
void migrc_set_max_age_ms(unsigned int ms);
#endif

/*
 * From the scheduler tick, interrupts off: a running CPU meets the time
 * bound by flushing its own TLB, so that the timeout finds it caught up
 * and sends it no IPI.  One read of the read-mostly pair when nothing is
 * pending.
 */
static __always_inline void migrc_tick(void)
{
	if (migrc_enabled() && migrc_pending())
		__migrc_tick();
}

static inline void migrc_mm_init(struct mm_struct *mm)
{
	atomic_set(&mm->migrc_wp_pending, 0);
}

/*
 * Around a write-protect of @mm that flushes only at its end and is not
 * counted in mm->tlb_flush_pending: fork()'s copy_present_pte().  Until
 * the flush, a CPU may still cache a writable entry for a PTE that is now
 * read-only, and migrc_defer_pte() must not take that PTE's flush.  The
 * increment is ordered before the write-protects by the PTE lock they
 * take, as in inc_tlb_flush_pending(); the decrement comes after the
 * flush.  Touched only when migrc is on: off, fork() is as in vanilla.
 */
static inline void migrc_wp_begin(struct mm_struct *mm)
{
	if (migrc_enabled())
		atomic_inc(&mm->migrc_wp_pending);
}

static inline void migrc_wp_end(struct mm_struct *mm)
{
	if (migrc_enabled()) {
		/* The flush is complete before a reader sees the count drop. */
		smp_mb__before_atomic();
		atomic_dec(&mm->migrc_wp_pending);
	}
}

void __migrc_write_barrier(struct folio *folio, unsigned long pfn);
void __migrc_swapin_barrier(struct vm_area_struct *vma, struct folio *folio);
void __migrc_pte_barrier(struct vm_area_struct *vma, unsigned long addr,
			 pte_t pte);
void __migrc_cow_barrier(struct address_space *mapping);

/*
 * Before @pte, present at @addr of @vma, becomes writable, finish the
 * deferred flushes that may have left stale entries for the data its page
 * holds: those of migrations that made it their destination, and those of
 * reclaim in its file or anon_vma family (or unkeyed).  Costs one read of
 * a read-mostly cache line when nothing is pending, and a few more when
 * something is.  Called under the PTE lock: see migrc_folio_write().
 */
static __always_inline void migrc_pte_write(struct vm_area_struct *vma,
					    unsigned long addr, pte_t pte)
{
	if (migrc_enabled() && migrc_pending())
		__migrc_pte_barrier(vma, addr, pte);
}

/*
 * Before finish_fault() maps a private copy of data of @mapping where a
 * copy-on-write fault found no PTE: see __migrc_cow_barrier().  Called
 * under the PTE lock, which orders it after reclaim's commit as for
 * migrc_folio_write(): the fault found the file's folio gone from the
 * page cache, or waited for its lock.
 */
static __always_inline void migrc_cow_barrier(struct address_space *mapping)
{
	if (migrc_enabled() && migrc_pending())
		__migrc_cow_barrier(mapping);
}

void __migrc_mapping_barrier(struct address_space *mapping);

/*
 * Before data of @mapping changes without a cached folio being written
 * (direct I/O, fallocate(), truncation): see __migrc_mapping_barrier().
 */
static inline void migrc_mapping_barrier(struct address_space *mapping)
{
	if (migrc_enabled())
		__migrc_mapping_barrier(mapping);
}

#ifdef CONFIG_MIGRC_DEBUG
void migrc_debug_check_folio(struct folio *folio, unsigned long ip);
#else
static inline void migrc_debug_check_folio(struct folio *folio,
					   unsigned long ip) { }
#endif

/*
 * The same, where a folio is about to become writable or be written, and
 * is locked or its PTE lock is held.  Those locks are what makes the check
 * sufficient: migration holds both folio locks until it has recorded its
 * deferral under the destination's key (migrc_note_dst()), and installs
 * the new PTEs under the PTE lock, so a deferral that covers this folio
 * is visible here.  A migration raises the key of every page of its
 * destination, so the key of a folio's first page covers the whole folio,
 * and still covers each part after a split.
 */
static __always_inline void migrc_folio_write(struct folio *folio)
{
	if (!migrc_enabled())
		return;
	if (migrc_pending())
		__migrc_write_barrier(folio, folio_pfn(folio));
	migrc_debug_check_folio(folio, _THIS_IP_);
}

/*
 * The same, where do_swap_page() maps a swapped-in folio writable, under
 * the PTE lock.  The folio may be new and not in the rmap yet, so the key
 * of its data comes from @vma: see __migrc_swapin_barrier().
 */
static __always_inline void migrc_swapin_write(struct vm_area_struct *vma,
					       struct folio *folio)
{
	if (!migrc_enabled())
		return;
	if (migrc_pending())
		__migrc_swapin_barrier(vma, folio);
	migrc_debug_check_folio(folio, _THIS_IP_);
}

void __migrc_swap_move(struct mm_struct *mm);

/*
 * UFFDIO_MOVE is about to take a swap entry of @mm away (move_swap_pte()),
 * leaving its address empty for UFFDIO_COPY or an anonymous fault, which
 * pass no barrier that knows the old data: finish the mm's batched and
 * deferred flushes first.  Off, nothing is deferred and nothing is done,
 * as in 6.12.
 */
static __always_inline void migrc_swap_move(struct mm_struct *mm)
{
	if (migrc_enabled())
		__migrc_swap_move(mm);
}

/* Page allocator side. */
bool migrc_page_tagged(struct page *page, unsigned int order);
void migrc_prep_new_page(struct page *page, unsigned int order);
void migrc_alloc_kick(void);

/* May an allocation with @gfp send IPIs and wait for them? */
static inline bool migrc_gfp_can_flush(gfp_t gfp)
{
	return gfp & __GFP_DIRECT_RECLAIM;
}

/*
 * Migration side.  migrate_pages_batch() opens a batch, brackets each
 * folio's unmap with migrc_unmap_begin()/migrc_unmap_end(), commits the
 * batch after its try_to_unmap_flush(), and frees the sources it moved
 * with migrc_put_source().
 */
struct migrc_batch;
struct migrc_batch *__migrc_batch_open(int reason, bool batched);
void __migrc_batch_close(struct migrc_batch *outer);
void __migrc_unmap_begin(struct folio *folio);
bool __migrc_unmap_end(struct folio *folio);
void __migrc_batch_commit(void);
void migrc_put_source(struct folio *src);
void migrc_free_frozen(struct folio *folio);
bool migrc_defer_pte(struct vm_area_struct *vma, pte_t pteval,
		     unsigned long uaddr);

void __migrc_note_pte(pte_t pteval);
void __migrc_note_pmd(bool writable);
void __migrc_note_dst(struct folio *src, struct folio *dst, bool deferred);

/**
 * migrc_note_dst - record what a destination must flush before a write
 * @src: the source folio, locked
 * @dst: the destination folio, locked and not mapped yet
 * @deferred: whether this migration deferred the flush of @src's entries
 *
 * Called by migration between the copy and remove_migration_ptes(), also
 * when nothing was deferred: a source that is itself the destination of a
 * deferral still pending hands its key on to @dst.
 */
static inline void migrc_note_dst(struct folio *src, struct folio *dst,
				  bool deferred)
{
	if (migrc_enabled() && (deferred || migrc_pending()))
		__migrc_note_dst(src, dst, deferred);
}

/* Every entry try_to_migrate() clears, flushed now or later. */
static inline void migrc_note_pte(pte_t pteval)
{
	if (migrc_enabled())
		__migrc_note_pte(pteval);
}

/*
 * A PMD mapping that try_to_migrate() replaces, invalidated and flushed
 * at once by set_pmd_migration_entry(): counted, to show how much of
 * tiering's shootdowns migrc leaves to THPs mapped by PMD.  A writable
 * one keeps the folio's PTE entries elsewhere from being deferred, as a
 * writable PTE does: remove_migration_pmd() restores it writable.
 */
static inline void migrc_note_pmd(bool writable)
{
	if (migrc_enabled())
		__migrc_note_pmd(writable);
}

/**
 * migrc_batch_open - start collecting deferrable unmaps in current
 * @reason: the migrate_reason of the caller
 * @batched: whether the caller flushes its unmaps in one batch
 *
 * The batch is current->migrc_batch until migrc_batch_close().
 * Migration nests (allocating a destination may reclaim, and reclaim may
 * demote), so an outer batch is hidden meanwhile; like
 * memalloc_noreclaim_save(), this returns what must be restored.
 *
 * Return: the outer batch, for migrc_batch_close().
 */
static inline struct migrc_batch *migrc_batch_open(int reason, bool batched)
{
	if (!migrc_enabled())
		return NULL;
	return __migrc_batch_open(reason, batched);
}

/**
 * migrc_batch_close - end current's batch and restore the outer one
 * @outer: what migrc_batch_open() returned
 *
 * A batch that never reached its commit point defers nothing: its
 * entries are flushed here.
 */
static inline void migrc_batch_close(struct migrc_batch *outer)
{
	if (migrc_enabled())
		__migrc_batch_close(outer);
}

static inline void migrc_unmap_begin(struct folio *folio)
{
	if (migrc_enabled())
		__migrc_unmap_begin(folio);
}

static inline bool migrc_unmap_end(struct folio *folio)
{
	return migrc_enabled() && __migrc_unmap_end(folio);
}

static inline void migrc_batch_commit(void)
{
	if (migrc_enabled())
		__migrc_batch_commit();
}

#else /* !CONFIG_MIGRC */

static inline bool migrc_enabled(void) { return false; }
static inline unsigned long migrc_gen_snapshot(void) { return 0; }
static inline bool migrc_pending(void) { return false; }
static inline void migrc_flush_all(enum migrc_flush_reason reason) { }
static inline void migrc_tick(void) { }
static inline void migrc_mm_init(struct mm_struct *mm) { }
static inline void migrc_wp_begin(struct mm_struct *mm) { }
static inline void migrc_wp_end(struct mm_struct *mm) { }
static inline void migrc_pte_write(struct vm_area_struct *vma,
				   unsigned long addr, pte_t pte) { }
static inline void migrc_cow_barrier(struct address_space *mapping) { }
static inline void migrc_mapping_barrier(struct address_space *mapping) { }
static inline void migrc_folio_write(struct folio *folio) { }
static inline void migrc_swap_move(struct mm_struct *mm) { }
static inline void migrc_swapin_write(struct vm_area_struct *vma,
				      struct folio *folio) { }
static inline bool migrc_page_tagged(struct page *page, unsigned int order)
{
	return false;
}
static inline void migrc_prep_new_page(struct page *page, unsigned int order) { }
static inline void migrc_alloc_kick(void) { }
static inline bool migrc_gfp_can_flush(gfp_t gfp) { return true; }

struct migrc_batch;
static inline struct migrc_batch *migrc_batch_open(int reason, bool batched)
{
	return NULL;
}
static inline void migrc_batch_close(struct migrc_batch *outer) { }
static inline void migrc_unmap_begin(struct folio *folio) { }
static inline bool migrc_unmap_end(struct folio *folio) { return false; }
static inline void migrc_note_pte(pte_t pteval) { }
static inline void migrc_note_pmd(bool writable) { }
static inline void migrc_batch_commit(void) { }
static inline void migrc_put_source(struct folio *src) { }
static inline void migrc_free_frozen(struct folio *folio) { }
static inline bool migrc_defer_pte(struct vm_area_struct *vma, pte_t pteval,
				   unsigned long uaddr)
{
	return false;
}

static inline void migrc_note_dst(struct folio *src, struct folio *dst,
				  bool deferred) { }

#endif /* CONFIG_MIGRC */

#endif /* _LINUX_MIGRC_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for migrc: the pure logic (generation arithmetic across the
 * wrap, page tags, the flush a tagged free block needs, trimming of the CPU
 * mask, the deferral bound), and the stateful batch protocol of migration
 * (open, unmap, commit, free, close, nesting) against the real pending
 * state.
 */
#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/migrate.h>
#include <linux/migrc.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/rmap.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/shmem_fs.h>
#include <linux/sizes.h>
#include <linux/vmstat.h>
#include <trace/events/tlb.h>

#include "internal.h"

static void migrc_gen_order_test(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, migrc_gen_after(2, 1));
	KUNIT_EXPECT_FALSE(test, migrc_gen_after(1, 2));
	KUNIT_EXPECT_FALSE(test, migrc_gen_after(5, 5));
	KUNIT_EXPECT_TRUE(test, migrc_gen_covers(5, 5));
	KUNIT_EXPECT_TRUE(test, migrc_gen_covers(6, 5));
	KUNIT_EXPECT_FALSE(test, migrc_gen_covers(4, 5));
}

static void migrc_gen_wrap_test(struct kunit *test)
{
	unsigned long last = ULONG_MAX;

	/* The 64-bit counter keeps its order across the wrap. */
	KUNIT_EXPECT_TRUE(test, migrc_gen_after(last + 1, last));
	KUNIT_EXPECT_TRUE(test, migrc_gen_after(3, last - 3));
	KUNIT_EXPECT_FALSE(test, migrc_gen_covers(last, 2));
	KUNIT_EXPECT_TRUE(test, migrc_gen_covers(2, last));
	KUNIT_EXPECT_TRUE(test, migrc_gen_covers(last + 1, last + 1));
}

static void migrc_tag_test(struct kunit *test)
{
	unsigned long gens[] = { 0, 1, 12345, MIGRC_TAG_MASK, MIGRC_TAG_MASK + 1,
				 ULONG_MAX - 5 };
	int i;

	for (i = 0; i < ARRAY_SIZE(gens); i++) {
		unsigned long tag = migrc_tag(gens[i]);

		KUNIT_EXPECT_TRUE(test, migrc_is_tag(tag));
		/* Rebuilt exactly, from the newest generation or a later one. */
		KUNIT_EXPECT_EQ(test, migrc_tag_gen(tag, gens[i]), gens[i]);
		KUNIT_EXPECT_EQ(test, migrc_tag_gen(tag, gens[i] + 1000), gens[i]);
	}
	/* Across the 48-bit boundary of the tag. */
	KUNIT_EXPECT_EQ(test, migrc_tag_gen(migrc_tag(MIGRC_TAG_MASK),
					    MIGRC_TAG_MASK + 3), MIGRC_TAG_MASK);
	/* What page->index holds for page cache and anon pages is no tag. */
	KUNIT_EXPECT_FALSE(test, migrc_is_tag(0));
	KUNIT_EXPECT_FALSE(test, migrc_is_tag(0x7ffffffffUL));
	KUNIT_EXPECT_FALSE(test, migrc_is_tag((1UL << 52) - 1));
	KUNIT_EXPECT_FALSE(test, migrc_is_tag(~0UL));
	/* Neither is a kernel pointer left behind by another user. */
	KUNIT_EXPECT_FALSE(test, migrc_is_tag(0xffff888012345678UL));
}

static unsigned long fake_flushed[4];

static unsigned long fake_flushed_gen(unsigned int cpu)
{
	return cpu < ARRAY_SIZE(fake_flushed) ? fake_flushed[cpu] : 0;
}

static void migrc_trim_test(struct kunit *test)
{
	cpumask_var_t mask;
	unsigned int dropped;

	if (nr_cpu_ids < 4)
		kunit_skip(test, "needs 4 possible CPUs, have %u", nr_cpu_ids);
	KUNIT_ASSERT_TRUE(test, zalloc_cpumask_var(&mask, GFP_KERNEL));

	cpumask_set_cpu(0, mask);
	cpumask_set_cpu(1, mask);
	cpumask_set_cpu(3, mask);
	fake_flushed[0] = 10;		/* flushed past 9: drop */
	fake_flushed[1] = 8;		/* behind: keep */
	fake_flushed[2] = 100;		/* not in the mask: untouched */
	fake_flushed[3] = 9;		/* exactly 9: drop */

	dropped = migrc_trim_cpus(mask, 9, fake_flushed_gen);
	KUNIT_EXPECT_EQ(test, dropped, 2U);
	KUNIT_EXPECT_FALSE(test, cpumask_test_cpu(0, mask));
	KUNIT_EXPECT_TRUE(test, cpumask_test_cpu(1, mask));
	KUNIT_EXPECT_FALSE(test, cpumask_test_cpu(2, mask));
	KUNIT_EXPECT_FALSE(test, cpumask_test_cpu(3, mask));

	/* Across the wrap: flushed at gen 1 covers gen ULONG_MAX. */
	cpumask_set_cpu(3, mask);
	fake_flushed[1] = 1;
	fake_flushed[3] = ULONG_MAX - 1;
	dropped = migrc_trim_cpus(mask, ULONG_MAX, fake_flushed_gen);
	KUNIT_EXPECT_EQ(test, dropped, 1U);
	KUNIT_EXPECT_FALSE(test, cpumask_test_cpu(1, mask));
	KUNIT_EXPECT_TRUE(test, cpumask_test_cpu(3, mask));

	free_cpumask_var(mask);
}

/* Stamp @gen as committed at @when in a made-up ring. */
static void migrc_test_stamp(struct migrc_stamp *ring, unsigned long gen,
			     unsigned long when)
{
	ring[gen % MIGRC_RING_SIZE] = (struct migrc_stamp) {
		.gen = gen, .when = when, .nr_pages = 1,
	};
}

/*
 * The time bound completes a prefix of the pending generations: those
 * stamped at or before the cutoff, and those too old for the ring.
 */
static void migrc_ring_test(struct kunit *test)
{
	static struct migrc_stamp ring[MIGRC_RING_SIZE];
	static const unsigned long when[] = { 0, 100, 100, 105, 110, 120 };
	unsigned long g;

	for (g = 1; g < ARRAY_SIZE(when); g++)
		migrc_test_stamp(ring, g, when[g]);
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 0, 5, 99), 0UL);
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 0, 5, 100), 2UL);
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 0, 5, 109), 3UL);
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 0, 5, 120), 5UL);
	/* Never past latest, never before done. */
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 0, 4, 1000), 4UL);
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 3, 5, 100), 3UL);
	/* The tick's question, one generation at a time. */
	KUNIT_EXPECT_TRUE(test, migrc_stamp_expired(ring, 3, 105));
	KUNIT_EXPECT_FALSE(test, migrc_stamp_expired(ring, 3, 104));
	/* A slot being rewritten, or taken by a newer generation: expired. */
	ring[4 % MIGRC_RING_SIZE].gen = 0;
	KUNIT_EXPECT_TRUE(test, migrc_stamp_expired(ring, 4, 0));
	migrc_test_stamp(ring, 4 + MIGRC_RING_SIZE, 200);
	KUNIT_EXPECT_TRUE(test, migrc_stamp_expired(ring, 4, 0));

	/* More pending than the ring holds: the dropped ones have expired. */
	for (g = 1000; g < 1000 + 2 * MIGRC_RING_SIZE; g++)
		migrc_test_stamp(ring, g, 5000 + g);
	g = 1000 + 2 * MIGRC_RING_SIZE - 1;
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 999, g, 0),
			g - MIGRC_RING_SIZE);
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, 999, g, 5000 + g - 10),
			g - 10);

	/* Across the wrap of the generation and of jiffies. */
	migrc_test_stamp(ring, ULONG_MAX, ULONG_MAX - 2);
	migrc_test_stamp(ring, 0, ULONG_MAX);
	migrc_test_stamp(ring, 1, 3);
	KUNIT_EXPECT_EQ(test, migrc_ring_expired(ring, ULONG_MAX - 1, 1, 1),
			0UL);
}

static void migrc_bound_test(struct kunit *test)
{
	KUNIT_EXPECT_FALSE(test, migrc_over_limit(0, 512, 512));
	KUNIT_EXPECT_TRUE(test, migrc_over_limit(1, 512, 512));
	KUNIT_EXPECT_FALSE(test, migrc_over_limit(100, 100, 8192));
	KUNIT_EXPECT_TRUE(test, migrc_over_limit(8192, 1, 8192));
}

/*
 * A key slot holds, for every key with a deferral not done, that key's
 * signature or the shared one, and a generation at least as new as the
 * key's: a barrier of a key that signs otherwise passes, of one that may
 * own the slot finishes its generation.
 */
static void migrc_slot_test(struct kunit *test)
{
	const unsigned int a = 7, b = 9;
	unsigned long slot = 0, done = 4, latest = 20, ref = latest + 1;

	/* Expired (generation 0): taken over by the first key, for itself. */
	migrc_slot_raise(&slot, a, 5, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, a, ref, done), 5UL);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, b, ref, done), done);
	migrc_slot_raise(&slot, a, 3, done, &latest);	/* done already */
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, a, ref, done), 5UL);
	migrc_slot_raise(&slot, b, 3, done, &latest);	/* not even shared */
	KUNIT_EXPECT_EQ(test, migrc_slot_owner(slot), a);
	migrc_slot_raise(&slot, a, 6, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, a, ref, done), 6UL);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, b, ref, done), done);

	/* A second pending key: shared, the newer generation for both. */
	migrc_slot_raise(&slot, b, 5, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_owner(slot), MIGRC_SLOT_SHARED);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, a, ref, done), 6UL);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, b, ref, done), 6UL);
	migrc_slot_raise(&slot, a, 8, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, b, ref, done), 8UL);

	/* Once flushed, the next key takes it over. */
	done = 8;
	migrc_slot_raise(&slot, b, 10, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_owner(slot), b);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, b, ref, done), 10UL);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, a, ref, done), done);

	/* Reclaim raises latest + 1 before it publishes it. */
	migrc_slot_raise(&slot, b, ref, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, b, ref, done), ref);

	/* Generations across the wrap of the word and of the slot's bits. */
	done = ULONG_MAX - 1;
	latest = 1;
	slot = migrc_slot_pack(b, done - 1);
	migrc_slot_raise(&slot, a, ULONG_MAX, done, &latest);
	migrc_slot_raise(&slot, a, 2, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_owner(slot), a);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, a, latest + 1, done), 2UL);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, b, latest + 1, done), done);
	done = BIT(MIGRC_SLOT_GEN_BITS) - 2;
	latest = done + 3;
	slot = migrc_slot_pack(b, done);
	migrc_slot_raise(&slot, a, done + 3, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_owner(slot), a);
	KUNIT_EXPECT_EQ(test, migrc_slot_read(slot, a, latest + 1, done),
			done + 3);

	/*
	 * A slot left behind for more than 2^48 generations reads as a
	 * newer one, never as one after latest + 1: once done covers it, it
	 * has expired again.
	 */
	slot = migrc_slot_pack(a, 5);
	latest = 5 + BIT(MIGRC_SLOT_GEN_BITS) + 10;
	done = latest;
	ref = latest + 1;
	KUNIT_EXPECT_FALSE(test, migrc_gen_after(migrc_slot_read(slot, a, ref,
								 done), ref));
	migrc_slot_raise(&slot, b, latest + 1, done, &latest);
	KUNIT_EXPECT_EQ(test, migrc_slot_owner(slot), b);

	KUNIT_EXPECT_EQ(test, migrc_gen_newer(9, 4), 9UL);
	KUNIT_EXPECT_EQ(test, migrc_gen_newer(4, 9), 9UL);
}

/*
 * Keys' signatures: never the shared one (a key whose hash has those
 * bits signs one lower), and they tell apart the keys of a slot, such as
 * the PFNs of a migration's destinations.
 */
static void migrc_key_sig_test(struct kunit *test)
{
	const unsigned int shift = BITS_PER_LONG - MIGRC_KEY_BITS -
				   MIGRC_SLOT_SIG_BITS;
	unsigned long key, first = 0x100000, seen[8];
	unsigned int i, j, n = 0;

	for (key = 1; key < BIT(22); key++)
		if (((migrc_key_hash(key) >> shift) & MIGRC_SLOT_SIG_MASK) ==
		    MIGRC_SLOT_SHARED)
			break;
	KUNIT_ASSERT_LT(test, key, BIT(22));
	KUNIT_EXPECT_EQ(test, migrc_key_sig(key), MIGRC_SLOT_SHARED - 1);

	for (key = first; n < ARRAY_SIZE(seen) && key < first + BIT(24); key++)
		if (migrc_key_index(key) == migrc_key_index(first))
			seen[n++] = key;
	KUNIT_ASSERT_EQ(test, n, ARRAY_SIZE(seen));
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			KUNIT_EXPECT_NE(test, migrc_key_sig(seen[i]),
					migrc_key_sig(seen[j]));
}

/*
 * The flush a free block needs, rebuilt from the tags its pages hold, as
 * the allocator does before it hands the block out (migrc_prep_new_page())
 * or skips it (migrc_page_tagged()).
 */
static void migrc_block_need_test(struct kunit *test)
{
	const unsigned long nr = 8, base = MIGRC_TAG_MASK - 2;
	struct page *block = kunit_kcalloc(test, nr, sizeof(*block), GFP_KERNEL);
	unsigned long latest = base + 10, done = base + 4;
	bool found;

	KUNIT_ASSERT_NOT_NULL(test, block);
	/* Nothing tagged: page cache and anon indexes, a stray pointer. */
	block[1].index = 0x12345;
	block[2].index = 0xffff888012345678UL;
	KUNIT_EXPECT_EQ(test, migrc_block_need(block, nr, latest, done, &found),
			done);
	KUNIT_EXPECT_FALSE(test, found);

	/* Tags that done covers need nothing. */
	block[3].index = migrc_tag(base + 1);
	block[4].index = migrc_tag(done);
	KUNIT_EXPECT_EQ(test, migrc_block_need(block, nr, latest, done, &found),
			done);
	KUNIT_EXPECT_FALSE(test, found);

	/*
	 * The newest pending tag decides, wherever it is in the block, also
	 * across the 48-bit boundary of the tag (base + 5 is past it).
	 */
	block[0].index = migrc_tag(base + 5);
	block[7].index = migrc_tag(base + 9);
	block[5].index = migrc_tag(base + 7);
	KUNIT_EXPECT_EQ(test, migrc_block_need(block, nr, latest, done, &found),
			base + 9);
	KUNIT_EXPECT_TRUE(test, found);
	/* Only the pages of the block are read. */
	KUNIT_EXPECT_EQ(test, migrc_block_need(block, 1, latest, done, &found),
			base + 5);
	KUNIT_EXPECT_TRUE(test, found);

	/* Once done reaches the newest, the block needs nothing. */
	KUNIT_EXPECT_EQ(test, migrc_block_need(block, nr, latest, latest,
					       &found), latest);
	KUNIT_EXPECT_FALSE(test, found);
}

/*
 * The batch protocol, stateful.  What migrate_pages_batch() does to one
 * folio is replayed here: migrc_unmap_begin(), one migrc_defer_pte() or
 * migrc_note_pte() per entry that try_to_migrate() clears, and
 * migrc_unmap_end(); then the batch's commit, the release of the source and
 * the close.  The folio is a real shmem folio (eligible at every step of the
 * series), its entries belong to a made-up mm that every online CPU may
 * cache, and the pending state is the real one, so the suite needs
 * migrc=on.  It runs at boot, before user space: nothing else migrates
 * meanwhile.  If something did, the exact generation checks would fail,
 * never pass wrongly.
 *
 * Whether a shootdown was sent is seen on the tlb_flush tracepoint
 * (TLB_REMOTE_SEND_IPI, which native_flush_tlb_multi() reports before it
 * looks at lazy CPUs), counting only this task's: the made-up mm lists
 * every online CPU, so with two or more, each flush of its entries sends
 * one.
 */
static struct task_struct *migrc_test_task;
static atomic_t migrc_test_ipis;

static void migrc_test_tlb_probe(void *data, int reason, unsigned long pages)
{
	if (reason == TLB_REMOTE_SEND_IPI && current == READ_ONCE(migrc_test_task))
		atomic_inc(&migrc_test_ipis);
}

/* Shootdowns this task sent since the last call. */
static int migrc_test_sent(void)
{
	return atomic_xchg(&migrc_test_ipis, 0);
}

struct migrc_batch_test {
	struct file *file;
	struct folio *folio;
	struct mm_struct *mm;
	struct vm_area_struct vma;
};

static int migrc_batch_test_init(struct kunit *test)
{
	struct migrc_batch_test *t;

	if (!migrc_enabled())
		kunit_skip(test, "needs migrc=on");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs 2 online CPUs to see shootdowns");
	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	t->file = shmem_file_setup("migrc_kunit", PAGE_SIZE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(t->file));
	t->folio = shmem_read_folio(t->file->f_mapping, 0);
	if (IS_ERR(t->folio)) {
		fput(t->file);
		KUNIT_FAIL(test, "shmem_read_folio: %ld", PTR_ERR(t->folio));
		return PTR_ERR(t->folio);
	}
	t->mm = mm_alloc();
	if (!t->mm) {
		folio_put(t->folio);
		fput(t->file);
		KUNIT_FAIL(test, "mm_alloc failed");
		return -ENOMEM;
	}
	cpumask_copy(mm_cpumask(t->mm), cpu_online_mask);
	t->vma.vm_mm = t->mm;
	/* Start from nothing pending and no batch. */
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	KUNIT_ASSERT_NULL(test, current->migrc_batch);
	test->priv = t;
	WRITE_ONCE(migrc_test_task, current);
	KUNIT_ASSERT_EQ(test, register_trace_tlb_flush(migrc_test_tlb_probe,
						       NULL), 0);
	migrc_test_sent();
	return 0;
}

static void migrc_batch_test_exit(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;

	if (!t)
		return;
	unregister_trace_tlb_flush(migrc_test_tlb_probe, NULL);
	tracepoint_synchronize_unregister();
	WRITE_ONCE(migrc_test_task, NULL);
	mmput(t->mm);
	folio_put(t->folio);
	fput(t->file);
}

/* One entry each, as try_to_migrate() would have cleared it. */
static pte_t migrc_test_pte(struct migrc_batch_test *t, pgprot_t prot)
{
	return pfn_pte(folio_pfn(t->folio), prot);
}

/* Unmap t->folio with one read-only, clean entry, as migration does. */
static bool migrc_test_unmap_ro(struct migrc_batch_test *t)
{
	migrc_unmap_begin(t->folio);
	migrc_note_pte(migrc_test_pte(t, PAGE_READONLY));
	migrc_defer_pte(&t->vma, migrc_test_pte(t, PAGE_READONLY), SZ_1M);
	return migrc_unmap_end(t->folio);
}

static unsigned long migrc_test_latest(void)
{
	return READ_ONCE(migrc_gens.latest);
}

static unsigned long migrc_test_done(void)
{
	return READ_ONCE(migrc_gens.done);
}

/* Deferred at unmap, published at the commit, done at the flush. */
static void migrc_batch_commit_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	unsigned long latest = migrc_test_latest();
	struct migrc_batch *outer;

	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	KUNIT_EXPECT_NULL(test, outer);
	KUNIT_ASSERT_NOT_NULL(test, current->migrc_batch);

	KUNIT_ASSERT_TRUE_MSG(test, migrc_test_unmap_ro(t),
			      "a read-only clean shmem folio must be deferred");
	/* Not published before the batch's flush point. */
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest);
	KUNIT_EXPECT_FALSE(test, migrc_pending());

	migrc_batch_commit();
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest + 1);
	KUNIT_EXPECT_TRUE(test, migrc_pending());
	/* Deferred: neither the unmap nor the commit sent a shootdown. */
	KUNIT_EXPECT_EQ(test, migrc_test_sent(), 0);
	/* A commit with nothing new since the last publishes nothing. */
	migrc_batch_commit();
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest + 1);

	migrc_flush_all(MIGRC_FLUSH_OTHER);
	KUNIT_EXPECT_FALSE(test, migrc_pending());
	KUNIT_EXPECT_EQ(test, READ_ONCE(migrc_gens.done), latest + 1);

	migrc_batch_close(outer);
	KUNIT_EXPECT_NULL(test, current->migrc_batch);
}

/*
 * In a batch of @reason, each entry of @bad sends all of the folio's
 * entries, the read-only ones taken before it included, to the ordinary
 * batch that the caller flushes at its flush point.  So does one flushed
 * at once.
 */
static void migrc_test_blocked(struct kunit *test, int reason,
			       const pte_t *bad, int nr_bad)
{
	struct migrc_batch_test *t = test->priv;
	unsigned long latest = migrc_test_latest();
	pte_t ro = migrc_test_pte(t, PAGE_READONLY);
	struct migrc_batch *outer;
	int i;

	outer = migrc_batch_open(reason, true);
	for (i = 0; i < nr_bad; i++) {
		migrc_unmap_begin(t->folio);
		KUNIT_EXPECT_TRUE(test, migrc_defer_pte(&t->vma, ro, SZ_1M));
		KUNIT_EXPECT_FALSE(test, migrc_defer_pte(&t->vma, bad[i], SZ_2M));
		KUNIT_EXPECT_FALSE(test, migrc_unmap_end(t->folio));
		KUNIT_EXPECT_TRUE(test, current->tlb_ubc.flush_required);
		try_to_unmap_flush();
		KUNIT_EXPECT_EQ(test, migrc_test_sent(), 1);

		/* An entry flushed at once is seen through migrc_note_pte(). */
		migrc_unmap_begin(t->folio);
		migrc_note_pte(bad[i]);
		KUNIT_EXPECT_TRUE(test, migrc_defer_pte(&t->vma, ro, SZ_1M));
		KUNIT_EXPECT_FALSE(test, migrc_unmap_end(t->folio));
		try_to_unmap_flush();
		KUNIT_EXPECT_EQ(test, migrc_test_sent(), 1);
	}
	migrc_batch_commit();
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest);
	KUNIT_EXPECT_FALSE(test, migrc_pending());
	migrc_batch_close(outer);
}

/* Writable entries block migration; writable or dirty ones block reclaim. */
static void migrc_batch_writable_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	pte_t ro = migrc_test_pte(t, PAGE_READONLY);
	pte_t bad[] = { migrc_test_pte(t, PAGE_SHARED), pte_mkdirty(ro) };

	migrc_test_blocked(test, MR_DEMOTION, bad, 1);
	migrc_test_blocked(test, MIGRC_REASON_RECLAIM, bad, ARRAY_SIZE(bad));
}

/*
 * Reclaim defers no folio it is going to keep: one dirty or under
 * writeback when it is unmapped is written back, not freed, and its
 * deferral would only make shrink_folio_list() finish every pending one.
 * Migration copies whatever the folio holds and defers it all the same.
 * The flags are set on the test's own folio, which nothing else uses,
 * and restored.
 */
static void migrc_batch_reclaim_keeps_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	bool was_dirty = folio_test_clear_dirty(t->folio);
	struct migrc_batch *outer;

	KUNIT_ASSERT_FALSE(test, folio_test_writeback(t->folio));
	outer = migrc_batch_open(MIGRC_REASON_RECLAIM, true);
	KUNIT_EXPECT_TRUE_MSG(test, migrc_test_unmap_ro(t),
			      "reclaim must defer a clean folio");
	folio_set_dirty(t->folio);
	KUNIT_EXPECT_FALSE_MSG(test, migrc_test_unmap_ro(t),
			       "reclaim deferred a dirty folio");
	folio_clear_dirty(t->folio);
	folio_test_set_writeback(t->folio);
	KUNIT_EXPECT_FALSE_MSG(test, migrc_test_unmap_ro(t),
			       "reclaim deferred a folio under writeback");
	folio_test_clear_writeback(t->folio);
	migrc_batch_commit();
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	migrc_batch_close(outer);

	folio_set_dirty(t->folio);
	outer = migrc_batch_open(MR_DEMOTION, true);
	KUNIT_EXPECT_TRUE_MSG(test, migrc_test_unmap_ro(t),
			      "migration must defer a dirty folio");
	migrc_batch_commit();
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	migrc_batch_close(outer);
	if (!was_dirty)
		folio_clear_dirty(t->folio);
	KUNIT_EXPECT_FALSE(test, migrc_pending());
}

/*
 * Migrate t->folio with the one entry @pte, as set_tlb_ubc_flush_pending()
 * and the flush point do: is its flush deferred?  Either way the deferral
 * is flushed and the shootdowns it sent forgotten before returning; the
 * caller sees those of the unmap's own flush.
 */
static bool migrc_test_migrate_one(struct kunit *test, pte_t pte)
{
	struct migrc_batch_test *t = test->priv;
	struct migrc_batch *outer;
	bool deferred;
	int sent;

	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	migrc_unmap_begin(t->folio);
	if (!migrc_defer_pte(&t->vma, pte, SZ_1M)) {
		arch_tlbbatch_add_pending(&current->tlb_ubc.arch, t->mm, SZ_1M);
		current->tlb_ubc.flush_required = true;
	}
	migrc_note_pte(pte);
	deferred = migrc_unmap_end(t->folio);
	try_to_unmap_flush();
	sent = migrc_test_sent();
	migrc_batch_commit();
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	migrc_batch_close(outer);
	migrc_test_sent();
	KUNIT_EXPECT_EQ(test, sent, deferred ? 0 : 1);
	return deferred;
}

/*
 * A read-only entry is deferred for migration even when dirty, unless a
 * write-protect of its mm is in flight: one counted in tlb_flush_pending
 * (mprotect() and friends) or in migrc_wp_pending (fork()).  Then another
 * CPU may still cache it writable, and its flush is sent at once.
 */
static void migrc_batch_wp_in_flight_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	pte_t ro_dirty = pte_mkdirty(migrc_test_pte(t, PAGE_READONLY));

	KUNIT_EXPECT_TRUE_MSG(test, migrc_test_migrate_one(test, ro_dirty),
			      "a read-only dirty entry must be deferred");

	inc_tlb_flush_pending(t->mm);
	KUNIT_EXPECT_FALSE_MSG(test, migrc_test_migrate_one(test, ro_dirty),
			       "deferred during an mprotect()-style write-protect");
	dec_tlb_flush_pending(t->mm);

	migrc_wp_begin(t->mm);
	KUNIT_EXPECT_FALSE_MSG(test, migrc_test_migrate_one(test, ro_dirty),
			       "deferred during fork()'s write-protect");
	migrc_wp_end(t->mm);

	/* Both write-protects over: deferred again. */
	KUNIT_EXPECT_TRUE(test, migrc_test_migrate_one(test, ro_dirty));
}

/*
 * A batch that never reached its commit (migration gave up, the caller
 * returned early) defers nothing: its entries are flushed at the close.
 */
static void migrc_batch_close_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	unsigned long latest = migrc_test_latest();
	struct migrc_batch *outer;

	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
	KUNIT_EXPECT_EQ(test, migrc_test_sent(), 0);
	migrc_batch_close(outer);
	/* The close shot the entries down: they are not lost. */
	KUNIT_EXPECT_EQ(test, migrc_test_sent(), 1);
	KUNIT_EXPECT_NULL(test, current->migrc_batch);
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest);
	KUNIT_EXPECT_FALSE(test, migrc_pending());
	KUNIT_EXPECT_FALSE(test, current->tlb_ubc.flush_required);
}

/*
 * Nesting: allocating a destination may reclaim, and reclaim may demote.
 * The inner batch hides the outer one, publishes only its own entries, and
 * the close gives the outer one back with its entries intact.  Callers that
 * gain nothing, or do not batch their flush, get no batch at all.
 */
static void migrc_batch_nest_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	unsigned long latest = migrc_test_latest();
	struct migrc_batch *a_outer, *a, *b_outer;

	a_outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	a = current->migrc_batch;
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));

	b_outer = migrc_batch_open(MR_DEMOTION, true);
	KUNIT_EXPECT_PTR_EQ(test, b_outer, a);
	KUNIT_EXPECT_NOT_NULL(test, current->migrc_batch);
	KUNIT_EXPECT_PTR_NE(test, current->migrc_batch, a);
	KUNIT_EXPECT_TRUE(test, migrc_test_unmap_ro(t));
	migrc_batch_commit();
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest + 1);
	migrc_batch_close(b_outer);
	KUNIT_EXPECT_PTR_EQ(test, current->migrc_batch, a);

	b_outer = migrc_batch_open(MR_CONTIG_RANGE, true);
	KUNIT_EXPECT_PTR_EQ(test, b_outer, a);
	KUNIT_EXPECT_NULL(test, current->migrc_batch);
	KUNIT_EXPECT_FALSE(test, migrc_test_unmap_ro(t));
	migrc_batch_close(b_outer);
	KUNIT_EXPECT_PTR_EQ(test, current->migrc_batch, a);

	b_outer = migrc_batch_open(MR_SYSCALL, false);
	KUNIT_EXPECT_PTR_EQ(test, b_outer, a);
	KUNIT_EXPECT_NULL(test, current->migrc_batch);
	migrc_batch_close(b_outer);
	KUNIT_EXPECT_PTR_EQ(test, current->migrc_batch, a);

	/* The outer batch's own deferral survived the inner ones. */
	migrc_batch_commit();
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest + 2);
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	migrc_batch_close(a_outer);
	KUNIT_EXPECT_NULL(test, current->migrc_batch);
}

/*
 * A source is never freed under an older generation than the one its
 * entries get: migrc_put_source() commits what is deferred first, and the
 * free page carries the tag until the flush is done.
 */
static void migrc_batch_put_source_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	unsigned long latest = migrc_test_latest();
	struct migrc_batch *outer;
	struct folio *src;
	struct page *page;

	src = folio_alloc(GFP_KERNEL, 0);
	KUNIT_ASSERT_NOT_NULL(test, src);
	page = &src->page;

	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
	/* Uncommitted: the release must commit before it frees. */
	migrc_put_source(src);
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest + 1);
	KUNIT_EXPECT_TRUE(test, migrc_pending());
	/* Free pages keep their index: the tag can be read until reuse. */
	KUNIT_EXPECT_TRUE(test, migrc_is_tag(page->index));
	KUNIT_EXPECT_TRUE(test, migrc_page_tagged(page, 0));
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	KUNIT_EXPECT_FALSE(test, migrc_page_tagged(page, 0));
	migrc_batch_close(outer);
}

/* Put max_age_ms back, also when an assertion ends the test early. */
static void migrc_test_restore_age(void *saved)
{
	migrc_set_max_age_ms((unsigned int)(uintptr_t)saved);
}

static void migrc_test_save_age(struct kunit *test)
{
	void *saved = (void *)(uintptr_t)READ_ONCE(migrc_max_age_ms);
	int err;

	err = kunit_add_action_or_reset(test, migrc_test_restore_age, saved);
	KUNIT_ASSERT_EQ(test, err, 0);
}

/*
 * The allocator side, on a node the test can empty: the CPU-less node
 * with the least memory, drained with atomic allocations (which may not
 * flush, see migrc_gfp_can_flush()) so that the test decides what its
 * free lists hold.  Nothing else allocates there while the test runs:
 * allocations prefer the node they run on, and this one has no CPUs.
 */
#define MIGRC_TEST_ATOMIC \
	(__GFP_HIGH | __GFP_MEMALLOC | __GFP_NOWARN | __GFP_THISNODE)
/* One that may sleep, and therefore flush (migrc_gfp_can_flush()). */
#define MIGRC_TEST_SLEEPABLE	(MIGRC_TEST_ATOMIC | __GFP_DIRECT_RECLAIM)
#define MIGRC_TEST_MAX_NODE_PAGES	(SZ_4G >> PAGE_SHIFT)

struct migrc_test_node {
	int nid;
	struct list_head taken;		/* blocks, order in page->private */
	struct page *run;		/* order-0 pages of one split block */
	unsigned int run_order;
	unsigned long run_freed;	/* its first pages, freed by the test */
};

static int migrc_test_small_node(void)
{
	unsigned long best_pages = MIGRC_TEST_MAX_NODE_PAGES;
	int nid, best = NUMA_NO_NODE;

	for_each_node_state(nid, N_MEMORY) {
		if (node_state(nid, N_CPU))
			continue;
		if (node_present_pages(nid) < best_pages) {
			best_pages = node_present_pages(nid);
			best = nid;
		}
	}
	return best;
}

static unsigned long migrc_test_node_free(int nid)
{
	unsigned long free = 0;
	struct zone *zone;

	for_each_populated_zone(zone) {
		if (zone_to_nid(zone) != nid)
			continue;
		drain_all_pages(zone);
		free += zone_page_state_snapshot(zone, NR_FREE_PAGES);
	}
	return free;
}

static void migrc_test_node_give_back(void *data)
{
	struct migrc_test_node *n = data;
	struct page *page, *next;
	unsigned long i;

	list_for_each_entry_safe(page, next, &n->taken, lru) {
		unsigned int order = page_private(page);

		list_del(&page->lru);
		set_page_private(page, 0);
		__free_pages(page, order);
	}
	if (n->run)
		for (i = n->run_freed; i < (1UL << n->run_order); i++)
			__free_page(n->run + i);
}

/* Allocate every free page of the node, the largest blocks first. */
static void migrc_test_node_drain(struct migrc_test_node *n)
{
	int order;

	for (order = MAX_PAGE_ORDER; order >= 0; order--) {
		struct page *page;

		while ((page = alloc_pages_node(n->nid, MIGRC_TEST_ATOMIC,
						order))) {
			set_page_private(page, order);
			list_add(&page->lru, &n->taken);
		}
	}
}

/*
 * Take every free page of the node; they go back when the test ends,
 * whatever its outcome.
 */
static struct migrc_test_node *migrc_test_node_take(struct kunit *test)
{
	struct migrc_test_node *n;
	int ret;

	n = kunit_kzalloc(test, sizeof(*n), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, n);
	INIT_LIST_HEAD(&n->taken);
	n->nid = migrc_test_small_node();
	if (n->nid == NUMA_NO_NODE)
		kunit_skip(test, "needs a CPU-less node of less than 4 GiB");
	ret = kunit_add_action_or_reset(test, migrc_test_node_give_back, n);
	KUNIT_ASSERT_EQ(test, ret, 0);
	migrc_test_node_free(n->nid);
	migrc_test_node_drain(n);
	return n;
}

/*
 * Split a taken block of at least 2^@order pages into order-0 pages, all
 * still allocated, and make sure the node has no free page left: the test
 * then frees what it wants the free lists to hold.  The pages from
 * n->run_freed on go back when the test ends.
 */
static struct page *migrc_test_node_run(struct kunit *test,
					struct migrc_test_node *n,
					unsigned int order)
{
	struct page *page;
	int tries;

	/*
	 * Of an ordinary migratetype: the drain's high-order atomic
	 * allocations may have made a few pageblocks MIGRATE_HIGHATOMIC,
	 * whose free pages only such allocations take.
	 */
	list_for_each_entry(page, &n->taken, lru)
		if (page_private(page) >= order &&
		    get_pageblock_migratetype(page) < MIGRATE_PCPTYPES)
			break;
	KUNIT_ASSERT_FALSE_MSG(test, list_entry_is_head(page, &n->taken, lru),
			       "no free block of order %u on node %d",
			       order, n->nid);
	list_del(&page->lru);
	n->run = page;
	n->run_order = page_private(page);
	set_page_private(page, 0);
	split_page(page, n->run_order);
	/* Pages another CPU freed to the node meanwhile are taken as well. */
	for (tries = 0; tries < 3 && migrc_test_node_free(n->nid); tries++)
		migrc_test_node_drain(n);
	KUNIT_ASSERT_EQ_MSG(test, migrc_test_node_free(n->nid), 0UL,
			    "node %d still has free pages", n->nid);
	return page;
}

/* Free pages @first to @last - 1 of a run, tagged with generation @gen. */
static void migrc_test_free_pages(struct page *run, unsigned long first,
				  unsigned long last, unsigned long gen)
{
	unsigned long i;

	for (i = first; i < last; i++)
		if (put_page_testzero(run + i))
			free_migrc_page(run + i, 0, gen);
}

/*
 * Leave exactly 2^@order pages free on the node, one aligned block whose
 * first @nr_tagged pages are tagged with generation @gen.
 */
static unsigned long migrc_test_node_block(struct kunit *test,
					   struct migrc_test_node *n,
					   unsigned int order,
					   unsigned int nr_tagged,
					   unsigned long gen)
{
	struct page *page = migrc_test_node_run(test, n, order);

	n->run_freed = 1UL << order;
	migrc_test_free_pages(page, 0, nr_tagged, gen);
	migrc_test_free_pages(page, nr_tagged, 1UL << order,
			      READ_ONCE(migrc_gens.done));
	return page_to_pfn(page);
}

/* Commit one deferral of t->folio and return its generation. */
static unsigned long migrc_test_pending_gen(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	struct migrc_batch *outer;

	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
	migrc_batch_commit();
	migrc_batch_close(outer);
	KUNIT_ASSERT_TRUE(test, migrc_pending());
	return migrc_test_latest();
}

/*
 * An atomic allocation that meets tagged blocks keeps them off the free
 * lists while it tries again, so that it finds the untagged pages behind
 * them: 48 of the node's 64 free pages are tagged, and the order-4 block
 * made of the other 16 is found on the fourth try.  Put back at once, the
 * tagged block would merge again and be found on every try.
 */
static void migrc_alloc_hold_test(struct kunit *test)
{
	struct migrc_test_node *n = migrc_test_node_take(test);
	unsigned long gen, pfn;
	struct page *page;

	gen = migrc_test_pending_gen(test);
	pfn = migrc_test_node_block(test, n, 6, 48, gen);
	page = alloc_pages_node(n->nid, MIGRC_TEST_ATOMIC, 4);
	KUNIT_EXPECT_NOT_NULL_MSG(test, page,
				  "16 untagged free pages were not found");
	if (page) {
		KUNIT_EXPECT_EQ(test, page_to_pfn(page), pfn + 48);
		__free_pages(page, 4);
	}
	migrc_flush_all(MIGRC_FLUSH_OTHER);
}

/*
 * An atomic allocation that finds only tagged blocks fails, and has the
 * flush done by a worker at once instead of after max_age_ms: it succeeds
 * again once that flush is done, never before, and the flush is counted
 * as an allocation's, not the timeout's.
 */
static void migrc_alloc_kick_test(struct kunit *test)
{
	unsigned long *before, *after, gen, start = jiffies;
	struct migrc_test_node *n;
	struct page *page;
	u64 t0;

	before = kunit_kcalloc(test, NR_VM_EVENT_ITEMS, sizeof(long), GFP_KERNEL);
	after = kunit_kcalloc(test, NR_VM_EVENT_ITEMS, sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, before);
	KUNIT_ASSERT_NOT_NULL(test, after);
	n = migrc_test_node_take(test);
	gen = migrc_test_pending_gen(test);
	migrc_test_node_block(test, n, 4, 16, gen);
	all_vm_events(before);
	t0 = ktime_get_ns();
	while (!(page = alloc_pages_node(n->nid, MIGRC_TEST_ATOMIC, 4)) &&
	       time_before(jiffies, start + 10 * HZ))
		usleep_range(1000, 2000);
	all_vm_events(after);
	KUNIT_EXPECT_NOT_NULL_MSG(test, page, "no flush in 10 s");
	if (page) {
		kunit_info(test, "usable again after %llu us",
			   div_u64(ktime_get_ns() - t0, NSEC_PER_USEC));
		KUNIT_EXPECT_TRUE_MSG(test,
				      migrc_gen_covers(READ_ONCE(migrc_gens.done), gen),
				      "a tagged block was handed out before its flush");
		__free_pages(page, 4);
	}
	KUNIT_EXPECT_GT(test, after[MIGRC_ALLOC_SKIPPED],
			before[MIGRC_ALLOC_SKIPPED]);
	KUNIT_EXPECT_EQ_MSG(test, after[MIGRC_FLUSHES_TIMEOUT],
			    before[MIGRC_FLUSHES_TIMEOUT],
			    "the timeout, not the allocation, flushed");
	KUNIT_EXPECT_GT(test, after[MIGRC_FLUSHES_ALLOC],
			before[MIGRC_FLUSHES_ALLOC]);
	migrc_flush_all(MIGRC_FLUSH_OTHER);
}

/*
 * The rest of migrc_alloc_larger_test(): the node's two order-4 blocks
 * left, the tagged one and the other half of the split block, are
 * allocated, and the tagged one only after its flush (counted as an
 * allocation's).  Which comes first is the free lists' business: the
 * untagged half carries a covered tag, so it went to the tail too.  This
 * is the flush a reuse of the frames needs; the inject group reruns the
 * test with it skipped (skip_alloc_flush) and sees the test fail and
 * CONFIG_MIGRC_DEBUG report the page.
 */
static void migrc_alloc_tagged_flushed(struct kunit *test, int nid,
				       gfp_t gfp, unsigned long pfn,
				       unsigned long gen,
				       unsigned long *before,
				       unsigned long *after)
{
	struct page *page[2];
	int i, found = 0;

	for (i = 0; i < 2; i++) {
		all_vm_events(before);
		page[i] = alloc_pages_node(nid, gfp, 4);
		all_vm_events(after);
		KUNIT_EXPECT_NOT_NULL(test, page[i]);
		if (!page[i] || page_to_pfn(page[i]) != pfn)
			continue;
		found++;
		KUNIT_EXPECT_TRUE_MSG(test,
				      migrc_gen_covers(READ_ONCE(migrc_gens.done), gen),
				      "a tagged block was handed out before its flush");
		KUNIT_EXPECT_GT(test, after[MIGRC_FLUSHES_ALLOC],
				before[MIGRC_FLUSHES_ALLOC]);
	}
	KUNIT_EXPECT_EQ_MSG(test, found, 1, "the tagged block at %#lx was not handed out",
			    pfn);
	for (i = 0; i < 2; i++)
		if (page[i])
			__free_pages(page[i], 4);
}

/*
 * While a flush is pending, an allocation that could take a tagged block
 * first splits a larger untagged one: the node holds a tagged order-4
 * block and an untagged order-5 block (pages 16-31 of the run stay
 * allocated, so that the two cannot merge), and an order-4 allocation
 * that may sleep gets the first half of the order-5 block, with no flush
 * (then the two order-4 blocks left: the tagged one after its flush).
 * Without __rmqueue_smallest() looking past the tagged block it gets that
 * block, and flushes for it.  max_age_ms is raised so that the timeout
 * cannot complete the generation while the test runs.
 */
static void migrc_alloc_larger_test(struct kunit *test)
{
	unsigned long *before, *after, gen, pfn, i;
	struct migrc_test_node *n;
	struct page *run, *page;
	gfp_t gfp = MIGRC_TEST_SLEEPABLE;
	int mt;

	before = kunit_kcalloc(test, NR_VM_EVENT_ITEMS, sizeof(long), GFP_KERNEL);
	after = kunit_kcalloc(test, NR_VM_EVENT_ITEMS, sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, before);
	KUNIT_ASSERT_NOT_NULL(test, after);
	migrc_test_save_age(test);
	WRITE_ONCE(migrc_max_age_ms, 10000);
	n = migrc_test_node_take(test);
	gen = migrc_test_pending_gen(test);
	run = migrc_test_node_run(test, n, 6);
	pfn = page_to_pfn(run);
	for (i = 16; i < 32; i++) {
		set_page_private(run + i, 0);
		list_add(&run[i].lru, &n->taken);
	}
	n->run_freed = 64;
	migrc_test_free_pages(run, 0, 16, gen);
	migrc_test_free_pages(run, 32, 64, READ_ONCE(migrc_gens.done));
	/*
	 * Ask for the blocks' own migratetype, as a migration's destination
	 * (movable) does for movable blocks: another type would steal from
	 * them through __rmqueue_steal(), which takes the smallest order of
	 * the other types' lists and is not what this test is about.
	 */
	mt = get_pageblock_migratetype(run);
	if (mt == MIGRATE_MOVABLE)
		gfp |= __GFP_MOVABLE;
	else if (mt == MIGRATE_RECLAIMABLE)
		gfp |= __GFP_RECLAIMABLE;

	all_vm_events(before);
	page = alloc_pages_node(n->nid, gfp, 4);
	all_vm_events(after);
	KUNIT_ASSERT_NOT_NULL(test, page);
	KUNIT_EXPECT_EQ_MSG(test, page_to_pfn(page), pfn + 32,
			    "took pfn %#lx: the tagged block is at %#lx",
			    page_to_pfn(page), pfn);
	KUNIT_EXPECT_EQ_MSG(test, after[MIGRC_FLUSHES_ALLOC],
			    before[MIGRC_FLUSHES_ALLOC],
			    "the allocation flushed for a tagged block");
	KUNIT_EXPECT_EQ(test, after[MIGRC_ALLOC_LARGER],
			before[MIGRC_ALLOC_LARGER] + 1);
	KUNIT_EXPECT_TRUE_MSG(test, migrc_pending(),
			      "the generation is done: the allocation flushed, or the timeout ran");
	migrc_alloc_tagged_flushed(test, n->nid, gfp, pfn, gen, before, after);
	__free_pages(page, 4);
	migrc_flush_all(MIGRC_FLUSH_OTHER);
}

static bool migrc_test_same_slot(struct folio *a, struct folio *b)
{
	return migrc_key_index(folio_pfn(a)) == migrc_key_index(folio_pfn(b));
}

/* A page whose key shares no slot with @a or @b. */
static struct folio *migrc_test_other(struct kunit *test, struct folio *a,
				      struct folio *b)
{
	struct folio *f[4];
	int i, found = -1;

	for (i = 0; i < ARRAY_SIZE(f); i++) {
		f[i] = folio_alloc(GFP_KERNEL, 0);
		KUNIT_ASSERT_NOT_NULL(test, f[i]);
		if (found < 0 && !migrc_test_same_slot(f[i], a) &&
		    !migrc_test_same_slot(f[i], b))
			found = i;
	}
	for (i = 0; i < ARRAY_SIZE(f); i++)
		if (i != found)
			folio_put(f[i]);
	KUNIT_ASSERT_GE(test, found, 0);
	return f[found];
}

/*
 * Precise barriers: a deferral is finished by a write of its destination,
 * or of a destination it was handed on to by a second migration, not by
 * a write elsewhere; a reclaim deferral, which has no destination, by a
 * change of its file's data.
 */
static void migrc_batch_keys_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	struct vm_area_struct pfnmap = { .vm_mm = t->mm };
	struct folio *dst, *dst2, *other;
	struct migrc_batch *outer;
	int i;

	vm_flags_init(&pfnmap, VM_PFNMAP | VM_IO | VM_SHARED | VM_WRITE);

	dst = folio_alloc(GFP_KERNEL, 0);
	dst2 = folio_alloc(GFP_KERNEL, 0);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	KUNIT_ASSERT_NOT_NULL(test, dst2);
	other = migrc_test_other(test, dst, dst2);

	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
	migrc_batch_commit();
	/* As migration does: the data first (MIGRC_DEBUG compares it). */
	folio_copy(dst, t->folio);
	migrc_note_dst(t->folio, dst, true);
	migrc_batch_close(outer);
	KUNIT_ASSERT_TRUE(test, migrc_pending());
	KUNIT_EXPECT_EQ(test, migrc_test_sent(), 0);

	/* A write elsewhere neither pays nor ends the deferral. */
	migrc_folio_write(other);
	migrc_pte_write(&t->vma, SZ_1M,
			pfn_pte(folio_pfn(other), PAGE_READONLY));
	/* Device memory made writable: no struct page, nothing to read. */
	migrc_pte_write(&pfnmap, SZ_1M,
			pte_mkspecial(pfn_pte(max_pfn + 4096, PAGE_SHARED)));
	KUNIT_EXPECT_TRUE(test, migrc_pending());
	KUNIT_EXPECT_EQ(test, migrc_test_sent(), 0);

	/* Migrated again, not deferred: the new destination inherits it. */
	folio_copy(dst2, dst);
	migrc_note_dst(dst, dst2, false);
	migrc_folio_write(dst2);
	KUNIT_EXPECT_FALSE(test, migrc_pending());
	KUNIT_EXPECT_EQ(test, migrc_test_sent(), 1);

	/*
	 * Reclaim's deferral is keyed by the file (t->folio is shmem): a
	 * write elsewhere leaves it; a write of a folio of the file, a
	 * copy-on-write fault from it and its mapping barrier finish it.
	 */
	for (i = 0; i < 3; i++) {
		outer = migrc_batch_open(MIGRC_REASON_RECLAIM, true);
		KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
		migrc_batch_commit();
		migrc_batch_close(outer);
		KUNIT_ASSERT_TRUE(test, migrc_pending());
		migrc_folio_write(other);
		migrc_pte_write(&t->vma, SZ_1M,
				pfn_pte(folio_pfn(other), PAGE_READONLY));
		KUNIT_EXPECT_TRUE_MSG(test, migrc_pending(),
				      "a write elsewhere ended a reclaim deferral");
		if (i == 0)
			migrc_folio_write(t->folio);
		else if (i == 1)
			migrc_cow_barrier(t->file->f_mapping);
		else
			migrc_mapping_barrier(t->file->f_mapping);
		KUNIT_EXPECT_FALSE_MSG(test, migrc_pending(),
				       "barrier %d of the file left its reclaim deferral", i);
		KUNIT_EXPECT_EQ(test, migrc_test_sent(), 1);
	}
	folio_put(other);
	folio_put(dst2);
	folio_put(dst);
}

/* An order-0 folio made to look anonymous, of the family of @anon_vma. */
static struct folio *migrc_test_anon_folio(struct kunit *test,
					   struct anon_vma *anon_vma)
{
	struct folio *folio = folio_alloc(GFP_KERNEL, 0);

	KUNIT_ASSERT_NOT_NULL(test, folio);
	if (anon_vma)
		WRITE_ONCE(folio->mapping, (void *)anon_vma + PAGE_MAPPING_ANON);
	__folio_set_swapbacked(folio);
	return folio;
}

static void migrc_test_anon_put(struct folio *folio)
{
	__folio_clear_swapbacked(folio);
	folio->mapping = NULL;
	folio_put(folio);
}

/*
 * Reclaim of an anonymous folio is keyed by its anon_vma family: a write
 * of an anonymous folio of another family, of a file or swapped in
 * another family leaves the deferral; a swap-in made writable in a VMA of
 * the family (migrc_swapin_write(), with a folio not in the rmap yet) and
 * a write of a folio of the family end it.  The anon_vmas are stand-ins
 * whose root is all that is read.
 */
static void migrc_batch_anon_keys_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	struct vm_area_struct stranger_vma = { .vm_mm = t->mm };
	struct folio *anon, *kin, *stranger, *fresh;
	struct anon_vma *family, *others;
	struct migrc_batch *outer;
	pte_t pte;
	int i;

	family = kunit_kzalloc(test, sizeof(*family), GFP_KERNEL);
	others = kunit_kzalloc(test, sizeof(*others), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, family);
	KUNIT_ASSERT_NOT_NULL(test, others);
	family->root = family;
	others->root = others;
	t->vma.anon_vma = family;
	stranger_vma.anon_vma = others;
	anon = migrc_test_anon_folio(test, family);
	kin = migrc_test_anon_folio(test, family);
	stranger = migrc_test_anon_folio(test, others);
	fresh = migrc_test_anon_folio(test, NULL);
	pte = pfn_pte(folio_pfn(anon), PAGE_READONLY);

	for (i = 0; i < 2; i++) {
		outer = migrc_batch_open(MIGRC_REASON_RECLAIM, true);
		migrc_unmap_begin(anon);
		migrc_note_pte(pte);
		migrc_defer_pte(&t->vma, pte, SZ_1M);
		KUNIT_ASSERT_TRUE(test, migrc_unmap_end(anon));
		migrc_batch_commit();
		migrc_batch_close(outer);
		KUNIT_ASSERT_TRUE(test, migrc_pending());

		migrc_folio_write(stranger);
		migrc_folio_write(t->folio);
		migrc_swapin_write(&stranger_vma, fresh);
		KUNIT_EXPECT_TRUE_MSG(test, migrc_pending(),
				      "a write in another family ended an anonymous reclaim deferral");
		KUNIT_EXPECT_EQ(test, migrc_test_sent(), 0);
		if (i == 0)
			migrc_swapin_write(&t->vma, fresh);
		else
			migrc_folio_write(kin);
		KUNIT_EXPECT_FALSE_MSG(test, migrc_pending(),
				       "barrier %d of the family left its anonymous reclaim deferral",
				       i);
		KUNIT_EXPECT_EQ(test, migrc_test_sent(), 1);
	}
	t->vma.anon_vma = NULL;
	migrc_test_anon_put(fresh);
	migrc_test_anon_put(stranger);
	migrc_test_anon_put(kin);
	migrc_test_anon_put(anon);
}

/*
 * A large source is freed as one block with every page tagged: the buddy
 * allocator may hand out any page of it on its own.  The node's only free
 * pages are that block; an allocation that may not flush finds none of
 * them usable until the flush.
 */
static void migrc_large_free_test(struct kunit *test)
{
	struct migrc_test_node *n;
	unsigned long gen, latest, i;
	struct folio *folio;
	struct page *page;
	int nid = migrc_test_small_node();

	if (nid == NUMA_NO_NODE)
		kunit_skip(test, "needs a CPU-less node of less than 4 GiB");
	folio = __folio_alloc_node(GFP_KERNEL | __GFP_THISNODE, 2, nid);
	KUNIT_ASSERT_NOT_NULL(test, folio);
	n = migrc_test_node_take(test);
	gen = migrc_test_pending_gen(test);
	KUNIT_ASSERT_TRUE(test, folio_ref_freeze(folio, 1));
	free_migrc_folio(folio, gen);
	latest = migrc_test_latest();
	for (i = 0; i < 4; i++) {
		unsigned long index = folio_page(folio, i)->index;

		KUNIT_EXPECT_TRUE_MSG(test, migrc_is_tag(index) &&
				      migrc_tag_gen(index, latest) == gen,
				      "page %lu of the freed block is not tagged", i);
	}
	page = alloc_pages_node(nid, MIGRC_TEST_ATOMIC, 0);
	KUNIT_EXPECT_NULL_MSG(test, page,
			      "a page of the block was handed out before its flush");
	if (page)
		__free_page(page);
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	page = alloc_pages_node(nid, MIGRC_TEST_ATOMIC, 2);
	KUNIT_EXPECT_NOT_NULL_MSG(test, page, "the block is lost after its flush");
	if (page)
		__free_pages(page, 2);
}

/*
 * A large destination is keyed page by page: a PTE of any of its pages
 * made writable (migrc_pte_write(), as mprotect() and NUMA hinting faults
 * do) finishes the deferral, not only a write of the folio.
 */
static void migrc_large_keys_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	struct folio *src, *dst;
	struct migrc_batch *outer;
	unsigned int i;

	src = folio_alloc(GFP_KERNEL, 2);
	KUNIT_ASSERT_NOT_NULL(test, src);
	dst = folio_alloc(GFP_KERNEL, 2);
	if (!dst)
		folio_put(src);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	for (i = 1; i < 4; i++) {
		outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
		KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
		migrc_batch_commit();
		folio_copy(dst, src);
		migrc_note_dst(src, dst, true);
		migrc_batch_close(outer);
		KUNIT_ASSERT_TRUE(test, migrc_pending());
		migrc_pte_write(&t->vma, SZ_1M,
				pfn_pte(folio_pfn(dst) + i, PAGE_READONLY));
		KUNIT_EXPECT_FALSE_MSG(test, migrc_pending(),
				       "page %u of a pending destination made writable without a flush",
				       i);
		migrc_flush_all(MIGRC_FLUSH_OTHER);
		migrc_test_sent();
	}
	folio_put(dst);
	folio_put(src);
}

/*
 * A writable PMD that migration replaces comes back writable
 * (remove_migration_pmd()), and nothing then flushes the folio's PTE
 * entries elsewhere: like a writable PTE, it keeps them from being
 * deferred, whether it is seen before or after them.  A read-only PMD is
 * flushed at once by set_pmd_migration_entry() and blocks nothing.
 */
static void migrc_batch_writable_pmd_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	unsigned long latest = migrc_test_latest();
	pte_t ro = migrc_test_pte(t, PAGE_READONLY);
	struct migrc_batch *outer;
	int pmd_first;

	outer = migrc_batch_open(MR_DEMOTION, true);
	for (pmd_first = 0; pmd_first < 2; pmd_first++) {
		migrc_unmap_begin(t->folio);
		if (pmd_first)
			migrc_note_pmd(true);
		KUNIT_EXPECT_TRUE(test, migrc_defer_pte(&t->vma, ro, SZ_1M));
		if (!pmd_first)
			migrc_note_pmd(true);
		KUNIT_EXPECT_FALSE_MSG(test, migrc_unmap_end(t->folio),
				       "deferred beside a writable PMD (seen %s)",
				       pmd_first ? "first" : "last");
		try_to_unmap_flush();
		KUNIT_EXPECT_EQ(test, migrc_test_sent(), 1);
	}
	migrc_batch_commit();
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest);
	KUNIT_EXPECT_FALSE(test, migrc_pending());

	migrc_unmap_begin(t->folio);
	migrc_note_pmd(false);
	KUNIT_EXPECT_TRUE(test, migrc_defer_pte(&t->vma, ro, SZ_1M));
	KUNIT_EXPECT_TRUE(test, migrc_unmap_end(t->folio));
	migrc_batch_commit();
	KUNIT_EXPECT_EQ(test, migrc_test_latest(), latest + 1);
	KUNIT_EXPECT_EQ(test, migrc_test_sent(), 0);
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	KUNIT_EXPECT_FALSE(test, migrc_pending());
	migrc_test_sent();
	migrc_batch_close(outer);
}

/*
 * The time bound completes the generations that have expired and leaves
 * the newer ones pending (and is armed for them).  max_age_ms is raised
 * for the test so that the real timeout stays out of the way.
 */
static void migrc_batch_expire_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	unsigned long age, before, first, second, cut;
	struct migrc_batch *outer;

	migrc_test_save_age(test);
	WRITE_ONCE(migrc_max_age_ms, 10000);
	age = msecs_to_jiffies(10000);
	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	before = jiffies;
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
	migrc_batch_commit();
	first = migrc_test_latest();
	msleep(20);
	cut = jiffies - 1;	/* after the first stamp, before the second */
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
	migrc_batch_commit();
	second = migrc_test_latest();
	KUNIT_ASSERT_EQ(test, second, first + 1);
	migrc_test_sent();

	migrc_expire(before - 1 + age);
	KUNIT_EXPECT_EQ_MSG(test, migrc_test_done(), first - 1,
			    "completed a generation before it expired");
	migrc_expire(cut + age);
	KUNIT_EXPECT_EQ_MSG(test, migrc_test_done(), first,
			    "the expired generation alone is completed");
	KUNIT_EXPECT_TRUE(test, migrc_pending());
	KUNIT_EXPECT_GT(test, migrc_test_sent(), 0);
	migrc_expire(jiffies + age);
	KUNIT_EXPECT_EQ(test, migrc_test_done(), second);
	KUNIT_EXPECT_FALSE(test, migrc_pending());

	migrc_batch_close(outer);
}

/*
 * Lowering max_age_ms applies to what is already pending: the timeout,
 * armed with the old bound by the commit, runs at once and is armed
 * again for the new one.  Nothing else completes the generation here.
 */
static void migrc_batch_lower_age_test(struct kunit *test)
{
	struct migrc_batch_test *t = test->priv;
	struct migrc_batch *outer;
	unsigned long gen;
	int ms = 0;

	/* Nothing pending: the commit below arms the timeout, for 10 s. */
	migrc_flush_all(MIGRC_FLUSH_OTHER);
	migrc_test_save_age(test);
	WRITE_ONCE(migrc_max_age_ms, 10000);
	outer = migrc_batch_open(MR_NUMA_MISPLACED, true);
	KUNIT_ASSERT_TRUE(test, migrc_test_unmap_ro(t));
	migrc_batch_commit();
	gen = migrc_test_latest();
	migrc_batch_close(outer);
	KUNIT_EXPECT_TRUE(test, migrc_pending());

	migrc_set_max_age_ms(10);
	while (ms < 2000 && !migrc_gen_covers(migrc_test_done(), gen)) {
		msleep(20);
		ms += 20;
	}
	KUNIT_EXPECT_TRUE_MSG(test, migrc_gen_covers(migrc_test_done(), gen),
			      "pending %d ms after max_age_ms was lowered to 10",
			      ms);
}

static struct kunit_case migrc_batch_test_cases[] = {
	KUNIT_CASE(migrc_batch_commit_test),
	KUNIT_CASE(migrc_batch_writable_test),
	KUNIT_CASE(migrc_batch_reclaim_keeps_test),
	KUNIT_CASE(migrc_batch_wp_in_flight_test),
	KUNIT_CASE(migrc_batch_close_test),
	KUNIT_CASE(migrc_batch_nest_test),
	KUNIT_CASE(migrc_batch_put_source_test),
	KUNIT_CASE(migrc_alloc_hold_test),
	KUNIT_CASE(migrc_alloc_kick_test),
	KUNIT_CASE(migrc_alloc_larger_test),
	KUNIT_CASE(migrc_batch_keys_test),
	KUNIT_CASE(migrc_batch_anon_keys_test),
	KUNIT_CASE(migrc_large_free_test),
	KUNIT_CASE(migrc_large_keys_test),
	KUNIT_CASE(migrc_batch_writable_pmd_test),
	KUNIT_CASE(migrc_batch_expire_test),
	KUNIT_CASE(migrc_batch_lower_age_test),
	{}
};

static struct kunit_suite migrc_batch_test_suite = {
	.name = "migrc_batch",
	.init = migrc_batch_test_init,
	.exit = migrc_batch_test_exit,
	.test_cases = migrc_batch_test_cases,
};

static struct kunit_case migrc_test_cases[] = {
	KUNIT_CASE(migrc_gen_order_test),
	KUNIT_CASE(migrc_gen_wrap_test),
	KUNIT_CASE(migrc_tag_test),
	KUNIT_CASE(migrc_trim_test),
	KUNIT_CASE(migrc_ring_test),
	KUNIT_CASE(migrc_bound_test),
	KUNIT_CASE(migrc_block_need_test),
	KUNIT_CASE(migrc_slot_test),
	KUNIT_CASE(migrc_key_sig_test),
	{}
};

static struct kunit_suite migrc_test_suite = {
	.name = "migrc",
	.test_cases = migrc_test_cases,
};

kunit_test_suites(&migrc_test_suite, &migrc_batch_test_suite);

MODULE_DESCRIPTION("KUnit tests for migrc");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

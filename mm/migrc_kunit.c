// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the pure logic of migrc: generation arithmetic across the
 * wrap, page tags, the flush a tagged free block needs, trimming of the CPU
 * mask and the deferral bound.
 */
#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/migrc.h>

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

static void migrc_bound_test(struct kunit *test)
{
	KUNIT_EXPECT_FALSE(test, migrc_over_limit(0, 512, 512));
	KUNIT_EXPECT_TRUE(test, migrc_over_limit(1, 512, 512));
	KUNIT_EXPECT_FALSE(test, migrc_over_limit(100, 100, 8192));
	KUNIT_EXPECT_TRUE(test, migrc_over_limit(8192, 1, 8192));
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

static struct kunit_case migrc_test_cases[] = {
	KUNIT_CASE(migrc_gen_order_test),
	KUNIT_CASE(migrc_gen_wrap_test),
	KUNIT_CASE(migrc_tag_test),
	KUNIT_CASE(migrc_trim_test),
	KUNIT_CASE(migrc_bound_test),
	KUNIT_CASE(migrc_block_need_test),
	{}
};

static struct kunit_suite migrc_test_suite = {
	.name = "migrc",
	.test_cases = migrc_test_cases,
};
kunit_test_suite(migrc_test_suite);

MODULE_DESCRIPTION("KUnit tests for migrc");
MODULE_LICENSE("GPL");

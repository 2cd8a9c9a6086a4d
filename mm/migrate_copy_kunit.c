// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the batched migration copy: how a batch is split among
 * CPUs, and which CPUs are chosen.
 */
#include <kunit/test.h>
#include <kunit/visibility.h>
#include <linux/cpumask.h>
#include <linux/migrate_copy.h>

#include "internal.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

static void split_whole_folios_test(struct kunit *test)
{
	/* Many small folios: whole folios per thread, balanced. */
	unsigned int pages[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	unsigned long ends[4];

	KUNIT_ASSERT_EQ(test, migrate_copy_split(pages, 8, 4, ends), 4U);
	KUNIT_EXPECT_EQ(test, ends[0], 2UL);
	KUNIT_EXPECT_EQ(test, ends[1], 4UL);
	KUNIT_EXPECT_EQ(test, ends[2], 6UL);
	KUNIT_EXPECT_EQ(test, ends[3], 8UL);
}

static void split_mixed_test(struct kunit *test)
{
	/* 512 + 1 + 1 + 512 pages on 2 threads: cut at a folio boundary. */
	unsigned int pages[4] = { 512, 1, 1, 512 };
	unsigned long ends[2];

	KUNIT_ASSERT_EQ(test, migrate_copy_split(pages, 4, 2, ends), 2U);
	KUNIT_EXPECT_TRUE(test, ends[0] == 512 || ends[0] == 513 || ends[0] == 514);
	KUNIT_EXPECT_EQ(test, ends[1], 1026UL);
}

static void split_large_folio_test(struct kunit *test)
{
	/* One 2 MB folio on 4 threads: split inside it, evenly. */
	unsigned int pages[1] = { 512 };
	unsigned long ends[4];

	KUNIT_ASSERT_EQ(test, migrate_copy_split(pages, 1, 4, ends), 4U);
	KUNIT_EXPECT_EQ(test, ends[0], 128UL);
	KUNIT_EXPECT_EQ(test, ends[1], 256UL);
	KUNIT_EXPECT_EQ(test, ends[2], 384UL);
	KUNIT_EXPECT_EQ(test, ends[3], 512UL);
}

static void split_degenerate_test(struct kunit *test)
{
	unsigned int pages[2] = { 1, 1 };
	unsigned long ends[8];

	/* More threads than pages: one page each, no empty range. */
	KUNIT_EXPECT_EQ(test, migrate_copy_split(pages, 2, 8, ends), 2U);
	KUNIT_EXPECT_EQ(test, ends[1], 2UL);
	KUNIT_EXPECT_EQ(test, migrate_copy_split(pages, 0, 4, ends), 0U);
	KUNIT_EXPECT_EQ(test, migrate_copy_split(pages, 2, 0, ends), 0U);
}

/* CPUs 0-3 share one LLC, 4-7 another. */
static int fake_llc(unsigned int cpu)
{
	return cpu / 4;
}

static void pick_spreads_llc_test(struct kunit *test)
{
	cpumask_var_t cand, idle;
	unsigned int out[4], n, cpu;

	if (nr_cpu_ids < 8)
		kunit_skip(test, "needs 8 possible CPUs, have %u", nr_cpu_ids);
	KUNIT_ASSERT_TRUE(test, zalloc_cpumask_var(&cand, GFP_KERNEL));
	KUNIT_ASSERT_TRUE(test, zalloc_cpumask_var(&idle, GFP_KERNEL));
	for (cpu = 0; cpu < 8; cpu++)
		cpumask_set_cpu(cpu, cand);
	cpumask_copy(idle, cand);

	/* Two CPUs: one per LLC domain. */
	n = migrate_copy_pick_cpus(cand, idle, fake_llc, 2, out);
	KUNIT_ASSERT_EQ(test, n, 2U);
	KUNIT_EXPECT_NE(test, fake_llc(out[0]), fake_llc(out[1]));

	/* Busy CPUs are never chosen, even when more are wanted. */
	cpumask_clear(idle);
	cpumask_set_cpu(1, idle);
	cpumask_set_cpu(2, idle);
	n = migrate_copy_pick_cpus(cand, idle, fake_llc, 4, out);
	KUNIT_ASSERT_EQ(test, n, 2U);
	KUNIT_EXPECT_TRUE(test, (out[0] == 1 && out[1] == 2) ||
				(out[0] == 2 && out[1] == 1));

	/* Nothing idle: nothing chosen, the caller copies alone. */
	cpumask_clear(idle);
	KUNIT_EXPECT_EQ(test, migrate_copy_pick_cpus(cand, idle, fake_llc, 4, out), 0U);

	free_cpumask_var(cand);
	free_cpumask_var(idle);
}

static struct kunit_case migrate_copy_cases[] = {
	KUNIT_CASE(split_whole_folios_test),
	KUNIT_CASE(split_mixed_test),
	KUNIT_CASE(split_large_folio_test),
	KUNIT_CASE(split_degenerate_test),
	KUNIT_CASE(pick_spreads_llc_test),
	{}
};

static struct kunit_suite migrate_copy_suite = {
	.name = "migrate_copy",
	.test_cases = migrate_copy_cases,
};
kunit_test_suite(migrate_copy_suite);

MODULE_DESCRIPTION("KUnit tests for the batched migration copy");
MODULE_LICENSE("GPL");

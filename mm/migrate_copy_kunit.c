// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the batched migration copy: how a batch is cut into
 * chunks, that a pulled copy copies every page, and which CPUs are chosen.
 */
#include <kunit/test.h>
#include <kunit/visibility.h>
#include <linux/cpumask.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/migrate_copy.h>

#include "internal.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

static void chunk_size_test(struct kunit *test)
{
	/* About four chunks per CPU, the caller counted. */
	KUNIT_EXPECT_EQ(test, migrate_copy_chunk_pages(2048, 2), 256UL);
	KUNIT_EXPECT_EQ(test, migrate_copy_chunk_pages(1024, 4), 64UL);
	/* Never more than 2 MB: bounds what a stalled helper holds. */
	KUNIT_EXPECT_EQ(test, migrate_copy_chunk_pages(1UL << 20, 2),
			MIGRATE_COPY_MAX_CHUNK_PAGES);
	/* Never less than a thread's minimum, whatever the split. */
	KUNIT_EXPECT_EQ(test, migrate_copy_chunk_pages(32, 32),
			(unsigned long)MIGRATE_COPY_MIN_THREAD_PAGES);
	KUNIT_EXPECT_EQ(test, migrate_copy_chunk_pages(1, 0),
			(unsigned long)MIGRATE_COPY_MIN_THREAD_PAGES);
}

static void put_items(struct migrate_copy_item *items, unsigned int n)
{
	while (n--) {
		if (items[n].src)
			folio_put(items[n].src);
		if (items[n].dst)
			folio_put(items[n].dst);
	}
}

/*
 * The pulled copy copies every page of a batch of mixed folio sizes once,
 * whether the helpers get to run or not.
 */
static void pull_copies_every_page_test(struct kunit *test)
{
	static const unsigned int orders[] = { 0, 3, 0, 0, 4, 0, 2 };
	struct migrate_copy_item items[ARRAY_SIZE(orders)];
	struct migrate_copy_job job = { .items = items };
	unsigned int cpus[2], nr_cpus = 0, cpu, i, p;
	int self = raw_smp_processor_id();

	for_each_online_cpu(cpu)
		if (cpu != self && nr_cpus < ARRAY_SIZE(cpus))
			cpus[nr_cpus++] = cpu;

	for (i = 0; i < ARRAY_SIZE(orders); i++) {
		struct folio *src = folio_alloc(GFP_KERNEL, orders[i]);
		struct folio *dst = folio_alloc(GFP_KERNEL, orders[i]);

		items[i] = (struct migrate_copy_item) {
			.src = src, .dst = dst, .nr_pages = 1U << orders[i],
		};
		if (!src || !dst) {
			put_items(items, i + 1);
			kunit_skip(test, "no order-%u folio", orders[i]);
		}
		for (p = 0; p < items[i].nr_pages; p++) {
			memset_page(folio_page(src, p), 0, 0x10 + job.nr_pages, PAGE_SIZE);
			memset_page(folio_page(dst, p), 0, 0, PAGE_SIZE);
			job.nr_pages++;
		}
		job.nr_items++;
	}

	KUNIT_EXPECT_EQ(test, migrate_copy_mt_on(&job, cpus, nr_cpus), 0);
	KUNIT_EXPECT_GE(test, job.threads, 1U);
	KUNIT_EXPECT_LE(test, job.threads, nr_cpus + 1);

	for (i = 0; i < job.nr_items; i++) {
		for (p = 0; p < items[i].nr_pages; p++) {
			void *s = kmap_local_folio(items[i].src, p * PAGE_SIZE);
			void *d = kmap_local_folio(items[i].dst, p * PAGE_SIZE);

			KUNIT_EXPECT_EQ_MSG(test, memcmp(s, d, PAGE_SIZE), 0,
					    "item %u page %u not copied", i, p);
			kunmap_local(d);
			kunmap_local(s);
		}
	}
	put_items(items, job.nr_items);
}

/* A job with no pages returns at once: no chunk would ever complete it. */
static void empty_job_test(struct kunit *test)
{
	struct migrate_copy_job job = { .threads = 7, .cpu_ns = 7 };
	unsigned int cpu = cpumask_first(cpu_online_mask);

	KUNIT_EXPECT_EQ(test, migrate_copy_mt_on(&job, &cpu, 1), 0);
	KUNIT_EXPECT_EQ(test, job.threads, 0U);
	KUNIT_EXPECT_EQ(test, job.cpu_ns, 0ULL);
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
	KUNIT_CASE(chunk_size_test),
	KUNIT_CASE(pull_copies_every_page_test),
	KUNIT_CASE(empty_job_test),
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

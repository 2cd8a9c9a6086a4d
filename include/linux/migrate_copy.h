/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Batched folio copy for migrate_pages_batch(): the data of a whole batch
 * is copied in one step, by a pluggable backend (serial, or split over
 * several CPUs), before the batch is remapped.
 * See Documentation/mm/migrate_copy.rst.
 */
#ifndef _LINUX_MIGRATE_COPY_H
#define _LINUX_MIGRATE_COPY_H

#include <linux/cpumask.h>
#include <linux/list.h>
#include <linux/types.h>
#include <linux/err.h>
#include <linux/jump_label.h>

struct folio;

struct migrate_copy_item {
	struct folio *dst;
	struct folio *src;
	unsigned int nr_pages;
};

/* One batch to copy, and what the backend reports back. */
struct migrate_copy_job {
	struct migrate_copy_item *items;
	unsigned int nr_items;
	unsigned long nr_pages;
	int src_nid, dst_nid;
	unsigned int threads;		/* out: CPUs that copied */
	u64 cpu_ns;			/* out: CPU time spent copying */
};

/*
 * A copy provider.  ->copy() copies every item or fails as a whole; on
 * failure the caller falls back to the serial per-folio copy, so a
 * provider never has to clean up partial copies.
 */
struct migrate_copy_backend {
	const char *name;
	int (*copy)(struct migrate_copy_job *job);
	struct list_head list;
};

#ifdef CONFIG_MIGRATION
DECLARE_STATIC_KEY_FALSE(migrate_copy_key);

unsigned int migrate_folios_batch_copy(struct list_head *srcs,
				       struct list_head *dsts);

/* The batched copy, if a backend is selected; 0 copied pairs otherwise. */
static inline unsigned int migrate_batch_copy(struct list_head *srcs,
					      struct list_head *dsts)
{
	if (!static_branch_unlikely(&migrate_copy_key))
		return 0;
	return migrate_folios_batch_copy(srcs, dsts);
}
#endif

/*
 * What dst->private holds from the batched copy until __migrate_folio()
 * consumes it: an error pointer, which no swap entry or buffer_head can be.
 */
#define MIGRATE_DST_COPIED	ERR_PTR(-EALREADY)

int migrate_copy_register(struct migrate_copy_backend *backend);
void migrate_copy_unregister(struct migrate_copy_backend *backend);

#endif /* _LINUX_MIGRATE_COPY_H */

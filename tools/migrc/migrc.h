/* SPDX-License-Identifier: GPL-2.0 */
/*
 * migrc - measure TLB shootdowns, TLB flushes and migration counters.
 *
 * Shared declarations.  Every parser works on a NUL-terminated buffer so
 * that the unit tests can feed it fixtures without touching /proc.
 */
#ifndef MIGRC_H
#define MIGRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define MIGRC_VERSION		1
#define MIGRC_VERSION_STR	"1.0"

/* Exit codes (see migrc.8). */
#define EXIT_OK			0
#define EXIT_USAGE		1
#define EXIT_SYSERR		2
#define EXIT_ABSENT		3
#define EXIT_MISMATCH		4
#define EXIT_TOOL_FAILED	125	/* stat with a command: migrc itself failed */
#define EXIT_CANNOT_EXEC	126
#define EXIT_NOT_FOUND		127

#define ERRLEN			256
#define MAX_CPUS		8192
#define NAMELEN			64

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
/* The kernel's __printf(); userspace defines it (checkpatch flags this line). */
#define __printf(a, b)		__attribute__((format(printf, a, b)))

/* ---- small utilities (util.c) ---- */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
void __printf(1, 2) errmsg(const char *fmt, ...);
void __printf(1, 2) warnmsg(const char *fmt, ...);
char *read_file(const char *path, size_t *lenp, char *err, size_t errlen);
const char *proc_root(void);
const char *proc_path(const char *rel, char *buf, size_t len);
bool parse_u64(const char *s, const char **end, uint64_t *out);
bool parse_i64(const char *s, const char **end, int64_t *out);
double now_mono(void);

/*
 * The values of one quantity, for an exact median: a growable array of up
 * to SAMPLES_MAX values (or @max, if set).  Past that, a reservoir sample
 * of that size (Algorithm R, fixed seed): memory stays bounded and the
 * median becomes an estimate, which @seen > @n tells.
 */
#define SAMPLES_MAX		(1U << 20)

struct samples {
	uint64_t *v;
	size_t n, cap;
	size_t max;		/* 0: SAMPLES_MAX */
	uint64_t seen;		/* values offered */
	uint64_t rng;
};

void samples_add(struct samples *s, uint64_t v);
bool samples_exact(const struct samples *s);
bool samples_median(const struct samples *s, uint64_t *out);
void samples_free(struct samples *s);

/* A named counter; valid == false means "absent / not supported". */
struct ctr {
	char name[NAMELEN];
	int64_t val;
	bool valid;
};

struct ctrlist {
	struct ctr *v;
	int n;
	int cap;
};

void ctrlist_init(struct ctrlist *l);
void ctrlist_free(struct ctrlist *l);
struct ctr *ctrlist_add(struct ctrlist *l, const char *name, int64_t val, bool valid);
struct ctr *ctrlist_find(const struct ctrlist *l, const char *name);
void ctrlist_copy(struct ctrlist *dst, const struct ctrlist *src);

struct strlist {
	char **v;
	int n;
	int cap;
};

void strlist_add(struct strlist *l, const char *s);
void __printf(2, 3) strlist_addf(struct strlist *l, const char *fmt, ...);
void strlist_free(struct strlist *l);

/* ---- /proc parsers (snapshot.c) ---- */

struct irq_snap {
	int ncpus;		/* CPU columns in the header */
	int *cpu_ids;		/* "CPU<n>" numbers from the header */
	bool has_tlb;		/* a "TLB:" line exists */
	uint64_t *tlb;		/* ncpus values */
};

int parse_interrupts(const char *buf, struct irq_snap *out, char *err, size_t errlen);
void irq_snap_free(struct irq_snap *s);
int irq_delta(const struct irq_snap *a, const struct irq_snap *b, uint64_t *out,
	      char *err, size_t errlen);

int parse_vmstat(const char *buf, struct ctrlist *out, char *err, size_t errlen);
bool vmstat_interesting(const char *name);
int vmstat_delta(const struct ctrlist *a, const struct ctrlist *b, struct ctrlist *out,
		 char *err, size_t errlen);

struct cpu_times {
	uint64_t user;		/* user + nice, in clock ticks */
	uint64_t sys;		/* system + irq + softirq */
};

int parse_proc_stat(const char *buf, struct cpu_times *out, char *err, size_t errlen);
int parse_cpu_list(const char *s, int **ids, int *n, char *err, size_t errlen);

struct snapshot {
	struct irq_snap irq;
	struct ctrlist vmstat;
	struct cpu_times times;
	bool has_times;
	double t;
};

int snapshot_take(struct snapshot *s, char *err, size_t errlen);
void snapshot_free(struct snapshot *s);

/* ---- tracefs and event formats, through libtracefs/libtraceevent (tracefs.c) ---- */

#define MAX_SYMS 32

struct tep_handle;
struct tep_event;
struct tep_record;
struct tep_format_field;
struct trace_seq;

/* One entry of a __print_symbolic() table: { value, "str" }. */
struct tp_sym {
	long long value;
	char str[NAMELEN];
};

const char *tracing_root(bool try_mount);
const char *tracing_why(void);
struct tep_handle *tp_open(bool headers, char *err, size_t errlen);
struct tep_event *tp_parse(struct tep_handle *tep, const char *buf, size_t len,
			   const char *system, char *err, size_t errlen);
struct tep_event *tp_load(struct tep_handle *tep, const char *system, const char *name,
			  char *err, size_t errlen);
int tp_symbols(struct tep_event *ev, const char *field, struct tp_sym *syms, int max);
const char *tp_sym_str(const struct tp_sym *syms, int n, long long value,
		       char *buf, size_t len);
const char *tlb_reason_name(const char *str, char *buf, size_t len);

/* ---- perf (perf.c) ---- */

#define NR_TLB_REASONS_MAX 16

struct perf_set;	/* opaque */

struct perf_opts {
	bool system_wide_only;	/* -a: never fall back to per-process hw counting */
	pid_t child;		/* > 0: allow per-process fallback for this pid */
};

struct perf_set *perf_open(const struct perf_opts *o, struct strlist *absent);
void perf_enable(struct perf_set *p);
void perf_disable(struct perf_set *p);
void perf_reset(struct perf_set *p);
/* Fills flush (reasons + total, *has_flush) and hw (null entries invalid). */
void perf_read(struct perf_set *p, struct ctrlist *flush, bool *has_flush,
	       struct ctrlist *hw);
void perf_close(struct perf_set *p);
int perf_paranoid(void);

/* ---- shootdown sources (sources.c: attribution, srctrace.c: recording) ---- */

/* What one recorded event means to the attribution. */
enum src_ev {
	SRC_SEND,		/* tlb_flush TLB_REMOTE_SEND_IPI: a shootdown sent */
	SRC_RECV,		/* tlb_flush TLB_REMOTE_SHOOTDOWN, on the receiver */
	SRC_LOCAL,		/* tlb_flush of the sending CPU's own TLB */
	SRC_MIG_START,		/* migrate_pages() begins; name: its MR_ reason */
	SRC_MIG_END,
	SRC_RECLAIM_BEGIN,	/* direct, memcg or node reclaim */
	SRC_RECLAIM_END,
	SRC_SYS_ENTER,		/* arg: syscall number */
	SRC_SYS_EXIT,
	SRC_MIGRC_FLUSH,	/* name: flush reason, arg: CPUs targeted */
};

struct src_event {
	enum src_ev type;
	int pid;
	int cpu;
	long arg;
	const char *name;
};

struct src_task;

/* Attribution state over one event stream. */
struct src_state {
	struct src_task *tasks;		/* open-addressing table by pid */
	int ntasks, cap;
	bool has_sys;			/* raw_syscalls events are recorded */
	struct ctrlist sends;		/* IPI sends by source, no total */
	uint64_t *recv;			/* TLB_REMOTE_SHOOTDOWN per CPU */
	int nrecv;
};

/* The result, as a run carries it. */
struct src_result {
	struct ctrlist sends;		/* by source, then "total" */
	uint64_t *recv;			/* received, per CPU (run's ncpus) */
	int nrecv;
	uint64_t recv_total;
	uint64_t lost;			/* events the trace buffers dropped */
	struct strlist notes;		/* what could not be attributed */
};

void src_init(struct src_state *s, bool has_sys);
void src_set_task(struct src_state *s, int pid, const char *comm, bool kthread);
void src_feed(struct src_state *s, const struct src_event *e);
void src_finish(struct src_state *s, struct src_result *out);
void src_state_free(struct src_state *s);
void src_result_free(struct src_result *r);
const char *src_migrate_source(const char *mr_name);
const char *src_syscall_source(long nr, char *buf, size_t len);

struct src_rec;		/* live recording (opaque) */

struct src_rec *src_start(struct strlist *absent);
void src_stop(struct src_rec *r, struct src_result *out);

/* ---- run results (result.c) ---- */

struct interval {
	double t_s;
	double wall_s;
	bool has_tlb;
	int ncpus;
	uint64_t *per_cpu;
	uint64_t tlb_total;
	struct ctrlist vmstat;
	bool has_flush;
	struct ctrlist flush;
	struct ctrlist hw;
};

struct run {
	char *label;
	char *kernel;
	char *cmdline;
	struct strlist command;
	int exit_status;
	double wall_s, user_s, sys_s;
	int ncpus;
	bool has_tlb;
	uint64_t *per_cpu;
	uint64_t tlb_total;
	struct ctrlist vmstat;
	bool has_flush;
	struct ctrlist flush;		/* reasons, then "total" */
	struct ctrlist hw;
	struct strlist absent;
	bool want_sources;		/* --sources: "sources" in the JSON */
	bool has_sources;		/* ... and it was recorded */
	struct src_result src;
	struct interval *intervals;
	int nintervals;
	const char *file;		/* where it was loaded from (compare) */
};

void run_free(struct run *r);
void interval_free(struct interval *iv);
char *run_to_json(const struct run *r);
int run_from_json(const char *text, struct run *r, char *err, size_t errlen);
void print_summary(FILE *f, const struct run *r);

/* ---- JSON (json.c) ---- */

struct jbuf {
	char *s;
	size_t len, cap;
	int depth;
	bool need_comma[64];
};

void jb_init(struct jbuf *b);
void jb_raw(struct jbuf *b, const char *s);
void jb_obj_begin(struct jbuf *b, const char *key);
void jb_obj_end(struct jbuf *b);
void jb_arr_begin(struct jbuf *b, const char *key);
void jb_arr_end(struct jbuf *b);
void jb_str(struct jbuf *b, const char *key, const char *val);
void jb_i64(struct jbuf *b, const char *key, int64_t v);
void jb_u64(struct jbuf *b, const char *key, uint64_t v);
void jb_dbl(struct jbuf *b, const char *key, double v);
void jb_null(struct jbuf *b, const char *key);

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	bool b;
	double num;
	bool is_int;
	int64_t i;
	char *str;
	int n;			/* children (array elements / object members) */
	char **keys;		/* object keys */
	struct jval **kids;
};

struct jval *json_parse(const char *text, char *err, size_t errlen);
void json_free(struct jval *v);
struct jval *json_get(const struct jval *obj, const char *key);

/* ---- subcommands ---- */

int cmd_stat(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_trace(int argc, char **argv);

/* compare internals shared with the tests */
int compare_runs(struct run *runs, int nruns, const char *format, FILE *out,
		 const char *svg_path, bool allow_mismatch);
int compare_runs_labels(struct run *runs, int nruns, const char **labels, const char *format,
			FILE *out, const char *svg_path, bool allow_mismatch);
int write_svg(FILE *f, struct run *runs, int nruns, const char **labels);

/* trace internals shared with the tests */
#define NR_AGE_BUCKETS 40

struct trace_kv {
	char key[NAMELEN];
	char val[NAMELEN];
};

struct trace_reason {
	char name[NAMELEN];
	uint64_t count;
	uint64_t pages;
	uint64_t cpus;
};

/* mm_migrate_batch: one event per migrate_pages_batch() call. */
enum batch_phase { BATCH_UNMAP, BATCH_FLUSH, BATCH_COPY, BATCH_MOVE, NR_BATCH_PHASES };

/* Its numeric fields; the phases are in enum batch_phase order. */
enum batch_field {
	BF_FOLIOS, BF_MOVED, BF_BYTES, BF_COPIED,
	BF_UNMAP, BF_FLUSH, BF_COPY, BF_MOVE, BF_FIRST_USABLE,
	NR_BATCH_FIELDS
};

#define NR_BATCH_BUCKETS	33	/* log2 buckets of nr_folios, an unsigned int */
#define NR_BATCH_REASONS	16

struct batch_totals {
	uint64_t batches;
	uint64_t folios;		/* that reached the move step */
	uint64_t moved;
	uint64_t bytes;
	uint64_t phase_ns[NR_BATCH_PHASES];
};

struct batch_reason {
	char name[NAMELEN];
	struct batch_totals t;
};

struct batch_stats {
	struct batch_totals all;
	uint64_t copied;		/* batches the batched copy ran in */
	uint64_t skipped;		/* events missing a field, ignored */
	uint64_t first_usable_max;
	uint64_t size_count[NR_BATCH_BUCKETS];
	struct samples phase[NR_BATCH_PHASES];
	struct samples first_usable;	/* of the batches that moved a folio */
	int nreasons;
	struct batch_reason reasons[NR_BATCH_REASONS];
};

/* The medians of a struct batch_stats; false: no value to take one of. */
struct batch_medians {
	bool exact;
	bool has_phase;
	uint64_t phase_ns[NR_BATCH_PHASES];
	bool has_first_usable;
	uint64_t first_usable_ns;
};

struct trace_stats {
	uint64_t lines;
	uint64_t unparsed;
	uint64_t defer_events;
	uint64_t defer_pages;
	uint64_t flush_events;
	uint64_t flush_pages;
	uint64_t no_age;
	int nreasons;
	struct trace_reason reasons[32];
	uint64_t age_count[NR_AGE_BUCKETS];
	uint64_t age_pages[NR_AGE_BUCKETS];
	struct batch_stats batch;
};

int parse_trace_line(const char *line, char *event, size_t evlen,
		     struct trace_kv *kv, int maxkv);
void trace_account_line(struct trace_stats *st, const char *line);
void trace_stats_free(struct trace_stats *st);
int batch_bucket(uint64_t folios);
void batch_medians(const struct batch_stats *b, struct batch_medians *out);

/* The recorded events of a parser handle and the fields accounting reads. */
struct trace_events {
	struct tep_event *flush;
	struct tep_event *defer;
	struct tep_format_field *reason;
	struct tep_format_field *pages;
	struct tep_format_field *cpus;
	struct tep_format_field *age;
	struct tep_format_field *defer_pages;
	int nsyms;			/* reason names of an integer reason */
	struct tp_sym syms[MAX_SYMS];
	struct tep_event *batch;	/* NULL unless every field below is there */
	struct tep_format_field *batch_reason;
	struct tep_format_field *batch_fields[NR_BATCH_FIELDS];
	int batch_nsyms;
	struct tp_sym batch_syms[MAX_SYMS];
};

void trace_events_init(struct trace_events *te, struct tep_handle *tep);
const char *trace_flush_reason(const struct trace_events *te, struct tep_record *rec,
			       char *buf, size_t len);
void trace_account_record(struct trace_stats *st, const struct trace_events *te,
			  struct tep_event *ev, struct tep_record *rec);
void trace_record_text(struct trace_seq *s, struct tep_event *ev, struct tep_record *rec);
int age_bucket(uint64_t us);
void trace_print(FILE *f, const struct trace_stats *st);

#endif /* MIGRC_H */

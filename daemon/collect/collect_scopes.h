/* collect_scopes.h - the user side of bpf/scopes.bpf.c: load the programs,
 * attach them to the qprof USDT sites of a file (for one process or for all),
 * read the per-CPU aggregates and counters, forget a process. Thread-safe:
 * reads are map syscalls; attach, detach and epochs take the collector's
 * own lock (a leaf: nothing else is taken under it). */
#ifndef QPROF_COLLECT_SCOPES_H
#define QPROF_COLLECT_SCOPES_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bpf/scopes.h"

struct qp_scopes;
struct qp_scope_link;
struct qp_elf_probes;

/* One aggregate, summed over CPUs. */
struct qp_scope_row {
	struct scope_key key;
	struct scope_stats stats;
};

/* What the polls of the scope maps have cost since the daemon started. */
struct qp_scope_poll_stats {
	uint64_t polls;
	uint64_t chunks_read;	/* chunk values copied out of the kernel */
	uint64_t full_scans;	/* polls that read every chunk (dirty keys lost) */
	uint64_t cpu_ns;	/* the polling threads' CPU time in the polls */
	uint64_t chunks;	/* chunks held now */
};

struct qp_scope_snapshot {
	size_t n;
	struct qp_scope_row *rows;	/* sorted by key */
	uint64_t counters[QPROF_CNT__MAX];
	struct qp_scope_poll_stats poll;
};

/* Spans across threads: the pending table's size and the abandon timeout. */
struct qp_span_opts {
	unsigned int pending;		/* entries (--span-pending) */
	uint64_t timeout_ms;		/* --span-timeout-ms */
};
#define QP_SPAN_PENDING_DEFAULT 65536u
#define QP_SPAN_TIMEOUT_MS_DEFAULT 10000u

/* Open, size and load the BPF object; attach the thread-exit tracepoint.
 * -errno on failure (err holds the reason). */
/* ALLOW_MULTI false: perf-event uprobes even where uprobe-multi links exist. */
/* TRACE_RB: the trace ring buffer's bytes (a power of two; 0: QPROF_TRACE_RB_BYTES). */
int qp_scopes_open(struct qp_scopes **out, unsigned int max_sites, bool allow_multi,
		   const struct qp_span_opts *spans, unsigned int trace_rb_bytes, char *err, size_t errlen);

/* FN(ARG, S) runs once, with no lock held, before the first program that
 * measures a duration is attached (scope_exit, a span's end): qprofd's
 * calibration of the probes' cost, which attaches to qprofd itself. Set
 * before any target. */
typedef void (*qp_scopes_first_fn)(void *arg, struct qp_scopes *s);
void qp_scopes_set_first_use(struct qp_scopes *s, qp_scopes_first_fn fn, void *arg);
/* The calibration as the hook measured it (or why it was not), for the
 * readers of status: copied in and out under the collector's lock. */
struct qp_calibration;
void qp_scopes_publish_calibration(struct qp_scopes *s, const struct qp_calibration *c);
void qp_scopes_calibration_read(struct qp_scopes *s, struct qp_calibration *out);

/* collect_spans.c. Remove pending spans older than the timeout, counted in
 * QPROF_CNT_SPAN_ABANDONED (the poll loop calls it). 0 or -errno. */
int qp_spans_sweep(struct qp_scopes *s, uint64_t now_ns);
/* Drop the pending spans of PID (not counted: its target is forgotten). */
int qp_spans_forget(struct qp_scopes *s, uint32_t pid);
/* Spans pending after the last sweep, and the table's size. */
void qp_spans_figures(struct qp_scopes *s, uint64_t *pending, uint64_t *capacity);
void qp_scopes_close(struct qp_scopes *s); /* accepts NULL */

/* The task storage of thread stacks, shared with the CPU sampler. */
int qp_scopes_thread_stacks_fd(struct qp_scopes *s);
/* The slow-instance ring buffer and thresholds (scopes.h), for the CPU
 * collector, which joins them; records flow once ON is set. */
int qp_scopes_slow_rb_fd(struct qp_scopes *s);
int qp_scopes_slow_min_fd(struct qp_scopes *s);
/* The slots of slow thresholds (scopes.h, struct slow_floor), mapped; NULL
 * when they could not be: valid until qp_scopes_close. */
struct slow_floor *qp_scopes_slow_floor(struct qp_scopes *s);
void qp_scopes_set_slow(struct qp_scopes *s, bool on);
/* A new attach epoch: one per attach operation (all files of one target). */
uint64_t qp_scopes_new_epoch(struct qp_scopes *s);
/* Attach scope_enter/scope_exit to every qprof site of PATH (parsed as ELF),
 * for PID (-1: any process, with QPROF_COOKIE_BINARY). One uprobe-multi link
 * per probe name when the kernel has them (>= 6.6), else libbpf's USDT
 * links. Links are appended to *links (grown with realloc). Returns the
 * number of links made or -errno. */
int qp_scopes_attach(struct qp_scopes *s, int pid, const char *path, const struct qp_elf_probes *elf,
		     uint64_t epoch, struct qp_scope_link ***links, size_t *nlinks, char *err,
		     size_t errlen);
void qp_scopes_detach_links(struct qp_scope_link **links, size_t n);
/* The same for some of the probe names only (bits of 1 << index in
 * scope_exit, scope_enter, mark, value, log, span_end, span_step,
 * span_begin). Ring targets keep logs and spans across threads on BPF. */
#define QP_PROBES_ALL 0xffu
#define QP_PROBES_LOGS 0x10u
#define QP_PROBES_ASYNC 0xe0u
int qp_scopes_attach_some(struct qp_scopes *s, int pid, const char *path, const struct qp_elf_probes *elf,
			  uint64_t epoch, unsigned int which, struct qp_scope_link ***links, size_t *nlinks,
			  char *err, size_t errlen);
/* The slow half of a detach, callable without the caller's lock: the
 * kernel links are released (their uprobes unregistered), concurrently;
 * qp_scopes_detach_links then frees what is left (under the lock). */
void qp_scopes_close_links(struct qp_scope_link **links, size_t n);

/* Another program's USDT probe: counted, or one end of a span. */
enum qp_usdt_role { QP_USDT_COUNT, QP_USDT_SPAN_BEGIN, QP_USDT_SPAN_END };

struct qp_usdt_req {
	uint32_t id;		/* probe or span id (QPROF_COOKIE_ID) */
	enum qp_usdt_role role;
	const char *provider, *name;
};

/* Attach REQ in PATH if PATH has that probe: 1 (one link), 0 when it has
 * none, -errno. */
int qp_scopes_attach_usdt(struct qp_scopes *s, int pid, const char *path,
			  const struct qp_elf_probes *elf, uint64_t epoch, const struct qp_usdt_req *req,
			  struct qp_scope_link ***links, size_t *nlinks, char *err, size_t errlen);

struct qp_probe_row {
	uint32_t tgid, id;
	uint64_t count;
};

/* Hits of counted probes of PID (all when pid <= 0). */
int qp_probe_counts_read(struct qp_scopes *s, int pid, struct qp_probe_row **rows, size_t *n);
/* true when links are uprobe-multi links (for status and logs) */
bool qp_scopes_multi(const struct qp_scopes *s);

/* Stop/resume counting PID for --binary attachments. */
int qp_scopes_exclude(struct qp_scopes *s, uint32_t pid, bool excluded);
/* Delete every aggregate of PID. */
int qp_scopes_forget(struct qp_scopes *s, uint32_t pid);

/* Marks and values of PID (all when pid <= 0), summed over CPUs, sorted by
 * key. Values carry their histogram buckets (order key >> shift, count). */
struct qp_mark_row {
	struct mark_key key;
	uint64_t count, last_ns;
};

struct qp_value_bucket {
	uint64_t bucket, count;
};

struct qp_value_row {
	struct mark_key key;
	struct value_stats st;
	bool has_sum;		/* the ring collector's: sum is exact, the mean is sum / count */
	long double sum;	/* of the finite values */
	size_t nbuckets;
	struct qp_value_bucket *buckets;	/* sorted by bucket */
};

int qp_marks_read(struct qp_scopes *s, int pid, struct qp_mark_row **rows, size_t *n);
int qp_values_read(struct qp_scopes *s, int pid, struct qp_value_row **rows, size_t *n);
void qp_values_free(struct qp_value_row *rows, size_t n);
/* One counter of enum scope_counter, summed over CPUs (scope_poll.c). */
uint64_t qp_scopes_counter(struct qp_scopes *s, unsigned int which);
/* The log ring buffer (for the logs consumer). */
int qp_scopes_logs_fd(struct qp_scopes *s);

/* The ring collector whose rows, marks and drops reads merge in (and
 * which forgets with qp_scopes_forget); NULL: none. */
struct qp_ring;
void qp_scopes_set_ring(struct qp_scopes *s, struct qp_ring *ring);

/* Poll the maps (the chunks hit since the last poll), then the rows of
 * every aggregate (or only PID's when pid > 0) from the daemon's copy. */
int qp_scopes_read(struct qp_scopes *s, int pid, struct qp_scope_snapshot *out);
void qp_scope_snapshot_free(struct qp_scope_snapshot *snap);
/* scope_snapshot.c (no BPF): the order of rows (tgid, site, parent), the
 * row of SNAP with KEY or NULL (binary search). */
int qp_scope_key_cmp(const struct scope_key *a, const struct scope_key *b);
const struct qp_scope_row *qp_scope_snapshot_find(const struct qp_scope_snapshot *snap,
						  const struct scope_key *key);
#endif

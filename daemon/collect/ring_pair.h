/* ring_pair.h - the ring collector's arithmetic, without BPF or I/O: the
 * records of one thread ring (include/qprof/ring_layout.h), already copied
 * out of the process, are paired per thread (enters and exits, with
 * nesting: parent = the enclosing scope) into the same (process, site,
 * parent) aggregates as the BPF collector's (bpf/scopes.h), marks into
 * counts, and every instance into its process's bounded flight recorder;
 * spans across threads go on to ring_spans.h, which pairs them across the
 * threads. Whatever
 * cannot be paired cleanly (a record lapped before it was read, garbage, an
 * exit without its enter) is counted, never turned into a duration.
 * Unit-tested on hand-made records. One owner at a time (the caller locks). */
#ifndef QPROF_RING_PAIR_H
#define QPROF_RING_PAIR_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/hashtab.h"
#include "qprof/ring_layout.h"
#include "bpf/scopes.h"

/* Time stamps to CLOCK_MONOTONIC ns: ns = ns0 + (ts - tsc0) * ns_per_tick
 * from TSC tsc0 on, and before it by the segment that covers ts among the
 * QP_RING_CLOCK_OLD previous ones (the oldest extrapolated back). mono: the
 * ring's stamps already are ns (QPROF_RING_F_MONO). qp_ring_clock_step adds
 * segments so that the whole is one continuous, increasing map that never
 * changes for a stamp already passed: a stamp converts to the same ns in
 * every drain pass (a scope read in one pass and its enclosing scope's
 * exit read in the next stay nested). */
#define QP_RING_CLOCK_OLD 8
struct qp_ring_seg {
	uint64_t tsc0, ns0;
	double ns_per_tick;
};

struct qp_ring_clock {
	uint64_t tsc0, ns0;	/* the newest segment */
	double ns_per_tick;
	struct qp_ring_seg old[QP_RING_CLOCK_OLD];	/* the previous ones, newest first */
	uint32_t nold;
};

static inline uint64_t qp_ring_seg_ns(uint64_t tsc0, uint64_t ns0, double ns_per_tick, uint64_t ts)
{
	double d = ((double)(int64_t)(ts - tsc0)) * ns_per_tick;

	return (uint64_t)((double)ns0 + d);
}

static inline uint64_t qp_ring_clock_ns(const struct qp_ring_clock *c, uint64_t ts, bool mono)
{
	uint32_t i;

	if (mono)
		return ts;
	if ((int64_t)(ts - c->tsc0) >= 0 || !c->nold)
		return qp_ring_seg_ns(c->tsc0, c->ns0, c->ns_per_tick, ts);
	for (i = 0; i + 1 < c->nold && (int64_t)(ts - c->old[i].tsc0) < 0; i++)
		;
	return qp_ring_seg_ns(c->old[i].tsc0, c->old[i].ns0, c->old[i].ns_per_tick, ts);
}

/* A new segment from a fresh (TSC, CLOCK_MONOTONIC) pair (TSC, NS) and the
 * measured slope SLOPE (ns per tick): it starts at TSC where the map is
 * there (no step, neither back nor forward) and slews towards the fresh
 * pair over HORIZON_NS: slope = SLOPE * (1 + error / HORIZON_NS), the factor
 * kept within [1/2, 2] so that the map stays increasing. A TSC not after
 * the newest segment's start changes nothing. */
static inline void qp_ring_clock_step(struct qp_ring_clock *c, uint64_t tsc, uint64_t ns, double slope,
				      double horizon_ns)
{
	uint64_t at;
	double f;
	uint32_t i;

	if (!(slope > 0) || !(horizon_ns > 0) || (int64_t)(tsc - c->tsc0) <= 0)
		return;
	at = qp_ring_clock_ns(c, tsc, false);
	for (i = c->nold < QP_RING_CLOCK_OLD ? c->nold : QP_RING_CLOCK_OLD - 1; i > 0; i--)
		c->old[i] = c->old[i - 1];
	c->old[0] = (struct qp_ring_seg){ c->tsc0, c->ns0, c->ns_per_tick };
	if (c->nold < QP_RING_CLOCK_OLD)
		c->nold++;
	f = 1.0 + ((double)ns - (double)at) / horizon_ns;
	c->tsc0 = tsc;
	c->ns0 = at;
	c->ns_per_tick = slope * (f < 0.5 ? 0.5 : f > 2.0 ? 2.0 : f);
}

/* Drops and losses of the ring collector, per process. */
struct qp_ring_counts {
	uint64_t records;	/* records read and accepted */
	uint64_t lost;		/* records the writer overwrote before they were read */
	uint64_t garbage;	/* records that are no record: bad kind, time going back, a
				 * lone argument, a site that is no address */
	uint64_t no_enter;	/* exits with no matching enter on the thread */
	uint64_t out_of_order;	/* open scopes skipped by an exit further down */
	uint64_t too_deep;	/* enters past QPROF_MAX_DEPTH */
	uint64_t thread_exit;	/* scopes open when their thread's ring changed owner */
	uint64_t after_loss;	/* scopes open when records were lost (their ends unknowable) */
	uint64_t table_full;	/* durations, marks or values with no room for their aggregate */
	uint64_t value_lost;	/* values whose histogram bucket found no room (QP_RING_VHIST_MAX) */
	uint64_t before_attach;	/* records older than the attach: not counted */
	/* spans across threads, by the reasons of bpf/scopes.h's counters */
	uint64_t begin_unended;	/* QPROF_SCOPE_BEGIN spans replaced before their END */
	uint64_t span_end_no_begin, span_step_no_begin, span_id_reused, span_table_full, span_abandoned;
	uint64_t lost_at_exit;	/* ... of lost: published, never read, the process gone first */
	uint64_t start_unknown;	/* rings whose first read found their session's start lapped
				 * (a qprofd started after them): their lost is an upper bound */
	uint64_t unreadable;	/* times a ring became unreadable (unmapped, PROT_NONE): retried */
	uint64_t unreadable_ns;	/* ... for this long in all (the episodes ended) */
	uint64_t logs;		/* QPROF_LOG messages read (ring_layout.h) */
	uint64_t logs_cut;	/* ... of them cut (longer than the ring's text) */
};

/* One QPROF_LOG message read from a ring, for the log store. */
struct qp_ring_log {
	uint32_t pid, tid;
	uint64_t site;		/* runtime address of the log site */
	uint64_t mono_ns;	/* CLOCK_MONOTONIC */
	int32_t len;		/* the length it had (clamped to 511); > strlen(msg): cut */
	const char *msg;	/* NUL-terminated, at most 255 bytes */
};
typedef void (*qp_ring_log_fn)(void *arg, const struct qp_ring_log *l);

/* A value row of the ring: the BPF collector's figures and the exact sum
 * (Neumaier's compensated sum in long double) of the finite values. */
struct qp_ring_value {
	struct value_stats st;
	long double sum, comp;
};

/* One scope instance, mark, value or span across threads, for traces. The
 * process is the flight recorder's (one per process). */
enum {
	QP_RING_INST_ASPAN = 8,	/* a QPROF_SPAN_BEGIN..END: site the begin's, arg the id */
	QP_RING_INST_ASTEP = 9,	/* a QPROF_SPAN_STEP: parent the begin's site, arg the id */
};
struct qp_ring_inst {
	uint64_t site, parent;	/* runtime site addresses; parent 0 at top level */
	uint64_t begin_ns, end_ns; /* CLOCK_MONOTONIC */
	uint64_t arg;		/* QPROF_REC_VALUE: the double's IEEE-754 bits; spans: the id */
	uint32_t tid;		/* spans: the thread that ended it (or stepped) */
	uint16_t depth;		/* open scopes around it on its thread (0: top level) */
	uint16_t kind;		/* QPROF_REC_EXIT (a scope), QPROF_REC_END (a SCOPE_BEGIN/END span),
				 * QPROF_REC_MARK, QPROF_REC_VALUE (begin_ns == end_ns), QP_RING_INST_* */
};

/* The flight recorder of one process: its last MAX instances, grown as it
 * fills (doubling), then overwritten oldest first. */
struct qp_ring_flight {
	struct qp_ring_inst *v;
	size_t cap, max;
	uint64_t seq;		/* instances ever recorded (the next one's number) */
};

void qp_ring_flight_put(struct qp_ring_flight *f, const struct qp_ring_inst *in);
void qp_ring_flight_free(struct qp_ring_flight *f); /* keeps max */
/* Instances numbered >= *SINCE, oldest first, at most N into OUT; *SINCE
 * becomes the next to ask for; *MISSED those overwritten before. */
size_t qp_ring_flight_get(const struct qp_ring_flight *f, uint64_t *since, struct qp_ring_inst *out, size_t n,
			  uint64_t *missed);

struct qp_ring_frame {
	uint64_t site, key, ns;	/* ns: the enter's stamp, converted when read */
};

/* A QPROF_SCOPE_BEGIN span open on a thread: beside the block-scope stack,
 * as on the BPF collector (bpf/spans.bpf.h), paired by KEY (the name's
 * address) with an END on the same thread. A slot is free when key is 0. */
struct qp_ring_begin {
	uint64_t key, site, ns;	/* ns: the BEGIN's stamp, converted when read */
	uint64_t parent;	/* the block scope open when it began, 0 at top level */
	uint32_t depth;		/* block scopes open when it began */
};

/* What is known of one ring's thread between reads. */
struct qp_ring_reader {
	uint32_t pid, tid;
	uint64_t last_ts;
	uint32_t depth;		/* may exceed QPROF_MAX_DEPTH: frames past it are not kept */
	struct qp_ring_frame f[QPROF_MAX_DEPTH];
	struct qp_ring_begin b[QPROF_MAX_BEGINS];
	struct qp_ring_flight *fl;	/* the process's flight recorder (NULL: none) */
	struct qp_ring_spans *spans;	/* where spans across threads go (NULL: counted garbage) */
	/* What the records lost in gaps (qp_ring_gap) were, for qp_ring_lost_of:
	 * the mix of the records read, by what they were, ... */
	uint64_t n_scope;	/* ENTER and EXIT records */
	uint64_t n_mark;	/* MARK records alone */
	uint64_t n_value;	/* VALUE groups' records (2 each) */
	uint64_t n_other;	/* the rest: BEGIN/END groups, spans across threads, logs */
	/* ... and what is known exactly of the gaps */
	uint64_t gap_recs;	/* records lost */
	uint64_t gap_open;	/* scopes open at a gap (their EXIT taken to be in it) */
	uint64_t gap_closed;	/* ... of them whose EXIT came after the gap after all */
	uint64_t gap_orphans;	/* EXITs after a gap with no ENTER: their ENTER was in it */
	uint64_t gap_thread;	/* THREAD records known to be in a gap (a new ring's first) */
	bool had_gap;		/* since the ring's owner began */
	uint32_t nlostf;	/* the keys of the scopes open at the gaps, outermost first */
	uint64_t lostf[QPROF_MAX_DEPTH];
};

/* What the records a ring lost were, in events a user counts. What can be
 * said exactly: the records lost; the scopes open when records were lost
 * (their exit unknowable) and the scopes that ended after a loss without
 * their enter. What is a share: the scopes, marks and values wholly inside
 * a gap, estimated from the mix of the records read on the same ring. A
 * ring that held ENTER and EXIT records only (flat or nested QPROF_SCOPE
 * and QPROF_FUNC) has an exact figure: every record lost there is half a
 * scope, so estimated stays false. Sums over rings with qp_ring_lost_of. */
struct qp_ring_lost_est {
	uint64_t records;	/* records lost */
	uint64_t scopes;	/* scopes short in the counts (partial + wholly lost) */
	uint64_t scopes_partial; /* ... of them known one by one (open at a loss, no enter after one) */
	uint64_t marks, values;	/* marks and values wholly lost (a share) */
	uint64_t other;		/* records of other kinds lost (spans, logs; a share) */
	bool estimated;		/* some figure above is a share of the mix, not a count */
};
/* Add RD's losses to OUT. */
void qp_ring_lost_of(const struct qp_ring_reader *rd, struct qp_ring_lost_est *out);
void qp_ring_lost_add(struct qp_ring_lost_est *to, const struct qp_ring_lost_est *x);

#define QP_RING_ROW_HINTS 256
struct qp_ring_agg {
	struct qp_htab rows;	/* struct scope_key -> struct scope_stats */
	struct qp_htab marks;	/* struct mark_key -> struct mark_stats */
	struct qp_htab values;	/* struct mark_key -> struct qp_ring_value */
	struct qp_htab vhist;	/* struct value_bucket_key -> count (bpf/scopes.h's buckets) */
	size_t max_rows;	/* rows + marks + values + buckets past it: counted table_full */
	qp_ring_log_fn log_fn;	/* where QPROF_LOG messages go (NULL: counted only) */
	void *log_arg;
	/* rows' indexes by key, direct-mapped, so that most durations skip
	 * the hash table's lookup (rows are never removed but by forget, which
	 * empties it) */
	struct qp_ring_row_hint {
		struct scope_key k;
		int64_t i;	/* -1: empty */
	} hint[QP_RING_ROW_HINTS];
};

struct qp_ring_spans;

/* Entries of every table: what max_rows bounds. */
static inline size_t qp_ring_agg_used(const struct qp_ring_agg *a)
{
	return a->rows.n + a->marks.n + a->values.n;
}

/* Value histogram buckets, all targets: a table of their own, as the BPF
 * collector's value_hist (65536), so that values spread over many buckets
 * never take the room of scope rows. */
#define QP_RING_VHIST_MAX 65536

/* ring_agg.c */
void qp_ring_agg_init(struct qp_ring_agg *a, size_t max_rows);
void qp_ring_agg_free(struct qp_ring_agg *a);
/* Forget PID's aggregates (rebuilds the tables). */
int qp_ring_agg_forget(struct qp_ring_agg *a, uint32_t pid);
/* A duration into PID's (site, parent) row: counted table_full when there
 * is no room. */
void qp_ring_agg_add(struct qp_ring_agg *a, uint32_t pid, uint64_t site, uint64_t parent, uint64_t dur,
		     struct qp_ring_counts *c);

/* Pair N records of the reader's ring (in order, contiguous, none lost
 * between them and the previous call's) into A. Records stamped before
 * MIN_TS (the attach, in the ring's clock) are skipped and counted. */
void qp_ring_feed(struct qp_ring_agg *a, struct qp_ring_reader *rd, const struct qprof_ring_rec *r,
		  size_t n, const struct qp_ring_clock *clk, bool mono, uint64_t min_ts,
		  struct qp_ring_counts *c);
/* LOST records were not read before the writer reused their slots: the
 * open scopes of the thread are dropped (counted after_loss) and noted, so
 * that their exits read later are not taken for scopes whose enter was
 * lost. LOST 0: the reader's state is reset (garbage), no gap. */
void qp_ring_gap(struct qp_ring_reader *rd, uint64_t lost, struct qp_ring_counts *c);

/* Append the scope rows of PID (all when pid <= 0) to *ROWS (*N of them,
 * realloc'ed); rows are (key, stats) pairs as in collect_scopes.h. */
struct qp_scope_row;
struct qp_mark_row;
int qp_ring_agg_rows(const struct qp_ring_agg *a, int pid, struct qp_scope_row **rows, size_t *n);
int qp_ring_agg_marks(const struct qp_ring_agg *a, int pid, struct qp_mark_row **rows, size_t *n);
/* Append PID's values with their histogram buckets (sorted) to *ROWS. */
struct qp_value_row;
int qp_ring_agg_values(const struct qp_ring_agg *a, int pid, struct qp_value_row **rows, size_t *n);
#endif

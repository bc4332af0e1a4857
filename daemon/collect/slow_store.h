/* slow_store.h - the slowest instances of each scope and what happened
 * inside them. The BPF collector sends a record per scope instance that
 * reaches its scope's threshold (scopes.h, struct slow_record); each is
 * joined, once the CPU collector has drained everything stamped before its
 * exit, with the thread's off-CPU intervals and CPU samples remembered in
 * two bounded histories, and kept in a reservoir of the QP_SLOW_KEEP
 * slowest of its (process, site), and in the reservoirs of the windows
 * open on it (slow_window.h). Every bound is counted when it bites.
 * No BPF and no locking (collect_cpu.c holds its lock); pure enough for
 * unit tests. */
#ifndef QPROF_SLOW_STORE_H
#define QPROF_SLOW_STORE_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cpu_table.h"
#include "bpf/scopes.h"

#define QP_SLOW_KEEP 32		/* instances kept per (process, site): the n of a query at most */
#define QP_SLOW_IVS 16		/* off-CPU intervals kept per instance (the longest) */
#define QP_SLOW_SAMPLES 64	/* CPU samples kept per instance */
#define QP_SLOW_FRAMES 64	/* frames kept per stack, each of kernel and user */
#define QP_SLOW_HIST 65536	/* samples, and intervals, remembered for the join */
#define QP_SLOW_PENDING 8192	/* records waiting for the join */
#define QP_SLOW_SCOPES 4096	/* reservoirs */
#define QP_SLOW_MAX_BYTES (64u << 20)	/* instances' memory; beyond, new ones are refused */
#define QP_SLOW_LOSSES 16	/* spans of time in which kernel events were lost, remembered */
#define QP_SLOW_WINDOWS 8	/* windows (seconds=) open at once; beyond: -EBUSY */
#define QP_SLOW_WIN_SITES 64	/* sites one window keeps instances of */

struct qp_slow_stack {
	uint16_t nk, nu;	/* kernel frames, then user frames, leaf first */
	uint64_t *ips;
};

struct qp_slow_iv {
	uint64_t ts_out, ts_wake, ts_in;	/* ts_wake 0: none (preempted) */
	uint32_t reason;			/* enum offcpu_reason */
	struct qp_slow_stack st;		/* at the switch-out */
};

struct qp_slow_sample {
	uint64_t ts;
	struct qp_slow_stack st;
};

struct qp_slow_inst {
	struct slow_record r;
	uint64_t off_ns, runq_ns, blocked_ns;	/* over every interval inside, kept or not */
	uint32_t nivs, ivs_more;		/* kept; left out (the shortest) */
	struct qp_slow_iv *ivs;			/* by time */
	uint32_t nsamples, samples_more;
	struct qp_slow_sample *samples;
	bool partial;	/* it began before the oldest history entry: some may be missing */
	size_t bytes;
};

struct qp_slow_hsample {
	uint32_t tgid, tid;
	uint64_t ts;
	int32_t kid, uid;	/* stack ids of the samples' table */
};

struct qp_slow_hoff {
	uint32_t tgid, tid;
	uint64_t ts_out, ts_wake, ts_in;
	uint32_t reason;
	int32_t kid, uid;	/* stack ids of the off-CPU table */
	uint32_t migrations;	/* made while it lasted */
};

/* A user page fault or irq run of a ring target's thread (offcpu.h,
 * struct kev_record): the ring collector's instances count them. */
struct qp_slow_hkev {
	uint32_t tgid, tid;
	uint64_t ts;
	uint32_t kind;		/* enum kev_kind */
	uint32_t ns;		/* an irq's */
};

struct qp_slow_res {
	uint32_t tgid;
	uint64_t site;
	uint32_t n;
	struct qp_slow_inst *v[QP_SLOW_KEEP];	/* in no order */
	uint64_t since_ns;	/* when its threshold rose above 0 (0: never: it saw every instance) */
	uint64_t min_kept;	/* the fastest kept once full (0 until then) */
	uint64_t written;	/* the threshold last given to BPF (0: none, every instance) */
};

struct qp_slow_counters {
	uint64_t records;	/* joined */
	uint64_t pending_lost;	/* no room in the pending queue */
	uint64_t refused;	/* no reservoir (QP_SLOW_SCOPES) or memory (QP_SLOW_MAX_BYTES) */
	uint64_t partial;	/* joined with a history that no longer reached its begin */
	uint64_t ring_missed;	/* ring collector instances overwritten before they were read */
	uint64_t kevents;	/* faults and irq runs of ring threads remembered (slow_kev.c) */
	uint64_t kevents_lost;	/* lost on their way (kev_ring full, bad records) */
	uint64_t received;	/* records queued (slow_rb, flight recorders) */
	uint64_t windows_open;	/* now */
	uint64_t window_records;	/* instances a window kept (joined or copied) */
	uint64_t windows_refused;	/* QP_SLOW_WINDOWS were open */
};

struct qp_slow_win;	/* slow_window.h */

struct qp_slow_store {
	struct qp_slow_hsample *hs;	/* QP_SLOW_HIST, a ring */
	uint64_t hs_n;			/* written so far */
	struct qp_slow_hoff *ho;
	uint64_t ho_n;
	struct slow_record *pending;	/* QP_SLOW_PENDING */
	size_t npending;
	struct qp_slow_res *res;
	size_t nres, capres;
	size_t bytes;
	struct qp_slow_counters cnt;
	/* slow_kev.c: the kernel figures of the ring collector's instances */
	struct qp_slow_hkev *hk;	/* QP_SLOW_HIST, a ring; NULL: not known */
	uint64_t hk_n;
	uint64_t loss[QP_SLOW_LOSSES][2];	/* [from, to] ns, a ring */
	uint64_t nloss;
	struct qp_slow_win *win[QP_SLOW_WINDOWS];	/* NULL: a free slot */
	uint64_t win_ids;				/* the last window id given */
};

/* Called with each new threshold of (TGID, SITE): the least duration kept. */
typedef void (*qp_slow_threshold_fn)(void *arg, uint32_t tgid, uint64_t site, uint64_t min_ns);

int qp_slow_init(struct qp_slow_store *s);	/* 0 or -ENOMEM */
void qp_slow_free(struct qp_slow_store *s);	/* accepts a zeroed one */
void qp_slow_note_sample(struct qp_slow_store *s, const struct qp_slow_hsample *h);
void qp_slow_note_off(struct qp_slow_store *s, const struct qp_slow_hoff *h);
void qp_slow_queue(struct qp_slow_store *s, const struct slow_record *r);
/* Whether the instance of R would enter its reservoir or an open window's
 * (for sources without a threshold in BPF: the ring collector's). */
bool qp_slow_wanted(const struct qp_slow_store *s, const struct slow_record *r);
/* Join every pending record with the histories (stacks read from the two
 * tables) and keep the slowest; NOW_NS stamps a threshold's rise. */
void qp_slow_join(struct qp_slow_store *s, const struct qp_cpu_table *samples, const struct qp_cpu_table *off,
		  uint64_t now_ns, qp_slow_threshold_fn fn, void *arg);
void qp_slow_forget(struct qp_slow_store *s, uint32_t pid);
/* Give BPF the threshold of (TGID, SITE) through FN when it changed: the
 * least of its reservoir's (0 until full) and every open window's on it. */
void qp_slow_sync_threshold(struct qp_slow_store *s, uint32_t tgid, uint64_t site, qp_slow_threshold_fn fn,
			    void *arg);
/* The index of the fastest of the N instances of V (0 when N is 0). */
uint32_t qp_slow_fastest(struct qp_slow_inst *const *v, uint32_t n);
/* A deep copy of IN (malloc'ed; NULL on no memory); freeing one. */
/* slow_inst.c: a copy of IN (NULL: no memory); FROM's copy into TO (0 or
 * -ENOMEM: TO holds what was copied, clear it); IN's memory freed, not IN. */
struct qp_slow_inst *qp_slow_inst_dup(const struct qp_slow_inst *in);
int qp_slow_inst_copy(const struct qp_slow_inst *from, struct qp_slow_inst *to);
void qp_slow_inst_clear(struct qp_slow_inst *in);
void qp_slow_inst_free(struct qp_slow_inst *in);	/* accepts NULL */

/* slow_kev.c. Start remembering the faults and irq runs of ring threads
 * (0 or -ENOMEM); until then the ring collector's instances have no
 * migrations, page faults or irq time (QPROF_SLOW_NO_KERNEL). */
int qp_slow_kev_enable(struct qp_slow_store *s);
void qp_slow_note_kev(struct qp_slow_store *s, const struct qp_slow_hkev *h);
/* Kernel events (faults, irq runs or off-CPU intervals) were lost between
 * FROM_NS and TO_NS: an instance overlapping that span is partial. */
void qp_slow_kev_loss(struct qp_slow_store *s, uint64_t from_ns, uint64_t to_ns);
/* The migrations (MIGRATIONS: of the intervals inside), page faults and
 * irq time of IN, an instance of the ring collector, once enabled. */
void qp_slow_kev_join(const struct qp_slow_store *s, struct qp_slow_inst *in, uint64_t migrations);

/* Deep copies of the instances of process PID whose site KEEP() accepts,
 * into *OUT (free with qp_slow_insts_free); 0 or -ENOMEM. */
int qp_slow_copy(const struct qp_slow_store *s, uint32_t pid, bool (*keep)(void *arg, uint64_t site),
		 void *arg, struct qp_slow_inst **out, size_t *n, uint64_t *since_ns);
void qp_slow_insts_free(struct qp_slow_inst *v, size_t n);
#endif

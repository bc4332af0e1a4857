/* ring_internal.h - the ring collector's state, shared by its two files
 * (ring_collect.c: BPF, announcements, the drain thread; ring_query.c:
 * attachments and what the model reads). Nothing else includes it. */
#ifndef QPROF_RING_INTERNAL_H
#define QPROF_RING_INTERNAL_H
#include <linux/types.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "ring_collect.h"
#include "ring_spans.h"
#include "bpf/ringreg.h"

#define RING_MIN_REC 64
#define RING_MAX_REC (1u << 24)
/* more records than a writer publishes between two reads of its ring, ever
 * (2^40: 3 hours at 10 ns a record): a head past it is forged */
#define RING_HEAD_LEAP_MAX (1ull << 40)
#define MAX_PIDS 4096
#define RING_PENDING 1024	/* announcements of processes not (yet) targets, kept */
#define RING_IDLE_US 20000	/* the drain's period while it holds no ring (announcements wake it) */
/* A process's rings are counted out this long after it was first found
 * gone (its leader's memory gone, other threads maybe still exiting) */
#define RING_GONE_GRACE_NS 50000000ull

/* The accounting of one ring, records by their index (ring.h: record i
 * is the i-th the ring ever took; head is one past the last published):
 *
 *   base + read + lost == tail <= head
 *
 * base: records written before this qprofd watched the ring (not its
 * session's: neither read nor lost); read: records copied out and fed to
 * the pairing (accepted, garbage or before the attach alike); lost: records
 * the writer overwrote before they were read, or that were never read
 * because the process ended first (counted from the head its exiting
 * threads left, ringreg.bpf.c). Every move of tail adds to exactly one of
 * the three, so at any quiescent point (the writer stopped, one drain pass
 * after) tail == head: read + lost == head - base, from the ring's first
 * record (base 0 for a ring made while watched). */
struct ring_ent {
	uint32_t pid;
	uint64_t addr, size;
	uint32_t nrec;
	uint64_t hdr;			/* where its records start (version 1: 64) */
	bool mono;
	uint64_t tail;			/* next record to read */
	uint64_t base, read, lost;	/* the accounting above */
	uint64_t head;			/* the last head seen (read, or an exiting thread's) */
	uint64_t ann_head;		/* the head its first announcement saw (1: a new ring) */
	bool ann_head_ok;
	bool fresh;			/* never read yet */
	bool start_unknown;		/* its first read could not tell where the session began */
	uint32_t owner;			/* the tid of its last announcement */
	uint64_t unreadable_ns;		/* CLOCK_MONOTONIC it became unreadable (0: readable) */
	uint64_t gone_ns;		/* CLOCK_MONOTONIC its process was first found gone */
	uint64_t named_tid;		/* the owner whose name was last read:
					 * its ring generation << 32 | its tid */
	uint64_t min_ts;		/* records stamped before it are not the target's */
	uint64_t serial;		/* which entry it is: a pass's job applies only to its own */
	bool renewed;			/* taken anew by a read: its announcement still to come */
	struct qp_ring_reader rd;
};

struct ring_pid {
	uint32_t pid;
	uint64_t watch_ts, watch_ns;	/* TSC and CLOCK_MONOTONIC at qp_ring_watch */
	uint64_t from_ts, from_ns;	/* its records count from then (a --binary's attach) */
	struct qp_ring_counts c;
	size_t rings;
	struct qp_ring_flight fl;	/* its flight recorder */
	uint64_t feed_seq;		/* its next instance for qp_ring_instances_all */
	struct qp_htab names;		/* tid -> struct ring_tnames: the threads that had it */
	/* the rings it no longer has (the process or ring gone): their
	 * accounting and their share of the lost events, kept */
	uint64_t gone_head, gone_base, gone_read, gone_lost, gone_bytes_max;
	struct qp_ring_lost_est gone_est;
	uint64_t rings_gone;
	uint32_t parent;		/* forked from this ring target (qp_ring_watch_child), 0 */
};
#define RING_MAX_NAMES 65536		/* thread names kept per process */

/* The threads a tid of a process was seen with, oldest first: each its
 * start (CLOCK_MONOTONIC ns, /proc's task stat; 0 unknown) and its comm
 * when its ring was first read. A tid used again by a later thread gets
 * an entry of its own, so a record is named by the thread that had the
 * tid at its time, never by an earlier one. */
#define RING_NAMES_PER_TID 4
struct ring_tnames {
	uint32_t n;
	struct {
		uint64_t start_ns;
		char comm[16];
	} v[RING_NAMES_PER_TID];
};

struct qp_ring {
	struct ringreg *skel;
	struct ring_buffer *rb;
	struct bpf_link *exit_link;	/* ringreg.bpf.c's ring_thread_exit */
	pthread_t thread;
	bool running;
	bool multi;	/* ring_register attaches as a uprobe-multi link (closed in parallel) */
	volatile int stop;
	pthread_mutex_t lock;		/* everything below */
	struct qp_ring_opts o;
	struct qp_ring_agg agg;
	struct qp_ring_spans spans;	/* spans across threads, all targets */
	uint64_t pass_done_ns;		/* the last drain pass done began then */
	struct qp_ring_clock clk;
	uint64_t cal_tsc, cal_ns;	/* the first calibration pair (the slope's base) */
	struct ring_ent *ents;
	size_t nents;
	uint64_t serial;		/* the last entry's */
	struct ring_pid *pids;
	size_t npids;
	struct qp_ring_global glob;
	struct ring_announce pend[RING_PENDING]; /* the last ones from no target */
	size_t npend;			/* ever kept */
	bool busy;			/* the drain's: a ring was more than half full this pass */
	struct qprof_ring_rec *buf;	/* one ring's records, copied out */
	size_t bufcap;
};

/* ring_collect.c, G->lock held: take the ring announced by A (checked,
 * its header read without the lock); the watch of PID, or NULL. */
void qp_ring_take_locked(struct qp_ring *g, const struct ring_announce *a);
struct ring_pid *qp_ring_pid_locked(struct qp_ring *g, uint32_t pid);
/* ring_collect.c, G->lock held (dropped and taken again): PID's copy of
 * its parent's ring at ADDR (SIZE bytes) taken, if it has one. */
void qp_ring_take_copy_locked(struct qp_ring *g, uint32_t pid, uint64_t addr, uint64_t size);

/* One ring's reading, made without the lock. */
struct ring_job {
	uint32_t pid;
	uint64_t addr, size, tail;	/* as the entry was when the pass began */
	uint64_t hdr;			/* where its records start */
	uint32_t nrec;			/* 0: its header not checked yet */
	bool checked;			/* ... and checked by this read (nrec, hdr, mono set) */
	bool mono;
	uint64_t known_tid;		/* the owner whose name the entry has (named_tid) */
	uint64_t serial;		/* the entry's */
	uint32_t tid;			/* a new owner ... */
	uint64_t owner;			/* ... as named_tid has it, */
	uint64_t start_ns;		/* when it started (0 unknown) */
	char comm[16];			/* ... and its name, read from /proc ("" if gone) */
	enum { JOB_NONE, JOB_READ, JOB_DROP, JOB_BAD, JOB_UNREADABLE } what;
	uint64_t head, lapped, skip, n; /* JOB_READ: records [tail, head) in buf, the first skip
					 * of them overwritten while read; lapped lost before */
};

/* ring_read.c */
uint64_t qp_ring_mono_ns(void);
/* T gets (START_NS, COMM): the thread's entry renamed, or a new one (the
 * oldest dropped when T is full). */
void qp_ring_tnames_note(struct ring_tnames *t, uint64_t start_ns, const char *comm);
/* The name of the thread of T that had the tid at AT_NS (CLOCK_MONOTONIC;
 * 0: the newest), NULL when none: none had started by then, or the one
 * that has the tid now (started LIVE_START_NS, 0 unknown or gone) is not
 * in T and had. */
const char *qp_ring_tnames_at(const struct ring_tnames *t, uint64_t at_ns, uint64_t live_start_ns);
/* Read LEN bytes at ADDR of PID: 0, or -errno (-EFAULT for a short read). */
int qp_ring_peek(uint32_t pid, uint64_t addr, void *dst, size_t len);
uint64_t qp_ring_rec_offset(const struct qprof_ring *h);
bool qp_ring_header_ok(const struct qprof_ring *h, uint64_t size);
/* Read what the ring holds past the job's tail into g->buf (the drain
 * thread's alone), without the lock. */
void qp_ring_job_read(struct qp_ring *g, struct ring_job *j);
/* Under the lock: the job's reading into its entry, which is then kept,
 * dropped, or taken anew (the ring at its address is another than the one
 * it read: that one was unmapped, a new one mapped there). */
enum qp_ring_fate { RING_KEEP, RING_DROP, RING_RENEW };
enum qp_ring_fate qp_ring_job_apply(struct qp_ring *g, struct ring_ent *e, struct ring_pid *p,
				    const struct ring_job *j);

#endif

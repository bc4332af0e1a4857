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
#include "ringreg.h"

#define RING_MIN_REC 64
#define RING_MAX_REC (1u << 24)
#define MAX_PIDS 4096
#define RING_PENDING 1024	/* announcements of processes not (yet) targets, kept */

struct ring_ent {
	uint32_t pid;
	uint64_t addr, size;
	uint32_t nrec;
	uint64_t hdr;			/* where its records start (version 1: 64) */
	bool mono;
	uint64_t tail;			/* next record to read */
	uint32_t named_tid;		/* the owner whose name was last read */
	uint64_t min_ts;		/* records stamped before it are not the target's */
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
	struct qp_htab names;		/* tid -> char[16]: its comm when its ring was first read */
};
#define RING_MAX_NAMES 65536		/* thread names kept per process */

struct qp_ring {
	struct ringreg *skel;
	struct ring_buffer *rb;
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
	struct ring_pid *pids;
	size_t npids;
	struct qp_ring_global glob;
	struct ring_announce pend[RING_PENDING]; /* the last ones from no target */
	size_t npend;			/* ever kept */
	struct qprof_ring_rec *buf;	/* one ring's records, copied out */
	size_t bufcap;
};

#endif

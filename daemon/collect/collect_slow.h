/* collect_slow.h - the slowest instances' side of the CPU collector
 * (private to daemon/collect): the store of slow_store.h behind its own
 * lock, the ring collector's flight recorders fed into it, and the
 * thresholds written back to BPF. collect_cpu.c drives it: the drain
 * thread fetches the ring collector's instances before a consume and
 * applies each batch (cpu_batch.h) after it, holding the collector's lock
 * for the tables the join reads; readers (copies, sites, windows) take
 * only this side's lock. Lock order: the collector's, then this one. */
#ifndef QPROF_COLLECT_SLOW_H
#define QPROF_COLLECT_SLOW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cpu_batch.h"
#include "slow_store.h"

struct qp_slow_side;
struct qp_ring;

/* SLOW_MIN_FD: the scopes object's slow_min map. 0, -ENOMEM. */
int qp_slow_side_new(struct qp_slow_side **out, int slow_min_fd);
void qp_slow_side_free(struct qp_slow_side *s);	/* accepts NULL */
/* Remember ring threads' faults and irq runs (kev_ring): 0 or -ENOMEM;
 * off again when the ring could not be read after all. */
int qp_slow_side_kev_on(struct qp_slow_side *s);
void qp_slow_side_kev_off(struct qp_slow_side *s);
/* The ring collector to feed from (NULL: none); once this returns, no
 * fetch uses the previous one. */
void qp_slow_side_set_ring(struct qp_slow_side *s, struct qp_ring *ring);
/* Drain thread, before a consume: the ring collector's new instances
 * (that ended, so their kernel events are in the ring buffers) into B. */
void qp_slow_side_fetch(struct qp_slow_side *s, struct qp_cpu_batch *b);
/* Drain thread, the collector's lock held, after qp_cpu_batch_apply:
 * B's records remembered and queued, then joined with the histories
 * (stacks read from SAMPLES and OFF). KEV_LOST and OFF_LOST: BPF's
 * counters of kernel events and intervals lost (or never begun) so far. */
void qp_slow_side_apply(struct qp_slow_side *s, const struct qp_cpu_batch *b, const struct qp_cpu_table *samples,
			const struct qp_cpu_table *off, uint64_t kev_lost, uint64_t off_lost);
/* PID's instances gone, and its slots of the thresholds' slow_floor freed. */
void qp_slow_side_forget(struct qp_slow_side *s, uint32_t pid);
/* The scopes object's slots of slow thresholds (bpf/scopes.h), written
 * beside slow_min from now on (NULL: none). */
struct slow_floor;
void qp_slow_side_set_floor(struct qp_slow_side *s, struct slow_floor *floor);
/* PID's thresholds out of BPF's slow_min. */
void qp_slow_side_forget_thresholds(struct qp_slow_side *s, uint32_t pid);
void qp_slow_side_counters(struct qp_slow_side *s, struct qp_slow_counters *out);
int qp_slow_side_copy(struct qp_slow_side *s, uint32_t pid, bool (*keep)(void *arg, uint64_t site), void *arg,
		      struct qp_slow_inst **out, size_t *n, uint64_t *since_ns);
int qp_slow_side_sites(struct qp_slow_side *s, uint32_t pid, uint64_t **sites, size_t *n);
int qp_slow_side_window_open(struct qp_slow_side *s, uint32_t pid, const uint64_t *named, size_t nnamed,
			     const uint64_t *other, size_t nother, unsigned int keep, uint64_t *id);
/* A window's end stamped now (its close follows a drain). */
void qp_slow_side_window_end(struct qp_slow_side *s, uint64_t id);
int qp_slow_side_window_close(struct qp_slow_side *s, uint64_t id, struct qp_slow_inst **out, size_t *n,
			      bool *complete);
#endif

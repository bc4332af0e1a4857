/* collect_offcpu.h - the off-CPU side of the CPU collector (private to
 * daemon/collect): the kernel-event programs of bpf/offcpu.bpf.h, loaded
 * with the sampler, their ring buffers read into the drain's batch
 * (cpu_batch.h), and the scopes' kernel figures (scope_kstats). */
#ifndef QPROF_COLLECT_OFFCPU_H
#define QPROF_COLLECT_OFFCPU_H
#include <stdbool.h>
#include <stddef.h>
#include "collect_cpu.h"
#include "cpu_batch.h"

#define QP_OFF_PROGS 8	/* tracepoint programs of offcpu.bpf.h */

struct profile;
struct ring_buffer;

struct qp_offcpu {
	struct bpf_link *links[QP_OFF_PROGS];
	unsigned int nlinks;
	char error[160];	/* why the kernel events are not traced, "" when they are */
	bool kev;		/* kev_ring is read (ring threads' faults and irq time) */
};

/* Add off_ring (and with KEV kev_ring) to RB, read into B, and attach the
 * programs of SKEL. A failure leaves o->error set and the CPU sampler
 * working: never fatal. A kev_ring that could not be added leaves o->kev
 * false. */
void qp_offcpu_start(struct qp_offcpu *o, struct profile *skel, struct ring_buffer *rb, struct qp_cpu_batch *b,
		     bool kev);
void qp_offcpu_stop(struct qp_offcpu *o);
/* Every scope's kernel figures of map FD (PID > 0: that process only),
 * sorted by key (collect_cpu.h, qp_cpu_kstats_read). */
int qp_offcpu_kstats_read(int fd, int pid, struct qp_kstats_row **out, size_t *n);
#endif

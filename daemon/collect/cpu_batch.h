/* cpu_batch.h - what one drain of the CPU collector's ring buffers read,
 * held privately by the drain thread: CPU samples (their user stacks
 * already unwound by CFI when they carried a copy), off-CPU intervals,
 * kernel events of ring threads and slow-instance records, in the order
 * read. The ring buffers' callbacks decode into a batch without any lock;
 * qp_cpu_batch_apply then counts it into the tables under the collector's
 * lock, which is held only for that (collect_cpu.c). Below collect_cpu.c,
 * collect_offcpu.c and collect_slow.c, which all read it; no BPF. */
#ifndef QPROF_CPU_BATCH_H
#define QPROF_CPU_BATCH_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cpu_table.h"
#include "bpf/offcpu.h"
#include "bpf/profile.h"
#include "bpf/scopes.h"

#define QP_USER_ADDR_END (1ull << 56)	/* x86-64 user space, 5-level paging included */
#define QP_CPU_BATCH_MAX (1u << 18)	/* records one drain holds; beyond, counted lost */
/* Of those, slow-instance records may take at most half: a ring target that
 * writes flat out feeds hundreds of thousands of instances a drain, and its
 * CPU samples, intervals and kernel events keep the other half. */
#define QP_CPU_BATCH_INST_MAX (QP_CPU_BATCH_MAX / 2)

struct qp_unwind;
struct qp_cpu_cfi;

enum qp_cpu_rec_kind {
	QP_CPU_REC_SAMPLE,	/* a CPU sample */
	QP_CPU_REC_OFF,		/* an off-CPU interval */
	QP_CPU_REC_KEV,		/* a fault or irq run of a ring thread */
	QP_CPU_REC_INST,	/* a slow instance from the scopes object's slow_rb */
	QP_CPU_REC_RING_INST,	/* a slow instance of the ring collector's flight recorders */
};

struct qp_cpu_rec {
	uint8_t kind;
	bool kept;		/* applied: counted in its table (kid, uid set) */
	uint32_t tgid, tid;
	uint32_t nkern, nuser, nopen;	/* frames at ips: kernel, user, open scopes */
	size_t ips;		/* their offset in the batch's ips */
	uint64_t scopes[QPROF_SAMPLE_SCOPES];
	char comm[16];
	uint64_t weight;	/* a sample 1; an interval its nanoseconds */
	uint64_t ts;		/* a sample's, a kernel event's */
	uint64_t span_site, span_id;	/* a sample's open span (0: none) */
	uint64_t ts_out, ts_wake, ts_in;	/* an interval's */
	uint32_t reason, migrations;
	uint32_t kev_kind, kev_ns;
	int32_t kid, uid;	/* stack ids once applied */
	struct slow_record inst;
};

/* Counted by the decoding and the applying; added into the collector's. */
struct qp_cpu_counts {
	uint64_t kept, lost;		/* samples counted; lost here (caps, bad records) */
	uint64_t off_kept, off_lost;	/* intervals alike */
	uint64_t copied, dwarf, fp;	/* samples with a stack copy; which stack was kept */
	uint64_t kev_bad;		/* bad kernel-event records */
	uint64_t inst_lost;		/* slow-instance records with no room in the batch */
	uint64_t walked;		/* samples whose user stack the kernel walked (cpu_cfi.c) */
	uint64_t verify[4];		/* those checked against libdwfl: same, prefix, differ, not unwound */
};

struct qp_cpu_batch {
	struct qp_cpu_rec *v;
	size_t n, cap;
	size_t ninst;		/* of n, slow-instance records */
	uint64_t *ips;
	size_t nips, capips;
	struct qp_cpu_counts cnt;	/* of this batch */
	struct qp_unwind *uw;		/* NULL: frame pointers only */
	struct qp_cpu_cfi *cfi;		/* the kernel's walk (cpu_cfi.h); NULL: none */
	uint64_t uips[QPROF_STACK_DEPTH];	/* the unwound stack of the sample at hand */
};

/* The ring buffers' callbacks (CTX: the batch). */
int qp_cpu_batch_on_sample(void *ctx, void *data, size_t size);
int qp_cpu_batch_on_interval(void *ctx, void *data, size_t size);
int qp_cpu_batch_on_kev(void *ctx, void *data, size_t size);
int qp_cpu_batch_on_instance(void *ctx, void *data, size_t size);
/* A slow instance of the ring collector (0 or -ENOMEM: counted lost). */
int qp_cpu_batch_ring_inst(struct qp_cpu_batch *b, const struct slow_record *r);

/* Count the samples and intervals of B into SAMPLES and OFF at clock NOW
 * (s), setting each record's kept, kid and uid; the counts into *TOTAL. */
void qp_cpu_batch_apply(struct qp_cpu_batch *b, struct qp_cpu_table *samples, struct qp_cpu_table *off,
			uint32_t now, struct qp_cpu_counts *total);
/* Empty B for the next drain (its memory kept; beyond 1 MiB given back). */
void qp_cpu_batch_reset(struct qp_cpu_batch *b);
void qp_cpu_batch_free(struct qp_cpu_batch *b);
static inline const uint64_t *qp_cpu_rec_ips(const struct qp_cpu_batch *b, const struct qp_cpu_rec *r)
{
	return b->ips + r->ips;
}
#endif

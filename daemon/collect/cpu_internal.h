/* cpu_internal.h - the state of the CPU collector shared by its two
 * files: collect_cpu.c (samples, the drain thread, perf events) and
 * collect_offcpu.c (off-CPU intervals and the scopes' kernel figures from
 * the same BPF object). Private to daemon/collect. */
#ifndef QPROF_CPU_INTERNAL_H
#define QPROF_CPU_INTERNAL_H
#include <pthread.h>
#include <bpf/libbpf.h>
#include "collect_cpu.h"
#include "cpu_table.h"
#include "profile.skel.h"
#include "ring_collect.h"
#include "ring_pair.h"
#include "slow_store.h"
#include "unwind.h"

#define QP_OFF_PROGS 8	/* tracepoint programs of offcpu.bpf.h */

struct qp_cpu {
	struct profile *skel;
	struct bpf_link **links;
	int *pfds;
	unsigned int nevents;
	int ncpus;
	struct ring_buffer *rb;
	pthread_t thread;
	bool thread_started, stopping;
	pthread_cond_t cond;
	/* what /api/status shows, copied at the end of each drain: a status
	 * request takes only pub_lock (held for the copy), never waits for a
	 * drain, which unwinds samples and may read a process's files */
	pthread_mutex_t pub_lock;
	struct {
		uint64_t kept, lost, off_kept, off_lost, copied, dwarf, fp, aged, walked, verify[4];
		size_t bytes;
		struct qp_unwind_stats uw;
		struct qp_slow_counters slow;
	} pub;
	pthread_mutex_t lock;		/* all below, and ring consumption */
	struct qp_cpu_table tab;
	uint64_t kept, lost;		/* samples counted; lost here (caps, bad records) */
	uint64_t t0_ns;			/* the table's clock starts here (monotonic) */
	uint32_t aged_at;		/* table clock of the last aging pass */
	enum qp_cpu_unwind_mode mode;
	struct qp_unwind *uw;		/* NULL in QP_CPU_UNWIND_FP mode */
	uint64_t copied, dwarf_used, fp_kept;	/* samples with a copy; which stack was kept */
	uint64_t uips[QPROF_STACK_DEPTH];	/* the unwound stack of the sample at hand */
	/* the kernel's walk by compiled tables (cpu_cfi.c): NULL when it does not run */
	struct qp_cfi_bpf *cfi;
	uint64_t walked;		/* samples whose stack the kernel walked */
	char cfi_error[128];		/* why it does not run, "" */
	bool cfi_verify;		/* QPROF_CFI_VERIFY=1: kept walks carry a copy too, checked */
	uint64_t verify[4];		/* against libdwfl: same, prefix, differ, not unwound */
	/* off-CPU intervals (collect_offcpu.c): weights in ns, same keys */
	struct qp_cpu_table off;
	uint64_t off_kept, off_lost;	/* intervals counted; lost here (caps, bad records) */
	struct bpf_link *off_links[QP_OFF_PROGS];
	unsigned int noff_links;
	char off_error[160];		/* why the kernel events are not traced, "" when they are */
	/* slow instances (slow_store.h): the scopes object's slow_rb is the
	 * first ring of rb, so its records are read before the samples and
	 * intervals stamped before their exits, which the same consume reads */
	struct qp_slow_store slow;
	bool slow_on;
	int slow_min_fd;
	struct qp_ring *ring;		/* its flight recorders feed the slow instances too */
	struct qp_ring_inst *ring_buf;
	uint32_t *ring_pids;		/* the pid of each of ring_buf */
	/* losses of kernel events seen so far (qp_offcpu_losses_locked) */
	uint64_t kev_lost_seen, off_lost_seen, losses_at;
	bool kev_bad;			/* a bad kev record since */
};

#define QP_USER_ADDR_END (1ull << 56)	/* x86-64 user space, 5-level paging included */

/* Whether the stack and open-scope lengths of a CPU sample or off-CPU
 * record (bytes, from BPF) are bad: not whole frames, or over their bounds. */
static inline bool qp_cpu_lens_bad(uint32_t kern_len, uint32_t user_len, uint32_t open_len)
{
	return kern_len % 8 || user_len % 8 || open_len % 8 || kern_len > QPROF_STACK_DEPTH * 8 ||
	       user_len > QPROF_STACK_DEPTH * 8 || open_len > QPROF_SAMPLE_OPEN_MAX * 8;
}

/* IN from a checked record: IPS holds KERN_LEN bytes of kernel stack, then
 * USER_LEN of user stack, then OPEN_LEN of a ring thread's open scopes.
 * A stack ends at its first 0 (where the frame-pointer chain ended); a
 * walk through code without frame pointers can also derail into values
 * that are no user address (the kernel half): the user stack ends before
 * them. Weight 1. */
static inline void qp_cpu_fill_in(struct qp_cpu_sample_in *in, uint32_t tgid, const void *ips, uint32_t kern_len,
				  uint32_t user_len, uint32_t open_len, const uint64_t *scopes, const char *comm)
{
	uint32_t i;

	in->tgid = tgid;
	in->tid = 0;
	in->kern = ips;
	in->nkern = kern_len / 8;
	in->user = in->kern + in->nkern;
	in->nuser = user_len / 8;
	for (i = 0; i < in->nkern; i++)
		if (!in->kern[i])
			in->nkern = i;
	for (i = 0; i < in->nuser; i++)
		if (!in->user[i] || in->user[i] >= QP_USER_ADDR_END)
			in->nuser = i;
	in->scopes = scopes;
	/* right after the user stack as sent (before the cut above) */
	in->open = (const uint64_t *)ips + (kern_len + user_len) / 8;
	in->nopen = open_len / 8;
	in->comm = comm;
	in->weight = 1;
}

/* cpu_cfi.c: the kernel's walk. Prepare sizes its maps before the load;
 * start begins loading tables after it (a failure leaves c->cfi NULL and
 * c->cfi_error set: the copy path serves alone); sample notes one record
 * (c->lock held); the figures go into OUT. */
int qp_cpu_cfi_prepare(struct qp_cpu *c, char *err, size_t errlen);
void qp_cpu_cfi_start(struct qp_cpu *c);
bool qp_cpu_cfi_sample(struct qp_cpu *c, const struct cpu_sample *r, const struct qp_cpu_sample_in *in);
void qp_cpu_cfi_off(struct qp_cpu *c, uint32_t tgid, uint32_t walk);	/* an off-CPU interval's walk */
void qp_cpu_cfi_figures(struct qp_cpu *c, struct qp_cpu_unwind_figures *out);

/* Copy the figures /api/status shows into c->pub; the caller holds c->lock. */
void qp_cpu_publish_locked(struct qp_cpu *c);

/* collect_offcpu.c: attach the kernel-event programs and add off_ring to
 * c->rb (after the load). A failure leaves c->off_error set and the CPU
 * sampler working: never fatal. */
void qp_offcpu_start(struct qp_cpu *c);
void qp_offcpu_stop(struct qp_cpu *c);
/* Everything the ring buffers hold into the tables, then the pending
 * slow instances joined; the caller holds c->lock. */
void qp_cpu_drain_locked(struct qp_cpu *c);
/* A full reservoir's threshold into the scopes object's slow_min (ARG: c). */
void qp_cpu_slow_threshold(void *arg, uint32_t tgid, uint64_t site, uint64_t min_ns);
/* Queue the ring collector's new instances that would enter their
 * reservoirs (before a consume: their kernel events were sent before
 * they ended). The caller holds c->lock. */
void qp_slow_ring_feed(struct qp_cpu *c);
/* The BPF per-CPU counter K (profile.h) summed over CPUs; 0 when it
 * cannot be read. */
uint64_t qp_cpu_pcounter(struct qp_cpu *c, __u32 k);
/* After a consume: a span of time in which kernel events of ring threads
 * (or intervals) were lost, if any, to the slow store; c->lock held. */
void qp_offcpu_losses_locked(struct qp_cpu *c);
/* Delete PID's scope kernel figures. */
void qp_offcpu_forget(struct qp_cpu *c, uint32_t pid);
/* Intervals kept and lost; the caller holds c->lock, having drained. */
void qp_offcpu_counters_locked(struct qp_cpu *c, uint64_t *kept, uint64_t *lost);
#endif

/* cpu_events.h - the CPU collector's BPF object and perf events (private to
 * daemon/collect, below collect_cpu.c): the sampler loaded with its maps
 * shared and sized, a cpu-clock perf event per online CPU with the sampler
 * attached, and the helpers of its snapshots. */
#ifndef QPROF_CPU_EVENTS_H
#define QPROF_CPU_EVENTS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect_cpu.h"

struct profile;
struct bpf_link;
struct bpf_program;

struct qp_cpu_events {
	struct bpf_link **links;
	int *pfds;
	unsigned int n;		/* events open */
};

/* Open and load bpf/profile.bpf.c into *OUT (destroyed by the caller
 * whatever happens), sharing THREAD_STACKS_FD and RING_TIDS_FD (-1:
 * none), its ring sized for FREQ on NCONF CPUs. 0 or -errno with ERR. */
struct qp_cpu_cfi;
/* CFI: the kernel walk's side, its maps sized before the load (cpu_cfi.h). */
int qp_cpu_skel_open(struct profile **out, struct qp_cpu_cfi *cfi, int thread_stacks_fd, int ring_tids_fd,
		     unsigned int off_rb_bytes,
		     unsigned int freq, long nconf,
		     bool all, enum qp_cpu_unwind_mode mode, char *err, size_t errlen);
/* A cpu-clock event at FREQ on each online CPU of NCONF, PROG attached to
 * each: 0, or -errno with ERR (close EV whatever happens). */
int qp_cpu_events_open(struct qp_cpu_events *ev, struct bpf_program *prog, unsigned int freq, long nconf,
		       char *err, size_t errlen);
void qp_cpu_events_close(struct qp_cpu_events *ev);
/* Delete the keys of PID from map FD, whose keys (of KSIZE bytes, at most
 * a scope_key) begin with the tgid. */
void qp_cpu_delete_pid_keys(int fd, size_t ksize, uint32_t pid);
/* The order of snapshot rows: by key. */
int qp_cpu_raw_cmp(const void *a, const void *b);
/* BPF's per-CPU counter K (profile.h) of SKEL summed over NCPUS; 0 when it
 * cannot be read. */
uint64_t qp_cpu_pcounter(struct profile *skel, int ncpus, __u32 k);
/* The user-space unwinder's figures ST into OUT. */
struct qp_unwind_stats;
void qp_cpu_unwind_stats_fill(const struct qp_unwind_stats *st, struct qp_cpu_unwind_figures *out);
#endif

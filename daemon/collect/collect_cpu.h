/* collect_cpu.h - the user side of bpf/profile.bpf.c: a cpu-clock perf
 * event per online CPU at the chosen frequency, the set of sampled
 * processes, and reads of the sample counts and stacks (stack ids are the
 * daemon's own, stable for as long as a sample uses them). Snapshots, never
 * resets: several readers (windows of different lengths) share one stream of
 * samples by taking differences. Thread-safe (one mutex). */
#ifndef QPROF_COLLECT_CPU_H
#define QPROF_COLLECT_CPU_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "profile.h"

struct qp_cpu;

/* How user stacks are walked (--unwind): frame pointers only; or also a
 * copy of the stack unwound by CFI, for targets (dwarf) or for every
 * process sampled (dwarf-all, with --all). */
enum qp_cpu_unwind_mode { QP_CPU_UNWIND_FP, QP_CPU_UNWIND_DWARF, QP_CPU_UNWIND_DWARF_ALL };
const char *qp_cpu_unwind_mode_name(enum qp_cpu_unwind_mode m);
int qp_cpu_unwind_mode_parse(const char *s, enum qp_cpu_unwind_mode *out); /* 0 or -EINVAL */

/* What the CFI unwinding did (all processes, since start). */
struct qp_cpu_unwind_figures {
	const char *mode;	/* static */
	uint64_t copied;	/* samples that carried a stack copy */
	uint64_t copy_fail;	/* copy wanted, none made (BPF): frame pointers only */
	uint64_t copy_short;	/* copies under 16 KiB: the stack ended nearer */
	uint64_t dwarf, fp;	/* samples with a copy: the stack kept was the CFI one / the FP one */
	uint64_t complete, partial, truncated, loops, no_module, refreshes, errors, deferred; /* unwind.h */
};

struct qp_cpu_raw {
	struct sample_key key;
	uint64_t count;
	char comm[16];
};

struct qp_cpu_snapshot {
	size_t n;
	struct qp_cpu_raw *v;	/* sorted by key */
	uint64_t samples, lost;
	uint64_t mono_ns;	/* when it was read */
};

/* THREAD_STACKS_FD: the scopes object's task storage (innermost scopes of a
 * sample); RING_TIDS_FD: the ring collector's map of thread rings (their
 * open scopes, at any depth), -1 when there is none. FREQ in Hz. ALL:
 * every process, else only added pids. MODE: how user stacks are unwound. */
int qp_cpu_open(struct qp_cpu **out, int thread_stacks_fd, int ring_tids_fd, unsigned int freq, bool all,
		enum qp_cpu_unwind_mode mode, char *err, size_t errlen);
void qp_cpu_close(struct qp_cpu *c); /* accepts NULL */
unsigned int qp_cpu_ncpus(const struct qp_cpu *c); /* perf events open */

int qp_cpu_add_pid(struct qp_cpu *c, uint32_t pid);
/* Stop sampling PID; with FORGET also drop its samples. */
int qp_cpu_remove_pid(struct qp_cpu *c, uint32_t pid, bool forget);

int qp_cpu_read(struct qp_cpu *c, struct qp_cpu_snapshot *out);
/* Samples kept and lost so far (all processes). */
void qp_cpu_counters(struct qp_cpu *c, uint64_t *samples, uint64_t *lost);
/* Samples aged out of the table (no sample of their key for 10 minutes while
 * the table held over 256 KiB): counted in `samples`, gone from every view
 * since attach; and the bytes the table holds now. */
void qp_cpu_memory(struct qp_cpu *c, uint64_t *aged, size_t *bytes);
/* Whether PID has samples in the table (any process, under --all). */
bool qp_cpu_has_pid(struct qp_cpu *c, uint32_t pid);
void qp_cpu_unwind_figures(struct qp_cpu *c, struct qp_cpu_unwind_figures *out);
void qp_cpu_snapshot_free(struct qp_cpu_snapshot *s);
const struct qp_cpu_raw *qp_cpu_snapshot_find(const struct qp_cpu_snapshot *s, const struct sample_key *k);

/* Instruction pointers of stack ID (leaf first); 0 or -errno. */
int qp_cpu_stack(struct qp_cpu *c, int32_t id, uint64_t ips[QPROF_STACK_DEPTH], size_t *n);
#endif

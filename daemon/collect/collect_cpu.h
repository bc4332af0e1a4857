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
#include "bpf/offcpu.h"
#include "bpf/profile.h"
#include "bpf/scopes.h"
#include "slow_store.h"
#include "cfi_bpf.h"

struct qp_cpu;

/* How user stacks are walked (--unwind): frame pointers only; or by CFI:
 * targets' stacks walked in the kernel by compiled tables, falling back to
 * a copy of the stack unwound in qprofd (dwarf); a copy for every process
 * sampled (dwarf-all, with --all; targets are walked in the kernel too);
 * the copy always, never the kernel's walk (dwarf-copy). */
enum qp_cpu_unwind_mode { QP_CPU_UNWIND_FP, QP_CPU_UNWIND_DWARF, QP_CPU_UNWIND_DWARF_ALL, QP_CPU_UNWIND_DWARF_COPY };
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
	uint64_t fast, slow, cache_resets; /* unwind.h: the walks by path, rule caches emptied */
	uint64_t files_refused;	/* unwind.h: mapped files not copied for libdwfl */
	/* the kernel's walk by compiled tables (cfi_bpf.h) */
	bool kernel;		/* it runs (dwarf, dwarf-all) */
	char kernel_error[128];	/* why it does not, "" when it does or was not asked */
	uint64_t walked;	/* samples whose user stack the kernel walked (no copy) */
	uint64_t walk_ends[QPROF_WALK__MAX];	/* walks by how they ended (cfiwalk.h) */
	uint64_t walk_frames;	/* frames of the walked stacks */
	uint64_t off_walk_ends[QPROF_WALK__MAX];	/* the same at off-CPU switch-outs (no copy: */
	uint64_t off_walk_frames;			/* a fallback is a frame-pointer stack) */
	uint64_t heap_walk_ends[QPROF_WALK__MAX];	/* the same at sampled allocations (the heap's */
	uint64_t heap_walk_frames;			/* programs share the tables; a fallback: frame pointers) */
	struct qp_cfi_bpf_stats tables;
	/* QPROF_CFI_VERIFY=1: each walk kept checked against libdwfl on a copy
	 * of the same stack: the same frames, a prefix of them (the copy or the
	 * walk ended first), others; and copies libdwfl could not unwind */
	bool verify;
	uint64_t verify_same, verify_prefix, verify_differ, verify_none;
};
/* The kernel memory for the CFI tables (--cfi-memory), before qp_cpu_open. */
void qp_cpu_set_cfi_bytes(uint64_t bytes);

struct qp_cpu_raw {
	struct sample_key key;
	uint64_t count;
	char comm[16];
};

struct qp_cpu_snapshot {
	size_t n;
	struct qp_cpu_raw *v;	/* sorted by key */
	uint64_t samples, lost;	/* off: intervals kept and lost */
	uint64_t mono_ns;	/* when it was read */
	bool off;		/* off-CPU intervals: counts are nanoseconds off the CPU */
};

/* The kernel figures of one (process, innermost scope, parent) (offcpu.h). */
struct qp_kstats_row {
	struct scope_key key;
	struct scope_kstats v;
};

/* THREAD_STACKS_FD: the scopes object's task storage (innermost scopes of a
 * sample); RING_TIDS_FD: the ring collector's map of thread rings (their
 * open scopes, at any depth), -1 when there is none. SLOW_RB_FD and
 * SLOW_MIN_FD its slow_rb and slow_min (-1: no slow instances). FREQ in Hz.
 * ALL: every process, else only added pids. MODE: how user stacks are
 * unwound. OFF_RB_BYTES: the off-CPU ring buffer's size (a power of two;
 * 0: QPROF_OFF_RING_BYTES). */
int qp_cpu_open(struct qp_cpu **out, int thread_stacks_fd, int ring_tids_fd, int slow_rb_fd, int slow_min_fd,
		unsigned int off_rb_bytes,
		unsigned int freq, bool all, enum qp_cpu_unwind_mode mode, char *err, size_t errlen);
/* The ring collector whose flight recorder also feeds the slow instances
 * (NULL: none); set before any ring target, cleared before it closes. */
struct qp_ring;
void qp_cpu_set_ring(struct qp_cpu *c, struct qp_ring *ring);
/* The scopes object's slots of slow thresholds (qp_scopes_slow_floor),
 * written with each threshold when slow instances are kept; NULL: none. */
struct slow_floor;
void qp_cpu_set_slow_floor(struct qp_cpu *c, struct slow_floor *floor);
/* Slow instances are kept (the scopes object may send them). */
bool qp_cpu_slow_on(const struct qp_cpu *c);
/* Copies of the instances of PID whose site KEEP accepts, read after a
 * drain (slow_store.h); SINCE_NS: the earliest time a reservoir among
 * them filled (0: none did: they hold every instance). */
int qp_cpu_slow_copy(struct qp_cpu *c, uint32_t pid, bool (*keep)(void *arg, uint64_t site), void *arg,
		     struct qp_slow_inst **out, size_t *n, uint64_t *since_ns);
void qp_cpu_slow_counters(struct qp_cpu *c, struct qp_slow_counters *out);
/* The sites of PID's reservoirs (malloc'ed), after a drain; 0 or -ENOMEM. */
int qp_cpu_slow_sites(struct qp_cpu *c, uint32_t pid, uint64_t **sites, size_t *n);
/* A window of the N slowest instances of the sites NAMED of PID (OTHER:
 * its other sites now) ending from now on (slow_window.h): 0 and *ID,
 * -EBUSY when QP_SLOW_WINDOWS are open, -ENOMEM. The lock is taken only
 * to open it; close it with qp_cpu_slow_window_close, whatever happens. */
int qp_cpu_slow_window_open(struct qp_cpu *c, uint32_t pid, const uint64_t *named, size_t nnamed,
			    const uint64_t *other, size_t nother, unsigned int n, uint64_t *id);
/* End window ID now: its instances (after a last drain) into *OUT (free
 * with qp_slow_insts_free), the thresholds back; *COMPLETE: nothing it
 * wanted was lost. 0, -ENOENT, -ENOMEM. */
int qp_cpu_slow_window_close(struct qp_cpu *c, uint64_t id, struct qp_slow_inst **out, size_t *n,
			     bool *complete);
void qp_cpu_close(struct qp_cpu *c); /* accepts NULL */
unsigned int qp_cpu_ncpus(const struct qp_cpu *c); /* perf events open */

int qp_cpu_add_pid(struct qp_cpu *c, uint32_t pid);
/* Stop sampling PID; with FORGET also drop its samples. */
int qp_cpu_remove_pid(struct qp_cpu *c, uint32_t pid, bool forget);

int qp_cpu_read(struct qp_cpu *c, struct qp_cpu_snapshot *out);
/* The off-CPU intervals (weights in ns under the same keys, the stack at
 * the switch-out); -ENODEV when the kernel events are not traced. */
int qp_cpu_read_off(struct qp_cpu *c, struct qp_cpu_snapshot *out);
/* Why the kernel events are not traced, NULL when they are. */
const char *qp_cpu_off_error(const struct qp_cpu *c);
/* Every scope's kernel figures (PID > 0: that process only), sorted by
 * key, into *OUT (malloc'ed); 0, -ENODEV or -errno. */
int qp_cpu_kstats_read(struct qp_cpu *c, int pid, struct qp_kstats_row **out, size_t *n);
/* Off-CPU counters: intervals kept and lost (ring, caps), thread states
 * not made, scope figures that found no room. */
struct qp_off_counters {
	uint64_t intervals, lost, no_state, kstats_full;
};
void qp_cpu_off_counters(struct qp_cpu *c, struct qp_off_counters *out);
/* Samples kept and lost so far (all processes). */
void qp_cpu_counters(struct qp_cpu *c, uint64_t *samples, uint64_t *lost);
/* Samples aged out of the table (no sample of their key for 10 minutes while
 * the table held over 256 KiB): counted in `samples`, gone from every view
 * since attach; and the bytes the table holds now. */
void qp_cpu_memory(struct qp_cpu *c, uint64_t *aged, size_t *bytes);
/* Whether PID has samples in the table (any process, under --all). */
bool qp_cpu_has_pid(struct qp_cpu *c, uint32_t pid);
void qp_cpu_unwind_figures(struct qp_cpu *c, struct qp_cpu_unwind_figures *out);
/* The kernel's CFI tables (rows, files, processes) and the walks' counts,
 * as map fds for another object's walks (the heap's); false when the
 * kernel does not walk. */
bool qp_cpu_cfi_maps(struct qp_cpu *c, int fds[4]);
void qp_cpu_snapshot_free(struct qp_cpu_snapshot *s);
const struct qp_cpu_raw *qp_cpu_snapshot_find(const struct qp_cpu_snapshot *s, const struct sample_key *k);

/* Instruction pointers of stack ID (leaf first) of the samples' table, or
 * with OFF of the off-CPU one; 0 or -errno. */
int qp_cpu_stack(struct qp_cpu *c, bool off, int32_t id, uint64_t ips[QPROF_STACK_DEPTH], size_t *n);
#endif

/* collect_heap.h - the user side of bpf/heap.bpf.c: which processes are
 * heap profiled (uprobes on the allocator entry points of the files they
 * map, the brk and mmap syscall tracepoints), and reads of what was sampled: per stack,
 * the estimated allocations since attach, the live ones, and the heap's
 * growth. Targets are added and removed by the daemon (main.c, the HTTP
 * handlers); the registry knows nothing of them. Thread-safe (one mutex,
 * a leaf lock). */
#ifndef QPROF_COLLECT_HEAP_H
#define QPROF_COLLECT_HEAP_H
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bpf/heap.h"

struct qp_heap;

struct qp_heap_opts {
	uint64_t interval;	/* mean bytes between samples, 1 .. 1 << 30 */
	uint32_t max_live;	/* sampled allocations live at once, all processes */
	uint32_t max_stacks;	/* distinct allocation stacks, all processes */
	/* the maps of the threads' open scopes (collect_scopes.h,
	 * ring_collect.h) shared with the heap's programs; -1: none */
	int thread_stacks_fd, ring_tids_fd;
};

/* What a heap target traces, for the answers. */
struct qp_heap_status {
	int pid;
	bool tracing;		/* its probes are attached (false once it exited) */
	unsigned int functions;	/* allocator entry points probed */
	char traced[768];	/* "malloc calloc ... in /usr/lib/.../libc.so.6", "" */
	char note[512];		/* what is not traced, "" when nothing is missing */
};

int qp_heap_open(struct qp_heap **out, const struct qp_heap_opts *o, char *err, size_t errlen);
void qp_heap_close(struct qp_heap *h);	/* accepts NULL */
/* The BPF object's load, done by the first attach (and by --heap at start,
 * which must fail at once when it cannot be done): 0, or -errno with err
 * set, the same every time after a failure; -EAGAIN while the CPU sampler
 * is still loading (qp_heap_expect_cfi). qp_heap_loaded: done. */
int qp_heap_load(struct qp_heap *h, char *err, size_t errlen);
bool qp_heap_loaded(struct qp_heap *h);
/* Before the load: the sampled allocations' stacks are walked by the CPU
 * sampler's CFI tables, FDS its maps (qp_cpu_cfi_maps); a failure to share
 * them is logged, and frame pointers walk as before. */
void qp_heap_set_cfi(struct qp_heap *h, const int fds[4]);
/* The CPU sampler is loading: until qp_heap_cfi_settled, a load is refused
 * with -EAGAIN (it would walk by frame pointers for good). */
void qp_heap_expect_cfi(struct qp_heap *h);
void qp_heap_cfi_settled(struct qp_heap *h);
uint64_t qp_heap_interval(const struct qp_heap *h);

/* Profile the heap of PID from now on. 0 with ST filled (ST->note says so
 * when no allocator entry point was found: the growth is traced all the
 * same); -EEXIST when it is already, -ESRCH when it is gone, else -errno
 * with err set. */
int qp_heap_attach(struct qp_heap *h, int pid, struct qp_heap_status *st, char *err, size_t errlen);
/* The same, for a pid not yet a target (its scopes are attached next):
 * held, qp_heap_stop and qp_heap_forget leave it alone until
 * qp_heap_release. */
int qp_heap_attach_held(struct qp_heap *h, int pid, struct qp_heap_status *st, char *err, size_t errlen);
void qp_heap_release(struct qp_heap *h, int pid);
/* PID exited: its probes go, its figures stay. */
void qp_heap_stop(struct qp_heap *h, int pid);
/* PID is no target any more: its probes and its figures go. */
void qp_heap_forget(struct qp_heap *h, int pid);
/* PID's status; false when it is not heap profiled. */
bool qp_heap_status_of(struct qp_heap *h, int pid, struct qp_heap_status *st);
/* The pids heap profiled now (malloc'd into *PIDS, free it), or -ENOMEM. */
long qp_heap_pids(struct qp_heap *h, int **pids);
/* The counters of heap.h (enum heap_counter), all processes since start. */
void qp_heap_counters(struct qp_heap *h, uint64_t c[HEAP_CNT__MAX]);

/* One stack of a process with its figures. Estimates: objects in 16-bit
 * fixed point (<< 16), bytes as such. */
struct qp_heap_row {
	uint64_t stack;		/* 0: allocations whose stack could not be kept */
	uint32_t nips;
	uint64_t ips[QPROF_HEAP_DEPTH];	/* leaf first */
	uint32_t tid;		/* the thread that allocated, 0: unknown */
	uint32_t nscopes;
	uint64_t scopes[QPROF_HEAP_SCOPES];	/* open scopes' sites, innermost first */
	uint64_t span_site;	/* the open span's QPROF_SPAN_BEGIN site, 0: none */
	char comm[17];		/* the thread's name */
	uint64_t alloc_samples, alloc_objects_x16, alloc_bytes;	/* since the stack was first seen */
	uint64_t inuse_samples, inuse_objects_x16, inuse_bytes;	/* live now */
	uint64_t growth_bytes, growth_calls;
};

struct qp_heap_snapshot {
	size_t n;
	struct qp_heap_row *v;	/* sorted by stack */
	uint64_t mono_ns;	/* when it was read */
	uint64_t counters[HEAP_CNT__MAX];
};

/* PID's stacks. Live allocations count in inuse_* only when made at or
 * after LIVE_SINCE_NS (CLOCK_MONOTONIC; 0: all). 0 or -errno. */
int qp_heap_read(struct qp_heap *h, int pid, uint64_t live_since_ns, struct qp_heap_snapshot *out);
void qp_heap_snapshot_free(struct qp_heap_snapshot *s);
const struct qp_heap_row *qp_heap_snapshot_find(const struct qp_heap_snapshot *s, uint64_t stack);
#endif

/* heap_internal.h - what the two files of the heap collector share
 * (collect_heap.c: load, targets, links; heap_read.c: map walks and
 * snapshots). Nothing else includes it. */
#ifndef QPROF_HEAP_INTERNAL_H
#define QPROF_HEAP_INTERNAL_H
#include <pthread.h>
#include "collect_heap.h"
#include "heap.skel.h"

struct heap_target {
	int pid;
	uint32_t gen;		/* heap_targets' value while it is traced */
	struct bpf_link **links;
	size_t nlinks;
	bool held;		/* attached ahead of its target: stop/forget leave it alone */
	struct qp_heap_status st;
};

struct qp_heap {
	pthread_mutex_t lock;	/* targets, links, tp; a leaf lock */
	/* the object is loaded with the first heap target (the verifier takes
	 * most of a second of CPU for it), under load_lock, never under lock */
	pthread_mutex_t load_lock;
	bool loaded;		/* atomic: maps and programs are there */
	int load_err;		/* -errno of a load refused for good */
	char load_msg[256];
	bool cfi_pending;	/* atomic: the CPU sampler's maps are still to come */
	struct heap *skel;
	int ncpus;
	uint64_t interval;
	uint32_t gen;
	struct bpf_link *tp[4];	/* brk/mmap syscall tracepoints, once a target exists */
	bool tp_attached;
	bool tp_raw;		/* the raw sys_enter/sys_exit (no tracefs), not syscalls/ */
	struct heap_target *t;
	size_t nt;
};

/* Walk every entry of the hash map FD (keys KSIZE, values VSIZE bytes) in
 * batches: FN(arg, key, value) for each. 0 or -errno. */
int qp_heap_map_walk(int fd, size_t ksize, size_t vsize,
		     void (*fn)(void *arg, const void *key, const void *val), void *arg);
/* Delete PID's live allocations and stacks from the maps. */
void qp_heap_map_forget(struct qp_heap *h, int pid);
#endif

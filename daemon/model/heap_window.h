/* heap_window.h - a heap profile of one process (collect_heap.h) as a
 * profile of stacks (model_cpu.h) for the exporters: in use, allocated, or
 * the heap's growth, since attach or over a window, each stack weighed by
 * the estimates of its samples (bytes; pprof: the four heap sample types,
 * or growth's two). Stacks start at the allocator's caller: the
 * allocator's own entry frame is left out, as gperftools and Go do. */
#ifndef QPROF_HEAP_WINDOW_H
#define QPROF_HEAP_WINDOW_H
#include <stdbool.h>
#include <stddef.h>
#include "model_cpu.h"
#include "model_src.h"

enum qp_heap_kind { QP_HEAP_INUSE, QP_HEAP_ALLOC, QP_HEAP_GROWTH };

struct qp_heap_query {
	int pid;		/* a target */
	unsigned int seconds;	/* > 0: the next SECONDS: made in them (and live at their end, for inuse) */
	enum qp_heap_kind kind;
	bool pprof;		/* every value per sample: heap (alloc_objects, alloc_space,
				 * inuse_objects, inuse_space) or growth (calls, space) */
};

/* OUT for Q, and in NOTE what the answer should say besides (the process
 * exited, losses). 0, or with MSG set: -ENODEV heap profiling unavailable,
 * -ENOENT PID's heap is not profiled, -ENOEXEC no allocator entry point is
 * traced in PID (MSG says what is), -ENODATA nothing to show (with or
 * without a window: MSG says what was looked for), -ECANCELED the daemon stops, -EIO/-ENOMEM. */
int qp_heap_window(const struct qp_model_src *src, const struct qp_heap_query *q, struct qp_cpu_profile *out,
		   char *note, size_t notelen, char *msg, size_t msglen);

/* The heap figures of /api/status: plain copies. */
struct qp_heap_status;
struct qp_heap_status_model {
	bool available;
	const char *error;	/* why not (src's string) */
	bool by_default;	/* qprofd --heap */
	uint64_t interval;
	uint64_t counters[16];	/* enum heap_counter of heap.h */
	size_t ncounters;
	size_t n;
	struct qp_heap_status *targets;
};

int qp_heap_status_build(const struct qp_model_src *src, struct qp_heap_status_model *m);
void qp_heap_status_free(struct qp_heap_status_model *m);
#endif

/* model_slow.h - the slowest instances of a scope (GET /api/scopes/slowest)
 * as plain structs: the CPU collector's reservoirs (slow_store.h) copied,
 * limited to one scope name, sorted slowest first, stacks symbolized.
 * Every string is in the model's arena. No JSON, no I/O of its own. */
#ifndef QPROF_MODEL_SLOW_H
#define QPROF_MODEL_SLOW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "model_src.h"

struct qp_arena;

struct qp_slow_wait {
	uint64_t at_ns;		/* switch-out, CLOCK_MONOTONIC */
	uint64_t ns;		/* off the CPU */
	uint64_t runq_ns;	/* of which runnable, waiting for a CPU */
	const char *reason;	/* "preempted" or "blocked" */
	size_t nframes;
	const char **frames;	/* leaf first; kernel frames end in "_[k]" */
};

struct qp_slow_folded {
	const char *stack;	/* "root;...;leaf" */
	uint64_t count;
};

struct qp_slow_item {
	uint32_t tid;
	const char *thread;
	const char *parent;	/* the enclosing scope, NULL at top level */
	uint64_t start_ns, dur_ns;	/* CLOCK_MONOTONIC */
	uint64_t on_cpu_ns, off_cpu_ns, runq_ns, blocked_ns, irq_ns;
	uint32_t migrations, page_faults;
	bool kernel_known;	/* migrations, page faults, irq time known (slow_kev.c) */
	size_t nwaits;
	struct qp_slow_wait *waits;	/* by time */
	uint32_t waits_more;		/* shorter ones left out (still in off_cpu_ns) */
	size_t nfolded;
	struct qp_slow_folded *folded;	/* sorted by stack */
	uint64_t samples;		/* CPU samples inside it, kept or not */
	bool partial;			/* history too short to reach its begin */
};

struct qp_slow_model {
	int pid;
	const char *name;
	size_t n;
	struct qp_slow_item *items;	/* slowest first */
	size_t kept;			/* instances of that name kept, before n */
	uint64_t threshold_since_ns;	/* when the first of its reservoirs filled (0: none) */
	/* seconds=: no instance the window wanted was lost (it saw every one
	 * at or above its own threshold); without: no reservoir of that name
	 * ever filled (every instance since attach was seen) */
	bool window_complete;
	struct qp_arena *arena;
};

struct qp_slow_query {
	int pid;		/* a target */
	const char *name;
	unsigned int n;		/* 1..QP_SLOW_KEEP */
	unsigned int seconds;	/* > 0: the N slowest ending in the next SECONDS (a window's own) */
	bool (*gone)(void *arg);	/* the client went away: the window ends (NULL: never asked) */
	void *gone_arg;
};

/* 0; -ENODEV (kernel events or slow instances not collected), -ENOENT
 * (no instance of that name in that process), -EBUSY (QP_SLOW_WINDOWS
 * windows open), -ECANCELED (qprofd stopping), -ECONNRESET (the client
 * went away mid-window), -ENOMEM. */
int qp_slow_model_build(const struct qp_model_src *src, const struct qp_slow_query *q,
			struct qp_slow_model *out);
void qp_slow_model_free(struct qp_slow_model *m); /* accepts a zeroed one */
#endif

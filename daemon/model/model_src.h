/* model_src.h - what the model stage reads: the registry of targets, the
 * collectors, the daemon's settings and clock, and how to wait out a window
 * (the daemon's stop flag and the reader's own "gave up" test, both passed
 * in: the model knows nothing of who asks). The HTTP layer, the OTLP push
 * and the poll loop fill one for each build; the model builders take it
 * instead of the daemon (model/ may not include http/qprofd.h). Plain
 * pointers, owned by the caller. */
#ifndef QPROF_MODEL_SRC_H
#define QPROF_MODEL_SRC_H
#include <stdbool.h>
#include <stdint.h>
#include "common/stop.h"

struct qp_registry;
struct qp_scopes;
struct qp_cpu;
struct qp_logs;
struct qp_tracer;
struct qp_threads;
struct qp_heap;

struct qp_model_src {
	struct qp_registry *reg;
	struct qp_scopes *scopes;
	struct qp_cpu *cpu;		/* NULL when sampling could not start */
	struct qp_logs *logs;		/* NULL when the log ring buffer could not start */
	struct qp_tracer *tracer;	/* NULL when traces could not start */
	const char *cpu_error;		/* why cpu is NULL */
	bool cpu_starting;		/* NULL because the sampler is still loading */
	struct qp_threads *threads;	/* thread stacks, NULL when unavailable */
	const char *threads_error;	/* why threads is NULL */
	struct qp_heap *heap;		/* NULL when heap profiling could not start */
	const char *heap_error;		/* why heap is NULL */
	bool heap_default;		/* qprofd --heap: every target's heap is profiled */
	unsigned int frequency_hz;
	bool sample_all;
	uint64_t start_ns;		/* CLOCK_MONOTONIC when the daemon started */
	/* a window's wait: the daemon's stop flag (NULL: the wait only
	 * sleeps) and the reader's test, asked once a second, of whether it
	 * gave up waiting (NULL: it never does) */
	struct qp_stop *stop;
	bool (*gave_up)(void *arg);
	void *gave_up_arg;
};

/* Sleep SECONDS, a second at a time, unless SRC's stop flag is set or its
 * reader gives up first: true when the time passed, false when not. */
bool qp_model_wait(const struct qp_model_src *src, unsigned int seconds);
#endif

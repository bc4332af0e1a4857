/* rb_drain.h - a BPF ring buffer and the thread that drains it, as the log
 * store (logs.c) and the tracer (collect_trace.c) each keep one: made
 * together, joined and freed together. The thread's loop, its lock and how
 * it is told to stop stay the owner's. */
#ifndef QPROF_RB_DRAIN_H
#define QPROF_RB_DRAIN_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <bpf/libbpf.h>

struct qp_rb_drain {
	struct ring_buffer *rb;
	pthread_t thread;
	bool started;
};

/* The ring buffer of map RING_FD, ON_RECORD called with CTX for each record,
 * then a thread running LOOP(CTX). 0, or -errno with "cannot open the WHAT
 * ring buffer: ..." or "cannot start the WHAT thread: ..." in ERR; what was
 * made is freed by qp_rb_drain_join. */
int qp_rb_drain_start(struct qp_rb_drain *d, int ring_fd, ring_buffer_sample_fn on_record,
		      void *(*loop)(void *), void *ctx, const char *what, char *err, size_t errlen);
/* Join the thread (the owner has told it to stop) and free the ring buffer. */
void qp_rb_drain_join(struct qp_rb_drain *d);
#endif

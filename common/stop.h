/* stop.h - the daemon's stop flag: a windowed request sleeps on it and is
 * woken at once when qprofd shuts down; a streaming answer polls it. Below
 * every stage (main.c sets it, the HTTP handlers wait on it), so that no
 * handler has to call back into main.c. */
#ifndef QPROF_STOP_H
#define QPROF_STOP_H
#include <pthread.h>
#include <stdbool.h>

struct qp_stop {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC */
	bool stopping;
};

void qp_stop_init(struct qp_stop *s);
void qp_stop_destroy(struct qp_stop *s);
/* Set the flag and wake every waiter. */
void qp_stop_set(struct qp_stop *s);
bool qp_stop_is_set(struct qp_stop *s);
/* Sleep SECONDS unless the flag is set first: true when the time passed,
 * false when stopping. */
bool qp_stop_wait(struct qp_stop *s, unsigned int seconds);
#endif

/* stop.c - see stop.h: a mutex, a condition variable on CLOCK_MONOTONIC
 * (a wall-clock jump neither cuts nor stretches a window) and the flag. */
#include <errno.h>
#include <time.h>
#include "stop.h"
#include "util.h"

void qp_stop_init(struct qp_stop *s)
{
	pthread_mutex_init(&s->lock, NULL);
	qp_cond_init_monotonic(&s->cond);
	s->stopping = false;
}

void qp_stop_destroy(struct qp_stop *s)
{
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

void qp_stop_set(struct qp_stop *s)
{
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

bool qp_stop_is_set(struct qp_stop *s)
{
	bool v;

	pthread_mutex_lock(&s->lock);
	v = s->stopping;
	pthread_mutex_unlock(&s->lock);
	return v;
}

bool qp_stop_wait(struct qp_stop *s, unsigned int seconds)
{
	struct timespec until;
	bool stopping;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock(&s->lock);
	while (!s->stopping && pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
		;
	stopping = s->stopping;
	pthread_mutex_unlock(&s->lock);
	return !stopping;
}

/* otlp_queue.c - the OTLP push's queue of requests, which its two threads
 * share (otlp_internal.h): the builder (otlp_push.c) queues, the sender
 * (otlp_send.c) takes the oldest; both wait and drop through here, so
 * neither file calls the other's helpers. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "common/util.h"
#include "otlp_internal.h"

bool otlp_wait_until(struct qp_otlp *p, uint64_t ns)
{
	while (!p->stop && qp_now_ns() < ns) {
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	return !p->stop;
}

void otlp_drop(struct qp_otlp *p, struct batch *b, uint64_t *why)
{
	p->dropped++;
	p->dropped_samples += b->samples;
	(*why)++;
	free(b->body);
	b->body = NULL;
}

void otlp_enqueue(struct qp_otlp *p, char *body, size_t len, uint64_t samples)
{
	struct batch *b;

	pthread_mutex_lock(&p->lock);
	if (p->qn == p->qcap) {	/* full: the oldest goes */
		otlp_drop(p, &p->q[p->qhead], &p->dropped_full);
		p->qhead = (p->qhead + 1) % p->qcap;
		p->qn--;
	}
	b = &p->q[(p->qhead + p->qn) % p->qcap];
	*b = (struct batch){ .body = body, .len = len, .samples = samples };
	p->qn++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

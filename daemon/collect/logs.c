/* logs.c - see logs.h. The store is a ring of CAPACITY entries; a reader
 * that falls more than CAPACITY behind sees a gap (seq jumps) and reports
 * it as lost. Its pages are made resident all at once when the first
 * message arrives (an idle qprofd, or one whose targets never log, does
 * not hold them): the RSS takes one step to the store's size then, and
 * does not creep up as the store fills. Kernel timestamps
 * (CLOCK_MONOTONIC) become Unix time with the offset between the two
 * clocks, read once per drained batch. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "common/log.h"
#include "logs.h"
#include "rb_drain.h"
#include "common/util.h"

struct qp_logs {
	struct qp_rb_drain rd;	/* the BPF ring buffer and the drain thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	struct qp_log_entry *ring;	/* mmap'd, MAP_FAILED when none */
	size_t cap;
	uint64_t next_seq;	/* seq of the next entry */
	bool populated;		/* its pages made resident (the first message's) */
	int64_t mono_to_real;	/* realtime - monotonic, ns */
};

/* At the first message, the whole store resident at once, outside the
 * lock (the pages are the store's own; a writer meanwhile is harmless). */
static void populate(struct qp_logs *l)
{
	size_t len = l->cap * sizeof(*l->ring), pg = 4096, off;

	if (__atomic_load_n(&l->populated, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&l->populated, true, __ATOMIC_ACQ_REL))
		return;
#ifdef MADV_POPULATE_WRITE
	if (!madvise(l->ring, len, MADV_POPULATE_WRITE))
		return;
#endif
	for (off = 0; off < len; off += pg)	/* older kernels: a write a page */
		__atomic_fetch_or((volatile char *)l->ring + off, 0, __ATOMIC_RELAXED);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct qp_logs *l = ctx;
	const struct log_record *r = data;
	struct qp_log_entry *e;

	if (size < sizeof(*r))
		return 0;
	populate(l);
	pthread_mutex_lock(&l->lock);
	e = &l->ring[l->next_seq % l->cap];
	e->seq = l->next_seq++;
	e->ts_ns = r->ts_ns + (uint64_t)l->mono_to_real;
	e->mono_ns = r->ts_ns;
	e->site = r->site;
	e->pid = r->pid;
	e->tid = r->tid;
	e->len = r->len;
	memcpy(e->msg, r->msg, sizeof(e->msg));
	e->msg[sizeof(e->msg) - 1] = '\0';
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

void qp_logs_push(struct qp_logs *l, uint32_t pid, uint32_t tid, uint64_t site, uint64_t mono_ns, int32_t len,
		  const char *msg)
{
	struct qp_log_entry *e;

	populate(l);
	pthread_mutex_lock(&l->lock);
	e = &l->ring[l->next_seq % l->cap];
	e->seq = l->next_seq++;
	e->ts_ns = mono_ns + (uint64_t)l->mono_to_real;
	e->mono_ns = mono_ns;
	e->site = site;
	e->pid = pid;
	e->tid = tid;
	e->len = len;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

static void *drain(void *arg)
{
	struct qp_logs *l = arg;

	for (;;) {
		bool stop;
		int n;

		pthread_mutex_lock(&l->lock);
		stop = l->stopping;
		l->mono_to_real = (int64_t)(qp_realtime_ns() - qp_now_ns());
		pthread_mutex_unlock(&l->lock);
		if (stop)
			break;
		/* the BPF side wakes us only when the buffer fills: drain on a
		 * short timer too, so messages arrive within ~5 ms */
		n = ring_buffer__poll(l->rd.rb, 5);
		if (n >= 0)
			n = ring_buffer__consume(l->rd.rb);
		if (n < 0 && n != -EINTR) {
			qp_warn("log ring buffer: %s", strerror(-n));
			break;
		}
	}
	return NULL;
}

int qp_logs_start(struct qp_logs **out, int ringbuf_fd, size_t capacity, char *err, size_t errlen)
{
	struct qp_logs *l = calloc(1, sizeof(*l));
	int ret;

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->cap = capacity ? capacity : 1;
	l->next_seq = 1;
	/* not touched up front: resident at the first message (populate) */
	l->ring = mmap(NULL, l->cap * sizeof(*l->ring), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_mutex_init(&l->lock, NULL);
	qp_cond_init_monotonic(&l->cond);
	if (l->ring == MAP_FAILED) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory for %zu log entries", l->cap);
		goto fail;
	}
	l->mono_to_real = (int64_t)(qp_realtime_ns() - qp_now_ns());
	ret = qp_rb_drain_start(&l->rd, ringbuf_fd, on_record, drain, l, "log", err, errlen);
	if (ret)
		goto fail;
	*out = l;
	return 0;
fail:
	qp_logs_stop(l);
	return ret;
}

void qp_logs_stop(struct qp_logs *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	qp_rb_drain_join(&l->rd);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	if (l->ring != MAP_FAILED)
		munmap(l->ring, l->cap * sizeof(*l->ring));
	free(l);
}

size_t qp_logs_get(struct qp_logs *l, uint64_t since, int pid, struct qp_log_entry *out, size_t max,
		   uint64_t *last)
{
	uint64_t seq, oldest;
	size_t n = 0;

	pthread_mutex_lock(&l->lock);
	oldest = l->next_seq > l->cap ? l->next_seq - l->cap : 1;
	seq = since + 1 > oldest ? since + 1 : oldest;
	*last = since;
	for (; seq < l->next_seq && n < max; seq++) {
		const struct qp_log_entry *e = &l->ring[seq % l->cap];

		*last = seq;
		if (pid > 0 && e->pid != (uint32_t)pid)
			continue;
		out[n++] = *e;
	}
	pthread_mutex_unlock(&l->lock);
	return n;
}

bool qp_logs_wait(struct qp_logs *l, uint64_t since, int timeout_ms)
{
	struct timespec until;
	bool alive;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&l->lock);
	while (!l->stopping && l->next_seq <= since + 1 &&
	       pthread_cond_timedwait(&l->cond, &l->lock, &until) != ETIMEDOUT)
		;
	alive = !l->stopping;
	pthread_mutex_unlock(&l->lock);
	return alive;
}

void qp_logs_stats(struct qp_logs *l, uint64_t *received, uint64_t *oldest)
{
	pthread_mutex_lock(&l->lock);
	*received = l->next_seq - 1;
	*oldest = l->next_seq > l->cap ? l->next_seq - l->cap : 1;
	pthread_mutex_unlock(&l->lock);
}

/* otlp_internal.h - what the OTLP push's files share: its state, the
 * queue of requests (otlp_queue.c, below both threads) and the sender's
 * thread (otlp_send.c), which the builder's side (otlp_push.c) starts.
 * Locking: p->lock guards the queue, the counters and stop, and is never
 * held across a build or a POST. */
#ifndef QPROF_OTLP_INTERNAL_H
#define QPROF_OTLP_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <curl/curl.h>
#include "collect/collect_cpu.h"
#include "export/export_otlp.h"

#define MAX_TRIES 5
#define RETRY_AFTER_MAX_S 60	/* a longer Retry-After is cut to this */
#define MAX_ATTRS 48

struct batch {
	char *body;
	size_t len;
	uint64_t samples;	/* the CPU samples in it */
	unsigned int tries;
	uint64_t next_ns;	/* CLOCK_MONOTONIC of its next try */
};

struct qp_otlp {
	struct qprofd *d;
	char url[1100];
	char endpoint[1025];
	struct curl_slist *headers;
	unsigned int interval_s, timeout_ms;
	char host[256], service[256];
	char env_attrs[2048];			/* OTEL_RESOURCE_ATTRIBUTES, split in place */
	struct qp_otlp_attr extra[MAX_ATTRS];	/* its pairs */
	size_t nextra;
	pthread_t builder, sender;
	bool builder_on, sender_on;
	pthread_mutex_t lock;	/* the queue, the counters, stop: never held across a build or POST */
	pthread_cond_t cond;
	bool stop;
	struct batch *q;	/* ring of qcap */
	size_t qcap, qhead, qn;
	/* counters (lock) */
	uint64_t pushes, pushed_bytes, pushed_samples, failures, retries;
	uint64_t dropped, dropped_samples, dropped_full, dropped_tries, dropped_rejected, build_errors;
	uint64_t dropped_processes;	/* samples of processes beyond MAX_RES in one push */
	uint64_t builds, built_samples, built_bytes, build_cpu_ns;
	uint64_t gzipped_bytes;		/* of the built_bytes, once gzipped (what is sent) */
	uint64_t throttled, retry_after_honoured;	/* 429/503 answers; of them, waited as asked */
	uint64_t last_retry_after_s;
	long last_status;
	uint64_t last_ok_ns;
	char last_error[256];
	/* the builder's own */
	struct qp_cpu_snapshot cpu_base, off_base;
	bool have_cpu, have_off;
};

/* otlp_queue.c: wait until NS (monotonic) or stop; the caller holds
 * p->lock. false on stop. */
bool otlp_wait_until(struct qp_otlp *p, uint64_t ns);
/* otlp_queue.c: drop B, counted under WHY; the caller holds p->lock. */
void otlp_drop(struct qp_otlp *p, struct batch *b, uint64_t *why);
/* otlp_queue.c: queue BODY (LEN bytes, SAMPLES CPU samples, owned by the
 * queue from now on), the oldest dropped when the queue is full, and wake
 * the sender. Takes p->lock. */
void otlp_enqueue(struct qp_otlp *p, char *body, size_t len, uint64_t samples);
/* The sender thread (otlp_send.c). */
void *otlp_sender_main(void *arg);
#endif

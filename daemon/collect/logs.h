/* logs.h - QPROF_LOG messages: a thread drains the BPF ring buffer (and the
 * ring collector pushes what it reads from the thread rings) into a
 * bounded in-memory store with sequence numbers; readers copy what is newer
 * than the last sequence they saw, or wait for it (follow). Losses are
 * counted where they happen: in the kernel (ring buffer full) and here
 * (the store dropped its oldest before a reader got them: each reader sees
 * the gap in the sequence numbers). Thread-safe. */
#ifndef QPROF_LOGS_H
#define QPROF_LOGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/scopes.h"

struct qp_logs;

struct qp_log_entry {
	uint64_t seq;		/* 1, 2, ... in arrival order */
	uint64_t ts_ns;		/* Unix time, ns */
	uint64_t mono_ns;	/* the same instant in CLOCK_MONOTONIC (the BPF clock), ns */
	uint64_t site;
	uint32_t pid, tid;
	int32_t len;		/* length the message had; >= QPROF_LOG_MSG: cut */
	char msg[QPROF_LOG_MSG];
};

int qp_logs_start(struct qp_logs **out, int ringbuf_fd, size_t capacity, char *err, size_t errlen);
void qp_logs_stop(struct qp_logs *l); /* accepts NULL; wakes every waiter */

/* One message from elsewhere (the ring collector's drain): MONO_NS its
 * CLOCK_MONOTONIC time, MSG NUL-terminated (cut to QPROF_LOG_MSG - 1). */
void qp_logs_push(struct qp_logs *l, uint32_t pid, uint32_t tid, uint64_t site, uint64_t mono_ns, int32_t len,
		  const char *msg);

/* Up to MAX entries with seq > SINCE (of PID when pid > 0), oldest first.
 * Returns how many; *last is the highest seq looked at (pass it back as SINCE). */
size_t qp_logs_get(struct qp_logs *l, uint64_t since, int pid, struct qp_log_entry *out, size_t max,
		   uint64_t *last);
/* Wait until an entry newer than SINCE exists, TIMEOUT_MS passes or the store
 * stops. false when it stopped. */
bool qp_logs_wait(struct qp_logs *l, uint64_t since, int timeout_ms);
/* Entries received so far, and the lowest seq still held. */
void qp_logs_stats(struct qp_logs *l, uint64_t *received, uint64_t *oldest);
#endif

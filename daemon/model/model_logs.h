/* model_logs.h - QPROF_LOG messages as the model hands them to the NDJSON
 * encoder (export_logs.h): a reader's batch of the entries newer than the
 * last sequence it saw, each with its site's file, line and function
 * copied under the registry lock, and the messages lost since its previous
 * batch (evicted from the store before it got them, or dropped in the
 * kernel). The HTTP handler holds a reader per request and only streams. */
#ifndef QPROF_MODEL_LOGS_H
#define QPROF_MODEL_LOGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect/logs.h"
#include "model_src.h"

#define QP_LOG_BATCH 64

struct qp_log_line {
	struct qp_log_entry e;
	bool truncated;		/* the message was cut to QPROF_LOG_MSG - 1 bytes */
	bool located;		/* the site is known: file, line, function below */
	char *file, *function;	/* NULL: unknown (JSON null) */
	uint32_t line;
};

struct qp_log_batch {
	uint64_t lost;		/* messages lost before these lines (0: none) */
	size_t n;
	struct qp_log_line lines[QP_LOG_BATCH];
};

/* Where a reader is: the last sequence it looked at and the kernel losses
 * it has reported. Messages of PID only when pid > 0. */
struct qp_log_reader {
	uint64_t since;
	uint64_t kernel_lost;
	int pid;
};

/* A reader after sequence SINCE. From the start (SINCE 0) kernel losses
 * are news; after SINCE, those from before the request are history. */
void qp_log_reader_init(const struct qp_model_src *src, struct qp_log_reader *rd, uint64_t since, int pid);
/* The next batch for RD (src->logs not NULL): 1 when RD moved (lines, a
 * loss, or entries of other pids passed over), 0 when nothing is new.
 * Free the batch's names with qp_log_batch_clear. */
int qp_log_read(const struct qp_model_src *src, struct qp_log_reader *rd, struct qp_log_batch *b);
void qp_log_batch_clear(struct qp_log_batch *b);
/* Wait up to TIMEOUT_MS for news for RD: 1 when there is some, 0 when
 * not, -ECANCELED when the store stopped. */
int qp_log_wait(const struct qp_model_src *src, const struct qp_log_reader *rd, int timeout_ms);
#endif

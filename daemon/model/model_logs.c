/* model_logs.c - see model_logs.h: reads the log store and the kernel's
 * loss counter (collect/), names the sites through the registry's namer
 * under its lock, and leaves the encoding to export_logs.c. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_scopes.h"
#include "model_logs.h"
#include "targets/target_names.h"
#include "targets/targets.h"

static uint64_t kernel_losses(const struct qp_model_src *src)
{
	return qp_scopes_counter(src->scopes, QPROF_CNT_LOG_LOST);
}

void qp_log_reader_init(const struct qp_model_src *src, struct qp_log_reader *rd, uint64_t since, int pid)
{
	rd->since = since;
	rd->pid = pid;
	rd->kernel_lost = since ? kernel_losses(src) : 0;
}

/* The sites' names, copied under the registry lock: the JSON is made
 * after it is dropped. A copy that fails leaves the line unlocated. */
static void name_lines(const struct qp_model_src *src, struct qp_log_batch *b)
{
	struct qp_namer nm;
	size_t i;

	qp_registry_namer(src->reg, &nm);
	pthread_mutex_lock(&src->reg->lock);
	for (i = 0; i < b->n; i++) {
		struct qp_log_line *l = &b->lines[i];
		const struct qp_site_info *site = nm.site(nm.arg, l->e.pid, l->e.site);

		if (!site)
			continue;
		l->file = site->file ? strdup(site->file) : NULL;
		l->function = site->function ? strdup(site->function) : NULL;
		l->line = site->line;
		l->located = (l->file || !site->file) && (l->function || !site->function);
	}
	pthread_mutex_unlock(&src->reg->lock);
}

int qp_log_read(const struct qp_model_src *src, struct qp_log_reader *rd, struct qp_log_batch *b)
{
	struct qp_log_entry entries[QP_LOG_BATCH];
	uint64_t last, kl;
	size_t i, n;

	memset(b, 0, sizeof(*b));
	n = qp_logs_get(src->logs, rd->since, rd->pid, entries, QP_LOG_BATCH, &last);
	kl = kernel_losses(src);
	if (!n && last <= rd->since && kl <= rd->kernel_lost)
		return 0;
	/* sequence numbers skipped: evicted before this reader saw them (with a
	 * pid filter the other pids' entries are skipped too: no loss then) */
	if (n && entries[0].seq > rd->since + 1 && rd->pid <= 0)
		b->lost = entries[0].seq - rd->since - 1;
	b->lost += kl - rd->kernel_lost;
	rd->kernel_lost = kl;
	rd->since = last;
	for (i = 0; i < n; i++) {
		b->lines[i].e = entries[i];
		b->lines[i].truncated = entries[i].len >= QPROF_LOG_MSG;
	}
	b->n = n;
	name_lines(src, b);
	return 1;
}

void qp_log_batch_clear(struct qp_log_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		free(b->lines[i].file);
		free(b->lines[i].function);
		b->lines[i].file = b->lines[i].function = NULL;
	}
	b->n = 0;
	b->lost = 0;
}

int qp_log_wait(const struct qp_model_src *src, const struct qp_log_reader *rd, int timeout_ms)
{
	uint64_t received, oldest;

	if (!qp_logs_wait(src->logs, rd->since, timeout_ms))
		return -ECANCELED;
	qp_logs_stats(src->logs, &received, &oldest);
	return received > rd->since || kernel_losses(src) != rd->kernel_lost;
}

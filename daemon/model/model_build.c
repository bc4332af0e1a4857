/* model_build.c - the model builders: read the collectors (twice, around
 * a wait, for a window), take the registry lock to name what they read,
 * and fill the plain models of model_scopes.h, model_values.h and
 * model_status.h. The arithmetic and the naming are those files'; this one
 * only fetches. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect_cpu.h"
#include "logs.h"
#include "model_scopes.h"
#include "model_status.h"
#include "model_values.h"
#include "ring_collect.h"
#include "targets.h"
#include "util.h"

/* One reading of the collector: scopes, marks and (asked for) probes. */
struct reading {
	struct qp_scope_snapshot snap;
	struct qp_mark_row *marks;
	size_t nmarks;
	struct qp_probe_row *probes;
	size_t nprobes;
};

static void reading_free(struct reading *r)
{
	qp_scope_snapshot_free(&r->snap);
	free(r->marks);
	free(r->probes);
	memset(r, 0, sizeof(*r));
}

static int take_reading(const struct qp_model_src *src, const struct qp_scope_query *q, struct reading *r)
{
	memset(r, 0, sizeof(*r));
	if (qp_scopes_read(src->scopes, q->pid, &r->snap))
		return -EIO;
	if (qp_marks_read(src->scopes, q->pid, &r->marks, &r->nmarks)) {
		r->marks = NULL;
		r->nmarks = 0;
		if (q->strict)
			goto fail;
	}
	if (q->probes && qp_probe_counts_read(src->scopes, q->pid, &r->probes, &r->nprobes)) {
		r->probes = NULL;
		r->nprobes = 0;
		if (q->strict)
			goto fail;
	}
	return 0;
fail:
	reading_free(r);
	return -EIO;
}

int qp_scope_model_build(const struct qp_model_src *src, const struct qp_scope_query *q,
			 struct qp_scope_model *out)
{
	struct reading base = { 0 }, now = { 0 };
	struct qp_scope_input in = { 0 };
	struct qp_namer nm;
	int ret;

	memset(out, 0, sizeof(*out));
	if (q->seconds) {
		ret = take_reading(src, q, &base);
		if (ret)
			return ret;
		if (!src->wait(src->wait_arg, q->seconds)) {
			reading_free(&base);
			return -ECANCELED;
		}
	}
	ret = take_reading(src, q, &now);
	if (ret) {
		reading_free(&base);
		return ret;
	}
	in.now = &now.snap;
	in.marks = now.marks;
	in.nmarks = now.nmarks;
	in.probes = now.probes;
	in.nprobes = now.nprobes;
	in.pid = q->pid;
	if (q->seconds) {
		in.base = &base.snap;
		in.mbase = base.marks;
		in.nmbase = base.nmarks;
		in.pbase = base.probes;
		in.npbase = base.nprobes;
		in.window_s = q->seconds;
	}
	in.now_ms = qp_realtime_ns() / 1000000;
	qp_registry_namer(src->reg, &nm);
	if (!q->reg_locked)
		pthread_mutex_lock(&src->reg->lock);
	ret = qp_scope_model_make(&in, &nm, out);
	if (!q->reg_locked)
		pthread_mutex_unlock(&src->reg->lock);
	reading_free(&base);
	reading_free(&now);
	return ret;
}

int qp_value_model_build(const struct qp_model_src *src, int pid, struct qp_value_model *out)
{
	struct qp_value_row *rows = NULL;
	struct qp_namer nm;
	size_t n = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (qp_values_read(src->scopes, pid, &rows, &n))
		return -EIO;
	qp_registry_namer(src->reg, &nm);
	pthread_mutex_lock(&src->reg->lock);
	ret = qp_value_model_make(rows, n, &nm, out);
	pthread_mutex_unlock(&src->reg->lock);
	qp_values_free(rows, n);
	return ret;
}

int qp_status_model_build(const struct qp_model_src *src, struct qp_status_model *out)
{
	struct qp_scope_snapshot snap;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (qp_scopes_read(src->scopes, 0, &snap))
		return -EIO;
	qp_status_from_snapshot(&snap, out);
	qp_scope_snapshot_free(&snap);
	out->uptime_ms = (qp_now_ns() - src->start_ns) / 1000000;
	pthread_mutex_lock(&src->reg->lock);
	for (i = 0; i < src->reg->ntargets; i++) {
		if (src->reg->targets[i]->state == QP_TARGET_RUNNING)
			out->targets_running++;
		else
			out->targets_exited++;
	}
	pthread_mutex_unlock(&src->reg->lock);
	out->cpu.running = src->cpu != NULL;
	if (src->cpu) {
		size_t bytes = 0;

		qp_cpu_counters(src->cpu, &out->cpu.samples, &out->cpu.lost);
		qp_cpu_memory(src->cpu, &out->cpu.aged, &bytes);
		out->cpu.table_bytes = bytes;
	} else
		snprintf(out->cpu.error, sizeof(out->cpu.error), "%s", src->cpu_error ? src->cpu_error : "");
	out->cpu.frequency_hz = src->frequency_hz;
	out->cpu.all = src->sample_all;
	out->cpu.cpus = qp_cpu_ncpus(src->cpu);
	out->ring.running = src->reg->ring != NULL;
	out->ring.is_default = src->reg->ring_default;
	if (src->reg->ring) {
		struct qp_ring_global g;

		qp_ring_global_status(src->reg->ring, &g);
		out->ring.announces = g.announces;
		out->ring.not_target = g.not_target;
		out->ring.bad = g.bad;
		out->ring.refused = g.refused;
		out->ring.lost = g.lost;
		out->ring.dropped_rings = g.dropped_rings;
		out->ring.ns_per_tick = g.ns_per_tick;
	}
	out->logs.running = src->logs != NULL;
	if (src->logs)
		qp_logs_stats(src->logs, &out->logs.received, &out->logs.oldest_seq);
	return 0;
}

/* export_trace.c - see export_trace.h: per-instance events as Chrome Trace
 * Event Format JSON through the one JSON writer (every name and message
 * escaped; times in us with ns exact). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_trace.h"

static void meta(struct qp_json *j, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
	char num[16];

	if (!name) {
		snprintf(num, sizeof(num), "%u", what[0] == 'p' ? pid : tid);
		name = num;
	}
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "name", what);
	qp_json_kv_str(j, "ph", "M");
	qp_json_kv_u64(j, "pid", pid);
	qp_json_kv_u64(j, "tid", tid);
	qp_json_key(j, "args");
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "name", name);
	qp_json_obj_end(j);
	qp_json_obj_end(j);
}

static void head(struct qp_json *j, const struct qp_trace_event *e, const char *ph, const char *cat,
		 const char *name)
{
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "name", name ? name : "?");
	qp_json_kv_str(j, "cat", cat);
	qp_json_kv_str(j, "ph", ph);
	qp_json_kv_milli(j, "ts", e->ts_ns);
	qp_json_kv_u64(j, "pid", e->pid);
	qp_json_kv_u64(j, "tid", e->tid);
}

/* A span across threads as Chrome's nestable async events: pairs by
 * category, process-local id and scope (the span's name, since qprof pairs
 * by name and id). */
static void async_event(struct qp_json *j, const struct qp_trace_event *e, const char *ph)
{
	char id[24];

	head(j, e, ph, "span", e->name);
	snprintf(id, sizeof(id), "0x%llx", (unsigned long long)e->id);
	qp_json_kv_str(j, "scope", e->name ? e->name : "?");
	qp_json_key(j, "id2");
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "local", id);
	qp_json_obj_end(j);
	if (e->kind == QP_TEV_ASTEP) {
		qp_json_key(j, "args");
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "step", e->msg ? e->msg : "?");
		qp_json_obj_end(j);
	}
}

static void event(struct qp_json *j, const struct qp_trace_event *e)
{
	switch (e->kind) {
	case QP_TEV_ABEGIN:
		async_event(j, e, "b");
		break;
	case QP_TEV_ASTEP:
		async_event(j, e, "n");
		break;
	case QP_TEV_AEND:
		async_event(j, e, "e");
		break;
	case QP_TEV_SCOPE:
		/* no "args": speedscope names a frame by its name and args
		 * together ("on_tick {\"depth\":0}"); the nesting is in the
		 * times themselves */
		head(j, e, "X", "scope", e->name);
		qp_json_kv_milli(j, "dur", e->dur_ns);
		break;
	case QP_TEV_MARK:
		head(j, e, "i", "mark", e->name);
		qp_json_kv_str(j, "s", "t");
		break;
	case QP_TEV_LOG:
		head(j, e, "i", "log", "log");
		qp_json_kv_str(j, "s", "t");
		qp_json_key(j, "args");
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "message", e->msg ? e->msg : "");
		qp_json_kv_str(j, "site", e->name);
		qp_json_obj_end(j);
		break;
	case QP_TEV_VALUE:
		if (isfinite(e->value)) {
			head(j, e, "C", "value", e->name);
			qp_json_key(j, "args");
			qp_json_obj_begin(j);
			qp_json_kv_double(j, "value", e->value);
			qp_json_obj_end(j);
		} else {
			head(j, e, "i", "value", e->name);
			qp_json_kv_str(j, "s", "t");
			qp_json_key(j, "args");
			qp_json_obj_begin(j);
			qp_json_kv_str(j, "value", isnan(e->value) ? "nan" : e->value > 0 ? "inf" : "-inf");
			qp_json_obj_end(j);
		}
		break;
	}
	qp_json_obj_end(j);
}

/* What the trailer may take at most: the dropped and cut notes and
 * otherData, with every number at its widest. */
#define TRAILER_MAX 1536

const char *qp_trace_cap_text(uint64_t max_bytes, char *buf, size_t len)
{
	if (max_bytes % 1000000 == 0)
		snprintf(buf, len, "%llu MB", (unsigned long long)(max_bytes / 1000000));
	else
		snprintf(buf, len, "%llu-byte", (unsigned long long)max_bytes);
	return buf;
}

int qp_export_trace(const struct qp_trace_doc *d, uint64_t max_bytes, struct qp_json *j)
{
	size_t i, n = d->n, limit = SIZE_MAX;
	uint32_t pid0 = d->nprocs ? d->procs[0].pid : 0;

	if (max_bytes)
		limit = max_bytes > TRAILER_MAX ? (size_t)(max_bytes - TRAILER_MAX) : 0;
	qp_json_obj_begin(j);
	qp_json_key(j, "traceEvents");
	qp_json_arr_begin(j);
	for (i = 0; i < d->nprocs; i++)
		meta(j, "process_name", d->procs[i].pid, d->procs[i].pid, d->procs[i].name);
	for (i = 0; i < d->nthreads; i++)
		meta(j, "thread_name", d->threads[i].pid, d->threads[i].tid, d->threads[i].name);
	for (i = 0; i < d->n && !j->failed; i++) {
		size_t len = j->len;
		bool first = j->first[j->depth];

		event(j, &d->ev[i]);
		if (j->len > limit) {
			/* the event does not fit: it and the rest are left out */
			j->len = len;
			j->first[j->depth] = first;
			n = i;
			break;
		}
	}
	if (d->dropped || d->lost) {
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "name", "qprof: events dropped");
		qp_json_kv_str(j, "cat", "qprof");
		qp_json_kv_str(j, "ph", "i");
		qp_json_kv_str(j, "s", "g");
		qp_json_kv_milli(j, "ts", d->end_ns);
		qp_json_kv_u64(j, "pid", pid0);
		qp_json_kv_u64(j, "tid", pid0);
		qp_json_key(j, "args");
		qp_json_obj_begin(j);
		qp_json_kv_u64(j, "dropped_events", d->dropped);
		qp_json_kv_u64(j, "lost_events", d->lost);
		qp_json_obj_end(j);
		qp_json_obj_end(j);
	}
	if (n < d->n) {
		char what[112], mb[32];

		snprintf(what, sizeof(what), "qprof: trace cut here (the %s cap): later events left out",
			 qp_trace_cap_text(max_bytes, mb, sizeof(mb)));
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "name", what);
		qp_json_kv_str(j, "cat", "qprof");
		qp_json_kv_str(j, "ph", "i");
		qp_json_kv_str(j, "s", "g");
		qp_json_kv_milli(j, "ts", d->ev[n].ts_ns);
		qp_json_kv_u64(j, "pid", pid0);
		qp_json_kv_u64(j, "tid", pid0);
		qp_json_key(j, "args");
		qp_json_obj_begin(j);
		qp_json_kv_u64(j, "events_left_out", d->n - n);
		qp_json_kv_u64(j, "max_bytes", max_bytes);
		qp_json_obj_end(j);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	qp_json_kv_str(j, "displayTimeUnit", "ns");
	qp_json_key(j, "otherData");
	qp_json_obj_begin(j);
	qp_json_kv_str(j, "collector", d->collector ? d->collector : "bpf");
	qp_json_kv_u64(j, "begin_ns", d->begin_ns);
	qp_json_kv_u64(j, "end_ns", d->end_ns);
	qp_json_kv_u64(j, "events", n);
	qp_json_kv_u64(j, "dropped_events", d->dropped);
	qp_json_kv_u64(j, "lost_events", d->lost);
	qp_json_kv_u64(j, "calibration_ns", d->calibration_ns);
	qp_json_kv_u64(j, "max_bytes", max_bytes);
	qp_json_kv_u64(j, "cut_events", d->n - n);
	if (n < d->n)
		qp_json_kv_u64(j, "cut_at_ns", d->ev[n].ts_ns);
	qp_json_obj_end(j);
	qp_json_obj_end(j);
	return j->failed ? -ENOMEM : 0;
}

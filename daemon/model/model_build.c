/* model_build.c - the model builders: read the collectors (twice, around
 * a wait, for a window), take the registry lock to name what they read,
 * and fill the plain models of model_scopes.h, model_values.h,
 * model_status.h and model_trace.h (a trace session around the wait, and
 * the window's log messages). The arithmetic and the naming are those files'; this one
 * only fetches. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_cpu.h"
#include "collect/collect_trace.h"
#include "collect/logs.h"
#include "model_scopes.h"
#include "model_status.h"
#include "model_trace.h"
#include "model_values.h"
#include "common/procfs.h"
#include "collect/ring_collect.h"
#include "targets/targets.h"
#include "common/util.h"

/* One reading of the collector: scopes, marks and (asked for) probes. */
struct reading {
	struct qp_scope_snapshot snap;
	struct qp_mark_row *marks;
	size_t nmarks;
	struct qp_probe_row *probes;
	size_t nprobes;
	struct qp_kstats_row *kst;	/* the scopes' kernel figures */
	size_t nkst;
	bool kernel;			/* read (traced, and the read worked) */
};

static void reading_free(struct reading *r)
{
	qp_scope_snapshot_free(&r->snap);
	free(r->marks);
	free(r->probes);
	free(r->kst);
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
	/* kernel figures: absent from the rows (not zero) when unreadable */
	if (src->cpu && !qp_cpu_off_error(src->cpu))
		r->kernel = !qp_cpu_kstats_read(src->cpu, q->pid, &r->kst, &r->nkst);
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

/* The names the scope model of IN asks for (model_scopes.c), copied out
 * of the registry: NULL on no memory. */
static struct qp_names *scope_names(const struct qp_model_src *src, const struct qp_scope_input *in)
{
	struct qp_names *n = qp_names_new();
	size_t i;

	if (!n)
		return NULL;
	for (i = 0; i < in->now->n; i++) {
		const struct scope_key *k = &in->now->rows[i].key;

		if (in->pid > 0 && k->tgid != (uint32_t)in->pid)
			continue;
		/* a process not yet a target (the poll loop adopts one a --binary
		 * target produced) is left out: a read changes nothing */
		qp_names_want_target(n, k->tgid);
		qp_names_want_site(n, k->tgid, k->site);
		if (k->parent)
			qp_names_want_site(n, k->tgid, k->parent);
	}
	for (i = 0; i < in->nmarks; i++) {
		qp_names_want_target(n, in->marks[i].key.tgid);
		qp_names_want_site(n, in->marks[i].key.tgid, in->marks[i].key.site);
	}
	for (i = 0; i < in->nprobes; i++) {
		qp_names_want_target(n, in->probes[i].tgid);
		qp_names_want_def(n, in->probes[i].id);
	}
	if (qp_names_fill(n, src->reg)) {
		qp_names_free(n);
		return NULL;
	}
	return n;
}

int qp_scope_model_build(const struct qp_model_src *src, const struct qp_scope_query *q,
			 struct qp_scope_model *out)
{
	struct reading base = { 0 }, now = { 0 };
	struct qp_scope_input in = { 0 };
	struct qp_names *names;
	struct qp_namer nm;
	int ret;

	memset(out, 0, sizeof(*out));
	if (q->seconds) {
		ret = take_reading(src, q, &base);
		if (ret)
			return ret;
		if (!qp_model_wait(src, q->seconds)) {
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
	in.kernel = now.kernel && (!q->seconds || base.kernel);
	in.kst = now.kst;
	in.nkst = now.nkst;
	if (q->seconds) {
		in.kbase = base.kst;
		in.nkbase = base.nkst;
		in.base = &base.snap;
		in.mbase = base.marks;
		in.nmbase = base.nmarks;
		in.pbase = base.probes;
		in.npbase = base.nprobes;
		in.window_s = q->seconds;
	}
	in.now_ms = qp_realtime_ns() / 1000000;
	/* the names under the lock, the model built without it */
	names = scope_names(src, &in);
	if (!names) {
		ret = -ENOMEM;
		goto out;
	}
	qp_names_namer(names, &nm);
	ret = qp_scope_model_make(&in, &nm, out);
	if (!ret) {
		/* what the BPF collector took off each duration of its targets'
		 * rows (the ring collector's clock needs no correction) */
		uint64_t cal = src->scopes ? qp_scopes_calibration(src->scopes) : 0;
		size_t i;

		for (i = 0; i < out->n && cal; i++) {
			struct qp_target_times tt;

			if (out->items[i].shape == QP_ITEM_TIMED &&
			    nm.target(nm.arg, (uint32_t)out->items[i].pid, &tt) && !tt.ring)
				out->items[i].calibration_ns = cal;
		}
	}
	qp_names_free(names);
out:
	reading_free(&base);
	reading_free(&now);
	return ret;
}

int qp_value_model_build(const struct qp_model_src *src, int pid, struct qp_value_model *out)
{
	struct qp_value_row *rows = NULL;
	struct qp_names *names;
	struct qp_namer nm;
	size_t n = 0, i;
	int ret;

	memset(out, 0, sizeof(*out));
	if (qp_values_read(src->scopes, pid, &rows, &n))
		return -EIO;
	names = qp_names_new();
	for (i = 0; names && i < n; i++) {
		qp_names_want_target(names, rows[i].key.tgid);
		qp_names_want_site(names, rows[i].key.tgid, rows[i].key.site);
	}
	ret = !names || qp_names_fill(names, src->reg) ? -ENOMEM : 0;
	if (!ret) {
		qp_names_namer(names, &nm);
		ret = qp_value_model_make(rows, n, &nm, out);
	}
	qp_names_free(names);
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
	qp_spans_figures(src->scopes, &out->scopes.spans_pending, &out->scopes.span_table);
	out->uptime_ms = (qp_now_ns() - src->start_ns) / 1000000;
	out->self.ok = !qp_proc_self_usage(&out->self.rss_bytes, &out->self.cpu_ns);
	qp_lock(&src->reg->lock);
	for (i = 0; i < src->reg->ntargets; i++) {
		if (src->reg->targets[i]->state == QP_TARGET_RUNNING)
			out->targets_running++;
		else
			out->targets_exited++;
	}
	pthread_mutex_unlock(&src->reg->lock);
	out->cpu.running = src->cpu != NULL;
	out->cpu.starting = !src->cpu && src->cpu_starting;
	if (src->cpu) {
		size_t bytes = 0;

		qp_cpu_counters(src->cpu, &out->cpu.samples, &out->cpu.lost);
		qp_cpu_memory(src->cpu, &out->cpu.aged, &bytes);
		out->cpu.table_bytes = bytes;
		qp_cpu_unwind_figures(src->cpu, &out->cpu.unwind);
	} else
		snprintf(out->cpu.error, sizeof(out->cpu.error), "%s", src->cpu_error ? src->cpu_error : "");
	out->offcpu.running = src->cpu && !qp_cpu_off_error(src->cpu);
	if (out->offcpu.running) {
		struct qp_off_counters oc;

		qp_cpu_off_counters(src->cpu, &oc);
		out->offcpu.intervals = oc.intervals;
		out->offcpu.lost = oc.lost;
		out->offcpu.no_state = oc.no_state;
		out->offcpu.kstats_full = oc.kstats_full;
		qp_cpu_slow_counters(src->cpu, &out->offcpu.slow);
	} else {
		snprintf(out->offcpu.error, sizeof(out->offcpu.error), "%s",
			 src->cpu || !src->cpu_error || !src->cpu_error[0] ? qp_cpu_off_error(src->cpu)
									    : src->cpu_error);
	}
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
		out->ring.exits = g.exits;
		out->ring.exits_lost = g.exits_lost;
		out->ring.exit_heads_unread = g.exit_heads_unread;
		out->ring.exit_hook = g.exit_hook;
		out->ring.ring_records = g.ring_records;
		out->ring.ns_per_tick = g.ns_per_tick;
	}
	out->logs.running = src->logs != NULL;
	out->trace.running = src->tracer != NULL;
	if (src->tracer)
		qp_tracer_stats(src->tracer, &out->trace.st);
	if (src->scopes)	/* measured when the first target needed the BPF collector */
		qp_scopes_calibration_read(src->scopes, &out->calib);
	if (src->logs)
		qp_logs_stats(src->logs, &out->logs.received, &out->logs.oldest_seq);
	return 0;
}

/* The window's log messages of PID (all targets when 0), seq > SINCE. */
static int window_logs(struct qp_logs *lg, uint64_t since, int pid, struct qp_log_entry **out, size_t *n)
{
	struct qp_log_entry *v = NULL, *nv;
	size_t cnt = 0, cap = 0, got;
	uint64_t last;

	*out = NULL;
	*n = 0;
	if (!lg)
		return 0;
	for (;;) {
		if (cap - cnt < 256) {
			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		got = qp_logs_get(lg, since, pid, v + cnt, 256, &last);
		cnt += got;
		if (last == since)
			break;
		since = last;
	}
	*out = v;
	*n = cnt;
	return 0;
}

/* The flight recorders of the ring targets PIDS: no session, no wait. */
static int flight_result(struct qp_ring *g, const uint32_t *pids, size_t n, struct qp_trace_result *r)
{
	uint64_t *since = calloc(n + 1, sizeof(*since)), oldest;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!since)
		return -ENOMEM;
	qp_ring_sync(g, qp_now_ns());
	r->end_ns = qp_now_ns();
	ret = qp_trace_ring_append(g, pids, since, n, 0, UINT64_MAX, r, &oldest);
	/* the recorder keeps the last N: what it let go is out of it, not lost */
	r->lost = 0;
	r->begin_ns = oldest == UINT64_MAX ? r->end_ns : oldest;
	free(since);
	if (ret)
		qp_trace_result_free(r);
	return ret;
}

/* Record Q's window: a BPF session (when the recorder runs) and the ring
 * targets' instances numbered from before the window to after it. */
static int window_result(const struct qp_model_src *src, const struct qp_trace_query *q, const uint32_t *pids,
			 size_t n, struct qp_trace_result *r)
{
	struct qp_ring *g = src->reg->ring;
	struct qp_trace_session *ss = NULL;
	uint64_t *seq0 = calloc(n + 1, sizeof(*seq0)), lo, oldest;
	size_t i;
	bool done;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (!seq0)
		return -ENOMEM;
	/* numbers first, then the time: what was drained before them ended before */
	for (i = 0; i < n; i++)
		seq0[i] = qp_ring_flight_seq(g, (int)pids[i]);
	lo = qp_now_ns();
	if (src->tracer)
		ret = qp_trace_begin(src->tracer, q->pid > 0 ? (uint32_t)q->pid : QPROF_TRACE_ALL, q->max_events,
				     &ss);
	else if (!n)
		ret = -ENOTSUP;
	if (ret) {
		free(seq0);
		return ret;
	}
	done = qp_model_wait(src, q->seconds);
	if (ss) {
		ret = qp_trace_end(src->tracer, ss, r);
	} else {
		r->begin_ns = lo;
		r->end_ns = qp_now_ns();
	}
	if (!ret && !done)
		ret = -ECANCELED;
	if (!ret && n) {
		/* every instance that ended by the window's end, drained */
		qp_ring_sync(g, r->end_ns);
		ret = qp_trace_ring_append(g, pids, seq0, n, lo, r->end_ns, r, &oldest);
	}
	free(seq0);
	if (ret)
		qp_trace_result_free(r);
	return ret;
}

/* The names qp_trace_model_make asks for of R and LOGS (model_trace.c),
 * copied out of REG, and its number of targets then in *NTARGETS; NULL on
 * no memory. */
static struct qp_names *trace_names(struct qp_registry *reg, const struct qp_trace_result *r,
				    const struct qp_log_entry *logs, size_t nlogs, size_t *ntargets)
{
	struct qp_names *n = qp_names_new();
	uint64_t last_pid = UINT64_MAX, last_site = 0;
	size_t i;

	if (!n)
		return NULL;
	for (i = 0; i < r->n; i++) {
		const struct trace_record *t = &r->recs[i];

		if (t->pid != last_pid) {
			qp_names_want_target(n, t->pid);
			last_pid = t->pid;
			last_site = 0;
		}
		if (t->site != last_site) {
			qp_names_want_site(n, t->pid, t->site);
			last_site = t->site;
		}
		if (t->kind == QPROF_TR_ASTEP)
			qp_names_want_site(n, t->pid, t->arg2);
	}
	for (i = 0; i < nlogs; i++) {
		qp_names_want_target(n, logs[i].pid);
		qp_names_want_site(n, logs[i].pid, logs[i].site);
	}
	for (i = 0; i < r->nthreads; i++)
		qp_names_want_target(n, r->threads[i].pid);
	if (qp_names_fill(n, reg)) {
		qp_names_free(n);
		return NULL;
	}
	*ntargets = qp_names_ntargets(n);
	return n;
}

int qp_trace_model_build(const struct qp_model_src *src, const struct qp_trace_query *q,
			 struct qp_trace_model *out)
{
	struct qp_trace_result r;
	struct qp_log_entry *logs = NULL;
	uint64_t since = 0, oldest, logs_lost0 = 0;
	uint32_t *rpids = NULL;
	size_t nlogs = 0, nrpids = 0, ntargets = 0;
	struct qp_names *names;
	struct qp_namer nm;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = qp_trace_ring_pids(src, q->pid, &rpids, &nrpids);
	if (ret)
		return ret;
	if (!q->seconds) {
		ret = nrpids ? flight_result(src->reg->ring, rpids, nrpids, &r) : -ENOENT;
	} else {
		if (src->logs)
			qp_logs_stats(src->logs, &since, &oldest);
		logs_lost0 = qp_scopes_counter(src->scopes, QPROF_CNT_LOG_LOST);
		ret = window_result(src, q, rpids, nrpids, &r);
	}
	free(rpids);
	if (ret)
		return ret;
	/* the flight recorder: the log store's messages of its time span */
	ret = window_logs(src->logs, q->seconds ? since : 0, q->pid, &logs, &nlogs);
	if (ret) {
		qp_trace_result_free(&r);
		return ret;
	}
	/* the names under the lock; the events named and sorted without it */
	names = trace_names(src->reg, &r, logs, nlogs, &ntargets);
	if (names) {
		qp_names_namer(names, &nm);
		ret = qp_trace_model_make(&r, q->pid, logs, nlogs, &nm, q->max_events, out);
	} else {
		ret = -ENOMEM;
	}
	qp_names_free(names);
	if (!ret && q->seconds) {
		/* messages the kernel had no room for during the window (all
		 * processes: the log buffer is shared) */
		out->doc.lost += qp_scopes_counter(src->scopes, QPROF_CNT_LOG_LOST) - logs_lost0;
		/* and those the log store let go before they were read here */
		if (src->logs) {
			uint64_t received;

			qp_logs_stats(src->logs, &received, &oldest);
			if (oldest > since + 1)
				out->doc.lost += oldest - since - 1;
		}
	}
	if (!ret) {
		out->doc.calibration_ns = qp_scopes_calibration(src->scopes);
		if (nrpids)
			out->doc.collector = q->pid > 0 || nrpids == ntargets ? "ring" : "bpf+ring";
	}
	free(logs);
	qp_trace_result_free(&r);
	return ret;
}

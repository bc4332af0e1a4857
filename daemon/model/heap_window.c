/* heap_window.c - see heap_window.h. A window is two reads of the heap
 * maps SECONDS apart: allocated and growth figures are the difference of
 * the cumulative ones, in-use ones are the live allocations made since
 * the first read. Estimates are kept in 16-bit fixed point (objects) until
 * the profile rounds them. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_heap.h"
#include "heap_window.h"
#include "model_cpu_build.h"
#include "targets/targets.h"
#include "common/util.h"

static const struct qp_value_type heap_types[] = {
	{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
	{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
};
static const struct qp_value_type growth_types[] = { { "calls", "count" }, { "space", "bytes" } };

static uint64_t sub(uint64_t now, uint64_t base)
{
	return now > base ? now - base : 0;	/* a stack forgotten and made again: counts from 0 */
}

static int64_t objects(uint64_t x16)
{
	return (int64_t)((x16 + (1u << 15)) >> 16);
}

/* Target PID's comm and whether it still runs; false when it is none. */
static bool target_of(struct qp_registry *r, int pid, char *comm, size_t len, bool *running)
{
	struct qp_target *t;

	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, pid);
	if (t) {
		snprintf(comm, len, "%s", t->comm);
		*running = t->state == QP_TARGET_RUNNING;
	}
	pthread_mutex_unlock(&r->lock);
	return t != NULL;
}

static const char *kind_name(enum qp_heap_kind k)
{
	return k == QP_HEAP_INUSE ? "in use" : k == QP_HEAP_ALLOC ? "allocated" : "heap growth";
}

static int build(const struct qp_model_src *src, const struct qp_heap_query *q, const char *comm,
		 const struct qp_heap_snapshot *now, const struct qp_heap_snapshot *base,
		 struct qp_cpu_profile *out, uint64_t *total, uint64_t *samples)
{
	struct qp_cpu_builder b;
	size_t i;
	int ret = 0;

	if (qp_cpu_builder_begin(&b, out))
		return -ENOMEM;
	*total = *samples = 0;
	for (i = 0; i < now->n && !ret; i++) {
		const struct qp_heap_row *r = &now->v[i];
		const struct qp_heap_row *o = base ? qp_heap_snapshot_find(base, r->stack) : NULL;
		uint64_t a_obj = sub(r->alloc_objects_x16, o ? o->alloc_objects_x16 : 0);
		uint64_t a_bytes = sub(r->alloc_bytes, o ? o->alloc_bytes : 0);
		uint64_t a_samples = sub(r->alloc_samples, o ? o->alloc_samples : 0);
		uint64_t g_bytes = sub(r->growth_bytes, o ? o->growth_bytes : 0);
		uint64_t g_calls = sub(r->growth_calls, o ? o->growth_calls : 0);
		uint64_t weight;
		struct qp_cpu_sample *s;
		int64_t *v;

		if (q->kind == QP_HEAP_GROWTH) {
			weight = g_bytes;
			*samples += g_calls;
		} else if (q->kind == QP_HEAP_ALLOC) {
			weight = a_bytes;
			*samples += a_samples;
		} else {
			weight = r->inuse_bytes;
			*samples += r->inuse_samples;
		}
		*total += weight;
		if (q->pprof && q->kind != QP_HEAP_GROWTH && (a_bytes || r->inuse_bytes))
			weight = weight ? weight : 1;	/* kept: pprof shows every type */
		if (!weight)
			continue;
		/* ips[0] is the allocator's entry: the stack starts at its caller */
		s = qp_cpu_builder_add(&b, src->reg->sym, (uint32_t)q->pid, r->tid && r->comm[0] ? r->comm : comm,
				       r->nips > 1 ? r->ips + 1 : NULL, r->nips > 1 ? r->nips - 1 : 0, NULL, 0, weight);
		if (!s) {
			ret = -ENOMEM;
			break;
		}
		/* the labels of pprof: the thread that allocated, its open scopes */
		s->tid = r->tid;
		ret = qp_cpu_sample_scopes(&b, src->reg, q->pid, r->scopes, r->nscopes, s);
		if (!ret)
			ret = qp_cpu_sample_span(&b, src->reg, q->pid, r->span_site, s);
		if (ret)
			break;
		s->span_no_id = true;
		if (r->nips <= 1)	/* the stack of no frames: stacks not kept (heap.h) */
			s->frames[0].name = r->nips ? "[no caller frame]" : "[stack not kept: --heap-stacks full]";
		if (!q->pprof)
			continue;
		v = qp_arena_alloc(b.a, 4 * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			break;
		}
		if (q->kind == QP_HEAP_GROWTH) {
			v[0] = (int64_t)g_calls;
			v[1] = (int64_t)g_bytes;
		} else {
			v[0] = objects(a_obj);
			v[1] = (int64_t)a_bytes;
			v[2] = objects(r->inuse_objects_x16);
			v[3] = (int64_t)r->inuse_bytes;
		}
		s->values = v;
	}
	return qp_cpu_builder_finish(&b, ret);
}

int qp_heap_window(const struct qp_model_src *src, const struct qp_heap_query *q, struct qp_cpu_profile *out,
		   char *note, size_t notelen, char *msg, size_t msglen)
{
	struct qp_heap_snapshot base = { 0 }, now = { 0 };
	struct qp_heap_status st;
	char comm[32] = "?", title[512];
	uint64_t total, samples, t0 = 0, start_real;
	bool running = false, was_running;
	int ret;

	memset(out, 0, sizeof(*out));
	note[0] = msg[0] = '\0';
	if (!src->heap) {
		snprintf(msg, msglen, "heap profiling is unavailable: %s", src->heap_error ? src->heap_error : "?");
		return -ENODEV;
	}
	if (!target_of(src->reg, q->pid, comm, sizeof(comm), &running) ||
	    !qp_heap_status_of(src->heap, q->pid, &st)) {
		snprintf(msg, msglen, "the heap of process %d is not profiled: attach it with "
			 "{\"pid\": %d, \"heap\": true} or run qprofd --heap", q->pid, q->pid);
		return -ENOENT;
	}
	if (!st.functions && q->kind != QP_HEAP_GROWTH) {
		snprintf(msg, msglen, "process %d (%s): %s", q->pid, comm, st.note);
		return -ENOEXEC;
	}
	was_running = running;
	start_real = qp_realtime_ns();
	if (q->seconds) {
		t0 = qp_now_ns();
		if (qp_heap_read(src->heap, q->pid, 0, &base)) {
			snprintf(msg, msglen, "cannot read the heap maps");
			return -EIO;
		}
		if (!qp_model_wait(src, q->seconds)) {
			qp_heap_snapshot_free(&base);
			snprintf(msg, msglen, "qprofd is shutting down");
			return -ECANCELED;
		}
		target_of(src->reg, q->pid, comm, sizeof(comm), &running);
	}
	ret = qp_heap_read(src->heap, q->pid, t0, &now);
	if (ret) {
		qp_heap_snapshot_free(&base);
		snprintf(msg, msglen, "cannot read the heap maps: %s", strerror(-ret));
		return -EIO;
	}
	ret = build(src, q, comm, &now, q->seconds ? &base : NULL, out, &total, &samples);
	qp_heap_snapshot_free(&base);
	if (ret) {
		qp_heap_snapshot_free(&now);
		snprintf(msg, msglen, "cannot build the heap profile: %s", strerror(-ret));
		return ret;
	}
	if (!total) {
		/* nothing to show: the same 404 with or without a window, in
		 * words that say what was looked for */
		const char *exited = was_running && !running ? ": it exited during the window" : "";
		char when[48];

		if (q->seconds)
			snprintf(when, sizeof(when), "in the %u s window", q->seconds);
		else
			snprintf(when, sizeof(when), "since qprofd attached");
		if (q->kind == QP_HEAP_GROWTH)
			snprintf(msg, msglen, "process %d (%s) did not grow its heap %s%s (growth counts brk "
				 "and anonymous mmap calls)", q->pid, comm, when, exited);
		else if (q->kind == QP_HEAP_INUSE && !q->seconds)
			snprintf(msg, msglen, "no sampled allocation of process %d (%s) is live (one sample "
				 "per %llu bytes allocated, on average)", q->pid, comm,
				 (unsigned long long)qp_heap_interval(src->heap));
		else
			snprintf(msg, msglen, "no allocation of process %d (%s) was sampled %s%s (one sample "
				 "per %llu bytes allocated, on average)", q->pid, comm, when, exited,
				 (unsigned long long)qp_heap_interval(src->heap));
		qp_heap_snapshot_free(&now);
		qp_cpu_profile_free(out);
		return -ENODATA;
	}
	snprintf(note, notelen, "%s%s%s%s", was_running && !running ? "the process exited during the window; " : "",
		 !running && !was_running ? "the process has exited: its heap as it was at exit; " : "",
		 now.counters[HEAP_CNT_LIVE_FULL] ? "some sampled allocations were not kept (--heap-live full), "
						     "in-use figures are short; " : "",
		 now.counters[HEAP_CNT_STACK_FULL] ? "some stacks were not kept (--heap-stacks full); " : "");
	qp_heap_snapshot_free(&now);
	if (q->pprof && q->kind != QP_HEAP_GROWTH) {
		out->nvalues = 4;
		out->value_types = heap_types;
		out->default_type = "inuse_space";
	} else if (q->pprof) {
		out->nvalues = 2;
		out->value_types = growth_types;
		out->default_type = "space";
	}
	out->period_type = (struct qp_value_type){ "space", "bytes" };
	out->period_ns = qp_heap_interval(src->heap);
	out->unit = "bytes";
	out->duration_ns = q->seconds ? (uint64_t)q->seconds * 1000000000ull : 0;
	out->time_ns = start_real;
	if (q->kind == QP_HEAP_GROWTH)
		snprintf(title, sizeof(title), "qprof heap growth: pid %d (%s)%s: %.1f MiB in %llu brk/mmap "
			 "call(s)", q->pid, comm, q->seconds ? " in the window" : "", (double)total / 1048576.0,
			 (unsigned long long)samples);
	else
		snprintf(title, sizeof(title), "qprof heap profile: pid %d (%s), %s%s: %.1f MiB estimated "
			 "from %llu sample(s), one per %llu bytes", q->pid, comm, kind_name(q->kind),
			 q->seconds ? " in the window" : "", (double)total / 1048576.0,
			 (unsigned long long)samples, (unsigned long long)qp_heap_interval(src->heap));
	out->title = qp_arena_strdup(out->arena, title);
	return 0;
}

int qp_heap_status_build(const struct qp_model_src *src, struct qp_heap_status_model *m)
{
	int *pids = NULL;
	long n, i;

	memset(m, 0, sizeof(*m));
	m->by_default = src->heap_default;
	m->error = src->heap_error;
	if (!src->heap)
		return 0;
	m->available = true;
	m->interval = qp_heap_interval(src->heap);
	_Static_assert(HEAP_CNT__MAX <= 16, "counters");
	qp_heap_counters(src->heap, m->counters);
	m->ncounters = HEAP_CNT__MAX;
	n = qp_heap_pids(src->heap, &pids);
	if (n < 0)
		return (int)n;
	m->targets = calloc(n ? (size_t)n : 1, sizeof(*m->targets));
	if (!m->targets) {
		free(pids);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (qp_heap_status_of(src->heap, pids[i], &m->targets[m->n]))
			m->n++;
	free(pids);
	return 0;
}

void qp_heap_status_free(struct qp_heap_status_model *m)
{
	free(m->targets);
	memset(m, 0, sizeof(*m));
}

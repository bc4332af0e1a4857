/* model_trace.c - see model_trace.h: a trace session's records and the
 * window's log messages named and sorted into the document that
 * export_trace.c writes. Names are looked up once per (process, site) and
 * copied into the model's arena, so the exporter reads them without a lock. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/arena.h"
#include "collect/collect_scopes.h"
#include "common/hashtab.h"
#include "common/procfs.h"
#include "model_trace.h"
#include "targets/targets.h"

struct namecache {
	struct qp_htab sites;	/* (pid, site) -> const char * */
	struct qp_htab pids;	/* pid -> bool (a target) */
	const struct qp_namer *nm;
	struct qp_arena *arena;
	bool oom;
};

static bool is_target(struct namecache *c, uint32_t pid)
{
	struct qp_target_times tt;
	bool made, *v;
	int64_t i = qp_htab_add_u64(&c->pids, pid, &made);

	if (i < 0) {
		c->oom = true;
		return false;
	}
	v = qp_htab_value(&c->pids, (size_t)i);
	if (made)
		*v = c->nm->target(c->nm->arg, pid, &tt);
	return *v;
}

static const char *site_name(struct namecache *c, uint32_t pid, uint64_t site)
{
	uint64_t key[2] = { pid, site };
	const char **v, *name = NULL;
	char buf[40];
	bool made;
	int64_t i = qp_htab_add(&c->sites, key, sizeof(key), &made);

	if (i < 0) {
		c->oom = true;
		return "?";
	}
	v = qp_htab_value(&c->sites, (size_t)i);
	if (!made)
		return *v;
	if (QPROF_IS_SPAN_SITE(site)) {
		const struct qp_usdt_def *def = c->nm->def(c->nm->arg, (uint32_t)site);

		if (def)
			name = def->name;
	} else {
		const struct qp_site_info *si = c->nm->site(c->nm->arg, pid, site);

		if (si)
			name = si->name;
	}
	if (!name) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)site);
		name = buf;
	}
	*v = qp_arena_strdup(c->arena, name);
	if (!*v) {
		c->oom = true;
		*v = "?";
	}
	return *v;
}

static double value_of(uint64_t bits)
{
	double d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* A process's name: that of its main thread if it was seen, else its comm. */
static const char *proc_name(const struct qp_trace_result *r, uint32_t pid, struct qp_arena *a)
{
	char buf[64];
	size_t i;

	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].pid == pid && r->threads[i].tid == pid && r->threads[i].name[0])
			return qp_arena_strdup(a, r->threads[i].name);
	if (qp_proc_file_line((int)pid, "comm", buf, sizeof(buf)) || !buf[0])
		return NULL;
	return qp_arena_strdup(a, buf);
}

static int cmp_event(const void *pa, const void *pb)
{
	const struct qp_trace_event *a = pa, *b = pb;

	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	if (a->depth != b->depth)
		return a->depth < b->depth ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	/* the longer first: an enclosing scope before one it holds */
	if (a->dur_ns != b->dur_ns)
		return a->dur_ns > b->dur_ns ? -1 : 1;
	return 0;
}

void qp_trace_events_sort(struct qp_trace_event *ev, size_t n)
{
	if (n > 1)
		qsort(ev, n, sizeof(*ev), cmp_event);
}

/* Record T (an ASPAN) as its begin and its end, two events of one name
 * and id, at E[0..2). */
static void aspan_events(struct namecache *c, const struct trace_record *t, struct qp_trace_event *e)
{
	memset(e, 0, 2 * sizeof(*e));
	e[0].kind = QP_TEV_ABEGIN;
	e[0].pid = e[1].pid = t->pid;
	e[0].tid = e[1].tid = t->tid;
	e[0].ts_ns = t->ts_ns;
	e[0].name = e[1].name = site_name(c, t->pid, t->site);
	e[0].id = e[1].id = t->arg2;
	e[1].kind = QP_TEV_AEND;
	e[1].ts_ns = t->ts_ns + t->arg;
}

/* Record T (a scope, mark, value or step) as one event at E. */
static void record_event(struct namecache *c, const struct trace_record *t, struct qp_trace_event *e)
{
	memset(e, 0, sizeof(*e));
	e->pid = t->pid;
	e->tid = t->tid;
	e->ts_ns = t->ts_ns;
	e->name = site_name(c, t->pid, t->site);
	switch (t->kind) {
	case QPROF_TR_SCOPE:
		e->kind = QP_TEV_SCOPE;
		e->depth = t->depth;
		e->dur_ns = t->arg;
		break;
	case QPROF_TR_MARK:
		e->kind = QP_TEV_MARK;
		break;
	case QPROF_TR_VALUE:
		e->kind = QP_TEV_VALUE;
		e->value = value_of(t->arg);
		break;
	case QPROF_TR_ASTEP:
		/* named as its span, so that viewers put it on the span's track */
		e->kind = QP_TEV_ASTEP;
		e->msg = e->name;
		e->name = site_name(c, t->pid, t->arg2);
		e->id = t->arg;
		break;
	}
}

/* The targets' records of R as events from out->ev[*N] on, MAX_EVENTS in
 * all; those past it counted in d->dropped. */
static void record_events(struct namecache *c, const struct qp_trace_result *r, size_t max_events,
			  struct qp_trace_model *out, size_t *n)
{
	struct qp_trace_doc *d = &out->doc;
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct trace_record *t = &r->recs[i];

		if (!is_target(c, t->pid) || t->kind < QPROF_TR_SCOPE || t->kind > QPROF_TR_ASTEP)
			continue;	/* another process, or not a kind this daemon emits */
		if (t->kind == QPROF_TR_ASPAN) {
			if (max_events - *n < 2) {
				d->dropped += 2;
				continue;
			}
			aspan_events(c, t, &out->ev[*n]);
			*n += 2;
			continue;
		}
		if (*n == max_events) {
			d->dropped++;
			continue;
		}
		record_event(c, t, &out->ev[*n]);
		(*n)++;
	}
}

/* The log messages of PID (all targets when 0) inside R's time span, from
 * out->ev[*N] on, up to MAX_EVENTS. 0 or -ENOMEM. */
static int log_events(struct namecache *c, const struct qp_trace_result *r, int pid,
		      const struct qp_log_entry *logs, size_t nlogs, size_t max_events,
		      struct qp_trace_model *out, size_t *n)
{
	size_t i;

	for (i = 0; i < nlogs; i++) {
		const struct qp_log_entry *l = &logs[i];
		struct qp_trace_event *e = &out->ev[*n];

		if ((pid > 0 && l->pid != (uint32_t)pid) || l->mono_ns < r->begin_ns ||
		    l->mono_ns > r->end_ns || !is_target(c, l->pid))
			continue;
		if (*n == max_events) {
			out->doc.dropped++;
			continue;
		}
		memset(e, 0, sizeof(*e));
		e->kind = QP_TEV_LOG;
		e->pid = l->pid;
		e->tid = l->tid;
		e->ts_ns = l->mono_ns;
		e->name = site_name(c, l->pid, l->site);
		e->msg = qp_arena_strndup(out->arena, l->msg, strnlen(l->msg, sizeof(l->msg)));
		if (!e->msg)
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

/* The threads and processes of the targets, in the order first seen, into
 * TH and PR (room for r->nthreads each). */
static void threads_and_procs(struct namecache *c, const struct qp_trace_result *r, struct qp_trace_thread *th,
			      struct qp_trace_process *pr, struct qp_trace_model *out)
{
	struct qp_trace_doc *d = &out->doc;
	size_t i, k;

	for (i = 0; i < r->nthreads; i++) {
		const struct qp_trace_thread_name *tn = &r->threads[i];

		if (!is_target(c, tn->pid))
			continue;
		th[d->nthreads].pid = tn->pid;
		th[d->nthreads].tid = tn->tid;
		th[d->nthreads].name = tn->name[0] ? qp_arena_strdup(out->arena, tn->name) : NULL;
		d->nthreads++;
		for (k = 0; k < d->nprocs && pr[k].pid != tn->pid; k++)
			;
		if (k == d->nprocs) {
			pr[k].pid = tn->pid;
			pr[k].name = proc_name(r, tn->pid, out->arena);
			d->nprocs++;
		}
	}
	d->threads = th;
	d->procs = pr;
}

int qp_trace_model_make(const struct qp_trace_result *r, int pid, const struct qp_log_entry *logs,
			size_t nlogs, const struct qp_namer *nm, size_t max_events,
			struct qp_trace_model *out)
{
	struct namecache c = { .nm = nm };
	struct qp_trace_doc *d = &out->doc;
	struct qp_trace_thread *th;
	struct qp_trace_process *pr;
	size_t i, n = 0, want = r->n + nlogs;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->arena = qp_arena_new();
	if (!out->arena)
		return -ENOMEM;
	c.arena = out->arena;
	qp_htab_init(&c.sites, sizeof(const char *));
	qp_htab_init(&c.pids, sizeof(bool));
	for (i = 0; i < r->n; i++)	/* a span across threads is two events */
		want += r->recs[i].kind == QPROF_TR_ASPAN;
	out->ev = malloc((want ? want : 1) * sizeof(*out->ev));
	th = qp_arena_alloc(out->arena, (r->nthreads + 1) * sizeof(*th));
	pr = qp_arena_alloc(out->arena, (r->nthreads + 1) * sizeof(*pr));
	if (!out->ev || !th || !pr)
		goto fail;
	d->dropped = r->dropped;
	record_events(&c, r, max_events, out, &n);
	if (log_events(&c, r, pid, logs, nlogs, max_events, out, &n) || c.oom)
		goto fail;
	qp_trace_events_sort(out->ev, n);
	d->ev = out->ev;
	d->n = n;
	threads_and_procs(&c, r, th, pr, out);
	d->collector = "bpf";
	d->begin_ns = r->begin_ns;
	d->end_ns = r->end_ns;
	d->lost = r->lost;
	ret = c.oom ? -ENOMEM : 0;
fail:
	qp_htab_free(&c.sites);
	qp_htab_free(&c.pids);
	if (ret)
		qp_trace_model_free(out);
	return ret;
}

void qp_trace_model_free(struct qp_trace_model *m)
{
	if (!m)
		return;
	free(m->ev);
	qp_arena_free(m->arena);
	memset(m, 0, sizeof(*m));
}

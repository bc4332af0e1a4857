/* model_scopes.c - see model_scopes.h. A row per (process, site, parent):
 * like a call tree, a scope entered under two parents is two rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qprof/qprof.h"
#include "json_writer.h"
#include "model_scopes.h"
#include "percentile.h"
#include "util.h"

struct row {
	const struct scope_key *key;
	struct scope_stats st;	/* window figures */
	bool window;
	uint64_t life_min, life_max;
};

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->key->tgid != y->key->tgid)
		return x->key->tgid < y->key->tgid ? -1 : 1;
	if (x->st.sum_ns != y->st.sum_ns)
		return x->st.sum_ns > y->st.sum_ns ? -1 : 1;
	return x->key->site < y->key->site ? -1 : x->key->site > y->key->site;
}

static const char *kind_of(const struct qp_site_info *s)
{
	if (!s)
		return "scope";
	switch (s->kind) {
	case QPROF_KIND_MARK:
		return "mark";
	default:
		return "scope";
	}
}

/* A site of the scope maps: a qprof descriptor, or a span's pseudo site. */
static const struct qp_site_info *site_of(struct qp_registry *r, struct qp_target *t, uint64_t addr,
					  const struct qp_usdt_def **span)
{
	*span = NULL;
	if (QPROF_IS_SPAN_SITE(addr)) {
		*span = qp_registry_def(r, (uint32_t)(addr & 0xffffffffu));
		return NULL;
	}
	return qp_target_site(r, t, addr);
}

static void write_name(struct qp_json *j, const char *key, const struct qp_site_info *s, uint64_t addr,
		       const struct qp_usdt_def *span)
{
	char buf[32];

	if (span) {
		qp_json_kv_str(j, key, span->name);
		return;
	}
	if (s) {
		qp_json_kv_str(j, key, s->name);
		return;
	}
	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
	qp_json_kv_str(j, key, buf);
}

static void write_row(struct qp_registry *r, struct qp_target *t, const struct row *w, struct qp_json *j)
{
	const struct qp_usdt_def *span, *pspan = NULL;
	const struct qp_site_info *site = site_of(r, t, w->key->site, &span);
	const struct qp_site_info *parent = w->key->parent ? site_of(r, t, w->key->parent, &pspan) : NULL;
	uint64_t min = w->st.min_ns, max = w->st.max_ns;
	const uint64_t *h = (const uint64_t *)w->st.hist; /* same width, read only */
	uint64_t n = w->st.count;

	qp_json_obj_begin(j);
	qp_json_kv_i64(j, "pid", w->key->tgid);
	qp_json_kv_str(j, "kind", span ? "span" : kind_of(site));
	write_name(j, "name", site, w->key->site, span);
	qp_json_kv_str(j, "site_kind", span ? "span" : site ? qp_site_kind_name(site->kind) : "unknown");
	if (span) {
		qp_json_kv_str(j, "begin", span->begin);
		qp_json_kv_str(j, "end", span->end);
	}
	if (site) {
		qp_json_kv_str(j, "file", site->file);
		qp_json_kv_u64(j, "line", site->line);
		qp_json_kv_str(j, "function", site->function);
	} else {
		qp_json_kv_null(j, "file");
		qp_json_kv_null(j, "line");
		qp_json_kv_null(j, "function");
	}
	qp_json_kv_u64(j, "count", n);
	qp_json_kv_u64(j, "total_ns", w->st.sum_ns);
	qp_json_kv_double(j, "mean_ns", n ? (double)w->st.sum_ns / (double)n : 0);
	qp_json_kv_u64(j, "min_ns", min);
	qp_json_kv_u64(j, "max_ns", max);
	qp_json_kv_double(j, "p50_ns", qp_hist_quantile(h, n, 0.50, min, max));
	qp_json_kv_double(j, "p90_ns", qp_hist_quantile(h, n, 0.90, min, max));
	qp_json_kv_double(j, "p99_ns", qp_hist_quantile(h, n, 0.99, min, max));
	qp_json_kv_double(j, "p999_ns", qp_hist_quantile(h, n, 0.999, min, max));
	if (w->key->parent)
		write_name(j, "parent", parent, w->key->parent, pspan);
	else
		qp_json_kv_null(j, "parent");
	qp_json_obj_end(j);
}

/* Window figures: counts and sums subtract exactly; the exact min and max of
 * a window are unknown, so they are the histogram's bounds clamped to the
 * lifetime min and max. */
static bool window_row(const struct qp_scope_row *now, const struct qp_scope_row *base, struct row *w)
{
	unsigned int b;

	w->st = now->stats;
	if (!base)
		return now->stats.count > 0;
	if (base->stats.count > now->stats.count)
		return false; /* the entry was deleted and re-created meanwhile */
	w->st.count -= base->stats.count;
	w->st.sum_ns -= base->stats.sum_ns;
	for (b = 0; b < QPROF_HIST_BUCKETS; b++)
		w->st.hist[b] = now->stats.hist[b] >= base->stats.hist[b] ?
					now->stats.hist[b] - base->stats.hist[b] : 0;
	if (!w->st.count)
		return false;
	{
		uint64_t lo, hi;

		qp_hist_bounds((const uint64_t *)w->st.hist, &lo, &hi);
		w->st.min_ns = lo;
		w->st.max_ns = hi;
	}
	/* a new lifetime extreme can only have happened inside the window */
	if (now->stats.min_ns < base->stats.min_ns || w->st.min_ns < now->stats.min_ns)
		w->st.min_ns = now->stats.min_ns;
	if (now->stats.max_ns > base->stats.max_ns || w->st.max_ns > now->stats.max_ns)
		w->st.max_ns = now->stats.max_ns;
	return true;
}

/* Marks and counted probes: a count, no durations, no parent. */
static void write_no_durations(struct qp_json *j)
{
	static const char *const keys[] = { "total_ns", "mean_ns", "min_ns", "max_ns", "p50_ns",
					    "p90_ns", "p99_ns", "p999_ns", "parent" };
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		qp_json_kv_null(j, keys[i]);
}

static void write_marks(struct qp_registry *r, const struct qp_marks_view *m, int pid, struct qp_json *j)
{
	uint64_t now_ms = qp_realtime_ns() / 1000000;
	size_t i, k = 0;

	for (i = 0; i < m->nnow; i++) {
		const struct qp_mark_row *cur = &m->now[i];
		const struct qp_site_info *site;
		struct qp_target *t;
		uint64_t count = cur->count;
		double secs;
		char buf[32];

		if (pid > 0 && cur->key.tgid != (uint32_t)pid)
			continue;
		if (m->base) {
			/* both sorted by key: walk the base alongside */
			while (k < m->nbase && (m->base[k].key.tgid < cur->key.tgid ||
						(m->base[k].key.tgid == cur->key.tgid &&
						 m->base[k].key.site < cur->key.site)))
				k++;
			if (k < m->nbase && m->base[k].key.tgid == cur->key.tgid &&
			    m->base[k].key.site == cur->key.site && m->base[k].count <= count)
				count -= m->base[k].count;
		}
		t = qp_registry_find(r, (int)cur->key.tgid);
		if (!count || !t)
			continue;
		site = qp_target_site(r, t, cur->key.site);
		secs = m->base ? m->window_s
			       : (double)((t->state == QP_TARGET_EXITED ? t->exited_ms : now_ms) - t->attached_ms) / 1e3;
		qp_json_obj_begin(j);
		qp_json_kv_i64(j, "pid", cur->key.tgid);
		qp_json_kv_str(j, "kind", "mark");
		if (site) {
			qp_json_kv_str(j, "name", site->name);
			qp_json_kv_str(j, "site_kind", qp_site_kind_name(site->kind));
			qp_json_kv_str(j, "file", site->file);
			qp_json_kv_u64(j, "line", site->line);
			qp_json_kv_str(j, "function", site->function);
		} else {
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)cur->key.site);
			qp_json_kv_str(j, "name", buf);
			qp_json_kv_str(j, "site_kind", "unknown");
			qp_json_kv_null(j, "file");
			qp_json_kv_null(j, "line");
			qp_json_kv_null(j, "function");
		}
		qp_json_kv_u64(j, "count", count);
		qp_json_kv_double(j, "rate_per_s", secs > 0 ? (double)count / secs : 0);
		write_no_durations(j);
		qp_json_obj_end(j);
	}
}

static void write_probes(struct qp_registry *r, const struct qp_marks_view *m, int pid, struct qp_json *j)
{
	uint64_t now_ms = qp_realtime_ns() / 1000000;
	size_t i, k;

	for (i = 0; i < m->npnow; i++) {
		const struct qp_probe_row *cur = &m->pnow[i];
		const struct qp_usdt_def *def = qp_registry_def(r, cur->id);
		struct qp_target *t = qp_registry_find(r, (int)cur->tgid);
		uint64_t count = cur->count;
		double secs;

		if ((pid > 0 && cur->tgid != (uint32_t)pid) || !def || !t)
			continue;
		for (k = 0; m->pbase && k < m->npbase; k++)
			if (m->pbase[k].tgid == cur->tgid && m->pbase[k].id == cur->id && m->pbase[k].count <= count)
				count -= m->pbase[k].count;
		if (!count)
			continue;
		secs = m->base ? m->window_s
			       : (double)((t->state == QP_TARGET_EXITED ? t->exited_ms : now_ms) - t->attached_ms) / 1e3;
		qp_json_obj_begin(j);
		qp_json_kv_i64(j, "pid", cur->tgid);
		qp_json_kv_str(j, "kind", "probe");
		qp_json_kv_str(j, "name", def->name);
		qp_json_kv_null(j, "file");
		qp_json_kv_null(j, "line");
		qp_json_kv_null(j, "function");
		qp_json_kv_u64(j, "count", count);
		qp_json_kv_double(j, "rate_per_s", secs > 0 ? (double)count / secs : 0);
		write_no_durations(j);
		qp_json_obj_end(j);
	}
}

void qp_model_scopes_json(struct qp_registry *r, const struct qp_scope_snapshot *now,
			  const struct qp_scope_snapshot *base, const struct qp_marks_view *marks,
			  int pid, struct qp_json *j)
{
	struct row *rows = calloc(now->n ? now->n : 1, sizeof(*rows));
	size_t i, n = 0;

	qp_json_obj_begin(j);
	qp_json_key(j, "scopes");
	qp_json_arr_begin(j);
	if (!rows)
		goto out;
	for (i = 0; i < now->n; i++) {
		const struct qp_scope_row *cur = &now->rows[i];
		const struct qp_scope_row *old = base ? qp_scope_snapshot_find(base, &cur->key) : NULL;

		if (pid > 0 && cur->key.tgid != (uint32_t)pid)
			continue;
		rows[n].key = &cur->key;
		if (base && !old) {
			rows[n].st = cur->stats;
			if (cur->stats.count)
				n++;
			continue;
		}
		if (window_row(cur, old, &rows[n]))
			n++;
	}
	qsort(rows, n, sizeof(*rows), cmp_rows);
	for (i = 0; i < n; i++) {
		struct qp_target *t = qp_registry_find(r, (int)rows[i].key->tgid);

		if (!t) {
			qp_registry_adopt(r, (int)rows[i].key->tgid);
			t = qp_registry_find(r, (int)rows[i].key->tgid);
		}
		if (t)
			write_row(r, t, &rows[i], j);
	}
out:
	free(rows);
	if (marks) {
		write_marks(r, marks, pid, j);
		write_probes(r, marks, pid, j);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

size_t qp_model_count_sites(const struct qp_scope_snapshot *s)
{
	size_t i, j, n = 0;

	for (i = 0; i < s->n; i++) {
		bool dup = false;

		/* rows are sorted by (tgid, site, parent): equal sites are adjacent */
		for (j = i; j > 0 && !dup; j--) {
			if (s->rows[j - 1].key.tgid != s->rows[i].key.tgid ||
			    s->rows[j - 1].key.site != s->rows[i].key.site)
				break;
			dup = true;
		}
		if (!dup)
			n++;
	}
	return n;
}

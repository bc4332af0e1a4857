/* scope_window.c - see scope_window.h: windows of scope, mark and probe
 * aggregates as differences of two collector snapshots. */
#include <errno.h>
#include <stdlib.h>
#include "percentile.h"
#include "scope_window.h"

static int cmp_wrows(const void *a, const void *b)
{
	const struct qp_wrow *x = a, *y = b;

	if (x->key.tgid != y->key.tgid)
		return x->key.tgid < y->key.tgid ? -1 : 1;
	if (x->st.sum_ns != y->st.sum_ns)
		return x->st.sum_ns > y->st.sum_ns ? -1 : 1;
	return x->key.site < y->key.site ? -1 : x->key.site > y->key.site;
}

bool qp_scope_window_row(const struct qp_scope_row *now, const struct qp_scope_row *base,
			 struct scope_stats *w)
{
	uint64_t lo, hi;
	unsigned int b;

	*w = now->stats;
	if (!base)
		return now->stats.count > 0;
	if (base->stats.count > now->stats.count)
		return false; /* the entry was deleted and re-created meanwhile */
	w->count -= base->stats.count;
	w->sum_ns -= base->stats.sum_ns;
	for (b = 0; b < QPROF_HIST_BUCKETS; b++)
		w->hist[b] = now->stats.hist[b] >= base->stats.hist[b] ? now->stats.hist[b] - base->stats.hist[b]
								       : 0;
	if (!w->count)
		return false;
	qp_hist_bounds((const uint64_t *)w->hist, &lo, &hi);
	w->min_ns = lo;
	w->max_ns = hi;
	/* a new lifetime extreme can only have happened inside the window */
	if (now->stats.min_ns < base->stats.min_ns || w->min_ns < now->stats.min_ns)
		w->min_ns = now->stats.min_ns;
	if (now->stats.max_ns > base->stats.max_ns || w->max_ns > now->stats.max_ns)
		w->max_ns = now->stats.max_ns;
	return true;
}

int qp_scope_window(const struct qp_scope_snapshot *now, const struct qp_scope_snapshot *base, int pid,
		    struct qp_wrow **out, size_t *n)
{
	struct qp_wrow *rows = malloc((now->n ? now->n : 1) * sizeof(*rows));
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	if (!rows)
		return -ENOMEM;
	for (i = 0; i < now->n; i++) {
		const struct qp_scope_row *cur = &now->rows[i];
		const struct qp_scope_row *old = base ? qp_scope_snapshot_find(base, &cur->key) : NULL;

		if (pid > 0 && cur->key.tgid != (uint32_t)pid)
			continue;
		rows[k].key = cur->key;
		if (base && !old) {
			/* new in the window: all of it happened there */
			rows[k].st = cur->stats;
			if (cur->stats.count)
				k++;
			continue;
		}
		if (qp_scope_window_row(cur, old, &rows[k].st))
			k++;
	}
	qsort(rows, k, sizeof(*rows), cmp_wrows);
	*out = rows;
	*n = k;
	return 0;
}

uint64_t qp_mark_window_count(const struct qp_mark_row *now, const struct qp_mark_row *base, size_t nbase)
{
	size_t lo = 0, hi = nbase;

	if (!base)
		return now->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mark_key *k = &base[mid].key;

		if (k->tgid < now->key.tgid || (k->tgid == now->key.tgid && k->site < now->key.site))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nbase && base[lo].key.tgid == now->key.tgid && base[lo].key.site == now->key.site &&
	    base[lo].count <= now->count)
		return now->count - base[lo].count;
	return now->count;
}

uint64_t qp_probe_window_count(const struct qp_probe_row *now, const struct qp_probe_row *base, size_t nbase)
{
	uint64_t count = now->count;
	size_t k;

	for (k = 0; base && k < nbase; k++)
		if (base[k].tgid == now->tgid && base[k].id == now->id && base[k].count <= count)
			count -= base[k].count;
	return count;
}

size_t qp_scope_count_sites(const struct qp_scope_snapshot *s)
{
	size_t i, n = 0;

	/* rows are sorted by (tgid, site, parent): equal sites are adjacent */
	for (i = 0; i < s->n; i++)
		if (!i || s->rows[i - 1].key.tgid != s->rows[i].key.tgid ||
		    s->rows[i - 1].key.site != s->rows[i].key.site)
			n++;
	return n;
}

uint64_t qp_scope_count_events(const struct qp_scope_snapshot *s)
{
	uint64_t events = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		events += s->rows[i].stats.count;
	return events;
}

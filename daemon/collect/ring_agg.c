/* ring_agg.c - the ring collector's aggregate tables (struct qp_ring_agg,
 * ring_pair.h): made, emptied of a process, freed, and a duration added to
 * a (site, parent) row. Both the pairing of a thread's records (ring_pair.c)
 * and the spans across threads (ring_spans.c) add to them. */
#include <string.h>
#include "collect_scopes.h"
#include "ring_pair.h"

static void hints_clear(struct qp_ring_agg *a)
{
	for (size_t i = 0; i < QP_RING_ROW_HINTS; i++)
		a->hint[i].i = -1;
}

void qp_ring_agg_init(struct qp_ring_agg *a, size_t max_rows)
{
	memset(a, 0, sizeof(*a));
	qp_htab_init(&a->rows, sizeof(struct scope_stats));
	qp_htab_init(&a->marks, sizeof(struct mark_stats));
	qp_htab_init(&a->values, sizeof(struct qp_ring_value));
	qp_htab_init(&a->vhist, sizeof(uint64_t));
	a->max_rows = max_rows;
	hints_clear(a);
}

void qp_ring_agg_free(struct qp_ring_agg *a)
{
	qp_htab_free(&a->rows);
	qp_htab_free(&a->marks);
	qp_htab_free(&a->values);
	qp_htab_free(&a->vhist);
	memset(a, 0, sizeof(*a));
}

/* A copy of table T without the entries whose key starts with tgid PID. */
static int rebuild_without(struct qp_htab *t, uint32_t pid)
{
	struct qp_htab nt;
	size_t i, len;

	qp_htab_init(&nt, t->vsize);
	for (i = 0; i < t->n; i++) {
		const char *k = qp_htab_key(t, i, &len);
		uint32_t tgid;
		int64_t j;

		memcpy(&tgid, k, sizeof(tgid));
		if (tgid == pid)
			continue;
		j = qp_htab_add(&nt, k, len, NULL);
		if (j < 0) {
			qp_htab_free(&nt);
			return (int)j;
		}
		memcpy(qp_htab_value(&nt, (size_t)j), qp_htab_value(t, i), t->vsize);
	}
	qp_htab_free(t);
	*t = nt;
	return 0;
}

int qp_ring_agg_forget(struct qp_ring_agg *a, uint32_t pid)
{
	int ret;

	hints_clear(a);
	ret = rebuild_without(&a->rows, pid);

	if (!ret)
		ret = rebuild_without(&a->marks, pid);
	if (!ret)
		ret = rebuild_without(&a->values, pid);
	return ret ? ret : rebuild_without(&a->vhist, pid);
}

void qp_ring_agg_add(struct qp_ring_agg *a, uint32_t pid, uint64_t site, uint64_t parent, uint64_t dur,
		     struct qp_ring_counts *c)
{
	struct scope_key k = { .tgid = pid, .site = site, .parent = parent };
	struct qp_ring_row_hint *h =
		&a->hint[((site >> 3) ^ (parent >> 1) ^ pid ^ (site >> 13)) & (QP_RING_ROW_HINTS - 1)];
	struct scope_stats *s;
	int64_t i = -1;

	if (h->i >= 0 && h->k.site == site && h->k.parent == parent && h->k.tgid == pid)
		i = h->i;
	if (i < 0)
		i = qp_htab_find(&a->rows, &k, sizeof(k));
	if (i < 0) {
		if (a->rows.n >= a->max_rows) {
			c->table_full++;
			return;
		}
		i = qp_htab_add(&a->rows, &k, sizeof(k), NULL);
		if (i < 0) {
			c->table_full++;
			return;
		}
	}
	h->k = k;
	h->i = i;
	s = qp_htab_value(&a->rows, (size_t)i);
	if (!s->count || dur < s->min_ns)
		s->min_ns = dur;
	if (dur > s->max_ns)
		s->max_ns = dur;
	s->count++;
	s->sum_ns += dur;
	s->hist[qprof_hist_index(dur)]++;
}

/* ring_rows.c - what the ring collector's pairing kept, read out: the
 * flight recorder of each process (its last instances, oldest first) and the
 * aggregates as the model's scope, mark and value rows (ring_pair.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collect_scopes.h"
#include "ring_pair.h"

void qp_ring_flight_put(struct qp_ring_flight *f, const struct qp_ring_inst *in)
{
	if (!f || !f->max)
		return;
	if (f->seq == f->cap && f->cap < f->max) {
		/* still growing: instances 0..seq-1 sit in order */
		size_t cap = f->cap ? f->cap * 2 : 4096;
		struct qp_ring_inst *v;

		if (cap > f->max)
			cap = f->max;
		v = realloc(f->v, cap * sizeof(*v));
		if (v) {
			f->v = v;
			f->cap = cap;
		} else {
			f->max = f->cap; /* no more memory: wrap at what it has */
		}
	}
	if (!f->cap)
		return;
	f->v[f->seq % f->cap] = *in;
	f->seq++;
}

void qp_ring_flight_free(struct qp_ring_flight *f)
{
	free(f->v);
	f->v = NULL;
	f->cap = 0;
	f->seq = 0;
}

size_t qp_ring_flight_get(const struct qp_ring_flight *f, uint64_t *since, struct qp_ring_inst *out, size_t n,
			  uint64_t *missed)
{
	uint64_t s = *since, end = f->seq;
	size_t k = 0;

	*missed = 0;
	if (s > end)
		s = end;
	if (end - s > f->cap) {
		*missed = end - f->cap - s;
		s = end - f->cap;
	}
	for (; s < end && k < n; s++)
		out[k++] = f->v[s % f->cap];
	*since = s;
	return k;
}

int qp_ring_agg_rows(const struct qp_ring_agg *a, int pid, struct qp_scope_row **rows, size_t *n)
{
	size_t i, k = 0;
	struct qp_scope_row *v;

	v = realloc(*rows, (*n + a->rows.n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	*rows = v;
	for (i = 0; i < a->rows.n; i++) {
		struct scope_key key;

		memcpy(&key, qp_htab_key(&a->rows, i, NULL), sizeof(key));
		if (pid > 0 && key.tgid != (uint32_t)pid)
			continue;
		v[*n + k].key = key;
		memcpy(&v[*n + k].stats, qp_htab_value(&a->rows, i), sizeof(struct scope_stats));
		k++;
	}
	*n += k;
	return 0;
}

int qp_ring_agg_marks(const struct qp_ring_agg *a, int pid, struct qp_mark_row **rows, size_t *n)
{
	size_t i, k = 0;
	struct qp_mark_row *v;

	v = realloc(*rows, (*n + a->marks.n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	*rows = v;
	for (i = 0; i < a->marks.n; i++) {
		const struct mark_stats *m = qp_htab_value(&a->marks, i);
		struct mark_key key;

		memcpy(&key, qp_htab_key(&a->marks, i, NULL), sizeof(key));
		if (pid > 0 && key.tgid != (uint32_t)pid)
			continue;
		v[*n + k].key = key;
		v[*n + k].count = m->count;
		v[*n + k].last_ns = m->last_ns;
		k++;
	}
	*n += k;
	return 0;
}

static int cmp_bucket(const void *x, const void *y)
{
	const struct value_bucket_key *a = x, *b = y;

	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	if (a->site != b->site)
		return a->site < b->site ? -1 : 1;
	return a->bucket < b->bucket ? -1 : a->bucket > b->bucket;
}

int qp_ring_agg_values(const struct qp_ring_agg *a, int pid, struct qp_value_row **rows, size_t *n)
{
	struct value_bucket_key *bk = NULL;
	struct qp_value_row *v;
	size_t i, j, nb = 0, k = 0;

	v = realloc(*rows, (*n + a->values.n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	*rows = v;
	if (a->vhist.n) {
		bk = malloc(a->vhist.n * sizeof(*bk));
		if (!bk)
			return -ENOMEM;
	}
	for (i = 0; i < a->vhist.n; i++) {
		memcpy(&bk[nb], qp_htab_key(&a->vhist, i, NULL), sizeof(*bk));
		if (pid <= 0 || bk[nb].tgid == (uint32_t)pid)
			nb++;
	}
	qsort(bk, nb, sizeof(*bk), cmp_bucket);
	for (i = 0; i < a->values.n; i++) {
		struct qp_value_row *r = &v[*n + k];
		struct value_bucket_key lo;
		size_t first;

		memset(r, 0, sizeof(*r));
		memcpy(&r->key, qp_htab_key(&a->values, i, NULL), sizeof(r->key));
		if (pid > 0 && r->key.tgid != (uint32_t)pid)
			continue;
		{
			const struct qp_ring_value *rv = qp_htab_value(&a->values, i);

			r->st = rv->st;
			r->has_sum = true;
			r->sum = rv->sum + rv->comp;
		}
		k++;
		/* the row's buckets: a run of the sorted keys */
		lo.tgid = r->key.tgid;
		lo.pad = 0;
		lo.site = r->key.site;
		lo.bucket = 0;
		for (first = 0; first < nb && cmp_bucket(&bk[first], &lo) < 0; first++)
			;
		for (j = first; j < nb && bk[j].tgid == lo.tgid && bk[j].site == lo.site; j++)
			;
		if (j == first)
			continue;
		r->buckets = malloc((j - first) * sizeof(*r->buckets));
		if (!r->buckets) {
			free(bk);
			*n += k;
			return -ENOMEM;
		}
		for (; first < j; first++) {
			int64_t h = qp_htab_find(&a->vhist, &bk[first], sizeof(bk[first]));

			r->buckets[r->nbuckets].bucket = bk[first].bucket;
			r->buckets[r->nbuckets++].count = h < 0 ? 0 : *(uint64_t *)qp_htab_value(&a->vhist, (size_t)h);
		}
	}
	free(bk);
	*n += k;
	return 0;
}

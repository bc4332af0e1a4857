/* scope_store.c - see scope_store.h: the daemon's copy of the kernel's scope
 * chunks and the rows folded from it. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "scope_store.h"

/* A pair's chunks: [0] of scope_chunks, [1] of scope_chunks_more (a key
 * can be in both, see QPROF_CHUNK_MORE); both are summed. */
struct qp_store_pair {
	uint64_t mask[2];			/* bit N: chunk N held */
	struct scope_chunk *c[2][QPROF_CHUNKS];
};

static unsigned int pair_chunks(const struct qp_store_pair *p)
{
	return (unsigned int)(__builtin_popcountll(p->mask[0]) + __builtin_popcountll(p->mask[1]));
}

void qp_scope_store_init(struct qp_scope_store *st)
{
	memset(st, 0, sizeof(*st));
	qp_htab_init(&st->pairs, sizeof(struct qp_store_pair));
}

static void pair_clear(struct qp_store_pair *p)
{
	unsigned int i, m;

	for (m = 0; m < 2; m++)
		for (i = 0; i < QPROF_CHUNKS; i++) {
			free(p->c[m][i]);
			p->c[m][i] = NULL;
		}
	p->mask[0] = p->mask[1] = 0;
}

void qp_scope_store_free(struct qp_scope_store *st)
{
	size_t i;

	for (i = 0; i < st->pairs.n; i++)
		pair_clear(qp_htab_value(&st->pairs, i));
	qp_htab_free(&st->pairs);
	st->live = 0;
	st->nchunks = 0;
}

/* The pairs' key: a scope key with its pad zeroed (the chunk key's
 * `chunk` field sits where the pad is). */
static void pair_key(struct scope_key *pk, uint32_t tgid, uint64_t site, uint64_t parent)
{
	memset(pk, 0, sizeof(*pk));
	pk->tgid = tgid;
	pk->site = site;
	pk->parent = parent;
}

int qp_scope_store_put(struct qp_scope_store *st, const struct scope_chunk_key *k,
		       const struct scope_chunk *c)
{
	unsigned int m = !!(k->chunk & QPROF_CHUNK_MORE), ch = k->chunk & ~QPROF_CHUNK_MORE;
	struct qp_store_pair *p;
	struct scope_key pk;
	int64_t i;

	if (ch >= QPROF_CHUNKS)
		return -EINVAL;
	pair_key(&pk, k->tgid, k->site, k->parent);
	i = qp_htab_add(&st->pairs, &pk, sizeof(pk), NULL);
	if (i < 0)
		return (int)i;
	p = qp_htab_value(&st->pairs, (size_t)i);
	if (!p->c[m][ch]) {
		p->c[m][ch] = malloc(sizeof(*c));
		if (!p->c[m][ch])
			return -ENOMEM;
		if (!pair_chunks(p))
			st->live++;
		p->mask[m] |= 1ULL << ch;
		st->nchunks++;
	}
	memcpy(p->c[m][ch], c, sizeof(*c));
	return 0;
}

/* Rebuild the table without its empty pairs once they are most of it, so
 * that processes coming and going do not grow it for ever. */
static void compact(struct qp_scope_store *st)
{
	struct qp_htab t;
	size_t i;
	int64_t j;

	if (st->pairs.n < 1024 || st->live * 2 > st->pairs.n)
		return;
	qp_htab_init(&t, sizeof(struct qp_store_pair));
	for (i = 0; i < st->pairs.n; i++) {
		struct qp_store_pair *p = qp_htab_value(&st->pairs, i);
		size_t len;
		const char *key;

		if (!pair_chunks(p))
			continue;
		key = qp_htab_key(&st->pairs, i, &len);
		j = qp_htab_add(&t, key, len, NULL);
		if (j < 0) {
			/* no memory for the smaller table: keep the larger one (the
			 * chunks are still its pairs') */
			qp_htab_free(&t);
			return;
		}
		memcpy(qp_htab_value(&t, (size_t)j), p, sizeof(*p));
	}
	qp_htab_free(&st->pairs);	/* the chunks moved to t with their pairs */
	st->pairs = t;
}

size_t qp_scope_store_forget(struct qp_scope_store *st, uint32_t tgid)
{
	size_t i, n = 0;
	struct scope_key pk;

	for (i = 0; i < st->pairs.n; i++) {
		struct qp_store_pair *p = qp_htab_value(&st->pairs, i);

		memcpy(&pk, qp_htab_key(&st->pairs, i, NULL), sizeof(pk));
		if (pk.tgid != tgid || !pair_chunks(p))
			continue;
		n += pair_chunks(p);
		st->nchunks -= pair_chunks(p);
		pair_clear(p);
		st->live--;
	}
	compact(st);
	return n;
}

size_t qp_scope_store_chunks(const struct qp_scope_store *st)
{
	return st->nchunks;
}

void qp_scope_chunk_fold(struct scope_stats *row, unsigned int chunk, const struct scope_chunk *c)
{
	uint64_t n = 0, lo = UINT64_MAX, hi = 0;
	unsigned int b;

	if (chunk >= QPROF_CHUNKS)
		return;
	for (b = 0; b < QPROF_HIST_SUB; b++) {
		row->hist[chunk * QPROF_HIST_SUB + b] += c->hist[b];
		if (c->hist[b]) {
			unsigned int idx = chunk * QPROF_HIST_SUB + b;

			n += c->hist[b];
			if (lo == UINT64_MAX)
				lo = qprof_hist_lower(idx);
			hi = idx == QPROF_HIST_BUCKETS - 1 ? UINT64_MAX : qprof_hist_lower(idx) + qprof_hist_width(idx) - 1;
		}
	}
	if (!n)
		return;
	/* a copy taken while a hit was landing may hold its bucket before its
	 * min or max (not on x86, where stores are seen in order): the
	 * buckets' bounds then stand in until the next poll */
	if (c->min_ns <= c->max_ns) {
		lo = c->min_ns;
		hi = c->max_ns;
	}
	if (!row->count || lo < row->min_ns)
		row->min_ns = lo;
	if (hi > row->max_ns)
		row->max_ns = hi;
	row->count += n;
	row->sum_ns += c->sum_ns;
}

static int cmp_row(const void *a, const void *b)
{
	return qp_scope_key_cmp(&((const struct qp_scope_row *)a)->key, &((const struct qp_scope_row *)b)->key);
}

int qp_scope_store_snapshot(const struct qp_scope_store *st, int pid, struct qp_scope_snapshot *out)
{
	struct qp_scope_row *rows;
	size_t i, n = 0;
	unsigned int ch, m;

	rows = malloc((st->live ? st->live : 1) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (i = 0; i < st->pairs.n; i++) {
		const struct qp_store_pair *p = qp_htab_value(&st->pairs, i);
		struct qp_scope_row *r = &rows[n];

		if (!pair_chunks(p))
			continue;
		memcpy(&r->key, qp_htab_key(&st->pairs, i, NULL), sizeof(r->key));
		if (pid > 0 && r->key.tgid != (uint32_t)pid)
			continue;
		memset(&r->stats, 0, sizeof(r->stats));
		for (m = 0; m < 2; m++)
			for (ch = 0; ch < QPROF_CHUNKS; ch++)
				if (p->mask[m] & (1ULL << ch))
					qp_scope_chunk_fold(&r->stats, ch, p->c[m][ch]);
		if (r->stats.count && n < st->live)
			n++;
	}
	qsort(rows, n, sizeof(*rows), cmp_row);
	out->rows = rows;
	out->n = n;
	return 0;
}

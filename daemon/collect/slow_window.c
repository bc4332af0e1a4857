/* slow_window.c - see slow_window.h. A window holds at most
 * QP_SLOW_WIN_SITES per-site reservoirs of at most QP_SLOW_KEEP instances;
 * the instances count in the store's memory (QP_SLOW_MAX_BYTES) like the
 * since-attach ones. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "slow_window.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool has(const uint64_t *v, size_t n, uint64_t site)
{
	return n && bsearch(&site, v, n, sizeof(*v), cmp_u64);
}

/* a named site, or one unknown when the window opened */
static bool covers(const struct qp_slow_win *w, uint64_t site)
{
	return has(w->named, w->nnamed, site) || !has(w->other, w->nother, site);
}

static struct qp_slow_wsub *sub_of(const struct qp_slow_win *w, uint64_t site)
{
	size_t i;

	for (i = 0; i < w->nsub; i++)
		if (w->sub[i].site == site)
			return &w->sub[i];
	return NULL;
}

static uint32_t fastest(const struct qp_slow_wsub *b)
{
	return qp_slow_fastest(b->v, b->n);
}

static uint64_t *sorted_copy(const uint64_t *v, size_t n)
{
	uint64_t *c = malloc((n ? n : 1) * sizeof(*c));

	if (!c)
		return NULL;
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_u64);
	return c;
}

static void win_free(struct qp_slow_store *s, struct qp_slow_win *w)
{
	size_t i;
	uint32_t k;

	if (!w)
		return;
	for (i = 0; i < w->nsub; i++)
		for (k = 0; k < w->sub[i].n; k++) {
			s->bytes -= w->sub[i].v[k]->bytes;
			qp_slow_inst_free(w->sub[i].v[k]);
		}
	free(w->sub);
	free(w->named);
	free(w->other);
	free(w);
}

static struct qp_slow_win **slot_of(struct qp_slow_store *s, uint64_t id)
{
	size_t i;

	for (i = 0; i < QP_SLOW_WINDOWS; i++)
		if (s->win[i] && s->win[i]->id == id)
			return &s->win[i];
	return NULL;
}

int qp_slow_win_add(struct qp_slow_store *s, uint32_t tgid, const uint64_t *named, size_t nnamed,
		    const uint64_t *other, size_t nother, uint32_t keep, struct qp_slow_win **out)
{
	struct qp_slow_win *w;
	size_t slot;

	if (!keep || keep > QP_SLOW_KEEP)
		return -EINVAL;
	for (slot = 0; slot < QP_SLOW_WINDOWS && s->win[slot]; slot++)
		;
	if (slot == QP_SLOW_WINDOWS) {
		s->cnt.windows_refused++;
		return -EBUSY;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->named = sorted_copy(named, nnamed);
	w->other = sorted_copy(other, nother);
	w->sub = calloc(QP_SLOW_WIN_SITES, sizeof(*w->sub));
	if (!w->named || !w->other || !w->sub) {
		win_free(s, w);
		return -ENOMEM;
	}
	w->nnamed = nnamed;
	w->nother = nother;
	w->tgid = tgid;
	w->keep = keep;
	w->t0 = UINT64_MAX;	/* nothing ends in it before qp_slow_win_time */
	w->t1 = UINT64_MAX;
	w->at_open = s->cnt;
	w->id = ++s->win_ids;
	s->win[slot] = w;
	s->cnt.windows_open++;
	*out = w;
	return 0;
}

bool qp_slow_win_names(const struct qp_slow_win *w, uint64_t site)
{
	return has(w->named, w->nnamed, site);
}

int qp_slow_win_time(struct qp_slow_store *s, uint64_t id, bool end, uint64_t t)
{
	struct qp_slow_win **p = slot_of(s, id);

	if (!p)
		return -ENOENT;
	*(end ? &(*p)->t1 : &(*p)->t0) = t;
	return 0;
}

static int by_site(const void *a, const void *b)
{
	const struct qp_slow_inst *x = a, *y = b;

	return cmp_u64(&x->r.site, &y->r.site);
}

struct qp_slow_win *qp_slow_win_detach(struct qp_slow_store *s, uint64_t id, bool *complete)
{
	struct qp_slow_win **p = slot_of(s, id), *w;

	if (!p)
		return NULL;
	w = *p;
	*p = NULL;
	s->cnt.windows_open--;
	*complete = !w->lost && s->cnt.pending_lost == w->at_open.pending_lost &&
		    s->cnt.refused == w->at_open.refused && s->cnt.ring_missed == w->at_open.ring_missed;
	return w;
}

int qp_slow_win_drain(struct qp_slow_store *s, struct qp_slow_win *w, struct qp_slow_inst **out, size_t *n)
{
	struct qp_slow_inst *v = NULL;
	size_t i, len = 0, total = 0;
	uint32_t k;
	int ret = 0;

	for (i = 0; i < w->nsub; i++)
		total += w->sub[i].n;
	if (total && !(v = calloc(total, sizeof(*v))))
		ret = -ENOMEM;
	/* the instances move out: their memory leaves the store's count */
	for (i = 0; i < w->nsub && v; i++)
		for (k = 0; k < w->sub[i].n; k++) {
			s->bytes -= w->sub[i].v[k]->bytes;
			v[len++] = *w->sub[i].v[k];
			free(w->sub[i].v[k]);
		}
	if (v)
		w->nsub = 0;
	win_free(s, w);
	if (len > 1)
		qsort(v, len, sizeof(*v), by_site);
	*out = v;
	*n = len;
	return ret;
}

/* the instance of R would enter W's reservoir of its site */
static bool win_wants(const struct qp_slow_win *w, const struct slow_record *r)
{
	const struct qp_slow_wsub *b;

	if (w->gone || w->tgid != r->tgid || r->end_ns < w->t0 || r->end_ns > w->t1 || !covers(w, r->site))
		return false;
	b = sub_of(w, r->site);
	return !b || b->n < w->keep || r->dur_ns > b->v[fastest(b)]->r.dur_ns;
}

uint32_t qp_slow_win_wanting(const struct qp_slow_store *s, const struct slow_record *r)
{
	uint32_t i, n = 0;

	for (i = 0; i < QP_SLOW_WINDOWS; i++)
		if (s->win[i] && win_wants(s->win[i], r))
			n++;
	return n;
}

/* keep IN (owned now) in W; false when W has no room for its site */
static bool win_keep(struct qp_slow_store *s, struct qp_slow_win *w, struct qp_slow_inst *in)
{
	struct qp_slow_wsub *b = sub_of(w, in->r.site);
	uint32_t m;

	if (!b) {
		if (w->nsub == QP_SLOW_WIN_SITES)
			return false;
		b = &w->sub[w->nsub++];
		b->site = in->r.site;
	}
	s->bytes += in->bytes;
	s->cnt.window_records++;
	if (b->n < w->keep) {
		b->v[b->n++] = in;
		return true;
	}
	m = fastest(b);
	s->bytes -= b->v[m]->bytes;
	qp_slow_inst_free(b->v[m]);
	b->v[m] = in;
	return true;
}

void qp_slow_win_take(struct qp_slow_store *s, const struct slow_record *r, struct qp_slow_inst *in, bool own)
{
	uint32_t i, left = qp_slow_win_wanting(s, r);

	for (i = 0; i < QP_SLOW_WINDOWS && left; i++) {
		struct qp_slow_win *w = s->win[i];
		struct qp_slow_inst *mine;
		bool give;

		if (!w || !win_wants(w, r))
			continue;
		left--;
		give = in && own && !left;	/* the last one gets IN itself */
		mine = give ? in : in ? qp_slow_inst_dup(in) : NULL;
		if (mine && win_keep(s, w, mine)) {
			if (give)
				own = false;
			continue;
		}
		w->lost++;
		if (mine && !give)
			qp_slow_inst_free(mine);
	}
	if (own)
		qp_slow_inst_free(in);
}

uint64_t qp_slow_win_min(const struct qp_slow_store *s, uint32_t tgid, uint64_t site)
{
	uint64_t m = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < QP_SLOW_WINDOWS; i++) {
		const struct qp_slow_win *w = s->win[i];
		const struct qp_slow_wsub *b;
		uint64_t t;

		if (!w || w->gone || w->tgid != tgid || !covers(w, site))
			continue;
		b = sub_of(w, site);
		t = b && b->n == w->keep ? b->v[fastest(b)]->r.dur_ns : 0;
		if (t < m)
			m = t;
	}
	return m;
}

void qp_slow_win_forget(struct qp_slow_store *s, uint32_t pid)
{
	uint32_t i;

	for (i = 0; i < QP_SLOW_WINDOWS; i++)
		if (s->win[i] && s->win[i]->tgid == pid)
			s->win[i]->gone = true;
}

void qp_slow_win_free_all(struct qp_slow_store *s)
{
	uint32_t i;

	for (i = 0; i < QP_SLOW_WINDOWS; i++) {
		if (!s->win[i])
			continue;
		win_free(s, s->win[i]);
		s->win[i] = NULL;
		s->cnt.windows_open--;
	}
}

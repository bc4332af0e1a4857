/* slow_store.c - see slow_store.h. The histories are rings in arrival
 * order (about time order: every CPU submits as things happen), scanned
 * from the newest back to the instance's begin. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "slow_store.h"
#include "slow_window.h"
#include "bpf/offcpu.h"

/* entries a little out of order across CPUs: scan this far past the begin */
#define SLACK_NS 1000000ull

int qp_slow_init(struct qp_slow_store *s)
{
	memset(s, 0, sizeof(*s));
	s->hs = calloc(QP_SLOW_HIST, sizeof(*s->hs));
	s->ho = calloc(QP_SLOW_HIST, sizeof(*s->ho));
	s->pending = calloc(QP_SLOW_PENDING, sizeof(*s->pending));
	if (!s->hs || !s->ho || !s->pending) {
		qp_slow_free(s);
		return -ENOMEM;
	}
	return 0;
}

void qp_slow_free(struct qp_slow_store *s)
{
	size_t r;
	uint32_t i;

	qp_slow_win_free_all(s);
	for (r = 0; r < s->nres; r++)
		for (i = 0; i < s->res[r].n; i++) {
			qp_slow_inst_clear(s->res[r].v[i]);
			free(s->res[r].v[i]);
		}
	free(s->res);
	free(s->hs);
	free(s->ho);
	free(s->pending);
	free(s->hk);
	memset(s, 0, sizeof(*s));
}

void qp_slow_note_sample(struct qp_slow_store *s, const struct qp_slow_hsample *h)
{
	s->hs[s->hs_n++ % QP_SLOW_HIST] = *h;
}

void qp_slow_note_off(struct qp_slow_store *s, const struct qp_slow_hoff *h)
{
	s->ho[s->ho_n++ % QP_SLOW_HIST] = *h;
}

void qp_slow_queue(struct qp_slow_store *s, const struct slow_record *r)
{
	s->cnt.received++;
	if (s->npending == QP_SLOW_PENDING) {
		s->cnt.pending_lost++;
		return;
	}
	s->pending[s->npending++] = *r;
}

bool qp_slow_wanted(const struct qp_slow_store *s, const struct slow_record *r)
{
	size_t i;

	for (i = 0; i < s->nres; i++)
		if (s->res[i].tgid == r->tgid && s->res[i].site == r->site)
			return s->res[i].n < QP_SLOW_KEEP || r->dur_ns > s->res[i].min_kept ||
			       qp_slow_win_wanting(s, r);
	return true;
}

/* Copy stacks KID and UID of T (up to QP_SLOW_FRAMES each) into ST. */
static int stack_copy(const struct qp_cpu_table *t, int32_t kid, int32_t uid, struct qp_slow_stack *st,
		      size_t *bytes)
{
	uint64_t k[QP_SLOW_FRAMES], u[QP_SLOW_FRAMES];
	size_t nk = 0, nu = 0;

	if (qp_cpu_table_stack(t, kid, k, QP_SLOW_FRAMES, &nk))
		nk = 0;
	if (qp_cpu_table_stack(t, uid, u, QP_SLOW_FRAMES, &nu))
		nu = 0;
	st->nk = (uint16_t)nk;
	st->nu = (uint16_t)nu;
	st->ips = malloc((nk + nu ? nk + nu : 1) * sizeof(*st->ips));
	if (!st->ips)
		return -ENOMEM;
	memcpy(st->ips, k, nk * sizeof(*k));
	memcpy(st->ips + nk, u, nu * sizeof(*u));
	*bytes += (nk + nu) * sizeof(*st->ips) + 32;
	return 0;
}

static int cmp_iv_len_desc(const void *a, const void *b)
{
	const struct qp_slow_hoff *x = *(const struct qp_slow_hoff *const *)a;
	const struct qp_slow_hoff *y = *(const struct qp_slow_hoff *const *)b;
	uint64_t lx = x->ts_in - x->ts_out, ly = y->ts_in - y->ts_out;

	return lx < ly ? 1 : lx > ly ? -1 : 0;
}

static int cmp_iv_time(const void *a, const void *b)
{
	const struct qp_slow_iv *x = a, *y = b;

	return x->ts_out < y->ts_out ? -1 : x->ts_out > y->ts_out;
}

static int cmp_sample_time(const void *a, const void *b)
{
	const struct qp_slow_sample *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The instance of R joined with the histories; NULL on no memory. */
static struct qp_slow_inst *join_one(struct qp_slow_store *s, const struct slow_record *r,
				     const struct qp_cpu_table *samples, const struct qp_cpu_table *off)
{
	const struct qp_slow_hoff *found[QP_SLOW_IVS + 1];
	struct qp_slow_inst *in = calloc(1, sizeof(*in));
	uint64_t i, nfound = 0, migrations = 0;

	if (!in)
		return NULL;
	in->r = *r;
	in->bytes = sizeof(*in);
	/* intervals: fully inside [begin, end] (a thread enters no scope while off) */
	for (i = 0; i < s->ho_n && i < QP_SLOW_HIST; i++) {
		const struct qp_slow_hoff *h = &s->ho[(s->ho_n - 1 - i) % QP_SLOW_HIST];
		uint64_t len;

		if (h->ts_in + SLACK_NS < r->begin_ns)
			break;
		if (h->tid != r->tid || h->tgid != r->tgid || h->ts_out < r->begin_ns || h->ts_in > r->end_ns)
			continue;
		len = h->ts_in - h->ts_out;
		in->off_ns += len;
		migrations += h->migrations;
		if (h->reason == QPROF_OFF_BLOCKED && h->ts_wake >= h->ts_out && h->ts_wake <= h->ts_in) {
			in->blocked_ns += h->ts_wake - h->ts_out;
			in->runq_ns += h->ts_in - h->ts_wake;
		} else if (h->reason == QPROF_OFF_BLOCKED) {
			in->blocked_ns += len;	/* no wakeup seen */
		} else {
			in->runq_ns += len;
		}
		/* keep the QP_SLOW_IVS longest */
		found[nfound++] = h;
		if (nfound > QP_SLOW_IVS) {
			qsort(found, nfound, sizeof(*found), cmp_iv_len_desc);
			nfound--;
			in->ivs_more++;
		}
	}
	if (s->ho_n > QP_SLOW_HIST && i == QP_SLOW_HIST)
		in->partial = true;
	if (r->flags & QPROF_SLOW_NO_KERNEL)
		qp_slow_kev_join(s, in, migrations);
	if (nfound) {
		in->ivs = calloc(nfound, sizeof(*in->ivs));
		if (!in->ivs)
			goto oom;
		for (i = 0; i < nfound; i++) {
			struct qp_slow_iv *v = &in->ivs[in->nivs];

			v->ts_out = found[i]->ts_out;
			v->ts_wake = found[i]->ts_wake;
			v->ts_in = found[i]->ts_in;
			v->reason = found[i]->reason;
			if (stack_copy(off, found[i]->kid, found[i]->uid, &v->st, &in->bytes))
				goto oom;
			in->nivs++;
		}
		qsort(in->ivs, in->nivs, sizeof(*in->ivs), cmp_iv_time);
	}
	/* samples: taken on the thread within [begin, end] */
	for (i = 0; i < s->hs_n && i < QP_SLOW_HIST; i++) {
		const struct qp_slow_hsample *h = &s->hs[(s->hs_n - 1 - i) % QP_SLOW_HIST];
		struct qp_slow_sample *v;

		if (h->ts + SLACK_NS < r->begin_ns)
			break;
		if (h->tid != r->tid || h->tgid != r->tgid || h->ts < r->begin_ns || h->ts > r->end_ns)
			continue;
		if (in->nsamples == QP_SLOW_SAMPLES) {
			in->samples_more++;
			continue;
		}
		if (!in->samples) {
			in->samples = calloc(QP_SLOW_SAMPLES, sizeof(*in->samples));
			if (!in->samples)
				goto oom;
		}
		v = &in->samples[in->nsamples];
		v->ts = h->ts;
		if (stack_copy(samples, h->kid, h->uid, &v->st, &in->bytes))
			goto oom;
		in->nsamples++;
	}
	if (s->hs_n > QP_SLOW_HIST && i == QP_SLOW_HIST)
		in->partial = true;
	if (in->nsamples > 1)
		qsort(in->samples, in->nsamples, sizeof(*in->samples), cmp_sample_time);
	in->bytes += in->nsamples ? QP_SLOW_SAMPLES * sizeof(*in->samples) : 0;
	return in;
oom:
	qp_slow_inst_clear(in);
	free(in);
	return NULL;
}

static struct qp_slow_res *res_of(struct qp_slow_store *s, uint32_t tgid, uint64_t site, bool make)
{
	size_t i;

	for (i = 0; i < s->nres; i++)
		if (s->res[i].tgid == tgid && s->res[i].site == site)
			return &s->res[i];
	if (!make || s->nres >= QP_SLOW_SCOPES)
		return NULL;
	if (s->nres == s->capres) {
		size_t cap = s->capres ? s->capres * 2 : 16;
		struct qp_slow_res *v = realloc(s->res, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->res = v;
		s->capres = cap;
	}
	memset(&s->res[s->nres], 0, sizeof(s->res[0]));
	s->res[s->nres].tgid = tgid;
	s->res[s->nres].site = site;
	return &s->res[s->nres++];
}

/* the index of the fastest instance kept */
static uint32_t fastest(const struct qp_slow_res *res)
{
	return qp_slow_fastest(res->v, res->n);
}

void qp_slow_sync_threshold(struct qp_slow_store *s, uint32_t tgid, uint64_t site, qp_slow_threshold_fn fn,
			    void *arg)
{
	struct qp_slow_res *res = res_of(s, tgid, site, false);
	uint64_t m, w;

	if (!res)
		return;	/* no reservoir, no threshold written: every instance comes */
	m = res->n == QP_SLOW_KEEP ? res->min_kept : 0;
	w = qp_slow_win_min(s, tgid, site);
	if (w < m)
		m = w;
	if (m == res->written)
		return;
	res->written = m;
	if (fn)
		fn(arg, tgid, site, m);
}

/* Keep IN in RES, the since-attach reservoir it beats. */
static void res_keep(struct qp_slow_store *s, struct qp_slow_res *res, struct qp_slow_inst *in, uint64_t now_ns)
{
	uint32_t m;

	s->bytes += in->bytes;
	if (res->n < QP_SLOW_KEEP) {
		res->v[res->n++] = in;
	} else {
		m = fastest(res);
		s->bytes -= res->v[m]->bytes;
		qp_slow_inst_free(res->v[m]);
		res->v[m] = in;
	}
	if (res->n == QP_SLOW_KEEP) {
		if (!res->since_ns)
			res->since_ns = now_ns;
		res->min_kept = res->v[fastest(res)]->r.dur_ns;
	}
}

void qp_slow_join(struct qp_slow_store *s, const struct qp_cpu_table *samples, const struct qp_cpu_table *off,
		  uint64_t now_ns, qp_slow_threshold_fn fn, void *arg)
{
	size_t p;

	for (p = 0; p < s->npending; p++) {
		const struct slow_record *r = &s->pending[p];
		struct qp_slow_res *res = res_of(s, r->tgid, r->site, true);
		uint32_t nwin = qp_slow_win_wanting(s, r);
		struct qp_slow_inst *in;
		bool mine;

		if (!res)
			s->cnt.refused++;
		/* a full reservoir takes only what beats its fastest (the
		 * threshold may not have reached BPF yet); so does a window's */
		mine = res && (res->n < QP_SLOW_KEEP || r->dur_ns > res->v[fastest(res)]->r.dur_ns);
		if (!mine && !nwin)
			continue;
		in = s->bytes < QP_SLOW_MAX_BYTES ? join_one(s, r, samples, off) : NULL;
		if (!in) {
			s->cnt.refused++;
			if (nwin)
				qp_slow_win_take(s, r, NULL, false);	/* counted lost there */
			continue;
		}
		s->cnt.records++;
		if (in->partial)
			s->cnt.partial++;
		if (nwin)
			qp_slow_win_take(s, r, in, !mine);
		if (mine)
			res_keep(s, res, in, now_ns);
		if (res)
			qp_slow_sync_threshold(s, r->tgid, r->site, fn, arg);
	}
	s->npending = 0;
}

void qp_slow_forget(struct qp_slow_store *s, uint32_t pid)
{
	size_t i, n = 0;
	uint32_t k;

	for (i = 0; i < s->nres; i++) {
		if (s->res[i].tgid != pid) {
			s->res[n++] = s->res[i];
			continue;
		}
		for (k = 0; k < s->res[i].n; k++) {
			s->bytes -= s->res[i].v[k]->bytes;
			qp_slow_inst_free(s->res[i].v[k]);
		}
	}
	s->nres = n;
	qp_slow_win_forget(s, pid);
}

int qp_slow_copy(const struct qp_slow_store *s, uint32_t pid, bool (*keep)(void *arg, uint64_t site),
		 void *arg, struct qp_slow_inst **out, size_t *n, uint64_t *since_ns)
{
	struct qp_slow_inst *v = NULL;
	size_t i, len = 0, cap = 0;
	uint32_t k;

	*out = NULL;
	*n = 0;
	*since_ns = 0;
	for (i = 0; i < s->nres; i++) {
		const struct qp_slow_res *res = &s->res[i];

		if (res->tgid != pid || !keep(arg, res->site))
			continue;
		if (res->since_ns && (!*since_ns || res->since_ns < *since_ns))
			*since_ns = res->since_ns;
		for (k = 0; k < res->n; k++) {
			if (len == cap) {
				size_t c = cap ? cap * 2 : QP_SLOW_KEEP;
				struct qp_slow_inst *w = realloc(v, c * sizeof(*w));

				if (!w)
					goto oom;
				v = w;
				cap = c;
			}
			if (qp_slow_inst_copy(res->v[k], &v[len])) {
				len++;
				goto oom;
			}
			len++;
		}
	}
	*out = v;
	*n = len;
	return 0;
oom:
	qp_slow_insts_free(v, len);
	return -ENOMEM;
}

int qp_slow_win_open(struct qp_slow_store *s, uint32_t tgid, const uint64_t *named, size_t nnamed,
		     const uint64_t *other, size_t nother, uint32_t keep, qp_slow_threshold_fn fn, void *arg,
		     uint64_t *id)
{
	struct qp_slow_win *w;
	size_t i;
	int ret = qp_slow_win_add(s, tgid, named, nnamed, other, nother, keep, &w);

	if (ret)
		return ret;
	/* every instance of its sites is sent again, until it holds KEEP */
	for (i = 0; i < w->nnamed; i++)
		qp_slow_sync_threshold(s, tgid, w->named[i], fn, arg);
	*id = w->id;
	return 0;
}

int qp_slow_win_close(struct qp_slow_store *s, uint64_t id, qp_slow_threshold_fn fn, void *arg,
		      struct qp_slow_inst **out, size_t *n, bool *complete)
{
	struct qp_slow_win *w;
	size_t i;

	*out = NULL;
	*n = 0;
	*complete = false;
	w = qp_slow_win_detach(s, id, complete);	/* out of every threshold from here */
	if (!w)
		return -ENOENT;
	if (!w->gone) {
		for (i = 0; i < w->nnamed; i++)
			qp_slow_sync_threshold(s, w->tgid, w->named[i], fn, arg);
		for (i = 0; i < w->nsub; i++)
			if (!qp_slow_win_names(w, w->sub[i].site))
				qp_slow_sync_threshold(s, w->tgid, w->sub[i].site, fn, arg);
	}
	return qp_slow_win_drain(s, w, out, n);
}

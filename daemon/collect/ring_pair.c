/* ring_pair.c - pairs the records of thread rings into the BPF collector's
 * aggregate shape (ring_pair.h): the same stack discipline as
 * bpf/scopes.bpf.c (an exit closes the innermost open frame with its key;
 * frames above it were never closed and are dropped and counted), the
 * same log-linear histogram, exact min and max. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "collect_scopes.h"
#include "ring_pair.h"
#include "ring_spans.h"

static void record(struct qp_ring_agg *a, const struct qp_ring_reader *rd, uint64_t site, uint64_t parent,
		   uint64_t begin_ns, uint64_t end_ns, uint32_t depth, uint32_t kind, struct qp_ring_counts *c)
{
	struct qp_ring_inst in = { .site = site, .parent = parent, .begin_ns = begin_ns, .end_ns = end_ns,
				   .tid = rd->tid, .depth = (uint16_t)depth, .kind = (uint16_t)kind };

	qp_ring_flight_put(rd->fl, &in);
	qp_ring_agg_add(a, rd->pid, site, parent, end_ns > begin_ns ? end_ns - begin_ns : 0, c);
}

static void mark(struct qp_ring_agg *a, const struct qp_ring_reader *rd, uint64_t site, uint64_t ns,
		 struct qp_ring_counts *c)
{
	struct mark_key k = { .tgid = rd->pid, .site = site };
	struct mark_stats *m;
	int64_t i;

	{
		struct qp_ring_inst in = { .site = site, .begin_ns = ns, .end_ns = ns, .tid = rd->tid,
					   .depth = (uint16_t)rd->depth, .kind = QPROF_REC_MARK };

		qp_ring_flight_put(rd->fl, &in);
	}
	i = qp_htab_find(&a->marks, &k, sizeof(k));
	if (i < 0) {
		if (a->marks.n >= QPROF_MARK_ENTRIES) {
			c->marks_lost++;
			return;
		}
		i = qp_htab_add(&a->marks, &k, sizeof(k), NULL);
		if (i < 0) {
			c->marks_lost++;
			return;
		}
	}
	m = qp_htab_value(&a->marks, (size_t)i);
	m->count++;
	m->last_ns = ns;
}

/* T's entry for KEY, made while T has fewer than MAX; NULL (a value lost,
 * counted as the BPF collector counts it) when not */
static void *entry(struct qp_htab *t, size_t max, const void *key, size_t len, struct qp_ring_counts *c)
{
	int64_t i = qp_htab_find(t, key, len);

	if (i < 0 && t->n < max)
		i = qp_htab_add(t, key, len, NULL);
	if (i < 0) {
		c->values_lost++;
		return NULL;
	}
	return qp_htab_value(t, (size_t)i);
}

/* As bpf/scopes.bpf.c's value_probe: count, order-key min and max, last,
 * the non-finite apart, a bucket of the order key. */
static void value(struct qp_ring_agg *a, const struct qp_ring_reader *rd, uint64_t site, uint64_t bits,
		  uint64_t ns, struct qp_ring_counts *c)
{
	struct mark_key k = { .tgid = rd->pid, .site = site };
	struct value_bucket_key bk = { .tgid = rd->pid, .site = site };
	uint64_t exp = (bits >> 52) & 0x7ff, mant = bits & ((1ULL << 52) - 1), key, *hb;
	struct qp_ring_value *rv;
	struct value_stats *v;
	long double x, t;
	double dv;

	{
		struct qp_ring_inst in = { .site = site, .begin_ns = ns, .end_ns = ns, .arg = bits, .tid = rd->tid,
					   .depth = (uint16_t)rd->depth, .kind = QPROF_REC_VALUE };

		qp_ring_flight_put(rd->fl, &in);
	}
	rv = entry(&a->values, QPROF_VALUE_ENTRIES, &k, sizeof(k), c);
	if (!rv)
		return;
	v = &rv->st;
	v->last_bits = bits;
	v->last_ns = ns;
	if (exp == 0x7ff) {
		if (mant)
			v->nan++;
		else if (bits >> 63)
			v->neg_inf++;
		else
			v->pos_inf++;
		return;
	}
	key = (bits >> 63) ? ~bits : bits | (1ULL << 63);
	if (!v->count || key < v->min_key)
		v->min_key = key;
	if (key > v->max_key)
		v->max_key = key;
	v->count++;
	/* Neumaier: the low part each addition loses is kept apart */
	memcpy(&dv, &bits, sizeof(dv));
	x = dv;
	t = rv->sum + x;
	if (fabsl(rv->sum) >= fabsl(x))
		rv->comp += (rv->sum - t) + x;
	else
		rv->comp += (x - t) + rv->sum;
	rv->sum = t;
	bk.bucket = key >> QPROF_VALUE_BUCKET_SHIFT;
	hb = entry(&a->vhist, QPROF_VALUE_BUCKETS, &bk, sizeof(bk), c);
	if (hb)
		(*hb)++;
}

static void enter(struct qp_ring_reader *rd, uint64_t site, uint64_t key, uint64_t ns,
		  struct qp_ring_counts *c)
{
	if (rd->depth >= QPROF_MAX_DEPTH) {
		rd->depth++;
		c->too_deep++;
		return;
	}
	rd->f[rd->depth].site = site;
	rd->f[rd->depth].key = key;
	rd->f[rd->depth].ns = ns;
	rd->depth++;
}

/* An EXIT with no open enter. Before any loss on the ring: an exit whose
 * enter was never written (the scope began before the semaphore rose),
 * counted no_enter. After a loss: the innermost scope open at the gap
 * ending after all (already counted after_loss), or a scope whose enter
 * was in the gap (a scope lost, counted in the gap's figures). */
static void no_enter(struct qp_ring_reader *rd, uint64_t key, struct qp_ring_counts *c)
{
	if (!rd->had_gap) {
		c->no_enter++;
		return;
	}
	if (rd->nlostf && rd->lostf[rd->nlostf - 1] == key) {
		rd->nlostf--;
		rd->gap_closed++;
		return;
	}
	rd->gap_orphans++;
}

static void leave(struct qp_ring_agg *a, struct qp_ring_reader *rd, uint64_t key, uint64_t ns,
		  uint32_t kind, struct qp_ring_counts *c)
{
	uint32_t i;

	if (!rd->depth) {
		no_enter(rd, key, c);
		return;
	}
	if (rd->depth > QPROF_MAX_DEPTH) {
		/* the matching enter was past the stack and already counted */
		rd->depth--;
		return;
	}
	for (i = rd->depth; i-- > 0;) {
		const struct qp_ring_frame *f = &rd->f[i];

		if (f->key != key)
			continue;
		c->out_of_order += rd->depth - 1 - i;
		record(a, rd, f->site, i ? rd->f[i - 1].site : 0, f->ns, ns, i, kind, c);
		rd->depth = i;
		return;
	}
	no_enter(rd, key, c);
}

/* QPROF_SCOPE_BEGIN: a slot of its own (bpf/spans.bpf.h's rule): begun
 * again before its END, or a 9th open at once, the older one is dropped
 * (begin_unended). Its parent is the block scope open when it began. */
static void begin_open(struct qp_ring_reader *rd, uint64_t site, uint64_t key, uint64_t ns,
		       struct qp_ring_counts *c)
{
	uint32_t i, slot = QPROF_MAX_BEGINS, oldest = 0, d;
	struct qp_ring_begin *b;

	if (!key) {	/* a name at address 0: no marker wrote it */
		c->garbage++;
		return;
	}
	for (i = 0; i < QPROF_MAX_BEGINS; i++) {
		b = &rd->b[i];
		if (b->key == key) {
			slot = i;
			c->begin_unended++;
			break;
		}
		if (!b->key) {
			if (slot == QPROF_MAX_BEGINS)
				slot = i;
		} else if (b->ns < rd->b[oldest].ns || !rd->b[oldest].key) {
			oldest = i;
		}
	}
	if (slot == QPROF_MAX_BEGINS) {
		slot = oldest;
		c->begin_unended++;
	}
	d = rd->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : rd->depth;
	b = &rd->b[slot];
	b->key = key;
	b->site = site;
	b->ns = ns;
	b->depth = d;
	b->parent = d ? rd->f[d - 1].site : 0;
}

static void begin_close(struct qp_ring_agg *a, struct qp_ring_reader *rd, uint64_t key, uint64_t ns,
			struct qp_ring_counts *c)
{
	uint32_t i;

	for (i = 0; key && i < QPROF_MAX_BEGINS; i++) {
		struct qp_ring_begin *b = &rd->b[i];

		if (b->key != key)
			continue;
		record(a, rd, b->site, b->parent, b->ns, ns, b->depth, QPROF_REC_END, c);
		b->key = 0;
		return;
	}
	c->no_enter++;
}

/* Open BEGIN spans of RD, dropped (their thread ended, or records were lost). */
static uint64_t begins_clear(struct qp_ring_reader *rd)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < QPROF_MAX_BEGINS; i++) {
		n += rd->b[i].key != 0;
		rd->b[i].key = 0;
	}
	return n;
}

void qp_ring_gap(struct qp_ring_reader *rd, uint64_t lost, struct qp_ring_counts *c)
{
	uint32_t d = rd->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : rd->depth, i;

	c->lost += lost;
	c->after_loss += d + begins_clear(rd);
	if (lost) {
		rd->had_gap = true;
		rd->gap_recs += lost;
		rd->gap_open += d;
		for (i = 0; i < d && rd->nlostf < QPROF_MAX_DEPTH; i++)
			rd->lostf[rd->nlostf++] = rd->f[i].key;
	}
	rd->depth = 0;
}

void qp_ring_lost_add(struct qp_ring_lost_est *to, const struct qp_ring_lost_est *x)
{
	to->records += x->records;
	to->scopes += x->scopes;
	to->scopes_partial += x->scopes_partial;
	to->marks += x->marks;
	to->values += x->values;
	to->other += x->other;
	to->estimated |= x->estimated;
}

void qp_ring_lost_of(const struct qp_ring_reader *rd, struct qp_ring_lost_est *out)
{
	uint64_t open_in = rd->gap_open > rd->gap_closed ? rd->gap_open - rd->gap_closed : 0;
	uint64_t known = open_in + rd->gap_orphans + rd->gap_thread, rest, mix, sc;
	struct qp_ring_lost_est e = { .records = rd->gap_recs };

	/* the scopes counted one by one: open at a gap, or ended after one
	 * without their enter */
	e.scopes_partial = rd->gap_open + rd->gap_orphans;
	rest = rd->gap_recs > known ? rd->gap_recs - known : 0;
	mix = rd->n_scope + rd->n_mark + rd->n_value + rd->n_other;
	if (!rest) {
		e.scopes = e.scopes_partial;
	} else if (!mix || mix == rd->n_scope) {
		/* ENTER and EXIT records only (or nothing read to tell): two a scope */
		e.scopes = e.scopes_partial + rest / 2;
		e.estimated = !mix || (rest & 1);
	} else {
		sc = (uint64_t)((long double)rest * rd->n_scope / mix + 0.5L);
		e.scopes = e.scopes_partial + sc / 2;
		e.marks = (uint64_t)((long double)rest * rd->n_mark / mix + 0.5L);
		e.values = (uint64_t)((long double)rest * rd->n_value / mix / 2 + 0.5L);
		e.other = (uint64_t)((long double)rest * rd->n_other / mix + 0.5L);
		e.estimated = true;
	}
	qp_ring_lost_add(out, &e);
}

static bool is_arg(const struct qprof_ring_rec *r)
{
	return r->word == QPROF_REC_ARG;
}

/* A QPROF_LOG head at R[I] and its text (ring_layout.h): the records it
 * takes, or 0 when R[I] is no head or its text is not all there. */
static size_t log_rec(struct qp_ring_agg *a, struct qp_ring_reader *rd, const struct qprof_ring_rec *r,
		      size_t i, size_t n, const struct qp_ring_clock *clk, bool mono, uint64_t min_ts,
		      struct qp_ring_counts *c)
{
	uint64_t w = r[i].word, site = QPROF_REC_LOG_SITE(w), ts = r[i].ts;
	unsigned int stored = QPROF_REC_LOG_STORED(w), len = QPROF_REC_LOG_LEN(w);
	size_t nt = (stored + QPROF_RING_LOG_CHUNK - 1) / QPROF_RING_LOG_CHUNK, k;
	char msg[QPROF_RING_LOG_STORED + QPROF_RING_LOG_CHUNK + 1];
	struct qp_ring_log l;

	/* a plain argument, a text record, or no 16-aligned site: no head */
	if (w == QPROF_REC_ARG || (w & 8) || !site || (site & 15) || stored > len || nt >= n - i)
		return 0;
	for (k = 0; k < nt; k++) {
		const struct qprof_ring_rec *t = &r[i + 1 + k];
		uint64_t hi = t->word >> 8;

		if ((t->word & 0xff) != QPROF_REC_LOG_TEXT)
			return 0;
		memcpy(msg + k * QPROF_RING_LOG_CHUNK, &t->ts, 8);
		memcpy(msg + k * QPROF_RING_LOG_CHUNK + 8, &hi, QPROF_RING_LOG_CHUNK - 8);
	}
	msg[stored] = '\0';
	if (ts < rd->last_ts) {
		c->garbage += 1 + nt;
		qp_ring_gap(rd, 0, c);
		return 1 + nt;
	}
	rd->last_ts = ts;
	if (ts < min_ts) {
		c->before_attach += 1 + nt;
		return 1 + nt;
	}
	c->records += 1 + nt;
	rd->n_other += 1 + nt;
	c->logs++;
	if (len > strlen(msg))
		c->logs_cut++;
	if (a->log_fn) {
		l.pid = rd->pid;
		l.tid = rd->tid;
		l.site = site;
		l.mono_ns = qp_ring_clock_ns(clk, ts, mono);
		l.len = (int32_t)len;
		l.msg = msg;
		a->log_fn(a->log_arg, &l);
	}
	return 1 + nt;
}

void qp_ring_feed(struct qp_ring_agg *a, struct qp_ring_reader *rd, const struct qprof_ring_rec *r,
		  size_t n, const struct qp_ring_clock *clk, bool mono, uint64_t min_ts,
		  struct qp_ring_counts *c)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned int kind = (unsigned int)(r[i].word & QPROF_REC_KIND_MASK);
		uint64_t site = r[i].word & ~(uint64_t)QPROF_REC_KIND_MASK;
		uint64_t ts = r[i].ts, arg = 0, id = 0, ns;
		bool has_arg = kind == QPROF_REC_BEGIN || kind == QPROF_REC_END || kind == QPROF_REC_VALUE;
		bool async = false;

		if (kind == QPROF_REC_ARG) {
			size_t used = log_rec(a, rd, r, i, n, clk, mono, min_ts, c);

			if (!used)
				c->garbage++; /* its record was lapped, or never was */
			else
				i += used - 1;
			continue;
		}
		/* a span across threads: BEGIN, END or MARK (a step) and two
		 * arguments, the name's address and the id */
		if ((kind == QPROF_REC_BEGIN || kind == QPROF_REC_END || kind == QPROF_REC_MARK) &&
		    i + 2 < n && is_arg(&r[i + 1]) && is_arg(&r[i + 2])) {
			async = true;
			has_arg = true;
			arg = r[i + 1].ts;
			id = r[i + 2].ts;
			i += 2;
		} else if (kind == QPROF_REC_MARK && i + 1 < n && is_arg(&r[i + 1])) {
			c->garbage += 2; /* a step's second argument missing */
			i++;
			continue;
		} else if (has_arg) {
			if (i + 1 >= n || !is_arg(&r[i + 1])) {
				c->garbage++;
				continue;
			}
			arg = r[++i].ts;
		}
		if (ts < rd->last_ts) {
			/* time does not go back on one thread: not a record of ours */
			c->garbage++;
			qp_ring_gap(rd, 0, c);
			continue;
		}
		rd->last_ts = ts;
		if (kind == QPROF_REC_THREAD) {
			c->thread_exit += (rd->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : rd->depth) +
					  begins_clear(rd);
			rd->depth = 0;
			rd->had_gap = false; /* the new owner's exits are its own */
			rd->nlostf = 0;
			rd->tid = (uint32_t)((r[i].word & 0xffffffffu) >> 3);
			continue;
		}
		if (ts < min_ts) {
			c->before_attach++;
			continue;
		}
		if (!site || site >= (1ULL << 47)) {
			c->garbage++;
			continue;
		}
		if (async) {
			struct qp_ring_span_ev ev = { .ns = qp_ring_clock_ns(clk, ts, mono), .site = site, .name = arg,
						      .id = id, .pid = rd->pid, .tid = rd->tid, .kind = kind };
			int err = rd->spans ? qp_ring_spans_add(rd->spans, &ev, clk->ns0) : -ERANGE;

			rd->n_other += 3;
			if (!err)
				c->records += 3;
			else if (err == -ENOSPC)
				c->span_table_full++;
			else
				c->garbage += 3;
			continue;
		}
		c->records += 1 + has_arg;
		if (kind == QPROF_REC_ENTER || kind == QPROF_REC_EXIT)
			rd->n_scope++;
		else if (kind == QPROF_REC_MARK)
			rd->n_mark++;
		else if (kind == QPROF_REC_VALUE)
			rd->n_value += 2;
		else
			rd->n_other += 1 + has_arg;
		ns = qp_ring_clock_ns(clk, ts, mono);
		switch (kind) {
		case QPROF_REC_ENTER:
			enter(rd, site, site, ns, c);
			break;
		case QPROF_REC_BEGIN:
			begin_open(rd, site, arg, ns, c);
			break;
		case QPROF_REC_EXIT:
			leave(a, rd, site, ns, QPROF_REC_EXIT, c);
			break;
		case QPROF_REC_END:
			begin_close(a, rd, arg, ns, c);
			break;
		case QPROF_REC_MARK:
			mark(a, rd, site, ns, c);
			break;
		case QPROF_REC_VALUE:
			value(a, rd, site, arg, ns, c);
			break;
		default:
			break;
		}
	}
}

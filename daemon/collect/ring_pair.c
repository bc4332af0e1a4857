/* ring_pair.c - pairs the records of thread rings into the BPF collector's
 * aggregate shape (ring_pair.h): the same stack discipline as
 * bpf/scopes.bpf.c (an exit closes the innermost open frame with its key;
 * frames above it were never closed and are dropped and counted), the
 * same log-linear histogram, exact min and max. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collect_scopes.h"
#include "ring_pair.h"

int qp_ring_agg_init(struct qp_ring_agg *a, size_t max_rows, size_t ninst)
{
	memset(a, 0, sizeof(*a));
	qp_htab_init(&a->rows, sizeof(struct scope_stats));
	qp_htab_init(&a->marks, sizeof(struct mark_stats));
	a->max_rows = max_rows;
	if (ninst) {
		a->inst = calloc(ninst, sizeof(*a->inst));
		if (!a->inst)
			return -ENOMEM;
		a->ninst = ninst;
	}
	return 0;
}

void qp_ring_agg_free(struct qp_ring_agg *a)
{
	qp_htab_free(&a->rows);
	qp_htab_free(&a->marks);
	free(a->inst);
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
	int ret = rebuild_without(&a->rows, pid);

	return ret ? ret : rebuild_without(&a->marks, pid);
}

static void record(struct qp_ring_agg *a, const struct qp_ring_reader *rd, uint64_t site, uint64_t parent,
		   uint64_t begin_ns, uint64_t end_ns, uint32_t depth, uint32_t kind, struct qp_ring_counts *c)
{
	struct scope_key k = { .tgid = rd->pid, .site = site, .parent = parent };
	uint64_t dur = end_ns > begin_ns ? end_ns - begin_ns : 0;
	struct scope_stats *s;
	bool made;
	int64_t i;

	if (a->ninst) {
		struct qp_ring_inst *in = &a->inst[a->inst_seq % a->ninst];

		in->pid = rd->pid;
		in->tid = rd->tid;
		in->site = site;
		in->parent = parent;
		in->begin_ns = begin_ns;
		in->end_ns = end_ns;
		in->depth = depth;
		in->kind = kind;
		a->inst_seq++;
	}
	i = qp_htab_find(&a->rows, &k, sizeof(k));
	if (i < 0) {
		if (a->rows.n + a->marks.n >= a->max_rows) {
			c->table_full++;
			return;
		}
		i = qp_htab_add(&a->rows, &k, sizeof(k), &made);
		if (i < 0) {
			c->table_full++;
			return;
		}
	}
	s = qp_htab_value(&a->rows, (size_t)i);
	if (!s->count || dur < s->min_ns)
		s->min_ns = dur;
	if (dur > s->max_ns)
		s->max_ns = dur;
	s->count++;
	s->sum_ns += dur;
	s->hist[qprof_hist_index(dur)]++;
}

static void mark(struct qp_ring_agg *a, const struct qp_ring_reader *rd, uint64_t site, uint64_t ns,
		 struct qp_ring_counts *c)
{
	struct mark_key k = { .tgid = rd->pid, .site = site };
	struct mark_stats *m;
	int64_t i;

	if (a->ninst) {
		struct qp_ring_inst *in = &a->inst[a->inst_seq % a->ninst];

		memset(in, 0, sizeof(*in));
		in->pid = rd->pid;
		in->tid = rd->tid;
		in->site = site;
		in->begin_ns = in->end_ns = ns;
		in->depth = rd->depth;
		in->kind = QPROF_REC_MARK;
		a->inst_seq++;
	}
	i = qp_htab_find(&a->marks, &k, sizeof(k));
	if (i < 0) {
		if (a->rows.n + a->marks.n >= a->max_rows) {
			c->table_full++;
			return;
		}
		i = qp_htab_add(&a->marks, &k, sizeof(k), NULL);
		if (i < 0) {
			c->table_full++;
			return;
		}
	}
	m = qp_htab_value(&a->marks, (size_t)i);
	m->count++;
	m->last_ns = ns;
}

static void enter(struct qp_ring_reader *rd, uint64_t site, uint64_t key, uint64_t ts,
		  struct qp_ring_counts *c)
{
	if (rd->depth >= QPROF_MAX_DEPTH) {
		rd->depth++;
		c->too_deep++;
		return;
	}
	rd->f[rd->depth].site = site;
	rd->f[rd->depth].key = key;
	rd->f[rd->depth].ts = ts;
	rd->depth++;
}

static void leave(struct qp_ring_agg *a, struct qp_ring_reader *rd, uint64_t key, uint64_t ts,
		  uint32_t kind, const struct qp_ring_clock *clk, bool mono, struct qp_ring_counts *c)
{
	uint32_t i;

	if (!rd->depth) {
		c->no_enter++;
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
		record(a, rd, f->site, i ? rd->f[i - 1].site : 0, qp_ring_clock_ns(clk, f->ts, mono),
		       qp_ring_clock_ns(clk, ts, mono), i, kind, c);
		rd->depth = i;
		return;
	}
	c->no_enter++;
}

void qp_ring_gap(struct qp_ring_reader *rd, uint64_t lost, struct qp_ring_counts *c)
{
	c->lost += lost;
	c->after_loss += rd->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : rd->depth;
	rd->depth = 0;
}

void qp_ring_feed(struct qp_ring_agg *a, struct qp_ring_reader *rd, const struct qprof_ring_rec *r,
		  size_t n, const struct qp_ring_clock *clk, bool mono, uint64_t min_ts,
		  struct qp_ring_counts *c)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned int kind = (unsigned int)(r[i].word & QPROF_REC_KIND_MASK);
		uint64_t site = r[i].word & ~(uint64_t)QPROF_REC_KIND_MASK;
		uint64_t ts = r[i].ts, arg = 0;
		bool has_arg = kind == QPROF_REC_BEGIN || kind == QPROF_REC_END || kind == QPROF_REC_VALUE;

		if (kind == QPROF_REC_ARG) {
			c->garbage++; /* its record was lapped, or never was */
			continue;
		}
		if (has_arg) {
			if (i + 1 >= n || (r[i + 1].word & QPROF_REC_KIND_MASK) != QPROF_REC_ARG ||
			    (r[i + 1].word & ~(uint64_t)QPROF_REC_KIND_MASK)) {
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
			c->thread_exit += rd->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : rd->depth;
			rd->depth = 0;
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
		c->records += 1 + has_arg;
		switch (kind) {
		case QPROF_REC_ENTER:
			enter(rd, site, site, ts, c);
			break;
		case QPROF_REC_BEGIN:
			enter(rd, site, arg, ts, c);
			break;
		case QPROF_REC_EXIT:
			leave(a, rd, site, ts, QPROF_REC_EXIT, clk, mono, c);
			break;
		case QPROF_REC_END:
			leave(a, rd, arg, ts, QPROF_REC_END, clk, mono, c);
			break;
		case QPROF_REC_MARK:
			mark(a, rd, site, qp_ring_clock_ns(clk, ts, mono), c);
			break;
		default:
			/* QPROF_REC_VALUE: values stay on the BPF path for now */
			break;
		}
	}
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

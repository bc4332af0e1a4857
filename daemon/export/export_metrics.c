/* export_metrics.c - GET /metrics from the status, scope and value models:
 * which families, which labels, how rows that share a label set merge,
 * and the cap on label sets (see export_metrics.h). The models are the
 * ones the JSON routes encode, so the two cannot disagree. How a family
 * is encoded, text or protobuf, is metrics_writer.c's business. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_counters.h"
#include "export_metrics.h"
#include "export_metrics_ring.h"
#include "common/json_writer.h"
#include "metrics_writer.h"
#include "model/percentile.h"
#include "common/util.h"

#define FAM_SCOPE "qprof_scope_duration_seconds"
#define FAM_EVENTS "qprof_events_total"
#define FAM_VALUE "qprof_value"

struct walk {
	struct qp_mwriter w;
	const struct qp_metrics_opts *o;
	unsigned int max_sets;
	uint64_t omitted_scopes, omitted_events, omitted_values;
	bool oom;
};

/* The next character of *P as the exposition writes it: a valid UTF-8
 * sequence, or U+FFFD for a byte that is not one (metrics_writer.c). */
static size_t next_unit(const unsigned char **p, const unsigned char **unit)
{
	static const unsigned char fffd[3] = { 0xef, 0xbf, 0xbd };
	size_t len = qp_utf8_seq(*p, strnlen((const char *)*p, 4));

	if (!len) {
		*unit = fffd;
		(*p)++;
		return sizeof(fffd);
	}
	*unit = *p;
	*p += len;
	return len;
}

/* Label values compared as they are written, so that two names that differ
 * only in invalid bytes are one label set, never two equal series. */
static int str_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)(a ? a : ""), *y = (const unsigned char *)(b ? b : "");

	while (*x && *y) {
		const unsigned char *ux, *uy;
		size_t lx = next_unit(&x, &ux), ly = next_unit(&y, &uy);
		int c = memcmp(ux, uy, lx < ly ? lx : ly);

		if (c || lx != ly)
			return c ? c : lx < ly ? -1 : 1;
	}
	return (*x != 0) - (*y != 0);
}

/* The label order of per-site rows: exe, name, parent, kind, then pid when
 * it is a label (two comparators: qsort passes no context). Equal rows are
 * one label set. */
static int scope_cmp_nopid(const void *a, const void *b)
{
	const struct qp_scope_item *x = *(const struct qp_scope_item *const *)a;
	const struct qp_scope_item *y = *(const struct qp_scope_item *const *)b;
	int c;

	if ((c = str_cmp(x->exe, y->exe)) || (c = str_cmp(x->name, y->name)) ||
	    (c = str_cmp(x->parent, y->parent)) || (c = str_cmp(x->kind, y->kind)))
		return c;
	return 0;
}

static int scope_cmp_pid(const void *a, const void *b)
{
	const struct qp_scope_item *x = *(const struct qp_scope_item *const *)a;
	const struct qp_scope_item *y = *(const struct qp_scope_item *const *)b;
	int c = scope_cmp_nopid(a, b);

	return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

static int value_cmp_nopid(const void *a, const void *b)
{
	const struct qp_value_item *x = *(const struct qp_value_item *const *)a;
	const struct qp_value_item *y = *(const struct qp_value_item *const *)b;
	int c;

	if ((c = str_cmp(x->exe, y->exe)) || (c = str_cmp(x->name, y->name)))
		return c;
	return 0;
}

static int value_cmp_pid(const void *a, const void *b)
{
	const struct qp_value_item *x = *(const struct qp_value_item *const *)a;
	const struct qp_value_item *y = *(const struct qp_value_item *const *)b;
	int c = value_cmp_nopid(a, b);

	return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* exe[, pid]: the labels every per-site family starts with. */
static size_t base_labels(const struct walk *k, const char *exe, int32_t pid, char pidbuf[16],
			  struct qp_label *l)
{
	size_t n = 0;

	l[n++] = (struct qp_label){ "exe", exe };
	if (k->o->pid_label) {
		snprintf(pidbuf, 16, "%" PRId32, pid);
		l[n++] = (struct qp_label){ "pid", pidbuf };
	}
	return n;
}

/* The rows of M of SHAPE, sorted by label set, into *OUT (free()). */
static size_t scope_rows(const struct walk *k, const struct qp_scope_model *m, bool timed,
			 const struct qp_scope_item ***out)
{
	const struct qp_scope_item **v = malloc((m->n ? m->n : 1) * sizeof(*v));
	size_t i, n = 0;

	*out = v;
	if (!v)
		return 0;
	for (i = 0; i < m->n; i++)
		if ((m->items[i].shape == QP_ITEM_TIMED) == timed)
			v[n++] = &m->items[i];
	qsort(v, n, sizeof(*v), k->o->pid_label ? scope_cmp_pid : scope_cmp_nopid);
	return n;
}

static void scope_family(struct walk *k, const struct qp_scope_model *m)
{
	int (*cmp)(const void *, const void *) = k->o->pid_label ? scope_cmp_pid : scope_cmp_nopid;
	uint64_t *dense = calloc(QPROF_HIST_BUCKETS, sizeof(*dense));
	struct qp_hist_count *sp = malloc(QPROF_HIST_BUCKETS * sizeof(*sp));
	const struct qp_scope_item **v;
	size_t n = scope_rows(k, m, true, &v), i, j, sets = 0;

	if (!dense || !sp || !v) {
		k->oom = true;
		goto out;
	}
	qp_mw_family(&k->w, FAM_SCOPE,
		     "Latency of qprof scopes (kind scope), USDT begin/end spans (span), spans across threads "
		     "and their steps (async_span) since attach; le bounds are kernel bucket edges less 1 ns, "
		     "so bucket counts are exact.",
		     QP_MT_HISTOGRAM);
	for (i = 0; i < n; i = j) {
		struct qp_mhist h = { .b = sp };
		struct qp_label l[5];
		uint64_t sum_ns = 0;
		char pidbuf[16];
		size_t nl, x, t;

		for (j = i + 1; j < n && !cmp(&v[i], &v[j]); j++)
			;
		if (sets++ >= k->max_sets)
			continue;
		for (x = i; x < j; x++) {
			sum_ns += v[x]->total_ns;
			for (t = 0; t < v[x]->nhist; t++)
				dense[v[x]->hist[t].idx] += v[x]->hist[t].n;
		}
		for (t = 0; t < QPROF_HIST_BUCKETS; t++) {
			if (!dense[t])
				continue;
			sp[h.nb++] = (struct qp_hist_count){ .idx = (uint32_t)t, .n = dense[t] };
			h.count += dense[t];
			dense[t] = 0;
		}
		h.sum_s = (double)sum_ns / 1e9;
		nl = base_labels(k, v[i]->exe, v[i]->pid, pidbuf, l);
		l[nl++] = (struct qp_label){ "scope", v[i]->name };
		l[nl++] = (struct qp_label){ "parent", v[i]->parent };
		l[nl++] = (struct qp_label){ "kind", v[i]->kind };
		qp_mw_histogram(&k->w, l, nl, &h);
	}
	k->omitted_scopes = sets > k->max_sets ? sets - k->max_sets : 0;
out:
	free(dense);
	free(sp);
	free(v);
}

/* The scopes' kernel figures (rows with has_kernel, either collector):
 * one counter family each, with the label sets of FAM_SCOPE, rows of one set
 * added, the same sets kept by the cap (its omissions are FAM_SCOPE's). */
#define KFIGS 6

struct kset {
	const struct qp_scope_item *first;
	uint64_t v[KFIGS];
};

static void kernel_families(struct walk *k, const struct qp_scope_model *m)
{
	static const struct {
		const char *name, *help;
		double scale;
	} fam[KFIGS] = {
		{ "qprof_scope_off_cpu_seconds_total",
		  "Time off the CPU while the scope was its thread's innermost, since attach.", 1e9 },
		{ "qprof_scope_voluntary_switches_total", "Switches out asleep while the scope was the innermost.", 1 },
		{ "qprof_scope_involuntary_switches_total",
		  "Switches out runnable (preempted) while the scope was the innermost.", 1 },
		{ "qprof_scope_migrations_total", "Moves of the scope's thread to another CPU while it was the innermost.",
		  1 },
		{ "qprof_scope_page_faults_total", "User page faults while the scope was the innermost.", 1 },
		{ "qprof_scope_irq_seconds_total",
		  "Device irq and softirq time run on the thread's time while the scope was the innermost.", 1e9 },
	};
	int (*cmp)(const void *, const void *) = k->o->pid_label ? scope_cmp_pid : scope_cmp_nopid;
	const struct qp_scope_item **v;
	size_t n = scope_rows(k, m, true, &v), i, j, x, f, sets = 0, ns = 0;
	struct kset *ks = calloc(n ? n : 1, sizeof(*ks));

	if (!v || !ks) {
		k->oom = true;
		goto out;
	}
	for (i = 0; i < n; i = j) {
		bool any = false;

		for (j = i + 1; j < n && !cmp(&v[i], &v[j]); j++)
			;
		if (sets++ >= k->max_sets)
			continue;
		ks[ns].first = v[i];
		for (x = i; x < j; x++) {
			const struct scope_kstats *kf = &v[x]->kernel;

			if (!v[x]->has_kernel)
				continue;
			any = true;
			ks[ns].v[0] += kf->off_cpu_ns;
			ks[ns].v[1] += kf->voluntary;
			ks[ns].v[2] += kf->involuntary;
			ks[ns].v[3] += kf->migrations;
			ks[ns].v[4] += kf->page_faults;
			ks[ns].v[5] += kf->irq_ns;
		}
		if (any)
			ns++;
	}
	for (f = 0; f < KFIGS; f++) {
		qp_mw_family(&k->w, fam[f].name, fam[f].help, QP_MT_COUNTER);
		for (i = 0; i < ns; i++) {
			struct qp_label l[5];
			char pidbuf[16];
			size_t nl = base_labels(k, ks[i].first->exe, ks[i].first->pid, pidbuf, l);

			l[nl++] = (struct qp_label){ "scope", ks[i].first->name };
			l[nl++] = (struct qp_label){ "parent", ks[i].first->parent };
			l[nl++] = (struct qp_label){ "kind", ks[i].first->kind };
			qp_mw_value(&k->w, l, nl, (double)ks[i].v[f] / fam[f].scale);
		}
	}
out:
	free(ks);
	free(v);
}

static void events_family(struct walk *k, const struct qp_scope_model *m)
{
	int (*cmp)(const void *, const void *) = k->o->pid_label ? scope_cmp_pid : scope_cmp_nopid;
	const struct qp_scope_item **v;
	size_t n = scope_rows(k, m, false, &v), i, j, sets = 0;

	if (!v) {
		k->oom = true;
		return;
	}
	qp_mw_family(&k->w, FAM_EVENTS,
		     "Hits of QPROF_MARK sites (kind mark) and of counted USDT probes (kind probe) since attach.",
		     QP_MT_COUNTER);
	for (i = 0; i < n; i = j) {
		uint64_t count = 0;
		struct qp_label l[4];
		char pidbuf[16];
		size_t nl, x;

		for (j = i + 1; j < n && !cmp(&v[i], &v[j]); j++)
			;
		if (sets++ >= k->max_sets)
			continue;
		for (x = i; x < j; x++)
			count += v[x]->count;
		nl = base_labels(k, v[i]->exe, v[i]->pid, pidbuf, l);
		l[nl++] = (struct qp_label){ "name", v[i]->name };
		l[nl++] = (struct qp_label){ "kind", v[i]->kind };
		qp_mw_value(&k->w, l, nl, (double)count);
	}
	k->omitted_events = sets > k->max_sets ? sets - k->max_sets : 0;
	free(v);
}

/* One label set of values, merged. */
struct vset {
	const struct qp_value_item *first;
	uint64_t count, nan, pos_inf, neg_inf;
	double q[4];		/* quantiles 0, 0.5, 0.99, 1 */
	double sum, last;
};

static int bucket_cmp(const void *a, const void *b)
{
	const struct qp_value_bucket *x = a, *y = b;

	return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

/* Merge V[0..N) into S: counts add, min and max are the extremes, the
 * quantiles and the mean are read from the merged buckets (value_math.c),
 * the last value is the latest one. 0 or -ENOMEM. */
static int value_merge(const struct qp_value_item *const *v, size_t n, struct vset *s)
{
	struct qp_value_row r = { 0 };
	struct qp_value_bucket *b;
	size_t i, nb = 0, k, tot = 0;
	double mn = INFINITY, mx = -INFINITY;
	uint64_t last_ns = 0;

	memset(s, 0, sizeof(*s));
	s->first = v[0];
	s->last = v[0]->last;
	for (i = 0; i < n; i++)
		tot += v[i]->nbuckets;
	b = malloc((tot ? tot : 1) * sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (v[i]->nbuckets)
			memcpy(b + nb, v[i]->buckets, v[i]->nbuckets * sizeof(*b));
		nb += v[i]->nbuckets;
		s->count += v[i]->count;
		s->nan += v[i]->nan;
		s->pos_inf += v[i]->pos_inf;
		s->neg_inf += v[i]->neg_inf;
		if (v[i]->count) {
			mn = v[i]->min < mn ? v[i]->min : mn;
			mx = v[i]->max > mx ? v[i]->max : mx;
		}
		if (v[i]->last_ns > last_ns) {
			last_ns = v[i]->last_ns;
			s->last = v[i]->last;
		}
	}
	qsort(b, nb, sizeof(*b), bucket_cmp);
	for (i = 0, k = 0; i < nb; i++) {
		if (k && b[k - 1].bucket == b[i].bucket)
			b[k - 1].count += b[i].count;
		else
			b[k++] = b[i];
	}
	if (s->count) {
		r.st.count = s->count;
		r.st.min_key = qp_value_key(mn);
		r.st.max_key = qp_value_key(mx);
		r.buckets = b;
		r.nbuckets = k;
		s->q[0] = mn;
		s->q[1] = qp_value_quantile(&r, 0.5);
		s->q[2] = qp_value_quantile(&r, 0.99);
		s->q[3] = mx;
		s->sum = qp_value_mean(&r) * (double)s->count;
	} else {
		for (i = 0; i < 4; i++)
			s->q[i] = NAN;	/* a summary with no observation */
	}
	free(b);
	return 0;
}

static void value_families(struct walk *k, const struct qp_value_model *m)
{
	static const double qs[4] = { 0, 0.5, 0.99, 1 };
	int (*cmp)(const void *, const void *) = k->o->pid_label ? value_cmp_pid : value_cmp_nopid;
	const struct qp_value_item **v = malloc((m->n ? m->n : 1) * sizeof(*v));
	struct vset *sets = calloc(m->n ? m->n : 1, sizeof(*sets));
	size_t i, j, n = 0, ns = 0, nsets = 0;

	if (!v || !sets) {
		k->oom = true;
		goto out;
	}
	for (i = 0; i < m->n; i++)
		v[i] = &m->items[i];
	qsort(v, m->n, sizeof(*v), cmp);
	for (i = 0; i < m->n; i = j) {
		for (j = i + 1; j < m->n && !cmp(&v[i], &v[j]); j++)
			;
		if (nsets++ >= k->max_sets)
			continue;
		if (value_merge(v + i, j - i, &sets[ns++])) {
			k->oom = true;
			goto out;
		}
	}
	k->omitted_values = nsets > k->max_sets ? nsets - k->max_sets : 0;
	qp_mw_family(&k->w, FAM_VALUE,
		     "QPROF_VALUE finite values since attach: quantiles 0 and 1 are the exact min and max, 0.5 and "
		     "0.99 and the sum are read from the kernel's buckets (within 0.013 %).",
		     QP_MT_SUMMARY);
	for (i = 0; i < ns; i++) {
		struct qp_label l[3];
		char pidbuf[16];

		n = base_labels(k, sets[i].first->exe, sets[i].first->pid, pidbuf, l);
		l[n++] = (struct qp_label){ "name", sets[i].first->name };
		qp_mw_summary(&k->w, l, n, qs, sets[i].q, 4, sets[i].count, sets[i].sum);
	}
	qp_mw_family(&k->w, "qprof_value_last", "The last QPROF_VALUE, NaN and infinities included.",
		     QP_MT_GAUGE);
	for (i = 0; i < ns; i++) {
		struct qp_label l[3];
		char pidbuf[16];

		n = base_labels(k, sets[i].first->exe, sets[i].first->pid, pidbuf, l);
		l[n++] = (struct qp_label){ "name", sets[i].first->name };
		qp_mw_value(&k->w, l, n, sets[i].last);
	}
	qp_mw_family(&k->w, "qprof_value_nonfinite_total",
		     "QPROF_VALUE values that were NaN (class nan), +inf (pos_inf) or -inf (neg_inf).",
		     QP_MT_COUNTER);
	for (i = 0; i < ns; i++) {
		const char *cls[3] = { "nan", "pos_inf", "neg_inf" };
		const uint64_t c[3] = { sets[i].nan, sets[i].pos_inf, sets[i].neg_inf };
		struct qp_label l[4];
		char pidbuf[16];
		size_t x;

		n = base_labels(k, sets[i].first->exe, sets[i].first->pid, pidbuf, l);
		l[n++] = (struct qp_label){ "name", sets[i].first->name };
		for (x = 0; x < 3; x++) {
			l[n] = (struct qp_label){ "class", cls[x] };
			qp_mw_value(&k->w, l, n + 1, (double)c[x]);
		}
	}
out:
	free(v);
	free(sets);
}

/* A family of one unlabelled sample. */
static void single(struct walk *k, const char *name, const char *help, enum qp_mtype t, double v)
{
	qp_mw_family(&k->w, name, help, t);
	qp_mw_value(&k->w, NULL, 0, v);
}

/* The rows of G as families: a row of its own family, or with its label,
 * the rows of one METRIC one family (export_counters.h). */
static void counter_families(struct walk *k, const struct qp_counter_group *g)
{
	size_t i;

	if (!g->present)
		return;
	for (i = 0; i < g->n; i++) {
		const struct qp_counter_def *d = &g->defs[i];
		struct qp_label l;

		if (!d->metric)
			continue;
		if (!i || !g->defs[i - 1].metric || strcmp(g->defs[i - 1].metric, d->metric))
			qp_mw_family(&k->w, d->metric, d->help,
				     d->kind == QP_CK_COUNTER ? QP_MT_COUNTER : QP_MT_GAUGE);
		l = (struct qp_label){ d->label, d->key };
		qp_mw_value(&k->w, d->label ? &l : NULL, d->label ? 1 : 0, qp_counter_metric_value(g, i));
	}
}

static void daemon_families(struct walk *k, const struct qp_status_model *st,
			    const struct qp_lifecycle_figures *lc)
{
	const struct {
		const char *family;
		uint64_t n;
	} omitted[] = {
		{ FAM_SCOPE, k->omitted_scopes }, { FAM_EVENTS, k->omitted_events }, { FAM_VALUE, k->omitted_values },
	};
	struct qp_counter_group g[QP_SG__N + 1];
	struct qp_label l;
	size_t i;

	qp_status_counter_groups(st, g);
	qp_lifecycle_counter_group(lc, &g[QP_SG__N]);
	for (i = 0; i < QP_ARRAY_SIZE(g); i++)
		counter_families(k, &g[i]);
	qp_mw_family(&k->w, "qprof_targets", "Target processes by state.", QP_MT_GAUGE);
	l = (struct qp_label){ "state", "running" };
	qp_mw_value(&k->w, &l, 1, st->targets_running);
	l = (struct qp_label){ "state", "exited" };
	qp_mw_value(&k->w, &l, 1, st->targets_exited);
	if (st->self.ok) {
		single(k, "process_resident_memory_bytes", "qprofd's resident memory.", QP_MT_GAUGE,
		       (double)st->self.rss_bytes);
		single(k, "process_cpu_seconds_total", "qprofd's CPU time, user and system, all threads.",
		       QP_MT_COUNTER, (double)st->self.cpu_ns / 1e9);
	}
	qp_mw_family(&k->w, "qprof_metrics_label_sets_omitted",
		     "Label sets of a per-site family left out of this answer by the cap (--metrics-max-sets).",
		     QP_MT_GAUGE);
	for (i = 0; i < QP_ARRAY_SIZE(omitted); i++) {
		l = (struct qp_label){ "family", omitted[i].family };
		qp_mw_value(&k->w, &l, 1, (double)omitted[i].n);
	}
}

int qp_export_metrics(const struct qp_status_model *status, const struct qp_lifecycle_figures *lifecycle,
		      const struct qp_scope_model *scopes, const struct qp_value_model *values,
		      const struct qp_targets_view *targets,
		      const struct qp_metrics_opts *opts, bool protobuf, struct qp_buf *out)
{
	struct walk *k = calloc(1, sizeof(*k));
	int ret;

	if (!k)
		return -ENOMEM;
	k->o = opts;
	k->max_sets = opts->max_sets ? opts->max_sets : QP_METRICS_MAX_SETS_DEFAULT;
	qp_mw_init(&k->w, out, protobuf);
	single(k, "qprof_up", "1 while qprofd answers.", QP_MT_GAUGE, 1);
	scope_family(k, scopes);
	kernel_families(k, scopes);
	events_family(k, scopes);
	value_families(k, values);
	daemon_families(k, status, lifecycle);
	qp_export_metrics_ring(&k->w, targets);
	ret = qp_mw_finish(&k->w);
	qp_mw_free(&k->w);
	if (k->oom)
		ret = -ENOMEM;
	free(k);
	return ret;
}

/* report_figures.c - see report_figures.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report_figures.h"
#include "common/buf.h"
#include "common/stackstats.h"

/* A figure as the JSON has it: 0 and not ok when it would be null. */
static double fig(double v, bool *ok)
{
	if (isfinite(v))
		return v;
	*ok = false;
	return 0;
}

size_t qp_srows_from(const struct qp_scope_model *m, struct srow **out)
{
	struct srow *v = calloc(m->n ? m->n : 1, sizeof(*v));
	size_t i;

	*out = v;
	if (!v)
		return 0;
	for (i = 0; i < m->n; i++) {
		const struct qp_scope_item *it = &m->items[i];
		struct srow *r = &v[i];
		bool ok = it->shape == QP_ITEM_TIMED;

		r->name = it->name;
		r->parent = it->parent;
		r->kind = it->kind;
		r->count = (uint64_t)(double)it->count;
		if (ok) {
			r->total = (double)it->total_ns;
			r->mean = fig(it->mean_ns, &ok);
			r->min = (double)it->min_ns;
			r->p50 = fig(it->p50_ns, &ok);
			r->p90 = fig(it->p90_ns, &ok);
			r->p99 = fig(it->p99_ns, &ok);
			r->p999 = fig(it->p999_ns, &ok);
			r->max = (double)it->max_ns;
			r->calibration_ns = it->calibration_ns;
		}
		r->dur = ok && strcmp(r->kind, "mark") && strcmp(r->kind, "probe");
		r->has_kernel = it->has_kernel;
		r->kernel = it->kernel;
	}
	return m->n;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_names(const struct srow *a, const struct srow *b)
{
	int c = cmp_str(a->name, b->name);

	return c ? c : cmp_str(a->parent, b->parent);
}

int qp_srow_by_total(const void *pa, const void *pb)
{
	const struct srow *a = pa, *b = pb;

	if (a->dur != b->dur)
		return a->dur ? -1 : 1;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return cmp_names(a, b);
}

int qp_srow_by_p99(const void *pa, const void *pb)
{
	const struct srow *a = pa, *b = pb;

	if (a->dur != b->dur)
		return a->dur ? -1 : 1;
	if (a->p99 != b->p99)
		return a->p99 > b->p99 ? -1 : 1;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return cmp_names(a, b);
}

int qp_srow_by_count(const void *pa, const void *pb)
{
	const struct srow *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return cmp_names(a, b);
}

int qp_srow_by_off_cpu(const void *pa, const void *pb)
{
	const struct srow *a = pa, *b = pb;
	uint64_t sa = a->kernel.voluntary + a->kernel.involuntary;
	uint64_t sb = b->kernel.voluntary + b->kernel.involuntary;

	if (a->has_kernel != b->has_kernel)
		return a->has_kernel ? -1 : 1;
	if (a->kernel.off_cpu_ns != b->kernel.off_cpu_ns)
		return a->kernel.off_cpu_ns > b->kernel.off_cpu_ns ? -1 : 1;
	if (sa != sb)
		return sa > sb ? -1 : 1;
	return cmp_names(a, b);
}



int qp_funcs_build(const struct qp_cpu_profile *p, struct funcs *f)
{
	struct qp_stackstats st;
	struct qp_buf key;
	size_t s, k;
	int ret = 0;

	/* extra: the struct func the report keeps, names pointing into P */
	qp_stackstats_init(&st, sizeof(struct func));
	qp_buf_init(&key);
	for (s = 0; s < p->nsamples && !ret; s++) {
		const struct qp_cpu_sample *smp = &p->samples[s];

		if (!smp->count)
			continue;
		qp_stackstats_stack(&st, smp->count);
		for (k = 0; k < smp->nframes; k++) {
			const struct qp_cpu_frame *fr = &smp->frames[k];
			const char *name = fr->name && fr->name[0] ? fr->name : "[unknown]";
			const char *module = fr->module ? fr->module : "";
			int64_t i;
			bool made;

			key.len = 0;	/* a function of the report: name and module */
			qp_buf_add(&key, name, strlen(name) + 1);
			qp_buf_add(&key, module, strlen(module));
			i = key.failed ? -ENOMEM
				       : qp_stackstats_frame(&st, key.data, key.len,
							     k + 1 == smp->nframes, &made);
			if (i < 0) {
				ret = -ENOMEM;
				break;
			}
			if (made) {
				struct func *fn = qp_stackstats_extra(&st, (size_t)i);

				fn->name = name;
				fn->module = module;
			}
		}
	}
	f->samples = st.samples;
	f->n = ret ? 0 : qp_stackstats_count(&st);
	f->v = ret ? NULL : calloc(f->n ? f->n : 1, sizeof(*f->v));
	if (!f->v)
		ret = -ENOMEM;
	for (s = 0; s < f->n && !ret; s++) {
		const struct qp_fnstat *st_s = qp_stackstats_at(&st, s);

		f->v[s] = *(struct func *)qp_stackstats_extra(&st, s);
		f->v[s].self = st_s->self;
		f->v[s].total = st_s->total;
	}
	qp_buf_free(&key);
	qp_stackstats_free(&st);
	return ret;
}

static int func_cmp_names(const struct func *a, const struct func *b)
{
	int c = strcmp(a->name, b->name);

	return c ? c : strcmp(a->module, b->module);
}

int qp_func_by_self(const void *pa, const void *pb)
{
	const struct func *a = pa, *b = pb;

	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return func_cmp_names(a, b);
}

int qp_func_by_total(const void *pa, const void *pb)
{
	const struct func *a = pa, *b = pb;

	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	return func_cmp_names(a, b);
}

/* report_figures.c - see report_figures.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "report_figures.h"

static double num(const json_t *o, const char *k, bool *ok)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_number(v)) {
		*ok = false;
		return 0;
	}
	return json_number_value(v);
}

size_t qp_srows_parse(json_t *root, struct srow **out)
{
	json_t *arr = json_object_get(root, "scopes");
	size_t i, n = json_array_size(arr), k = 0;
	struct srow *v = calloc(n ? n : 1, sizeof(*v));

	*out = v;
	if (!v)
		return 0;
	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i);
		struct srow *r = &v[k];
		bool ok = true, cok = true;

		r->name = json_string_value(json_object_get(o, "name"));
		if (!r->name)
			continue;
		r->parent = json_string_value(json_object_get(o, "parent"));
		r->kind = json_string_value(json_object_get(o, "kind"));
		if (!r->kind)
			r->kind = "scope";
		r->count = (uint64_t)num(o, "count", &cok);
		r->total = num(o, "total_ns", &ok);
		r->mean = num(o, "mean_ns", &ok);
		r->min = num(o, "min_ns", &ok);
		r->p50 = num(o, "p50_ns", &ok);
		r->p90 = num(o, "p90_ns", &ok);
		r->p99 = num(o, "p99_ns", &ok);
		r->p999 = num(o, "p999_ns", &ok);
		r->max = num(o, "max_ns", &ok);
		r->dur = ok && strcmp(r->kind, "mark") && strcmp(r->kind, "probe");
		k++;
	}
	return k;
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



static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;
}

static struct func *func_get(struct funcs *f, const char *name, const char *module)
{
	size_t i;

	if ((f->n + 1) * 2 > f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 256, j;
		struct func *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (j = 0; j < f->cap; j++) {
			if (!f->v[j].name)
				continue;
			i = hash_str(hash_str(14695981039346656037ull, f->v[j].name), f->v[j].module) & (cap - 1);
			while (v[i].name)
				i = (i + 1) & (cap - 1);
			v[i] = f->v[j];
		}
		free(f->v);
		f->v = v;
		f->cap = cap;
	}
	i = hash_str(hash_str(14695981039346656037ull, name), module) & (f->cap - 1);
	while (f->v[i].name) {
		if (!strcmp(f->v[i].name, name) && !strcmp(f->v[i].module, module))
			return &f->v[i];
		i = (i + 1) & (f->cap - 1);
	}
	f->v[i].name = name;
	f->v[i].module = module;
	f->n++;
	return &f->v[i];
}

int qp_funcs_build(const struct qp_cpu_profile *p, struct funcs *f)
{
	size_t s, k;

	for (s = 0; s < p->nsamples; s++) {
		const struct qp_cpu_sample *smp = &p->samples[s];

		if (!smp->count)
			continue;
		f->samples += smp->count;
		for (k = 0; k < smp->nframes; k++) {
			const struct qp_cpu_frame *fr = &smp->frames[k];
			const char *name = fr->name && fr->name[0] ? fr->name : "[unknown]";
			struct func *fn = func_get(f, name, fr->module ? fr->module : "");

			if (!fn)
				return -ENOMEM;
			if (fn->stamp != s + 1) {	/* recursion counts once per sample */
				fn->stamp = s + 1;
				fn->total += smp->count;
			}
			if (k + 1 == smp->nframes)
				fn->self += smp->count;
		}
	}
	/* compact */
	for (s = 0, k = 0; s < f->cap; s++)
		if (f->v[s].name)
			f->v[k++] = f->v[s];
	return 0;
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

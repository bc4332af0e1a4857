/* model_values.c - see model_values.h: the values model from the
 * collector's rows. The arithmetic on order keys and buckets is in
 * value_math.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "common/arena.h"
#include "model_scopes.h"
#include "model_values.h"
#include "targets/targets.h"

static const char *copy_str(struct qp_arena *a, const char *s, bool *oom)
{
	const char *p;

	if (!s)
		return NULL;
	p = qp_arena_strdup(a, s);
	if (!p)
		*oom = true;
	return p;
}

int qp_value_model_make(const struct qp_value_row *rows, size_t n, const struct qp_namer *nm,
			struct qp_value_model *out)
{
	bool oom = false;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->arena = qp_arena_new();
	out->items = out->arena ? qp_arena_alloc(out->arena, (n ? n : 1) * sizeof(*out->items)) : NULL;
	if (!out->items) {
		qp_value_model_free(out);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct qp_value_row *r = &rows[i];
		struct qp_value_item *it = &out->items[out->n];
		const struct qp_site_info *site;
		struct qp_value_bucket *bk;
		struct qp_target_times tt;
		char buf[32];

		if (!nm->target(nm->arg, r->key.tgid, &tt))
			continue;
		site = nm->site(nm->arg, r->key.tgid, r->key.site);
		it->pid = (int32_t)r->key.tgid;
		it->exe = copy_str(out->arena, qp_exe_basename(tt.exe), &oom);
		if (site) {
			it->name = copy_str(out->arena, site->name, &oom);
			it->located = true;
			it->file = copy_str(out->arena, site->file, &oom);
			it->line = site->line;
		} else {
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)r->key.site);
			it->name = copy_str(out->arena, buf, &oom);
		}
		it->count = r->st.count;
		if (r->st.count) {
			it->min = qp_value_from_key(r->st.min_key);
			it->max = qp_value_from_key(r->st.max_key);
			it->mean = qp_value_mean(r);
			it->p50 = qp_value_quantile(r, 0.50);
			it->p99 = qp_value_quantile(r, 0.99);
		}
		memcpy(&it->last, &r->st.last_bits, sizeof(it->last));
		it->last_ns = r->st.last_ns;
		bk = qp_arena_alloc(out->arena, (r->nbuckets ? r->nbuckets : 1) * sizeof(*bk));
		if (bk && r->nbuckets)
			memcpy(bk, r->buckets, r->nbuckets * sizeof(*bk));
		oom |= !bk;
		it->buckets = bk;
		it->nbuckets = bk ? r->nbuckets : 0;
		it->nan = r->st.nan;
		it->pos_inf = r->st.pos_inf;
		it->neg_inf = r->st.neg_inf;
		out->n++;
	}
	if (oom) {
		qp_value_model_free(out);
		return -ENOMEM;
	}
	return 0;
}

void qp_value_model_free(struct qp_value_model *m)
{
	if (!m)
		return;
	qp_arena_free(m->arena);
	memset(m, 0, sizeof(*m));
}

/* model_scopes.c - see model_scopes.h: the scope model from collector
 * snapshots; its arithmetic is scope_window.c, its names the namer's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qprof/qprof.h"
#include "common/arena.h"
#include "model_scopes.h"
#include "percentile.h"
#include "scope_window.h"
#include "targets/targets.h"

struct maker {
	struct qp_arena *arena;
	const struct qp_namer *nm;
	bool oom;
};

static const char *copy_str(struct maker *mk, const char *s)
{
	const char *p;

	if (!s)
		return NULL;
	p = qp_arena_strdup(mk->arena, s);
	if (!p)
		mk->oom = true;
	return p;
}

const char *qp_exe_basename(const char *path)
{
	const char *slash;

	if (!path || !strcmp(path, "?"))
		return "";
	slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static const char *hex_name(struct maker *mk, uint64_t addr)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
	return copy_str(mk, buf);
}

/* A site of the scope maps: a qprof descriptor, or a span's pseudo site. */
static const struct qp_site_info *site_of(struct maker *mk, uint32_t pid, uint64_t addr,
					  const struct qp_usdt_def **span)
{
	*span = NULL;
	if (QPROF_IS_SPAN_SITE(addr)) {
		*span = mk->nm->def(mk->nm->arg, (uint32_t)(addr & 0xffffffffu));
		return NULL;
	}
	return mk->nm->site(mk->nm->arg, pid, addr);
}

static const char *name_of(struct maker *mk, const struct qp_site_info *s, uint64_t addr,
			   const struct qp_usdt_def *span)
{
	if (span)
		return copy_str(mk, span->name);
	if (s)
		return copy_str(mk, s->name);
	return hex_name(mk, addr);
}

static void locate(struct maker *mk, struct qp_scope_item *it, const struct qp_site_info *s)
{
	if (!s)
		return;
	it->located = true;
	it->file = copy_str(mk, s->file);
	it->line = s->line;
	it->function = copy_str(mk, s->function);
}

static void timed_item(struct maker *mk, const struct qp_wrow *w, const struct qp_target_times *tt,
		       struct qp_scope_item *it)
{
	const struct qp_usdt_def *span, *pspan = NULL;
	const struct qp_site_info *site = site_of(mk, w->key.tgid, w->key.site, &span);
	const struct qp_site_info *parent = w->key.parent ? site_of(mk, w->key.tgid, w->key.parent, &pspan)
							  : NULL;
	const uint64_t *h = (const uint64_t *)w->st.hist; /* same width, read only */
	uint64_t n = w->st.count, min = w->st.min_ns, max = w->st.max_ns;
	struct qp_hist_count *hist;

	it->shape = QP_ITEM_TIMED;
	it->pid = (int32_t)w->key.tgid;
	it->exe = copy_str(mk, qp_exe_basename(tt->exe));
	it->kind = span ? "span" :
		   !site ? "scope" :
		   site->kind == QPROF_KIND_MARK ? "mark" :
		   site->kind == QPROF_KIND_ASYNC_BEGIN || site->kind == QPROF_KIND_ASYNC_STEP ? "async_span" :
		   "scope";
	it->name = name_of(mk, site, w->key.site, span);
	it->site_kind = span ? "span" : site ? qp_site_kind_name(site->kind) : "unknown";
	if (span) {
		it->begin = copy_str(mk, span->begin);
		it->end = copy_str(mk, span->end);
	}
	locate(mk, it, site);
	it->count = n;
	it->total_ns = w->st.sum_ns;
	it->mean_ns = n ? (double)w->st.sum_ns / (double)n : 0;
	it->min_ns = min;
	it->max_ns = max;
	it->p50_ns = qp_hist_quantile(h, n, 0.50, min, max);
	it->p90_ns = qp_hist_quantile(h, n, 0.90, min, max);
	it->p99_ns = qp_hist_quantile(h, n, 0.99, min, max);
	it->p999_ns = qp_hist_quantile(h, n, 0.999, min, max);
	it->nhist = qp_hist_sparse(h, NULL);
	hist = qp_arena_alloc(mk->arena, (it->nhist ? it->nhist : 1) * sizeof(*hist));
	if (hist)
		qp_hist_sparse(h, hist);
	else
		mk->oom = true;
	it->hist = hist;
	it->parent = w->key.parent ? name_of(mk, parent, w->key.parent, pspan) : NULL;
}

static int cmp_kkey(const void *key, const void *row)
{
	return memcmp(key, &((const struct qp_kstats_row *)row)->key, sizeof(struct scope_key));
}

static const struct scope_kstats *kfind(const struct qp_kstats_row *v, size_t n, const struct scope_key *k)
{
	struct scope_key key = { .tgid = k->tgid, .site = k->site, .parent = k->parent };
	const struct qp_kstats_row *r = n ? bsearch(&key, v, n, sizeof(*v), cmp_kkey) : NULL;

	return r ? &r->v : NULL;
}

/* A figure of the window: now less base (a base above now was re-created: whole). */
static uint64_t kdiff(uint64_t now, uint64_t base)
{
	return base <= now ? now - base : now;
}

/* The kernel figures of row W: BPF counts them under the same key for
 * either collector (a ring thread's open scopes come from its ring header). */
static void kernel_item(const struct qp_scope_input *in, const struct qp_wrow *w, struct qp_scope_item *it)
{
	const struct scope_kstats *now, *base;
	static const struct scope_kstats zero;

	if (!in->kernel)
		return;
	it->has_kernel = true;
	now = kfind(in->kst, in->nkst, &w->key);
	if (!now)
		return;
	base = in->base ? kfind(in->kbase, in->nkbase, &w->key) : NULL;
	if (!base)
		base = &zero;
	it->kernel.off_cpu_ns = kdiff(now->off_cpu_ns, base->off_cpu_ns);
	it->kernel.voluntary = kdiff(now->voluntary, base->voluntary);
	it->kernel.involuntary = kdiff(now->involuntary, base->involuntary);
	it->kernel.migrations = kdiff(now->migrations, base->migrations);
	it->kernel.page_faults = kdiff(now->page_faults, base->page_faults);
	it->kernel.irq_ns = kdiff(now->irq_ns, base->irq_ns);
}

/* Seconds a rate is over: the window, or the target's attached life. */
static double rate_secs(const struct qp_scope_input *in, const struct qp_target_times *tt)
{
	if (in->base)
		return in->window_s;
	return (double)((tt->exited ? tt->exited_ms : in->now_ms) - tt->attached_ms) / 1e3;
}

static size_t mark_items(struct maker *mk, const struct qp_scope_input *in, struct qp_scope_item *out)
{
	size_t i, k = 0;

	for (i = 0; i < in->nmarks; i++) {
		const struct qp_mark_row *cur = &in->marks[i];
		struct qp_scope_item *it = &out[k];
		const struct qp_site_info *site;
		struct qp_target_times tt;
		uint64_t count;
		double secs;

		if (in->pid > 0 && cur->key.tgid != (uint32_t)in->pid)
			continue;
		count = qp_mark_window_count(cur, in->base ? in->mbase : NULL, in->nmbase);
		if (!count || !mk->nm->target(mk->nm->arg, cur->key.tgid, &tt))
			continue;
		site = mk->nm->site(mk->nm->arg, cur->key.tgid, cur->key.site);
		secs = rate_secs(in, &tt);
		it->shape = QP_ITEM_MARK;
		it->pid = (int32_t)cur->key.tgid;
		it->exe = copy_str(mk, qp_exe_basename(tt.exe));
		it->kind = "mark";
		it->name = site ? copy_str(mk, site->name) : hex_name(mk, cur->key.site);
		it->site_kind = site ? qp_site_kind_name(site->kind) : "unknown";
		locate(mk, it, site);
		it->count = count;
		it->rate_per_s = secs > 0 ? (double)count / secs : 0;
		k++;
	}
	return k;
}

static size_t probe_items(struct maker *mk, const struct qp_scope_input *in, struct qp_scope_item *out)
{
	size_t i, k = 0;

	for (i = 0; i < in->nprobes; i++) {
		const struct qp_probe_row *cur = &in->probes[i];
		const struct qp_usdt_def *def = mk->nm->def(mk->nm->arg, cur->id);
		struct qp_scope_item *it = &out[k];
		struct qp_target_times tt;
		uint64_t count;
		double secs;

		if ((in->pid > 0 && cur->tgid != (uint32_t)in->pid) || !def ||
		    !mk->nm->target(mk->nm->arg, cur->tgid, &tt))
			continue;
		count = qp_probe_window_count(cur, in->base ? in->pbase : NULL, in->npbase);
		if (!count)
			continue;
		secs = rate_secs(in, &tt);
		it->shape = QP_ITEM_PROBE;
		it->pid = (int32_t)cur->tgid;
		it->exe = copy_str(mk, qp_exe_basename(tt.exe));
		it->kind = "probe";
		it->name = copy_str(mk, def->name);
		it->count = count;
		it->rate_per_s = secs > 0 ? (double)count / secs : 0;
		k++;
	}
	return k;
}

int qp_scope_model_make(const struct qp_scope_input *in, const struct qp_namer *nm,
			struct qp_scope_model *out)
{
	struct maker mk = { .nm = nm };
	struct qp_wrow *rows = NULL;
	size_t i, n = 0, cap;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = qp_scope_window(in->now, in->base, in->pid, &rows, &n);
	if (ret)
		return ret;
	mk.arena = qp_arena_new();
	cap = n + in->nmarks + in->nprobes;
	out->items = mk.arena ? qp_arena_alloc(mk.arena, (cap ? cap : 1) * sizeof(*out->items)) : NULL;
	if (!out->items) {
		free(rows);
		qp_arena_free(mk.arena);
		return -ENOMEM;
	}
	out->arena = mk.arena;
	for (i = 0; i < n; i++) {
		struct qp_target_times tt;

		/* only targets: a process not adopted yet (by the poll loop) is not there yet */
		if (nm->target(nm->arg, rows[i].key.tgid, &tt)) {
			kernel_item(in, &rows[i], &out->items[out->n]);
			timed_item(&mk, &rows[i], &tt, &out->items[out->n++]);
		}
	}
	free(rows);
	out->n += mark_items(&mk, in, out->items + out->n);
	out->n += probe_items(&mk, in, out->items + out->n);
	if (mk.oom) {
		qp_scope_model_free(out);
		return -ENOMEM;
	}
	return 0;
}

void qp_scope_model_free(struct qp_scope_model *m)
{
	if (!m)
		return;
	qp_arena_free(m->arena);
	memset(m, 0, sizeof(*m));
}

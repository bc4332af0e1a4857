/* model_slow.c - see model_slow.h. The reservoirs are copied under the CPU
 * collector's lock only; names come after, under the registry lock (never
 * both at once); frames through the symbolizer, which locks itself. A
 * window (seconds=) is opened on the sites named so, waited out holding no
 * lock, and closed whatever the wait gave. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qprof/qprof.h"
#include "common/arena.h"
#include "common/procfs.h"
#include "collect/collect_cpu.h"
#include "collect/collect_scopes.h"
#include "model_slow.h"
#include "bpf/offcpu.h"
#include "symbolize/symbolize.h"
#include "targets/target_names.h"
#include "targets/targets.h"
#include "common/util.h"

static bool keep_all(void *arg, uint64_t site)
{
	(void)arg;
	(void)site;
	return true;
}

static int cmp_slowest(const void *a, const void *b)
{
	const struct qp_slow_inst *x = a, *y = b;

	if (x->r.dur_ns != y->r.dur_ns)
		return x->r.dur_ns < y->r.dur_ns ? 1 : -1;
	return x->r.begin_ns < y->r.begin_ns ? -1 : x->r.begin_ns > y->r.begin_ns;
}

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct qp_slow_folded *)a)->stack, ((const struct qp_slow_folded *)b)->stack);
}

struct maker {
	struct qp_arena *a;
	struct qp_symbolizer *sym;
	struct qp_ring *ring;	/* NULL: no ring collector */
	int pid;
	bool oom;
};

/* Name of frame I of ST (kernel frames first, each part leaf first), with
 * "_[k]" on kernel ones and ';' made ':' (the folded separator). */
static const char *frame(struct maker *mk, const struct qp_slow_stack *st, size_t i)
{
	bool kernel = i < st->nk;
	size_t part = kernel ? i : i - st->nk;
	uint64_t addr = st->ips[i];
	struct qp_sym y = { 0 };
	char buf[512], *p;

	/* return addresses above the leaf: look inside the call */
	if (part)
		addr--;
	if (!mk->sym || (kernel ? qp_sym_kernel(mk->sym, addr, &y) : qp_sym_user(mk->sym, mk->pid, addr, &y)) ||
	    !y.name)
		snprintf(buf, sizeof(buf), "[unknown]%s", kernel ? "_[k]" : "");
	else
		snprintf(buf, sizeof(buf), "%s%s", y.name, kernel ? "_[k]" : "");
	for (p = buf; *p; p++)
		if (*p == ';' || *p == '\n' || *p == '\r')
			*p = *p == ';' ? ':' : ' ';
	{
		const char *name = qp_arena_strdup(mk->a, buf);

		if (!name)
			mk->oom = true;
		return name;
	}
}

static void make_wait(struct maker *mk, const struct qp_slow_iv *iv, struct qp_slow_wait *w)
{
	size_t i, n = (size_t)iv->st.nk + iv->st.nu;

	w->at_ns = iv->ts_out;
	w->ns = iv->ts_in - iv->ts_out;
	w->reason = iv->reason == QPROF_OFF_BLOCKED ? "blocked" : "preempted";
	w->runq_ns = iv->reason != QPROF_OFF_BLOCKED ? w->ns
		     : iv->ts_wake >= iv->ts_out && iv->ts_wake <= iv->ts_in ? iv->ts_in - iv->ts_wake : 0;
	w->frames = qp_arena_alloc(mk->a, (n ? n : 1) * sizeof(*w->frames));
	if (!w->frames) {
		mk->oom = true;
		return;
	}
	/* leave out the leaf frames of qprofd's own program that took the stack */
	for (i = mk->sym ? qp_sym_kernel_tracing_depth(mk->sym, iv->st.ips, iv->st.nk) : 0; i < n; i++)
		w->frames[w->nframes++] = frame(mk, &iv->st, i);
}

/* "root;...;leaf": user frames from the outermost, then kernel ones */
static const char *folded(struct maker *mk, const struct qp_slow_stack *st)
{
	size_t n = (size_t)st->nk + st->nu, i, len = 0, cap = 256;
	char *s = malloc(cap);
	const char *out;

	if (!s) {
		mk->oom = true;
		return NULL;
	}
	s[0] = '\0';
	/* ips hold kernel then user frames, each leaf first: backwards is the
	 * user stack from its outermost frame, then the kernel's */
	for (i = n; i-- > 0;) {
		const char *f;
		size_t fl;

		f = frame(mk, st, i);
		fl = f ? strlen(f) : 0;
		if (len + fl + 2 > cap) {
			char *t;

			cap = (len + fl + 2) * 2;
			t = realloc(s, cap);
			if (!t) {
				free(s);
				mk->oom = true;
				return NULL;
			}
			s = t;
		}
		if (len)
			s[len++] = ';';
		memcpy(s + len, f ? f : "", fl);
		len += fl;
		s[len] = '\0';
	}
	out = qp_arena_strdup(mk->a, n ? s : "[unknown]");
	free(s);
	if (!out)
		mk->oom = true;
	return out;
}

static void make_item(struct maker *mk, const struct qp_slow_inst *in, struct qp_slow_item *it)
{
	char comm[17];
	uint32_t i;
	size_t k;

	it->tid = in->r.tid;
	memcpy(comm, in->r.comm, 16);
	comm[16] = '\0';
	if (!comm[0] && !qp_ring_thread_name(mk->ring, mk->pid, in->r.tid, in->r.begin_ns, comm, sizeof(comm))) {
		/* the ring collector's records carry no name: the name it read
		 * when it first met the thread that had the tid then (kept after
		 * the thread exits), else the thread's name now if that thread
		 * was the one running the instance */
		if (qp_proc_thread_name_at(mk->pid, in->r.tid, in->r.begin_ns, comm, sizeof(comm)) || !comm[0])
			snprintf(comm, sizeof(comm), "?");
	}
	it->kernel_known = !(in->r.flags & QPROF_SLOW_NO_KERNEL);
	it->thread = qp_arena_strdup(mk->a, comm);
	it->start_ns = in->r.begin_ns;
	it->dur_ns = in->r.dur_ns;
	it->off_cpu_ns = in->off_ns;
	it->runq_ns = in->runq_ns;
	it->blocked_ns = in->blocked_ns;
	it->irq_ns = in->r.irq_ns;
	/* the instance's length as timed (calibrated) less its time off */
	it->on_cpu_ns = in->r.dur_ns > in->off_ns ? in->r.dur_ns - in->off_ns : 0;
	it->migrations = in->r.migrations;
	it->page_faults = in->r.page_faults;
	it->partial = in->partial;
	it->waits_more = in->ivs_more;
	it->samples = in->nsamples + in->samples_more;
	if (in->nivs) {
		it->waits = qp_arena_alloc(mk->a, in->nivs * sizeof(*it->waits));
		if (!it->waits) {
			mk->oom = true;
			return;
		}
		for (i = 0; i < in->nivs; i++)
			make_wait(mk, &in->ivs[i], &it->waits[it->nwaits++]);
	}
	if (in->nsamples) {
		struct qp_slow_folded *f = qp_arena_alloc(mk->a, in->nsamples * sizeof(*f));

		if (!f) {
			mk->oom = true;
			return;
		}
		for (i = 0; i < in->nsamples; i++) {
			f[i].stack = folded(mk, &in->samples[i].st);
			f[i].count = 1;
			if (!f[i].stack)
				return;
		}
		qsort(f, in->nsamples, sizeof(*f), cmp_folded);
		for (i = 0, k = 0; i < in->nsamples; i++) {
			if (k && !strcmp(f[k - 1].stack, f[i].stack))
				f[k - 1].count++;
			else
				f[k++] = f[i];
		}
		it->folded = f;
		it->nfolded = k;
	}
	if (in->samples_more) {
		/* samples past QP_SLOW_SAMPLES: counted, stack not kept */
		struct qp_slow_folded *f = qp_arena_alloc(mk->a, (it->nfolded + 1) * sizeof(*f));

		if (!f) {
			mk->oom = true;
			return;
		}
		memcpy(f, it->folded, it->nfolded * sizeof(*f));
		f[it->nfolded].stack = "[samples not kept]";
		f[it->nfolded++].count = in->samples_more;
		it->folded = f;
	}
}

static const char *site_name(const struct qp_namer *nm, uint32_t pid, uint64_t site)
{
	if (QPROF_IS_SPAN_SITE(site)) {
		const struct qp_usdt_def *def = nm->def(nm->arg, (uint32_t)(site & 0xffffffffu));

		return def ? def->name : NULL;
	}
	{
		const struct qp_site_info *s = nm->site(nm->arg, pid, site);

		return s ? s->name : NULL;
	}
}

/* The window of Q: the N slowest instances of each site of Q->name (and of
 * sites unknown at its open) ending in the next Q->seconds. */
static int window_collect(const struct qp_model_src *src, const struct qp_slow_query *q, struct qp_slow_inst **v,
			  size_t *n, bool *complete)
{
	uint64_t *sites = NULL, *named, id, lost0 = 0;
	size_t ns = 0, nn = 0, no = 0, i;
	struct qp_names *names;
	struct qp_namer nm;
	bool waited, gone = false;
	unsigned int left;
	int ret;

	ret = qp_cpu_slow_sites(src->cpu, (uint32_t)q->pid, &sites, &ns);
	if (ret)
		return ret;
	named = malloc((ns ? ns : 1) * sizeof(*named));
	if (!named) {
		free(sites);
		return -ENOMEM;
	}
	names = qp_names_new();
	for (i = 0; names && i < ns; i++)
		qp_names_want_site(names, (uint32_t)q->pid, sites[i]);
	if (!names || qp_names_fill(names, src->reg)) {
		qp_names_free(names);
		free(named);
		free(sites);
		return -ENOMEM;
	}
	qp_names_namer(names, &nm);
	for (i = 0; i < ns; i++) {
		const char *name = site_name(&nm, (uint32_t)q->pid, sites[i]);

		if (name && !strcmp(name, q->name))
			named[nn++] = sites[i];
		else
			sites[no++] = sites[i];
	}
	qp_names_free(names);
	if (src->scopes)
		lost0 = qp_scopes_counter(src->scopes, QPROF_CNT_SLOW_LOST);
	ret = qp_cpu_slow_window_open(src->cpu, (uint32_t)q->pid, named, nn, sites, no, q->n, &id);
	free(named);
	free(sites);
	if (ret)
		return ret;
	/* by the second, so that a client gone away ends its window */
	for (left = q->seconds, waited = true; left && waited && !gone; left--) {
		waited = qp_model_wait(src, 1);
		gone = q->gone && q->gone(q->gone_arg);
	}
	/* closed even when qprofd stops: its thresholds go back first */
	ret = qp_cpu_slow_window_close(src->cpu, id, v, n, complete);
	if (!ret && (!waited || gone)) {
		qp_slow_insts_free(*v, *n);
		*v = NULL;
		*n = 0;
		ret = !waited ? -ECANCELED : -ECONNRESET;
	}
	if (src->scopes && qp_scopes_counter(src->scopes, QPROF_CNT_SLOW_LOST) != lost0)
		*complete = false;	/* slow_rb was full: a record may be one of its */
	return ret;
}

int qp_slow_model_build(const struct qp_model_src *src, const struct qp_slow_query *q,
			struct qp_slow_model *out)
{
	struct qp_slow_inst *v = NULL;
	struct maker mk = { .pid = q->pid };
	uint64_t since = 0;
	bool complete = false;
	const char **parents = NULL;
	size_t n = 0, i, k = 0;
	struct qp_names *names = NULL;
	struct qp_namer nm;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!qp_cpu_slow_on(src->cpu))
		return -ENODEV;

	if (q->seconds) {
		ret = window_collect(src, q, &v, &n, &complete);
	} else {
		ret = qp_cpu_slow_copy(src->cpu, (uint32_t)q->pid, keep_all, NULL, &v, &n, &since);
		complete = !since;
	}
	if (ret)
		return ret;
	mk.a = out->arena = qp_arena_new();
	parents = calloc(n ? n : 1, sizeof(*parents));
	if (!mk.a || !parents) {
		ret = -ENOMEM;
		goto out;
	}
	/* names copied under the registry lock; the kept instances move to the front */
	names = qp_names_new();
	for (i = 0; names && i < n; i++) {
		qp_names_want_site(names, (uint32_t)q->pid, v[i].r.site);
		if (v[i].r.parent)
			qp_names_want_site(names, (uint32_t)q->pid, v[i].r.parent);
	}
	if (!names || qp_names_fill(names, src->reg)) {
		ret = -ENOMEM;
		goto out;
	}
	qp_names_namer(names, &nm);
	for (i = 0; i < n; i++) {
		const char *name = site_name(&nm, (uint32_t)q->pid, v[i].r.site);
		struct qp_slow_inst t;

		if (!name || strcmp(name, q->name))
			continue;
		if (v[i].r.parent) {
			const char *p = site_name(&nm, (uint32_t)q->pid, v[i].r.parent);

			parents[i] = p ? qp_arena_strdup(mk.a, p) : NULL;
		}
		t = v[k];
		v[k] = v[i];
		v[i] = t;
		{
			const char *p = parents[k];

			parents[k] = parents[i];
			parents[i] = p;
		}
		k++;
	}
	if (!k) {
		ret = -ENOENT;
		goto out;
	}
	out->pid = q->pid;
	out->name = qp_arena_strdup(mk.a, q->name);
	out->kept = k;
	out->threshold_since_ns = since;
	out->window_complete = complete;
	/* slowest first: parents follow their instances through an index sort */
	{
		struct qp_slow_inst *sorted = malloc(k * sizeof(*sorted));
		const char **sp = malloc(k * sizeof(*sp));
		size_t *idx = malloc(k * sizeof(*idx)), a, b;

		if (!sorted || !sp || !idx) {
			free(sorted);
			free(sp);
			free(idx);
			ret = -ENOMEM;
			goto out;
		}
		for (a = 0; a < k; a++)
			idx[a] = a;
		/* insertion sort of indexes: k is at most a few reservoirs */
		for (a = 1; a < k; a++)
			for (b = a; b > 0 && cmp_slowest(&v[idx[b - 1]], &v[idx[b]]) > 0; b--) {
				size_t t = idx[b];

				idx[b] = idx[b - 1];
				idx[b - 1] = t;
			}
		for (a = 0; a < k; a++) {
			sorted[a] = v[idx[a]];
			sp[a] = parents[idx[a]];
		}
		memcpy(v, sorted, k * sizeof(*v));
		memcpy(parents, sp, k * sizeof(*sp));
		free(sorted);
		free(sp);
		free(idx);
	}
	out->n = k < q->n ? k : q->n;
	out->items = qp_arena_alloc(mk.a, out->n * sizeof(*out->items));
	if (!out->items || !out->name) {
		ret = -ENOMEM;
		goto out;
	}
	mk.sym = src->reg->sym;
	mk.ring = src->reg->ring;
	for (i = 0; i < out->n; i++) {
		make_item(&mk, &v[i], &out->items[i]);
		out->items[i].parent = parents[i];
	}
	ret = mk.oom ? -ENOMEM : 0;
out:
	qp_names_free(names);
	free(parents);
	qp_slow_insts_free(v, n);
	if (ret)
		qp_slow_model_free(out);
	return ret;
}

void qp_slow_model_free(struct qp_slow_model *m)
{
	if (!m)
		return;
	qp_arena_free(m->arena);
	memset(m, 0, sizeof(*m));
}

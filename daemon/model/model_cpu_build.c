/* model_cpu_build.c - see model_cpu_build.h. A raw sample holds two stack
 * ids (user, kernel); its frames are the user stack from the outermost
 * caller down, then the kernel stack, so the root is first and the leaf last.
 * Return addresses are looked up one byte back (inside the call). A user
 * address where DWARF says functions were inlined gives a frame for the
 * function that holds the code, then one per inlined function, innermost
 * last. The main executable's mapping goes first (pprof's convention). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qprof/qprof.h"
#include "model_cpu_build.h"
#include "symbolize/symbolize.h"
#include "targets/targets.h"

static uint32_t mapping_index(struct qp_cpu_builder *b, const struct qp_sym *s)
{
	struct qp_cpu_profile *p = b->p;
	size_t i;

	if (!s->path)
		return 0;
	for (i = 0; i < p->nmappings; i++)
		if (p->mappings[i].start == s->map_start && !strcmp(p->mappings[i].file, s->path))
			return (uint32_t)(i + 1);
	if (p->nmappings == b->cap_maps) {
		size_t cap = b->cap_maps ? b->cap_maps * 2 : 16;
		struct qp_cpu_mapping *v = qp_arena_alloc(b->a, cap * sizeof(*v));

		if (!v)
			return 0;
		if (p->nmappings)
			memcpy(v, p->mappings, p->nmappings * sizeof(*v));
		p->mappings = v;
		b->cap_maps = cap;
	}
	p->mappings[p->nmappings] = (struct qp_cpu_mapping){
		.start = s->map_start, .limit = s->map_limit, .offset = s->map_offset,
		.file = qp_arena_strdup(b->a, s->path),
		.build_id = qp_arena_strdup(b->a, s->build_id ? s->build_id : ""),
	};
	return (uint32_t)++p->nmappings;
}

struct qp_cpu_sample *qp_cpu_builder_add(struct qp_cpu_builder *b, struct qp_symbolizer *sym, uint32_t pid,
					 const char *comm, const uint64_t *uips, size_t nu,
					 const uint64_t *kips, size_t nk, uint64_t count)
{
	struct qp_cpu_profile *p = b->p;
	struct qp_cpu_sample *s;
	size_t i, f = 0, nf;
	int64_t pi;

	nu = nu > QPROF_STACK_DEPTH ? QPROF_STACK_DEPTH : nu;
	if (!b->ys && !(b->ys = malloc(QPROF_STACK_DEPTH * sizeof(*b->ys))))
		return NULL;
	b->sym = sym;
	nf = nu + nk + 1;
	/* frames above the leaf are return addresses: look inside the call */
	for (i = 0; i < nu; i++) {
		qp_sym_user(sym, (int)pid, i ? uips[i] - 1 : uips[i], &b->ys[i]);
		nf += b->ys[i].ninl;
	}
	pi = qp_htab_add_u64(&b->pids, pid, NULL);
	if (pi < 0)
		return NULL;
	*(uint64_t *)qp_htab_value(&b->pids, (size_t)pi) += count;
	if (p->nsamples == b->cap_samples) {
		size_t cap = b->cap_samples ? b->cap_samples * 2 : 256;
		struct qp_cpu_sample *v = realloc(p->samples, cap * sizeof(*v));

		if (!v)
			return NULL;
		p->samples = v;
		b->cap_samples = cap;
	}
	s = &p->samples[p->nsamples];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->comm = qp_arena_strdup(b->a, comm && comm[0] ? comm : "?");
	s->count = count;
	s->frames = qp_arena_alloc(b->a, nf * sizeof(*s->frames));
	if (!s->comm || !s->frames)
		return NULL;
	for (i = nu; i-- > 0;) {
		const struct qp_sym *y = &b->ys[i];
		uint32_t map = mapping_index(b, y);
		const char *module = qp_arena_strdup(b->a, y->module);
		size_t k;

		s->frames[f++] = (struct qp_cpu_frame){
			.name = qp_arena_strdup(b->a, y->name), .module = module,
			.file = y->src_file ? qp_arena_strdup(b->a, y->src_file) : NULL,
			.line = y->src_line, .addr = uips[i], .mapping = map,
		};
		if (y->src_file && !s->frames[f - 1].file)
			return NULL;
		for (k = y->ninl; k-- > 0;) {
			const struct qp_sym_inline *in = &y->inl[k];

			s->frames[f++] = (struct qp_cpu_frame){
				.name = qp_arena_strdup(b->a, in->name ? in->name : "[inlined]"),
				.module = module, .file = in->file ? qp_arena_strdup(b->a, in->file) : NULL,
				.line = in->line, .addr = uips[i], .mapping = map, .inlined = true,
			};
			if (in->file && !s->frames[f - 1].file)
				return NULL;
		}
	}
	for (i = nk; i-- > 0;) {
		struct qp_sym y;

		qp_sym_kernel(sym, i ? kips[i] - 1 : kips[i], &y);
		s->frames[f++] = (struct qp_cpu_frame){
			.name = qp_arena_strdup(b->a, y.name), .module = "[kernel]",
			.addr = kips[i], .kernel = true,
		};
	}
	if (!f) /* neither stack could be read: still one sample, never dropped */
		s->frames[f++] = (struct qp_cpu_frame){ .name = "[unknown]", .module = "[unknown]" };
	for (i = 0; i < f; i++)
		if (!s->frames[i].name || !s->frames[i].module)
			return NULL;
	s->nframes = f;
	p->nsamples++;
	return s;
}

/* OFF: R is of the off-CPU table (its stacks are in that table's map) */
static int add_sample(struct qp_cpu_builder *b, struct qp_cpu *cpu, struct qp_symbolizer *sym,
		      bool off, const struct qp_cpu_raw *r, uint64_t count)
{
	uint64_t uips[QPROF_STACK_DEPTH], kips[QPROF_STACK_DEPTH];
	size_t nu = 0, nk = 0;

	qp_cpu_stack(cpu, off, r->key.user_stack, uips, &nu);
	qp_cpu_stack(cpu, off, r->key.kern_stack, kips, &nk);
	if (off && sym) { /* the switch-out was seen from inside qprofd's program */
		size_t skip = qp_sym_kernel_tracing_depth(sym, kips, nk);

		return qp_cpu_builder_add(b, sym, r->key.tgid, r->comm, uips, nu, kips + skip, nk - skip,
					  count) ? 0 : -ENOMEM;
	}
	return qp_cpu_builder_add(b, sym, r->key.tgid, r->comm, uips, nu, kips, nk, count) ? 0 : -ENOMEM;
}

int qp_cpu_builder_begin(struct qp_cpu_builder *b, struct qp_cpu_profile *out)
{
	memset(b, 0, sizeof(*b));
	memset(out, 0, sizeof(*out));
	qp_htab_init(&b->pids, sizeof(uint64_t));
	b->p = out;
	b->a = out->arena = qp_arena_new();
	return b->a ? 0 : -ENOMEM;
}

int qp_cpu_builder_finish(struct qp_cpu_builder *b, int ret)
{
	struct qp_cpu_profile *out = b->p;
	uint64_t best = 0;
	int pid = 0;
	size_t i;

	free(b->ys);
	b->ys = NULL;
	for (i = 0; !ret && b->sym && i < b->pids.n; i++) {
		uint64_t c = *(uint64_t *)qp_htab_value(&b->pids, i);

		if (c > best) {
			best = c;
			pid = (int)qp_htab_key_u64(&b->pids, i);
		}
	}
	qp_htab_free(&b->pids);
	if (pid > 0)	/* the main executable: of the process with the most samples */
		qp_cpu_profile_main_first(out, qp_sym_process_exe(b->sym, pid));
	if (ret) {
		free(out->samples);
		out->samples = NULL;
		qp_cpu_profile_free(out);
		return ret;
	}
	/* the samples array lives outside the arena while it grows: move it in */
	if (out->nsamples) {
		struct qp_cpu_sample *v = qp_arena_alloc(b->a, out->nsamples * sizeof(*v));

		if (!v) {
			free(out->samples);
			out->samples = NULL;
			qp_cpu_profile_free(out);
			return -ENOMEM;
		}
		memcpy(v, out->samples, out->nsamples * sizeof(*v));
		free(out->samples);
		out->samples = v;
	} else {
		free(out->samples);
		out->samples = NULL;
	}
	return 0;
}

/* Was sample R taken inside a scope named NAME: one of the innermost
 * scopes of the BPF collector's stack, or any of a ring thread's open ones. */
static bool in_scope(struct qp_cpu *cpu, bool off, struct qp_registry *reg, const struct qp_cpu_raw *r,
		     const char *name)
{
	uint64_t open[QPROF_STACK_DEPTH];
	size_t n = 0;

	if (qp_registry_site_named(reg, (int)r->key.tgid, (const uint64_t *)r->key.scopes, QPROF_SAMPLE_SCOPES,
				   name))
		return true;
	return r->key.open_stack >= 0 && !qp_cpu_stack(cpu, off, r->key.open_stack, open, &n) && n &&
	       qp_registry_site_named(reg, (int)r->key.tgid, open, n, name);
}

struct scope_names {
	struct qp_arena *a;
	const char **v;
	size_t n;
	bool failed;
};

static void scope_name(void *arg, const char *name)
{
	struct scope_names *sn = arg;

	if (!(sn->v[sn->n++] = qp_arena_strdup(sn->a, name)))
		sn->failed = true;
}

int qp_cpu_sample_scopes(struct qp_cpu_builder *b, struct qp_registry *reg, int pid, const uint64_t *inner,
			 size_t n, struct qp_cpu_sample *s)
{
	struct scope_names sn = { .a = b->a };

	if (!n || !reg)
		return 0;
	if (!(sn.v = qp_arena_alloc(b->a, n * sizeof(*sn.v))))
		return -ENOMEM;
	qp_registry_site_names(reg, pid, inner, n, scope_name, &sn);
	if (sn.failed)
		return -ENOMEM;
	s->scopes = sn.v;
	s->nscopes = sn.n;
	return 0;
}

/* S (just added for R) gets its thread and its open scopes' names,
 * innermost first: a ring thread's whole open list when it has one, else
 * the BPF collector's innermost scopes. */
int qp_cpu_sample_span(struct qp_cpu_builder *b, struct qp_registry *reg, int pid, uint64_t site,
		       struct qp_cpu_sample *s)
{
	struct scope_names sp = { .a = b->a, .v = &s->span };

	if (!site || !reg)
		return 0;
	qp_registry_site_names(reg, pid, &site, 1, scope_name, &sp);
	return sp.failed ? -ENOMEM : 0;
}

static int sample_scopes(struct qp_cpu_builder *b, struct qp_cpu *cpu, bool off, struct qp_registry *reg,
			 const struct qp_cpu_raw *r, struct qp_cpu_sample *s)
{
	uint64_t open[QPROF_STACK_DEPTH], inner[QPROF_STACK_DEPTH];
	size_t n = 0, i;

	s->tid = r->key.tid;
	if (r->key.open_stack >= 0 && !qp_cpu_stack(cpu, off, r->key.open_stack, open, &n) && n) {
		for (i = 0; i < n; i++)
			inner[i] = open[n - 1 - i];
	} else {
		for (n = 0; n < QPROF_SAMPLE_SCOPES && r->key.scopes[n]; n++)
			inner[n] = r->key.scopes[n];
	}
	if (qp_cpu_sample_span(b, reg, (int)r->key.tgid, r->key.span_site, s))
		return -ENOMEM;
	if (s->span)
		s->span_id = r->key.span_id;
	return qp_cpu_sample_scopes(b, reg, (int)r->key.tgid, inner, n, s);
}

int qp_cpu_build(struct qp_cpu *cpu, struct qp_symbolizer *sym, struct qp_registry *reg,
		 const struct qp_cpu_snapshot *now, const struct qp_cpu_snapshot *base,
		 const struct qp_cpu_query *q, struct qp_cpu_profile *out)
{
	struct qp_cpu_builder b;
	char title[512];
	size_t i;
	int ret = 0;

	if (qp_cpu_builder_begin(&b, out))
		return -ENOMEM;
	out->period_ns = q->period_ns;
	out->duration_ns = q->duration_ns;
	out->time_ns = q->time_ns;
	out->off_cpu = now->off;
	for (i = 0; i < now->n && !ret; i++) {
		const struct qp_cpu_raw *r = &now->v[i];
		const struct qp_cpu_raw *old = base ? qp_cpu_snapshot_find(base, &r->key) : NULL;
		uint64_t count = r->count - (old && old->count <= r->count ? old->count : 0);

		if (!count || (q->pid > 0 && r->key.tgid != (uint32_t)q->pid))
			continue;
		/* the registry is locked for the names only, sample by sample */
		if (q->scope && !in_scope(cpu, now->off, reg, r, q->scope))
			continue;
		ret = add_sample(&b, cpu, sym, now->off, r, count);
		if (!ret)
			ret = sample_scopes(&b, cpu, now->off, reg, r, &b.p->samples[b.p->nsamples - 1]);
	}
	ret = qp_cpu_builder_finish(&b, ret);
	if (ret)
		return ret;
	snprintf(title, sizeof(title), "qprof %s profile%s%.0d%s%s%s, %llu %s", now->off ? "off-CPU" : "CPU",
		 q->pid > 0 ? ": pid " : "", q->pid > 0 ? q->pid : 0, q->scope ? ", inside scope '" : "",
		 q->scope ? q->scope : "", q->scope ? "'" : "",
		 (unsigned long long)qp_cpu_profile_total(out), now->off ? "ns off the CPU" : "samples");
	out->title = qp_arena_strdup(b.a, title);
	return 0;
}

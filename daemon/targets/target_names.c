/* target_names.c - see target_names.h: the registry as the model's namer,
 * and the copies of its names a model is built from without the lock. */
#include <errno.h>
#include <linux/types.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "common/arena.h"
#include "common/hashtab.h"
#include "bpf/scopes.h"
#include "target_names.h"
#include "targets.h"
#include "common/util.h"

static bool reg_target(void *arg, uint32_t pid, struct qp_target_times *out)
{
	struct qp_registry *r = arg;
	const struct qp_target *t = qp_registry_find(r, (int)pid);

	if (!t)
		return false;
	out->exited = t->state == QP_TARGET_EXITED;
	out->attached_ms = t->attached_ms;
	out->exited_ms = t->exited_ms;
	out->exe = t->exe;
	out->ring = t->ring != NULL;
	return true;
}

static const struct qp_site_info *reg_site(void *arg, uint32_t pid, uint64_t addr)
{
	struct qp_registry *r = arg;
	struct qp_target *t = qp_registry_find(r, (int)pid);

	return t ? qp_target_site(r, t, addr) : NULL;
}

static const struct qp_usdt_def *reg_def(void *arg, uint32_t id)
{
	return qp_registry_def(arg, id);
}

void qp_registry_namer(struct qp_registry *r, struct qp_namer *out)
{
	out->target = reg_target;
	out->site = reg_site;
	out->def = reg_def;
	out->arg = r;
}

/* ---- the names of one build, copied (target_names.h) ------------------- */

struct names_target {
	bool known;
	struct qp_target_times tt;
};

struct names_site {
	bool known;
	struct qp_site_info si;
};

struct names_def {
	bool known;
	struct qp_usdt_def def;
};

struct qp_names {
	struct qp_htab targets;	/* pid -> names_target */
	struct qp_htab sites;	/* (pid, addr) -> names_site */
	struct qp_htab defs;	/* id -> names_def */
	struct qp_arena *strings;
	size_t ntargets;	/* the registry's, at the fill */
	bool oom;
};

struct qp_names *qp_names_new(void)
{
	struct qp_names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->strings = qp_arena_new();
	if (!n->strings) {
		free(n);
		return NULL;
	}
	qp_htab_init(&n->targets, sizeof(struct names_target));
	qp_htab_init(&n->sites, sizeof(struct names_site));
	qp_htab_init(&n->defs, sizeof(struct names_def));
	return n;
}

void qp_names_free(struct qp_names *n)
{
	if (!n)
		return;
	qp_htab_free(&n->targets);
	qp_htab_free(&n->sites);
	qp_htab_free(&n->defs);
	qp_arena_free(n->strings);
	free(n);
}

int qp_names_want_target(struct qp_names *n, uint32_t pid)
{
	if (qp_htab_add_u64(&n->targets, pid, NULL) < 0) {
		n->oom = true;
		return -ENOMEM;
	}
	return 0;
}

int qp_names_want_def(struct qp_names *n, uint32_t id)
{
	if (qp_htab_add_u64(&n->defs, id, NULL) < 0) {
		n->oom = true;
		return -ENOMEM;
	}
	return 0;
}

int qp_names_want_site(struct qp_names *n, uint32_t pid, uint64_t addr)
{
	uint64_t key[2] = { pid, addr };

	if (QPROF_IS_SPAN_SITE(addr))
		return qp_names_want_def(n, (uint32_t)(addr & 0xffffffffu));
	if (qp_htab_add(&n->sites, key, sizeof(key), NULL) < 0) {
		n->oom = true;
		return -ENOMEM;
	}
	return 0;
}

static char *names_str(struct qp_names *n, const char *s)
{
	char *c;

	if (!s)
		return NULL;
	c = qp_arena_strndup(n->strings, s, strlen(s));
	if (!c)
		n->oom = true;
	return c;
}

int qp_names_fill(struct qp_names *n, struct qp_registry *r)
{
	size_t i;

	qp_lock(&r->lock);
	for (i = 0; i < n->targets.n; i++) {
		struct names_target *v = qp_htab_value(&n->targets, i);

		v->known = reg_target(r, (uint32_t)qp_htab_key_u64(&n->targets, i), &v->tt);
		if (v->known && v->tt.exe)
			v->tt.exe = names_str(n, v->tt.exe);
	}
	for (i = 0; i < n->sites.n; i++) {
		struct names_site *v = qp_htab_value(&n->sites, i);
		uint64_t key[2];
		const struct qp_site_info *s;

		memcpy(key, qp_htab_key(&n->sites, i, NULL), sizeof(key));
		s = reg_site(r, (uint32_t)key[0], key[1]);
		if (!s)
			continue;
		v->known = true;
		v->si = *s;
		v->si.name = names_str(n, s->name);
		v->si.file = names_str(n, s->file);
		v->si.function = names_str(n, s->function);
		v->si.span = names_str(n, s->span);
	}
	for (i = 0; i < n->defs.n; i++) {
		struct names_def *v = qp_htab_value(&n->defs, i);
		const struct qp_usdt_def *d = qp_registry_def(r, (uint32_t)qp_htab_key_u64(&n->defs, i));

		if (d) {
			v->known = true;
			v->def = *d;
		}
	}
	n->ntargets = r->ntargets;
	pthread_mutex_unlock(&r->lock);
	return n->oom ? -ENOMEM : 0;
}

size_t qp_names_ntargets(const struct qp_names *n)
{
	return n->ntargets;
}

static bool names_target(void *arg, uint32_t pid, struct qp_target_times *out)
{
	struct qp_names *n = arg;
	int64_t i = qp_htab_find_u64(&n->targets, pid);
	const struct names_target *v;

	if (i < 0)
		return false;
	v = qp_htab_value(&n->targets, (size_t)i);
	if (v->known)
		*out = v->tt;
	return v->known;
}

static const struct qp_site_info *names_site(void *arg, uint32_t pid, uint64_t addr)
{
	struct qp_names *n = arg;
	uint64_t key[2] = { pid, addr };
	int64_t i = qp_htab_find(&n->sites, key, sizeof(key));
	const struct names_site *v;

	if (i < 0)
		return NULL;
	v = qp_htab_value(&n->sites, (size_t)i);
	return v->known ? &v->si : NULL;
}

static const struct qp_usdt_def *names_def(void *arg, uint32_t id)
{
	struct qp_names *n = arg;
	int64_t i = qp_htab_find_u64(&n->defs, id);
	const struct names_def *v;

	if (i < 0)
		return NULL;
	v = qp_htab_value(&n->defs, (size_t)i);
	return v->known ? &v->def : NULL;
}

void qp_names_namer(struct qp_names *n, struct qp_namer *out)
{
	out->target = names_target;
	out->site = names_site;
	out->def = names_def;
	out->arg = n;
}

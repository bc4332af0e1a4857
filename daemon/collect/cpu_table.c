/* cpu_table.c - see cpu_table.h. Two open-addressing hash indexes over
 * growing arrays: distinct stacks (id = index, never reused; a stack is freed
 * when no key uses it any more) and sample keys with their counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_table.h"

void qp_cpu_table_init(struct qp_cpu_table *c, size_t max_stacks, size_t max_keys)
{
	memset(c, 0, sizeof(*c));
	c->max_stacks = max_stacks;
	c->max_keys = max_keys;
}

void qp_cpu_table_free(struct qp_cpu_table *c)
{
	size_t id;

	for (id = 0; id < c->nstacks; id++)
		free(c->stacks[id].ips);
	free(c->stacks);
	free(c->sidx);
	free(c->aggs);
	free(c->aidx);
	memset(c, 0, sizeof(*c));
}

/* murmur3's finalizer on each word: every input bit reaches the low bits
 * that pick the slot */
static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

static uint64_t hash_ips(const uint64_t *ips, uint32_t n)
{
	uint64_t h = n;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = mix(h, ips[i]);
	return h;
}

static uint64_t hash_key(const struct sample_key *k)
{
	uint64_t h = mix(k->tgid, ((uint64_t)(uint32_t)k->user_stack << 32) | (uint32_t)k->kern_stack);
	int i;

	for (i = 0; i < QPROF_SAMPLE_SCOPES; i++)
		h = mix(h, k->scopes[i]);
	return h;
}

/* (Re)build an index of N slots over the live entries. */
static int stacks_reindex(struct qp_cpu_table *c, size_t nslots)
{
	uint32_t *idx = calloc(nslots, sizeof(*idx));
	size_t id;

	if (!idx)
		return -ENOMEM;
	for (id = 0; id < c->nstacks; id++) {
		size_t m = nslots - 1, i;

		if (!c->stacks[id].ips)
			continue;
		for (i = c->stacks[id].hash & m; idx[i]; i = (i + 1) & m)
			;
		idx[i] = (uint32_t)id + 1;
	}
	free(c->sidx);
	c->sidx = idx;
	c->nsidx = nslots;
	c->nindexed = c->nlive;
	return 0;
}

/* The id of the stack IPS[0..N), added when new; -1 when there is no room. */
static int32_t stack_intern(struct qp_cpu_table *c, const uint64_t *ips, uint32_t n)
{
	uint64_t h = hash_ips(ips, n);
	struct qp_cpu_stack_ent *e;
	size_t m, i;

	if (c->nsidx) {
		m = c->nsidx - 1;
		for (i = h & m; c->sidx[i]; i = (i + 1) & m) {
			e = &c->stacks[c->sidx[i] - 1];
			if (e->ips && e->hash == h && e->n == n && !memcmp(e->ips, ips, n * sizeof(*ips)))
				return (int32_t)(c->sidx[i] - 1);
		}
	}
	if (c->nlive >= c->max_stacks || c->nstacks >= INT32_MAX)
		return -1;
	/* at most half full, freed entries included; after a rebuild at most
	 * a quarter, so a rebuild purges and doubles only when needed */
	if ((c->nindexed + 1) * 2 > c->nsidx) {
		size_t ns = c->nsidx ? c->nsidx : 4096;

		while ((c->nlive + 1) * 4 > ns)
			ns *= 2;
		if (stacks_reindex(c, ns))
			return -1;
	}
	if (c->nstacks == c->capstacks) {
		size_t cap = c->capstacks ? c->capstacks * 2 : 1024;
		struct qp_cpu_stack_ent *v = realloc(c->stacks, cap * sizeof(*v));

		if (!v)
			return -1;
		c->stacks = v;
		c->capstacks = cap;
	}
	e = &c->stacks[c->nstacks];
	e->ips = malloc(n ? n * sizeof(*ips) : 1);
	if (!e->ips)
		return -1;
	memcpy(e->ips, ips, n * sizeof(*ips));
	e->hash = h;
	e->n = n;
	e->refs = 0;
	m = c->nsidx - 1;
	for (i = h & m; c->sidx[i]; i = (i + 1) & m)
		;
	c->sidx[i] = (uint32_t)c->nstacks + 1;
	c->nlive++;
	c->nindexed++;
	return (int32_t)c->nstacks++;
}

static int aggs_reindex(struct qp_cpu_table *c, size_t nslots)
{
	uint32_t *idx = calloc(nslots, sizeof(*idx));
	size_t a;

	if (!idx)
		return -ENOMEM;
	for (a = 0; a < c->naggs; a++) {
		size_t m = nslots - 1, i;

		for (i = hash_key(&c->aggs[a].key) & m; idx[i]; i = (i + 1) & m)
			;
		idx[i] = (uint32_t)a + 1;
	}
	free(c->aidx);
	c->aidx = idx;
	c->naidx = nslots;
	return 0;
}

/* The aggregate of KEY, added (with COMM) when new; NULL when no room. */
static struct qp_cpu_agg *agg_get(struct qp_cpu_table *c, const struct sample_key *key,
				  const char *comm)
{
	uint64_t h = hash_key(key);
	struct qp_cpu_agg *a;
	size_t m, i;

	if (c->naidx) {
		m = c->naidx - 1;
		for (i = h & m; c->aidx[i]; i = (i + 1) & m) {
			a = &c->aggs[c->aidx[i] - 1];
			if (!memcmp(&a->key, key, sizeof(*key)))
				return a;
		}
	}
	if (c->naggs >= c->max_keys)
		return NULL;
	if ((c->naggs + 1) * 2 > c->naidx && aggs_reindex(c, c->naidx ? c->naidx * 2 : 4096))
		return NULL;
	if (c->naggs == c->capaggs) {
		size_t cap = c->capaggs ? c->capaggs * 2 : 1024;
		struct qp_cpu_agg *v = realloc(c->aggs, cap * sizeof(*v));

		if (!v)
			return NULL;
		c->aggs = v;
		c->capaggs = cap;
	}
	a = &c->aggs[c->naggs];
	a->key = *key;
	a->count = 0;
	memcpy(a->comm, comm, sizeof(a->comm));
	a->comm[sizeof(a->comm) - 1] = '\0';
	m = c->naidx - 1;
	for (i = h & m; c->aidx[i]; i = (i + 1) & m)
		;
	c->aidx[i] = (uint32_t)c->naggs + 1;
	if (key->user_stack >= 0)
		c->stacks[key->user_stack].refs++;
	if (key->kern_stack >= 0)
		c->stacks[key->kern_stack].refs++;
	c->naggs++;
	return a;
}

static void stack_unref(struct qp_cpu_table *c, int32_t id)
{
	struct qp_cpu_stack_ent *e;

	if (id < 0)
		return;
	e = &c->stacks[id];
	if (e->refs && !--e->refs) {
		free(e->ips);
		e->ips = NULL;	/* the id is not reused: old snapshots stay right */
		c->nlive--;
	}
}

bool qp_cpu_table_add(struct qp_cpu_table *c, const struct qp_cpu_sample_in *in)
{
	struct sample_key key = { 0 };
	struct qp_cpu_agg *a;

	key.tgid = in->tgid;
	memcpy(key.scopes, in->scopes, sizeof(key.scopes));
	key.kern_stack = key.user_stack = -1;
	if (in->nkern && (key.kern_stack = stack_intern(c, in->kern, in->nkern)) < 0)
		return false;
	if (in->nuser && (key.user_stack = stack_intern(c, in->user, in->nuser)) < 0)
		return false;
	a = agg_get(c, &key, in->comm);
	if (!a)
		return false;
	a->count++;
	return true;
}

int qp_cpu_table_forget(struct qp_cpu_table *c, uint32_t pid)
{
	size_t a, n = 0;

	for (a = 0; a < c->naggs; a++) {
		if (c->aggs[a].key.tgid == pid) {
			stack_unref(c, c->aggs[a].key.user_stack);
			stack_unref(c, c->aggs[a].key.kern_stack);
			continue;
		}
		c->aggs[n++] = c->aggs[a];
	}
	if (n == c->naggs)
		return 0;
	c->naggs = n;
	/* rebuilt at the same sizes. A failed stack index only keeps freed
	 * entries, which lookups skip (and nindexed counts); a failed key
	 * index would be wrong: then drop every count rather than lie */
	if (c->nsidx)
		stacks_reindex(c, c->nsidx);
	if (aggs_reindex(c, c->naidx)) {
		c->naggs = 0;
		c->naidx = 0;
		free(c->aidx);
		c->aidx = NULL;
		return -ENOMEM;
	}
	return 0;
}

int qp_cpu_table_stack(const struct qp_cpu_table *c, int32_t id, uint64_t *ips, size_t max, size_t *n)
{
	*n = 0;
	if (id < 0 || (size_t)id >= c->nstacks || !c->stacks[id].ips)
		return -ENOENT;
	*n = c->stacks[id].n < max ? c->stacks[id].n : max;
	memcpy(ips, c->stacks[id].ips, *n * sizeof(*ips));
	return 0;
}

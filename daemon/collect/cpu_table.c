/* cpu_table.c - see cpu_table.h. Two open-addressing hash indexes over
 * growing arrays: distinct stacks (by slot; a stack is freed when no key
 * uses it any more, and its slot is reused under the next generation) and
 * sample keys with their counts and the time of their latest sample. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_table.h"

#define SLOT_MASK (QP_CPU_MAX_SLOTS - 1)
#define GEN_MASK ((1u << (31 - QP_CPU_SLOT_BITS)) - 1)	/* ids stay positive int32 */

void qp_cpu_table_init(struct qp_cpu_table *c, size_t max_stacks, size_t max_keys, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	c->max_stacks = max_stacks < QP_CPU_MAX_SLOTS ? max_stacks : QP_CPU_MAX_SLOTS;
	c->max_keys = max_keys;
	c->max_bytes = max_bytes;
}

void qp_cpu_table_free(struct qp_cpu_table *c)
{
	size_t s;

	for (s = 0; s < c->nstacks; s++)
		free(c->stacks[s].ips);
	free(c->stacks);
	free(c->sidx);
	free(c->free_slots);
	free(c->aggs);
	free(c->aidx);
	memset(c, 0, sizeof(*c));
}

/* what malloc takes for N frames: its 8-byte header, 16-byte granules, 32 at least */
static size_t frames_bytes(uint32_t n)
{
	size_t b = ((size_t)n * 8 + 8 + 15) & ~(size_t)15;

	return b < 32 ? 32 : b;
}

size_t qp_cpu_table_bytes(const struct qp_cpu_table *c)
{
	return c->capstacks * sizeof(*c->stacks) + c->stack_bytes + c->nsidx * sizeof(*c->sidx) +
	       c->capfree * sizeof(*c->free_slots) + c->capaggs * sizeof(*c->aggs) +
	       c->naidx * sizeof(*c->aidx);
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

/* the serial (pad) is not part of what a sample is counted under */
static uint64_t hash_key(const struct sample_key *k)
{
	uint64_t h = mix(((uint64_t)k->tid << 32) | k->tgid,
			 ((uint64_t)(uint32_t)k->user_stack << 32) | (uint32_t)k->kern_stack);
	int i;

	for (i = 0; i < QPROF_SAMPLE_SCOPES; i++)
		h = mix(h, k->scopes[i]);
	h = mix(h, k->span_site);
	h = mix(h, k->span_id);
	return mix(h, (uint32_t)k->open_stack);
}

static bool key_eq(const struct sample_key *a, const struct sample_key *b)
{
	return a->tgid == b->tgid && a->tid == b->tid && a->user_stack == b->user_stack && a->kern_stack == b->kern_stack &&
	       a->open_stack == b->open_stack && a->span_site == b->span_site && a->span_id == b->span_id &&
	       !memcmp(a->scopes, b->scopes, sizeof(a->scopes));
}

static int32_t stack_id(const struct qp_cpu_table *c, size_t slot)
{
	return (int32_t)((c->stacks[slot].gen << QP_CPU_SLOT_BITS) | (uint32_t)slot);
}

/* (Re)build an index of N slots over the live entries. */
static int stacks_reindex(struct qp_cpu_table *c, size_t nslots)
{
	uint32_t *idx = calloc(nslots, sizeof(*idx));
	size_t s;

	if (!idx)
		return -ENOMEM;
	for (s = 0; s < c->nstacks; s++) {
		size_t m = nslots - 1, i;

		if (!c->stacks[s].ips)
			continue;
		for (i = c->stacks[s].hash & m; idx[i]; i = (i + 1) & m)
			;
		idx[i] = (uint32_t)s + 1;
	}
	free(c->sidx);
	c->sidx = idx;
	c->nsidx = nslots;
	c->nindexed = c->nlive;
	return 0;
}

/* Free the stack in SLOT; the slot is reused under the next generation. */
static void stack_free(struct qp_cpu_table *c, size_t slot)
{
	struct qp_cpu_stack_ent *e = &c->stacks[slot];

	free(e->ips);
	e->ips = NULL;
	c->stack_bytes -= frames_bytes(e->n);
	c->nlive--;
	e->gen = (e->gen + 1) & GEN_MASK;
	if (c->nfree == c->capfree) {
		size_t cap = c->capfree ? c->capfree * 2 : 256;
		uint32_t *v = realloc(c->free_slots, cap * sizeof(*v));

		if (!v)
			return;	/* the slot is just not reused */
		c->free_slots = v;
		c->capfree = cap;
	}
	c->free_slots[c->nfree++] = (uint32_t)slot;
}

/* The id of the stack IPS[0..N), added when new; -1 when there is no room. */
static int32_t stack_intern(struct qp_cpu_table *c, const uint64_t *ips, uint32_t n)
{
	uint64_t h = hash_ips(ips, n);
	struct qp_cpu_stack_ent *e;
	size_t m, i, slot;

	if (c->nsidx) {
		m = c->nsidx - 1;
		for (i = h & m; c->sidx[i]; i = (i + 1) & m) {
			slot = c->sidx[i] - 1;
			e = &c->stacks[slot];
			if (e->ips && e->hash == h && e->n == n && !memcmp(e->ips, ips, n * sizeof(*ips)))
				return stack_id(c, slot);
		}
	}
	if (c->nlive >= c->max_stacks || qp_cpu_table_bytes(c) >= c->max_bytes)
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
	if (c->nfree) {
		slot = c->free_slots[c->nfree - 1];
	} else {
		if (c->nstacks >= QP_CPU_MAX_SLOTS)
			return -1;
		if (c->nstacks == c->capstacks) {
			size_t cap = c->capstacks ? c->capstacks * 2 : 1024;
			struct qp_cpu_stack_ent *v = realloc(c->stacks, cap * sizeof(*v));

			if (!v)
				return -1;
			c->stacks = v;
			c->capstacks = cap;
		}
		slot = c->nstacks;
		c->stacks[slot].gen = 0;
		c->stacks[slot].ips = NULL;
	}
	e = &c->stacks[slot];
	e->ips = malloc(n ? n * sizeof(*ips) : 1);
	if (!e->ips)
		return -1;
	if (c->nfree && slot == c->free_slots[c->nfree - 1])
		c->nfree--;
	else
		c->nstacks++;
	memcpy(e->ips, ips, n * sizeof(*ips));
	e->hash = h;
	e->n = n;
	e->refs = 0;
	m = c->nsidx - 1;
	for (i = h & m; c->sidx[i]; i = (i + 1) & m)
		;
	c->sidx[i] = (uint32_t)slot + 1;
	c->stack_bytes += frames_bytes(n);
	c->nlive++;
	c->nindexed++;
	return stack_id(c, slot);
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
			if (key_eq(&a->key, key))
				return a;
		}
	}
	if (c->naggs >= c->max_keys || qp_cpu_table_bytes(c) >= c->max_bytes)
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
	if (!++c->key_serial)
		c->key_serial = 1;
	a->key.pad = c->key_serial;
	a->count = 0;
	memcpy(a->comm, comm, sizeof(a->comm));
	a->comm[sizeof(a->comm) - 1] = '\0';
	m = c->naidx - 1;
	for (i = h & m; c->aidx[i]; i = (i + 1) & m)
		;
	c->aidx[i] = (uint32_t)c->naggs + 1;
	if (key->user_stack >= 0)
		c->stacks[key->user_stack & SLOT_MASK].refs++;
	if (key->kern_stack >= 0)
		c->stacks[key->kern_stack & SLOT_MASK].refs++;
	if (key->open_stack >= 0)
		c->stacks[key->open_stack & SLOT_MASK].refs++;
	c->naggs++;
	return a;
}

static void stack_unref(struct qp_cpu_table *c, int32_t id)
{
	struct qp_cpu_stack_ent *e;

	if (id < 0)
		return;
	e = &c->stacks[id & SLOT_MASK];
	if (e->refs && !--e->refs)
		stack_free(c, id & SLOT_MASK);
}

/* a stack interned for a sample that was then refused: no key uses it */
static void stack_drop_unused(struct qp_cpu_table *c, int32_t id)
{
	if (id >= 0 && !c->stacks[id & SLOT_MASK].refs)
		stack_free(c, id & SLOT_MASK);
}

bool qp_cpu_table_add(struct qp_cpu_table *c, const struct qp_cpu_sample_in *in)
{
	return qp_cpu_table_add_ids(c, in, NULL, NULL);
}

bool qp_cpu_table_add_ids(struct qp_cpu_table *c, const struct qp_cpu_sample_in *in, int32_t *kid,
			  int32_t *uid)
{
	struct sample_key key = { 0 };
	struct qp_cpu_agg *a;

	key.tgid = in->tgid;
	key.tid = in->tid;
	key.span_site = in->span_site;
	key.span_id = in->span_site ? in->span_id : 0;
	memcpy(key.scopes, in->scopes, sizeof(key.scopes));
	key.kern_stack = key.user_stack = key.open_stack = -1;
	if (in->nkern && (key.kern_stack = stack_intern(c, in->kern, in->nkern)) < 0)
		return false;
	if (in->nuser && (key.user_stack = stack_intern(c, in->user, in->nuser)) < 0) {
		stack_drop_unused(c, key.kern_stack);
		return false;
	}
	/* the open scopes are a list of addresses like a stack: interned alike */
	if (in->nopen && (key.open_stack = stack_intern(c, in->open, in->nopen)) < 0) {
		stack_drop_unused(c, key.kern_stack);
		if (key.user_stack != key.kern_stack)
			stack_drop_unused(c, key.user_stack);
		return false;
	}
	a = agg_get(c, &key, in->comm);
	if (!a) {
		stack_drop_unused(c, key.kern_stack);
		if (key.user_stack != key.kern_stack)
			stack_drop_unused(c, key.user_stack);
		if (key.open_stack != key.kern_stack && key.open_stack != key.user_stack)
			stack_drop_unused(c, key.open_stack);
		return false;
	}
	a->count += in->weight ? in->weight : 1;
	a->last = c->now;
	if (kid)
		*kid = key.kern_stack;
	if (uid)
		*uid = key.user_stack;
	return true;
}

/* Remove the keys of PID (BY_PID) or those last seen before clock BEFORE
 * (these count as aged); the number removed, or -ENOMEM when the key index
 * could not be rebuilt: then every count left is moved to aged, never kept
 * under a wrong index. */
static long remove_keys(struct qp_cpu_table *c, bool by_pid, uint32_t pid, uint32_t before)
{
	size_t a, n = 0;
	long removed = 0;

	for (a = 0; a < c->naggs; a++) {
		struct qp_cpu_agg *g = &c->aggs[a];

		if (by_pid ? g->key.tgid == pid : g->last < before) {
			if (!by_pid) {
				c->aged += g->count;
				c->aged_keys++;
			}
			stack_unref(c, g->key.user_stack);
			stack_unref(c, g->key.kern_stack);
			stack_unref(c, g->key.open_stack);
			removed++;
			continue;
		}
		if (n != a)
			c->aggs[n] = *g;
		n++;
	}
	if (!removed)
		return 0;
	c->naggs = n;
	/* rebuilt at the same sizes. A failed stack index only keeps freed
	 * entries, which lookups skip (and nindexed counts) */
	if (c->nsidx)
		stacks_reindex(c, c->nsidx);
	if (aggs_reindex(c, c->naidx)) {
		for (a = 0; a < c->naggs; a++) {
			c->aged += c->aggs[a].count;
			c->aged_keys++;
			stack_unref(c, c->aggs[a].key.user_stack);
			stack_unref(c, c->aggs[a].key.kern_stack);
			stack_unref(c, c->aggs[a].key.open_stack);
		}
		c->naggs = 0;
		c->naidx = 0;
		free(c->aidx);
		c->aidx = NULL;
		return -ENOMEM;
	}
	return removed;
}

int qp_cpu_table_forget(struct qp_cpu_table *c, uint32_t pid)
{
	long r = remove_keys(c, true, pid, 0);

	return r < 0 ? (int)r : 0;
}

long qp_cpu_table_age(struct qp_cpu_table *c, uint32_t before, size_t floor)
{
	if (qp_cpu_table_bytes(c) <= floor)
		return 0;
	return remove_keys(c, false, 0, before);
}

int qp_cpu_table_stack(const struct qp_cpu_table *c, int32_t id, uint64_t *ips, size_t max, size_t *n)
{
	const struct qp_cpu_stack_ent *e;
	size_t slot;

	*n = 0;
	if (id < 0)
		return -ENOENT;
	slot = (uint32_t)id & SLOT_MASK;
	if (slot >= c->nstacks)
		return -ENOENT;
	e = &c->stacks[slot];
	if (!e->ips || e->gen != (uint32_t)id >> QP_CPU_SLOT_BITS)
		return -ENOENT;
	*n = e->n < max ? e->n : max;
	memcpy(ips, e->ips, *n * sizeof(*ips));
	return 0;
}

/* htab_ab.c - the three open-addressing indexes written by hand in
 * daemon/collect/ against qp_htab (common/hashtab.h) on the same key
 * streams, one index and one way a run:
 *
 *   htab_ab CASE WAY [N]   CASE: rules | keys | stacks, WAY: hand | htab | htab-mix
 *
 *   rules   unwind_fast.c's rule cache: u64 addresses (a return address + 1)
 *           to a 16-byte rule, looked up per frame unwound; a miss puts the
 *           rule. 4,000 addresses, skewed (a few hot callers).
 *   keys    cpu_table.c's aggregate index: a struct sample_key (48 bytes)
 *           to its aggregate, looked up per CPU sample. 5,000 keys.
 *   stacks  cpu_table.c's stack index: a stack of 5..35 frames to its
 *           slot, looked up per stack of a sample. 3,000 stacks.
 *
 * "hand" is the index's own probing, hash and growth as the collect/ file
 * has it (copied here, since those are static functions); "htab" is
 * qp_htab with the same keys and values; "htab-mix" is qp_htab given the
 * hand-written index's hash (cpu_table.c's mix over the key's words) in
 * place of SipHash-1-3, which tells the hash's share from the table's.
 * Each run does N lookups (a miss
 * adds) inside run(), which bench/htab_ab.sh counts with callgrind
 * (--toggle-collect=run): instructions a lookup, the same on any machine.
 * It prints the entries made and a checksum of the values found, which
 * the script compares between the two ways (the same answers). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/hashtab.h"

#define SCOPES 4	/* QPROF_SAMPLE_SCOPES */

struct sample_key {	/* bpf/profile.h's */
	uint32_t tgid;
	int32_t user_stack, kern_stack;
	uint32_t pad;
	uint64_t scopes[SCOPES];
	int32_t open_stack;
	uint32_t tid;
};

struct rule {
	uint64_t key;
	int32_t cfa_off, ra_off, bp_off;
	uint8_t kind;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* a skewed pick of 0..n-1: half the picks among the first n/16 */
static size_t pick(size_t n)
{
	uint64_t r = next();

	return (r & 1) ? (size_t)((r >> 1) % (n / 16 + 1)) : (size_t)((r >> 1) % n);
}

/* ---- unwind_fast.c's cache (cache_find, cache_put) ---- */

#define SLOTS_MIN 1024
#define SLOTS_MAX 65536

struct ufast {
	struct rule *slot;
	uint32_t nslots, used;
	unsigned int shift;
};

static inline uint32_t uf_slot(const struct ufast *c, uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> c->shift);
}

static struct rule *uf_find(struct ufast *c, uint64_t key)
{
	uint32_t i = uf_slot(c, key), mask = c->nslots - 1;

	while (c->slot[i].key) {
		if (c->slot[i].key == key)
			return &c->slot[i];
		i = (i + 1) & mask;
	}
	return NULL;
}

static void uf_put(struct ufast *c, const struct rule *r, uint64_t *resets)
{
	uint32_t i, mask;

	if (c->used + 1 > c->nslots / 4 * 3) {
		struct rule *bigger = NULL, *old = c->slot;
		uint32_t n = c->nslots * 2, k;

		if (n <= SLOTS_MAX)
			bigger = calloc(n, sizeof(*bigger));
		if (!bigger) {
			memset(c->slot, 0, c->nslots * sizeof(*c->slot));
			c->used = 0;
			(*resets)++;
		} else {
			c->slot = bigger;
			c->nslots = n;
			c->shift--;
			c->used = 0;
			for (k = 0; k < n / 2; k++)
				if (old[k].key)
					uf_put(c, &old[k], resets);
			free(old);
		}
	}
	mask = c->nslots - 1;
	for (i = uf_slot(c, r->key); c->slot[i].key; i = (i + 1) & mask)
		;
	c->slot[i] = *r;
	c->used++;
}

/* ---- cpu_table.c's hash and index ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

static uint64_t hash_key(const struct sample_key *k)
{
	uint64_t h = mix(((uint64_t)k->tid << 32) | k->tgid,
			 ((uint64_t)(uint32_t)k->user_stack << 32) | (uint32_t)k->kern_stack);
	int i;

	for (i = 0; i < SCOPES; i++)
		h = mix(h, k->scopes[i]);
	return mix(h, (uint32_t)k->open_stack);
}

static int key_eq(const struct sample_key *a, const struct sample_key *b)
{
	return a->tgid == b->tgid && a->tid == b->tid && a->user_stack == b->user_stack &&
	       a->kern_stack == b->kern_stack && a->open_stack == b->open_stack &&
	       !memcmp(a->scopes, b->scopes, sizeof(a->scopes));
}

static uint64_t hash_ips(const uint64_t *ips, uint32_t n)
{
	uint64_t h = n;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = mix(h, ips[i]);
	return h;
}

struct agg {
	struct sample_key key;
	uint64_t count;
};

struct stack {
	uint64_t hash;
	uint64_t *ips;
	uint32_t n;
};

/* an index of uint32 (entry + 1) over an array, half full at most */
struct idx {
	uint32_t *slot;
	size_t nslot;
};

static int idx_grow(struct idx *x, size_t n, uint64_t (*hash_of)(const void *, size_t), const void *arr)
{
	size_t ns = x->nslot ? x->nslot * 2 : 4096, i, j;
	uint32_t *s = calloc(ns, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		for (j = hash_of(arr, i) & (ns - 1); s[j]; j = (j + 1) & (ns - 1))
			;
		s[j] = (uint32_t)i + 1;
	}
	free(x->slot);
	x->slot = s;
	x->nslot = ns;
	return 0;
}

static uint64_t agg_hash_at(const void *arr, size_t i)
{
	return hash_key(&((const struct agg *)arr)[i].key);
}

static uint64_t stack_hash_at(const void *arr, size_t i)
{
	return ((const struct stack *)arr)[i].hash;
}

/* ---- the key streams ---- */

static uint64_t *addrs;		/* rules */
static struct sample_key *skeys;	/* keys */
static uint64_t **sips;		/* stacks */
static uint32_t *sn;

static void make_streams(size_t nrules, size_t nkeys, size_t nstacks)
{
	size_t i, j;

	addrs = malloc(nrules * sizeof(*addrs));
	for (i = 0; i < nrules; i++)	/* return addresses in 2 MiB of text */
		addrs[i] = 0x555555554000ull + (next() % (2u << 20)) + 1;
	skeys = calloc(nkeys, sizeof(*skeys));
	for (i = 0; i < nkeys; i++) {
		skeys[i].tgid = 1000 + (uint32_t)(i % 7);
		skeys[i].tid = skeys[i].tgid + (uint32_t)(i % 13);
		skeys[i].user_stack = (int32_t)(i * 3);
		skeys[i].kern_stack = (i % 5) ? -1 : (int32_t)i;
		skeys[i].scopes[0] = (i % 3) ? next() % 64 : 0;
		skeys[i].open_stack = -1;
	}
	sips = malloc(nstacks * sizeof(*sips));
	sn = malloc(nstacks * sizeof(*sn));
	for (i = 0; i < nstacks; i++) {
		sn[i] = 5 + (uint32_t)(next() % 31);
		sips[i] = malloc(sn[i] * sizeof(uint64_t));
		for (j = 0; j < sn[i]; j++)
			sips[i][j] = 0x7f0000000000ull + next() % (64u << 20);
	}
}

static size_t nrules = 4000, nkeys = 5000, nstacks = 3000;
static uint64_t sum, made_n;
static int use_mix;

/* cpu_table.c's mix over the key's 8-byte words (its tail zero-padded) */
static uint64_t mix_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = len, w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		h = mix(h, w);
	}
	if (i < len) {
		w = 0;
		memcpy(&w, p + i, len - i);
		h = mix(h, w);
	}
	return h;
}

static void __attribute__((noinline)) run(int which, int hand, size_t n)
{
	size_t i;

	if (which == 0 && hand) {
		struct ufast c = { calloc(SLOTS_MIN, sizeof(struct rule)), SLOTS_MIN, 0, 64 - 10 };
		uint64_t resets = 0;

		for (i = 0; i < n; i++) {
			uint64_t a = addrs[pick(nrules)];
			struct rule *r = uf_find(&c, a);

			if (!r) {
				struct rule nr = { a, (int32_t)(a & 63), -8, -16, 1 };

				uf_put(&c, &nr, &resets);
				made_n++;
				r = uf_find(&c, a);
			}
			sum += (uint64_t)r->cfa_off;
		}
		free(c.slot);
	} else if (which == 0) {
		struct qp_htab t;

		qp_htab_init(&t, sizeof(struct rule));
		if (use_mix)
			t.hash = mix_hash;
		qp_htab_fix(&t, SLOTS_MAX / 4 * 3);
		for (i = 0; i < n; i++) {
			uint64_t a = addrs[pick(nrules)];
			int64_t k = qp_htab_find_u64(&t, a);
			struct rule *r;

			if (k < 0) {
				bool made;

				k = qp_htab_add_u64(&t, a, &made);
				if (k == -ENOSPC) {
					qp_htab_clear(&t);
					k = qp_htab_add_u64(&t, a, &made);
				}
				r = qp_htab_value(&t, (size_t)k);
				*r = (struct rule){ a, (int32_t)(a & 63), -8, -16, 1 };
				made_n++;
			}
			r = qp_htab_value(&t, (size_t)k);
			sum += (uint64_t)r->cfa_off;
		}
		qp_htab_free(&t);
	} else if (which == 1 && hand) {
		struct agg *aggs = malloc(nkeys * sizeof(*aggs));
		struct idx x = { 0 };
		size_t naggs = 0;

		for (i = 0; i < n; i++) {
			const struct sample_key *key = &skeys[pick(nkeys)];
			uint64_t h = hash_key(key);
			struct agg *a = NULL;
			size_t j, m;

			if (x.nslot) {
				m = x.nslot - 1;
				for (j = h & m; x.slot[j]; j = (j + 1) & m)
					if (key_eq(&aggs[x.slot[j] - 1].key, key)) {
						a = &aggs[x.slot[j] - 1];
						break;
					}
			}
			if (!a) {
				if ((naggs + 1) * 2 > x.nslot)
					idx_grow(&x, naggs, agg_hash_at, aggs);
				m = x.nslot - 1;
				for (j = h & m; x.slot[j]; j = (j + 1) & m)
					;
				x.slot[j] = (uint32_t)naggs + 1;
				a = &aggs[naggs++];
				a->key = *key;
				a->count = 0;
				made_n++;
			}
			sum += ++a->count;
		}
		free(x.slot);
		free(aggs);
	} else if (which == 1) {
		struct qp_htab t;

		qp_htab_init(&t, sizeof(uint64_t));
		if (use_mix)
			t.hash = mix_hash;
		for (i = 0; i < n; i++) {
			const struct sample_key *key = &skeys[pick(nkeys)];
			bool made;
			int64_t k = qp_htab_add(&t, key, sizeof(*key), &made);

			made_n += made;
			sum += ++*(uint64_t *)qp_htab_value(&t, (size_t)k);
		}
		qp_htab_free(&t);
	} else if (which == 2 && hand) {
		struct stack *st = malloc(nstacks * sizeof(*st));
		struct idx x = { 0 };
		size_t ns = 0;

		for (i = 0; i < n; i++) {
			size_t s = pick(nstacks), j, m, slot = SIZE_MAX;
			uint64_t h = hash_ips(sips[s], sn[s]);

			if (x.nslot) {
				m = x.nslot - 1;
				for (j = h & m; x.slot[j]; j = (j + 1) & m) {
					struct stack *e = &st[x.slot[j] - 1];

					if (e->hash == h && e->n == sn[s] &&
					    !memcmp(e->ips, sips[s], sn[s] * sizeof(uint64_t))) {
						slot = x.slot[j] - 1;
						break;
					}
				}
			}
			if (slot == SIZE_MAX) {
				if ((ns + 1) * 2 > x.nslot)
					idx_grow(&x, ns, stack_hash_at, st);
				m = x.nslot - 1;
				for (j = h & m; x.slot[j]; j = (j + 1) & m)
					;
				x.slot[j] = (uint32_t)ns + 1;
				st[ns].hash = h;
				st[ns].n = sn[s];
				st[ns].ips = malloc(sn[s] * sizeof(uint64_t));
				memcpy(st[ns].ips, sips[s], sn[s] * sizeof(uint64_t));
				slot = ns++;
				made_n++;
			}
			sum += slot;
		}
		for (i = 0; i < ns; i++)
			free(st[i].ips);
		free(st);
		free(x.slot);
	} else {
		struct qp_htab t;

		qp_htab_init(&t, 0);
		if (use_mix)
			t.hash = mix_hash;
		for (i = 0; i < n; i++) {
			size_t s = pick(nstacks);
			bool made;
			int64_t k = qp_htab_add(&t, sips[s], sn[s] * sizeof(uint64_t), &made);

			made_n += made;
			sum += (uint64_t)k;
		}
		qp_htab_free(&t);
	}
}

int main(int argc, char **argv)
{
	static const char *const cases[] = { "rules", "keys", "stacks" };
	int which = -1, hand, c;
	size_t n = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000000;

	if (argc < 3)
		goto usage;
	for (c = 0; c < 3; c++)
		if (!strcmp(argv[1], cases[c]))
			which = c;
	hand = !strcmp(argv[2], "hand");
	use_mix = !strcmp(argv[2], "htab-mix");
	if (which < 0 || (!hand && !use_mix && strcmp(argv[2], "htab")) || !n)
		goto usage;
	make_streams(nrules, nkeys, nstacks);
	/* the same stream for both ways: the picks start from one seed */
	rng = 0x2545f4914f6cdd1dull;
	run(which, hand, n);
	/* a stack's slot is its order of arrival in both ways: same sums */
	printf("%s %s lookups %zu made %llu sum %llu\n", argv[1], argv[2], n,
	       (unsigned long long)made_n, (unsigned long long)sum);
	return 0;
usage:
	fprintf(stderr, "usage: htab_ab rules|keys|stacks hand|htab|htab-mix [N]\n");
	return 2;
}

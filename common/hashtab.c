/* hashtab.c - the hash table of hashtab.h and its hash function. */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <endian.h>
#include <unistd.h>
#include <sys/random.h>
#include "arena.h"
#include "hashtab.h"

struct qp_htab_ent {
	const char *key;	/* in t->keys, NUL-terminated */
	size_t len;
	uint64_t hash;
};

struct qp_htab_slot {
	uint32_t idx;		/* entry index + 1; 0: empty */
	uint32_t hash;		/* low bits of the entry's hash: most misses end here */
};

/* ---- SipHash (Aumasson and Bernstein, 2012) ---- */

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                                   \
	do {                                                                                       \
		v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                          \
		v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                             \
		v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                             \
		v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                          \
	} while (0)

static inline uint64_t le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline __attribute__((always_inline)) uint64_t siphash(int c, int d, uint64_t k0, uint64_t k1,
								const void *data, size_t len)
{
	const unsigned char *p = data, *end = p + (len & ~(size_t)7);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	uint64_t m, b = (uint64_t)len << 56;
	size_t i;
	int r;

	for (; p < end; p += 8) {
		m = le64(p);
		v3 ^= m;
		for (r = 0; r < c; r++)
			SIPROUND;
		v0 ^= m;
	}
	for (i = 0; i < (len & 7); i++)
		b |= (uint64_t)p[i] << (8 * i);
	v3 ^= b;
	for (r = 0; r < c; r++)
		SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	for (r = 0; r < d; r++)
		SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t qp_siphash_cd(int c, int d, uint64_t k0, uint64_t k1, const void *p, size_t len)
{
	return siphash(c, d, k0, k1, p, len);
}

static uint64_t proc_key[2];
static pthread_once_t proc_key_once = PTHREAD_ONCE_INIT;

static void proc_key_init(void)
{
	struct timespec ts;

	if (getrandom(proc_key, sizeof(proc_key), GRND_NONBLOCK) == (ssize_t)sizeof(proc_key))
		return;
	/* no entropy yet (early boot): weaker, but still not a constant */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	proc_key[0] = qp_siphash_cd(2, 4, (uint64_t)ts.tv_nsec, (uint64_t)getpid(), &ts, sizeof(ts));
	proc_key[1] = qp_siphash_cd(2, 4, proc_key[0], (uint64_t)ts.tv_sec, &proc_key, sizeof(proc_key));
}

uint64_t qp_hash_bytes(const void *p, size_t len)
{
	pthread_once(&proc_key_once, proc_key_init);
	return siphash(1, 3, proc_key[0], proc_key[1], p, len);
}

/* ---- the table ---- */

void qp_htab_init(struct qp_htab *t, size_t vsize)
{
	memset(t, 0, sizeof(*t));
	t->vsize = vsize;
}

void qp_htab_free(struct qp_htab *t)
{
	size_t vsize = t->vsize;
	uint64_t (*hash)(const void *, size_t) = t->hash;

	free(t->ent);
	free(t->val);
	free(t->slot);
	qp_arena_free(t->keys);
	qp_htab_init(t, vsize);
	t->hash = hash;
}

int qp_htab_fix(struct qp_htab *t, size_t max)
{
	size_t nslot = 64;
	struct qp_htab_slot *s;
	struct qp_htab_ent *e;
	unsigned char *v = NULL;

	if (!max || max > QP_HTAB_MAX || t->n)
		return -EINVAL;
	while (nslot < 2 * max)
		nslot *= 2;
	if (t->vsize && max > SIZE_MAX / t->vsize)
		return -ENOMEM;
	s = calloc(nslot, sizeof(*s));
	e = malloc(max * sizeof(*e));
	if (t->vsize)
		v = malloc(max * t->vsize);
	if (!s || !e || (t->vsize && !v)) {
		free(s);
		free(e);
		free(v);
		return -ENOMEM;
	}
	free(t->slot);
	free(t->ent);
	free(t->val);
	t->slot = s;
	t->nslot = nslot;
	t->ent = e;
	t->val = v;
	t->cap = max;
	t->max = max;
	return 0;
}

void qp_htab_clear(struct qp_htab *t)
{
	if (t->nslot)
		memset(t->slot, 0, t->nslot * sizeof(*t->slot));
	qp_arena_free(t->keys);
	t->keys = NULL;
	t->n = 0;
	t->dead = 0;
}

static uint64_t hash_of(const struct qp_htab *t, const void *key, size_t len)
{
	return t->hash ? t->hash(key, len) : qp_hash_bytes(key, len);
}

/* The slot of KEY, or the empty slot where it would go. nslot > 0. */
static size_t probe(const struct qp_htab *t, const void *key, size_t len, uint64_t h)
{
	size_t mask = t->nslot - 1, j = (size_t)h & mask;

	for (; t->slot[j].idx; j = (j + 1) & mask) {
		const struct qp_htab_ent *e = &t->ent[t->slot[j].idx - 1];

		if (t->slot[j].hash == (uint32_t)h && e->hash == h && e->len == len &&
		    !memcmp(e->key, key, len))
			break;
	}
	return j;
}

int64_t qp_htab_find(const struct qp_htab *t, const void *key, size_t len)
{
	size_t j;

	if (!t->n)
		return -ENOENT;
	j = probe(t, key, len, hash_of(t, key, len));
	return t->slot[j].idx ? (int64_t)t->slot[j].idx - 1 : -ENOENT;
}

static int grow_slots(struct qp_htab *t)
{
	size_t nslot = t->nslot ? t->nslot * 2 : 64, mask = nslot - 1, i, j;
	struct qp_htab_slot *s = calloc(nslot, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		for (j = (size_t)t->ent[i].hash & mask; s[j].idx; j = (j + 1) & mask)
			;
		s[j].idx = (uint32_t)(i + 1);
		s[j].hash = (uint32_t)t->ent[i].hash;
	}
	free(t->slot);
	t->slot = s;
	t->nslot = nslot;
	return 0;
}

static int grow_entries(struct qp_htab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 16;
	struct qp_htab_ent *e = realloc(t->ent, cap * sizeof(*e));

	if (!e)
		return -ENOMEM;
	t->ent = e;
	if (t->vsize) {
		unsigned char *v;

		if (cap > SIZE_MAX / t->vsize)
			return -ENOMEM;
		v = realloc(t->val, cap * t->vsize);

		if (!v)
			return -ENOMEM;
		t->val = v;
	}
	t->cap = cap;
	return 0;
}

int64_t qp_htab_add(struct qp_htab *t, const void *key, size_t len, bool *made)
{
	uint64_t h = hash_of(t, key, len);
	struct qp_htab_ent *e;
	size_t j;

	if (made)
		*made = false;
	if (t->nslot) {
		j = probe(t, key, len, h);
		if (t->slot[j].idx)
			return (int64_t)t->slot[j].idx - 1;
	}
	if (t->max && t->n >= t->max)
		return -ENOSPC;
	if (t->n >= QP_HTAB_MAX)
		return -E2BIG;
	if (!t->keys && !(t->keys = qp_arena_new()))
		return -ENOMEM;
	if (t->n == t->cap && grow_entries(t))
		return -ENOMEM;
	if ((t->n + 1) * 2 > t->nslot && grow_slots(t))
		return -ENOMEM;
	e = &t->ent[t->n];
	e->key = qp_arena_strndup(t->keys, key, len);
	if (!e->key)
		return -ENOMEM;
	e->len = len;
	e->hash = h;
	if (t->vsize)
		memset(t->val + t->n * t->vsize, 0, t->vsize);
	j = probe(t, key, len, h);
	t->slot[j].idx = (uint32_t)(t->n + 1);
	t->slot[j].hash = (uint32_t)h;
	if (made)
		*made = true;
	return (int64_t)t->n++;
}

/* The slot that holds entry I. */
static size_t slot_of_entry(const struct qp_htab *t, size_t i)
{
	size_t mask = t->nslot - 1, j = (size_t)t->ent[i].hash & mask;

	while (t->slot[j].idx != i + 1)
		j = (j + 1) & mask;
	return j;
}

void qp_htab_del(struct qp_htab *t, size_t i)
{
	size_t mask = t->nslot - 1, hole = slot_of_entry(t, i), k = hole, last = t->n - 1;

	/* linear probing without tombstones: every later slot of the run that
	 * may sit in the hole (its home is not between the hole and it) moves
	 * back into it */
	for (;;) {
		size_t home;

		k = (k + 1) & mask;
		if (!t->slot[k].idx)
			break;
		home = (size_t)t->slot[k].hash & mask;
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			t->slot[hole] = t->slot[k];
			hole = k;
		}
	}
	t->slot[hole].idx = 0;
	t->dead += t->ent[i].len + 1;
	if (i != last) {
		t->slot[slot_of_entry(t, last)].idx = (uint32_t)(i + 1);
		t->ent[i] = t->ent[last];
		if (t->vsize)
			memcpy(t->val + i * t->vsize, t->val + last * t->vsize, t->vsize);
	}
	t->n--;
}

void *qp_htab_value(const struct qp_htab *t, size_t i)
{
	return t->vsize ? t->val + i * t->vsize : NULL;
}

const char *qp_htab_key(const struct qp_htab *t, size_t i, size_t *len)
{
	if (len)
		*len = t->ent[i].len;
	return t->ent[i].key;
}

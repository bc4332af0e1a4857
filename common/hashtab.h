/* hashtab.h - the one hash table of qprofd and qprof-cli.
 *
 * Keys are byte strings (or u64s, or C strings: the same bytes), copied
 * into the table's arena and kept NUL-terminated; each maps to a value of a
 * fixed size chosen at init, zeroed when the key is added. Entries keep the
 * order they were added in and are numbered densely from 0, so a table is
 * also an interning array: iterate with `for (i = 0; i < t->n; i++)`, and
 * what a caller prints from it does not depend on the hash.
 *
 * Open addressing with linear probing over slots of (index, 32 hash bits),
 * grown to twice the size at half load. Keys are hashed with SipHash-1-3
 * under a key drawn at random once per process: names come from the target's
 * files and must not be able to make every key collide.
 *
 * Value pointers move when the table grows (qp_htab_add may realloc);
 * key pointers do not. A table given a fixed capacity (qp_htab_fix) never
 * grows: its value pointers stay where they are. An entry removed
 * (qp_htab_del) gives its index to the last entry. Not thread-safe: one
 * owner at a time. */
#ifndef QPROF_HASHTAB_H
#define QPROF_HASHTAB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define QP_HTAB_MAX ((size_t)1 << 30)	/* entries; adding more gives -E2BIG */

struct qp_arena;
struct qp_htab_ent;
struct qp_htab_slot;

struct qp_htab {
	size_t n;			/* entries */
	size_t vsize;			/* bytes of a value (0: a set) */
	struct qp_htab_ent *ent;	/* n keys, in the order they came */
	unsigned char *val;		/* n values of vsize bytes, same order */
	size_t cap;			/* room in ent and val */
	struct qp_htab_slot *slot;
	size_t nslot;			/* 0 or a power of two */
	struct qp_arena *keys;
	size_t max;			/* qp_htab_fix's capacity; 0: grows */
	size_t dead;			/* key bytes of removed entries, still in keys */
	/* NULL: qp_hash_bytes. Tests set a weak one to force collisions. */
	uint64_t (*hash)(const void *key, size_t len);
};

/* An empty table whose values are VSIZE bytes; allocates nothing. */
void qp_htab_init(struct qp_htab *t, size_t vsize);
/* Frees everything; the table is empty (and usable) again. Accepts a zeroed
 * table. */
void qp_htab_free(struct qp_htab *t);

/* Room for MAX entries made at once (an empty table only): no add
 * reallocates from then on, so value pointers stay valid, and an add past
 * MAX gives -ENOSPC. 0, -EINVAL (MAX 0 or over QP_HTAB_MAX, or the table
 * holds entries) or -ENOMEM (the table unchanged). */
int qp_htab_fix(struct qp_htab *t, size_t max);
/* Every entry removed; the arrays (and a fixed capacity) are kept, the
 * keys' memory freed. */
void qp_htab_clear(struct qp_htab *t);
/* Entry I (< t->n) removed: the last entry, if another, takes index I (its
 * key and value move there; no other index changes). The key's bytes stay
 * in the table's memory until qp_htab_clear or qp_htab_free (t->dead
 * counts them): a table with much churn is cleared or rebuilt by its owner. */
void qp_htab_del(struct qp_htab *t, size_t i);

/* The index of KEY (LEN bytes), or -ENOENT. */
int64_t qp_htab_find(const struct qp_htab *t, const void *key, size_t len);
/* The index of KEY, added (value zeroed, *MADE true) when absent; -ENOMEM,
 * or -E2BIG past QP_HTAB_MAX entries. MADE may be NULL. */
int64_t qp_htab_add(struct qp_htab *t, const void *key, size_t len, bool *made);

/* Entry I (< t->n): its value (NULL for a set), its key (NUL-terminated,
 * stable until qp_htab_free) and the key's length. */
void *qp_htab_value(const struct qp_htab *t, size_t i);
const char *qp_htab_key(const struct qp_htab *t, size_t i, size_t *len);

static inline int64_t qp_htab_find_u64(const struct qp_htab *t, uint64_t k)
{
	return qp_htab_find(t, &k, sizeof(k));
}

static inline int64_t qp_htab_add_u64(struct qp_htab *t, uint64_t k, bool *made)
{
	return qp_htab_add(t, &k, sizeof(k), made);
}

static inline uint64_t qp_htab_key_u64(const struct qp_htab *t, size_t i)
{
	uint64_t k;

	memcpy(&k, qp_htab_key(t, i, NULL), sizeof(k));
	return k;
}

static inline int64_t qp_htab_find_str(const struct qp_htab *t, const char *s)
{
	return qp_htab_find(t, s, strlen(s));
}

static inline int64_t qp_htab_add_str(struct qp_htab *t, const char *s, bool *made)
{
	return qp_htab_add(t, s, strlen(s), made);
}

/* SipHash-C-D of the LEN bytes at P under the 128-bit key (K0, K1): C
 * rounds a word, D to finish (2, 4: the reference SipHash-2-4). */
uint64_t qp_siphash_cd(int c, int d, uint64_t k0, uint64_t k1, const void *p, size_t len);
/* SipHash-1-3 (as Rust's HashMap) under the process's random key
 * (getrandom, drawn once). */
uint64_t qp_hash_bytes(const void *p, size_t len);
#endif

/* test_hashtab.c - common/hashtab.c: SipHash against the reference vector,
 * exact counts through growth, keys that collide entirely, byte keys with
 * NULs, u64 and string keys, insertion order, and contents that do not
 * depend on the order keys came in; removal (the last entry takes the
 * index; random churn against a plain array, on weak hashes too) and a
 * fixed capacity (refused past it, nothing moved, kept by clear). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "common/hashtab.h"
#include "testlib.h"

struct val {
	uint64_t count;
	uint32_t tag;
};

static uint64_t zero_hash(const void *key, size_t len)
{
	return 0;	/* every key in one chain */
}

static void test_siphash(void)
{
	unsigned char msg[15];
	size_t i;

	/* the reference implementation's vectors: key 00..0f, message 00..len-1 */
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)i;
	CHECK(qp_siphash_cd(2, 4, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, msg, 0) ==
	      0x726fdb47dd0e0e31ULL);
	CHECK(qp_siphash_cd(2, 4, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, msg, 1) ==
	      0x74f839c593dc67fdULL);
	CHECK(qp_siphash_cd(2, 4, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, msg, 8) ==
	      0x93f5f5799a932462ULL);
	CHECK(qp_siphash_cd(2, 4, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, msg, 15) ==
	      0xa129ca6149be45e5ULL);
	/* the process key is fixed for the process */
	CHECK(qp_hash_bytes("abc", 3) == qp_hash_bytes("abc", 3));
	CHECK(qp_hash_bytes("abc", 3) != qp_hash_bytes("abd", 3));
}

/* N string keys "k0".."kN-1": counts, growth, lookups, values kept. */
static void fill_and_check(struct qp_htab *t, size_t n)
{
	char key[32];
	size_t i, bad_idx = 0, bad_find = 0, bad_val = 0, bad_key = 0, made_n = 0;
	bool made;

	for (i = 0; i < n; i++) {
		int64_t k;
		struct val *v;

		snprintf(key, sizeof(key), "k%zu", i);
		k = qp_htab_add_str(t, key, &made);
		if (k != (int64_t)i)
			bad_idx++;
		made_n += made;
		v = qp_htab_value(t, (size_t)k);
		v->count += i * 3;
		v->tag = (uint32_t)i;
	}
	CHECK_INT(made_n, n);
	CHECK_INT(t->n, n);
	/* half load at most, a power of two */
	CHECK(t->nslot >= 2 * n && (t->nslot & (t->nslot - 1)) == 0);
	for (i = 0; i < n; i++) {
		const struct val *v;
		const char *k;
		size_t len;

		snprintf(key, sizeof(key), "k%zu", i);
		if (qp_htab_find_str(t, key) != (int64_t)i)
			bad_find++;
		/* adding again finds it */
		if (qp_htab_add_str(t, key, &made) != (int64_t)i || made)
			bad_find++;
		v = qp_htab_value(t, i);
		if (v->count != i * 3 || v->tag != i)
			bad_val++;
		k = qp_htab_key(t, i, &len);
		if (len != strlen(key) || strcmp(k, key))
			bad_key++;
	}
	CHECK_INT(bad_idx, 0);
	CHECK_INT(bad_find, 0);
	CHECK_INT(bad_val, 0);
	CHECK_INT(bad_key, 0);
	CHECK_INT(t->n, n);
	CHECK_INT(qp_htab_find_str(t, "absent"), -ENOENT);
	CHECK_INT(qp_htab_find_str(t, "k"), -ENOENT);
}

static void test_grow(void)
{
	struct qp_htab t;
	size_t slots_before;

	qp_htab_init(&t, sizeof(struct val));
	CHECK_INT(qp_htab_find_str(&t, "k0"), -ENOENT);	/* empty: no slots yet */
	CHECK(t.slot == NULL && t.n == 0);
	fill_and_check(&t, 20000);
	slots_before = t.nslot;
	CHECK_INT(slots_before, 65536);
	qp_htab_free(&t);
	CHECK_INT(t.n, 0);
	CHECK_INT(t.vsize, sizeof(struct val));
	/* usable again after free */
	fill_and_check(&t, 100);
	qp_htab_free(&t);
	qp_htab_free(&t);	/* twice is fine */
}

static void test_collisions(void)
{
	struct qp_htab t;

	qp_htab_init(&t, sizeof(struct val));
	t.hash = zero_hash;
	fill_and_check(&t, 700);
	qp_htab_free(&t);
	CHECK(t.hash == zero_hash);	/* the choice survives free */
}

static void test_bytes(void)
{
	static const unsigned char a[] = { 'x', 0, 'y' }, b[] = { 'x', 0, 'z' }, c[] = { 'x' };
	struct qp_htab t;
	size_t len;
	bool made;
	int64_t i;

	qp_htab_init(&t, 0);	/* a set */
	t.hash = zero_hash;	/* compare the bytes, not only the hashes */
	CHECK_INT(qp_htab_add(&t, a, sizeof(a), &made), 0);
	CHECK(made);
	CHECK_INT(qp_htab_add(&t, b, sizeof(b), &made), 1);
	CHECK_INT(qp_htab_add(&t, c, sizeof(c), NULL), 2);
	CHECK_INT(qp_htab_add(&t, "", 0, &made), 3);
	CHECK(made);
	CHECK_INT(qp_htab_add(&t, a, sizeof(a), &made), 0);
	CHECK(!made);
	CHECK_INT(qp_htab_find(&t, "", 0), 3);
	CHECK_INT(qp_htab_find(&t, "x", 1), 2);
	CHECK_INT(qp_htab_find(&t, a, 2), -ENOENT);	/* "x\0": a prefix of a and b */
	CHECK(qp_htab_value(&t, 0) == NULL);
	CHECK(memcmp(qp_htab_key(&t, 1, &len), b, sizeof(b)) == 0);
	CHECK_INT(len, 3);
	CHECK_INT(qp_htab_key(&t, 1, NULL)[3], 0);	/* kept NUL-terminated */
	CHECK_INT(t.n, 4);
	qp_htab_free(&t);

	/* u64 keys, 0 among them */
	qp_htab_init(&t, sizeof(uint64_t));
	for (i = 0; i < 5000; i++)
		*(uint64_t *)qp_htab_value(&t, (size_t)qp_htab_add_u64(&t, (uint64_t)i << 32, NULL)) = (uint64_t)i;
	CHECK_INT(t.n, 5000);
	CHECK_INT(qp_htab_find_u64(&t, 0), 0);
	CHECK_INT(qp_htab_find_u64(&t, 4999ULL << 32), 4999);
	CHECK_INT(qp_htab_find_u64(&t, 4999), -ENOENT);
	CHECK(qp_htab_key_u64(&t, 1234) == 1234ULL << 32);
	CHECK_INT(*(uint64_t *)qp_htab_value(&t, 1234), 1234);
	qp_htab_free(&t);
}

/* The same multiset of keys in two orders gives the same table contents
 * (as a set of key -> count), whatever the hash. */
static void test_order_independence(void)
{
	enum { N = 3000, DISTINCT = 1000 };
	uint64_t (*hashes[2])(const void *, size_t) = { NULL, zero_hash };
	unsigned int h, seed = 7;
	struct qp_htab fwd, rev;
	size_t i, diff = 0;
	uint32_t keys[N];

	for (i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		keys[i] = (seed >> 8) % DISTINCT;
	}
	for (h = 0; h < 2; h++) {
		qp_htab_init(&fwd, sizeof(uint64_t));
		qp_htab_init(&rev, sizeof(uint64_t));
		fwd.hash = rev.hash = hashes[h];
		for (i = 0; i < N; i++) {
			uint64_t *a = qp_htab_value(&fwd, (size_t)qp_htab_add(&fwd, &keys[i], 4, NULL));
			uint64_t *b = qp_htab_value(&rev, (size_t)qp_htab_add(&rev, &keys[N - 1 - i], 4, NULL));

			++*a;
			++*b;
		}
		CHECK_INT(fwd.n, rev.n);
		for (i = 0; i < fwd.n; i++) {
			size_t len;
			const char *k = qp_htab_key(&fwd, i, &len);
			int64_t j = qp_htab_find(&rev, k, len);

			if (j < 0 || *(uint64_t *)qp_htab_value(&fwd, i) != *(uint64_t *)qp_htab_value(&rev, (size_t)j))
				diff++;
		}
		CHECK_INT(diff, 0);
		/* the first key seen is entry 0 in each */
		CHECK(!memcmp(qp_htab_key(&fwd, 0, NULL), &keys[0], 4));
		CHECK(!memcmp(qp_htab_key(&rev, 0, NULL), &keys[N - 1], 4));
		qp_htab_free(&fwd);
		qp_htab_free(&rev);
	}
}

/* a hash of few values: runs of colliding keys that wrap round the slots */
static uint64_t weak_hash(const void *key, size_t len)
{
	uint64_t v = 0;

	memcpy(&v, key, len < sizeof(v) ? len : sizeof(v));
	return (v * 0x9e3779b97f4a7c15ull) >> 58;	/* 64 values */
}

/* Random adds and removals against a plain array of what should be there:
 * every key present is found at its index with its value, every key
 * removed is absent, indices stay dense. */
static void churn(uint64_t (*hash)(const void *, size_t), size_t range, size_t rounds)
{
	struct qp_htab t;
	uint32_t *where = calloc(range, sizeof(*where));	/* key -> index + 1 */
	size_t r, k, present = 0, bad = 0, bad_absent = 0, bad_val = 0, dels = 0;
	uint64_t x = 12345;

	qp_htab_init(&t, sizeof(uint64_t));
	t.hash = hash;
	for (r = 0; r < rounds; r++) {
		uint64_t key;
		int64_t i;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		key = (x >> 33) % range;
		i = qp_htab_find_u64(&t, key);
		if ((i >= 0) != (where[key] != 0) || (i >= 0 && (size_t)i != where[key] - 1))
			bad++;
		if (i >= 0 && (x & 1)) {	/* remove it: the last entry takes its index */
			size_t last = t.n - 1;
			uint64_t moved = qp_htab_key_u64(&t, last);

			qp_htab_del(&t, (size_t)i);
			where[key] = 0;
			if ((size_t)i != last)
				where[moved] = (uint32_t)i + 1;
			present--;
			dels++;
		} else if (i < 0) {
			bool made;

			i = qp_htab_add_u64(&t, key, &made);
			if (i != (int64_t)present || !made)
				bad++;
			*(uint64_t *)qp_htab_value(&t, (size_t)i) = key * 7;
			where[key] = (uint32_t)i + 1;
			present++;
		}
	}
	CHECK_INT(t.n, present);
	for (k = 0; k < range; k++) {
		int64_t i = qp_htab_find_u64(&t, k);

		if (!where[k]) {
			bad_absent += i != -ENOENT;
			continue;
		}
		if (i != (int64_t)where[k] - 1)
			bad++;
		else if (*(uint64_t *)qp_htab_value(&t, (size_t)i) != k * 7 || qp_htab_key_u64(&t, (size_t)i) != k)
			bad_val++;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(bad_absent, 0);
	CHECK_INT(bad_val, 0);
	CHECK(dels > rounds / 8);
	CHECK_INT(t.dead, dels * (sizeof(uint64_t) + 1));
	qp_htab_free(&t);
	free(where);
}

static void test_del(void)
{
	struct qp_htab t;
	int64_t a, b, c;

	qp_htab_init(&t, sizeof(struct val));
	a = qp_htab_add_str(&t, "a", NULL);
	b = qp_htab_add_str(&t, "b", NULL);
	c = qp_htab_add_str(&t, "c", NULL);
	CHECK(a == 0 && b == 1 && c == 2);
	((struct val *)qp_htab_value(&t, 2))->tag = 33;
	qp_htab_del(&t, 0);	/* "c" takes index 0, with its value */
	CHECK_INT(t.n, 2);
	CHECK_INT(qp_htab_find_str(&t, "a"), -ENOENT);
	CHECK_INT(qp_htab_find_str(&t, "c"), 0);
	CHECK_INT(((struct val *)qp_htab_value(&t, 0))->tag, 33);
	CHECK_STR(qp_htab_key(&t, 0, NULL), "c");
	CHECK_INT(qp_htab_find_str(&t, "b"), 1);
	qp_htab_del(&t, 1);	/* the last one: nothing moves */
	CHECK_INT(qp_htab_find_str(&t, "b"), -ENOENT);
	CHECK_INT(qp_htab_find_str(&t, "c"), 0);
	qp_htab_del(&t, 0);
	CHECK_INT(t.n, 0);
	CHECK_INT(qp_htab_find_str(&t, "c"), -ENOENT);
	CHECK_INT(qp_htab_add_str(&t, "a", NULL), 0);	/* added again */
	qp_htab_free(&t);
	churn(NULL, 5000, 200000);
	churn(weak_hash, 3000, 100000);	/* 64 hash values: long runs, wrapped */
	churn(zero_hash, 300, 20000);	/* one run holds everything */
}

static void test_fixed(void)
{
	struct qp_htab t;
	struct val *v0;
	size_t i, slots;
	bool made;

	qp_htab_init(&t, sizeof(struct val));
	CHECK_INT(qp_htab_fix(&t, 0), -EINVAL);
	CHECK_INT(qp_htab_fix(&t, QP_HTAB_MAX + 1), -EINVAL);
	CHECK_INT(qp_htab_fix(&t, 1000), 0);
	slots = t.nslot;
	CHECK_INT(slots, 2048);
	CHECK_INT(qp_htab_add_u64(&t, 0, &made), 0);
	v0 = qp_htab_value(&t, 0);
	v0->tag = 7;
	for (i = 1; i < 1000; i++)
		if (qp_htab_add_u64(&t, i, NULL) != (int64_t)i)
			break;
	CHECK_INT(i, 1000);
	/* full: refused, nothing moved, nothing grown */
	CHECK_INT(qp_htab_add_u64(&t, 5000, &made), -ENOSPC);
	CHECK(!made);
	CHECK_INT(qp_htab_add_u64(&t, 999, NULL), 999);	/* one there is still found */
	CHECK(qp_htab_value(&t, 0) == v0 && v0->tag == 7);
	CHECK_INT(t.nslot, slots);
	CHECK_INT(qp_htab_fix(&t, 10), -EINVAL);	/* not empty */
	/* a removal makes room again */
	qp_htab_del(&t, 500);
	CHECK_INT(qp_htab_add_u64(&t, 5000, NULL), 999);
	CHECK_INT(qp_htab_find_u64(&t, 999), 500);
	/* cleared: empty, the same arrays, still fixed */
	qp_htab_clear(&t);
	CHECK_INT(t.n, 0);
	CHECK_INT(t.dead, 0);
	CHECK_INT(qp_htab_find_u64(&t, 1), -ENOENT);
	CHECK_INT(qp_htab_add_u64(&t, 42, NULL), 0);
	CHECK(qp_htab_value(&t, 0) == v0);
	CHECK_INT(t.max, 1000);
	qp_htab_free(&t);
	CHECK_INT(t.max, 0);	/* free forgets it: the table grows again */
	fill_and_check(&t, 3000);
	qp_htab_free(&t);
}

int main(void)
{
	test_siphash();
	test_grow();
	test_collisions();
	test_bytes();
	test_order_independence();
	test_del();
	test_fixed();
	return test_done("hashtab");
}

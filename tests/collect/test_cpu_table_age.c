/* test_cpu_table_age.c - the CPU table's memory bound (cpu_table.c): keys
 * with no recent sample are aged out with their samples counted exactly,
 * freed stack slots are reused under new ids (the old ones stay dead), a
 * long churn of distinct stacks keeps the table at the same bytes, a window
 * (difference of two snapshots, matched as model_cpu_build.c does) stays
 * exact across an aged-out key that comes back, and a refused sample leaves
 * no stack behind. */
#include <errno.h>
#include <stdlib.h>
#include "collect/cpu_table.h"
#include "testlib.h"

static const uint64_t no_scopes[QPROF_SAMPLE_SCOPES];

static bool add(struct qp_cpu_table *t, uint32_t tgid, const uint64_t *k, uint32_t nk,
		const uint64_t *u, uint32_t nu)
{
	struct qp_cpu_sample_in in = { .tgid = tgid, .kern = k, .nkern = nk, .user = u, .nuser = nu,
				       .scopes = no_scopes, .comm = "prog\0\0\0\0\0\0\0\0\0\0\0" };

	return qp_cpu_table_add(t, &in);
}

static uint64_t total(const struct qp_cpu_table *t)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < t->naggs; i++)
		sum += t->aggs[i].count;
	return sum;
}

struct snap {
	size_t n;
	struct qp_cpu_agg *v;
};

static void take(const struct qp_cpu_table *t, struct snap *s)
{
	s->n = t->naggs;
	s->v = malloc((t->naggs ? t->naggs : 1) * sizeof(*s->v));
	if (s->v)
		memcpy(s->v, t->aggs, t->naggs * sizeof(*s->v));
}

/* samples in the window BASE..NOW, as model_cpu_build.c counts them: per key
 * of NOW, its count less the same key's in BASE (whole key compared) */
static uint64_t window(const struct snap *base, const struct snap *now)
{
	uint64_t sum = 0;
	size_t i, j;

	for (i = 0; i < now->n; i++) {
		uint64_t c = now->v[i].count;

		for (j = 0; j < base->n; j++)
			if (!memcmp(&base->v[j].key, &now->v[i].key, sizeof(now->v[i].key)) &&
			    base->v[j].count <= c) {
				c -= base->v[j].count;
				break;
			}
		sum += c;
	}
	return sum;
}

static void churn(void)
{
	uint64_t rec[4][3], u[3], ips[QPROF_STACK_DEPTH];
	struct qp_cpu_table t;
	size_t bytes1200 = 0, n;
	uint32_t s, i, j;
	uint64_t added = 0;
	int32_t first_id = -1;

	qp_cpu_table_init(&t, 1u << 19, 1u << 20, SIZE_MAX);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++)
			rec[i][j] = 0x400000 + 0x1000 * i + j;
	/* 3601 s: each second 6 stacks never seen before, 10 samples of 4
	 * recurring ones; aged every 10 s, keeping 600 s, no floor */
	for (s = 0; s <= 3600; s++) {
		t.now = s;
		for (i = 0; i < 6; i++) {
			u[0] = 0x500000 + s * 8 + i;
			u[1] = 0x600000;
			u[2] = 0x700000;
			CHECK(add(&t, 7, NULL, 0, u, 3));
			added++;
		}
		for (i = 0; i < 10; i++, added++)
			CHECK(add(&t, 7, NULL, 0, rec[i % 4], 3));
		if (s == 0)
			first_id = t.aggs[0].key.user_stack;
		if (s >= 600 && s % 10 == 0)
			CHECK(qp_cpu_table_age(&t, s - 600, 0) >= 0);
		if (s == 1200)
			bytes1200 = qp_cpu_table_bytes(&t);
	}
	/* the last pass (s = 3600) aged every unique key of s < 3000 */
	CHECK_INT(t.aged_keys, 3000 * 6);
	CHECK_INT(t.aged, 3000 * 6);
	CHECK_INT(t.naggs, 601 * 6 + 4);
	CHECK_INT(total(&t) + t.aged, added);
	CHECK_INT(t.nlive, 601 * 6 + 4);
	/* slots reused: at most the live peak, never one per stack ever */
	CHECK(t.nstacks <= 661 * 6 + 4);
	CHECK_INT(qp_cpu_table_bytes(&t), bytes1200);
	/* the first unique stack's id is dead, though its slot holds another */
	CHECK_INT(qp_cpu_table_stack(&t, first_id, ips, QPROF_STACK_DEPTH, &n), -ENOENT);
	qp_cpu_table_free(&t);
}

int main(void)
{
	uint64_t a[3] = { 0x401000, 0x402000, 0x403000 }, b[2] = { 0x501000, 0x403000 };
	uint64_t k[2] = { 0xffffffff81000000ull, 0xffffffff81000100ull }, ips[QPROF_STACK_DEPTH];
	struct qp_cpu_table t;
	struct snap base, now;
	int32_t ida, idb, idk;
	size_t n, bytes;

	/* aging: only keys last seen before the cutoff go, counted exactly */
	qp_cpu_table_init(&t, 1u << 20, 1u << 21, SIZE_MAX);
	t.now = 100;
	CHECK(add(&t, 1, NULL, 0, a, 3));	/* key A: user a */
	CHECK(add(&t, 1, NULL, 0, a, 3));
	CHECK(add(&t, 1, k, 2, b, 2));		/* key B: kernel k, user b */
	t.now = 200;
	CHECK(add(&t, 2, NULL, 0, a, 3));	/* key C: pid 2, user a */
	CHECK_INT(t.naggs, 3);
	ida = t.aggs[0].key.user_stack;
	idk = t.aggs[1].key.kern_stack;
	idb = t.aggs[1].key.user_stack;
	CHECK_INT(qp_cpu_table_age(&t, 100, 0), 0);		/* nothing before 100 */
	CHECK_INT(qp_cpu_table_age(&t, 150, SIZE_MAX), 0);	/* under the floor: nothing */
	CHECK_INT(t.aged, 0);
	CHECK_INT(qp_cpu_table_age(&t, 150, 0), 2);		/* A and B */
	CHECK_INT(t.aged, 3);
	CHECK_INT(t.aged_keys, 2);
	CHECK_INT(t.naggs, 1);
	CHECK_INT(total(&t), 1);
	CHECK_INT(t.nlive, 1);		/* a, still used by C */
	CHECK(!qp_cpu_table_stack(&t, ida, ips, QPROF_STACK_DEPTH, &n) && n == 3 && ips[0] == a[0]);
	CHECK_INT(qp_cpu_table_stack(&t, idb, ips, QPROF_STACK_DEPTH, &n), -ENOENT);
	CHECK_INT(qp_cpu_table_stack(&t, idk, ips, QPROF_STACK_DEPTH, &n), -ENOENT);
	/* b and k again: their slots are reused under new ids, the old stay dead */
	t.now = 300;
	CHECK(add(&t, 1, k, 2, b, 2));
	CHECK_INT(t.nstacks, 3);
	CHECK(t.aggs[1].key.user_stack != idb && t.aggs[1].key.kern_stack != idk);
	CHECK(t.aggs[1].key.user_stack >= 0 && t.aggs[1].key.kern_stack >= 0);
	CHECK_INT(qp_cpu_table_stack(&t, idb, ips, QPROF_STACK_DEPTH, &n), -ENOENT);
	CHECK(!qp_cpu_table_stack(&t, t.aggs[1].key.user_stack, ips, QPROF_STACK_DEPTH, &n) && n == 2 &&
	      ips[0] == b[0]);
	qp_cpu_table_free(&t);

	/* a window across an aged-out key that comes back: exact */
	qp_cpu_table_init(&t, 1u << 20, 1u << 21, SIZE_MAX);
	t.now = 100;
	for (n = 0; n < 5; n++)
		CHECK(add(&t, 1, k, 2, a, 3));	/* K: 5 samples, then idle */
	CHECK(add(&t, 2, k, 2, a, 3));		/* L (pid 2) shares both stacks, stays busy */
	t.now = 500;
	take(&t, &base);
	t.now = 600;
	CHECK(add(&t, 2, k, 2, a, 3));
	t.now = 710;
	CHECK_INT(qp_cpu_table_age(&t, 110, 0), 1);	/* K: idle since 100 */
	CHECK_INT(t.aged, 5);
	t.now = 720;
	for (n = 0; n < 7; n++)
		CHECK(add(&t, 1, k, 2, a, 3));	/* K again: same stacks, same ids */
	t.now = 800;
	take(&t, &now);
	CHECK(base.v && now.v);
	if (base.v && now.v)
		CHECK_INT(window(&base, &now), 8);	/* 1 of L, 7 of K; not 1 + (7 - 5) */
	free(base.v);
	free(now.v);
	qp_cpu_table_free(&t);

	/* a refused sample leaves no stack behind; the byte cap refuses */
	qp_cpu_table_init(&t, 16, 1, SIZE_MAX);
	CHECK(add(&t, 1, k, 2, a, 3));
	CHECK(!add(&t, 1, k + 1, 1, a, 3));	/* a second key: refused */
	CHECK_INT(t.nlive, 2);			/* k+1 not kept */
	CHECK(!add(&t, 1, NULL, 0, b, 2));
	CHECK_INT(t.nlive, 2);			/* nor b */
	CHECK(add(&t, 1, k, 2, a, 3));		/* the known key: counted */
	CHECK_INT(total(&t), 2);
	qp_cpu_table_free(&t);
	qp_cpu_table_init(&t, 3, 16, SIZE_MAX);
	CHECK(add(&t, 1, k, 2, a, 3));
	CHECK(!add(&t, 1, k + 1, 1, b, 2));	/* k+1 fits, b is a fourth stack */
	CHECK_INT(t.nlive, 2);			/* k+1 not kept */
	CHECK(add(&t, 1, k + 1, 1, NULL, 0));	/* room for it again */
	CHECK_INT(total(&t), 2);
	qp_cpu_table_free(&t);
	qp_cpu_table_init(&t, 16, 16, SIZE_MAX);
	CHECK(add(&t, 1, NULL, 0, a, 3));
	bytes = qp_cpu_table_bytes(&t);
	qp_cpu_table_free(&t);
	qp_cpu_table_init(&t, 16, 16, bytes);
	CHECK(add(&t, 1, NULL, 0, a, 3));	/* up to the cap */
	CHECK(!add(&t, 1, NULL, 0, b, 2));	/* beyond it: refused */
	CHECK(!add(&t, 2, NULL, 0, a, 3));	/* a new key too */
	CHECK(add(&t, 1, NULL, 0, a, 3));
	CHECK_INT(qp_cpu_table_bytes(&t), bytes);
	CHECK_INT(t.nlive, 1);
	qp_cpu_table_free(&t);

	churn();
	return test_done("test_cpu_table_age");
}

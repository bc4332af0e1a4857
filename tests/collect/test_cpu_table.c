/* test_cpu_table.c - the daemon's table of CPU samples (cpu_table.c): equal
 * stacks share an id, counts add up exactly, a forgotten process frees the
 * stacks only it used while the others keep their ids and frames, ids are
 * never reused, the caps refuse (to be counted lost), and 200,000 distinct
 * stacks (more than any kernel stack map of ours held) are all kept; a ring
 * thread's open scopes are part of the key and interned like stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

static const struct qp_cpu_agg *find(const struct qp_cpu_table *t, uint32_t tgid, uint64_t leaf)
{
	uint64_t ips[QPROF_STACK_DEPTH];
	size_t i, n;

	for (i = 0; i < t->naggs; i++) {
		if (t->aggs[i].key.tgid != tgid)
			continue;
		if (!qp_cpu_table_stack(t, t->aggs[i].key.user_stack, ips, QPROF_STACK_DEPTH, &n) && n &&
		    ips[0] == leaf)
			return &t->aggs[i];
	}
	return NULL;
}

static uint64_t total(const struct qp_cpu_table *t)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < t->naggs; i++)
		sum += t->aggs[i].count;
	return sum;
}

int main(void)
{
	struct qp_cpu_table t;
	uint64_t a[3] = { 0x401000, 0x402000, 0x403000 }, b[2] = { 0x501000, 0x403000 };
	uint64_t k[2] = { 0xffffffff81000000ull, 0xffffffff81000100ull }, ips[QPROF_STACK_DEPTH];
	const struct qp_cpu_agg *x, *y;
	int32_t ida, idb;
	size_t n, i;

	qp_cpu_table_init(&t, 1u << 20, 1u << 21, SIZE_MAX);
	/* equal stacks: one key, one id; counts add up */
	CHECK(add(&t, 10, NULL, 0, a, 3));
	CHECK(add(&t, 10, NULL, 0, a, 3));
	CHECK(add(&t, 10, k, 2, a, 3));
	CHECK(add(&t, 20, NULL, 0, b, 2));
	CHECK(add(&t, 20, NULL, 0, a, 3));	/* pid 20 uses a's stack too */
	CHECK_INT(t.naggs, 4);
	CHECK_INT(t.nlive, 3);
	CHECK_INT(total(&t), 5);
	x = find(&t, 10, a[0]);
	CHECK(x && x->key.kern_stack == -1 && x->count == 2);
	CHECK(x && !strcmp(x->comm, "prog"));
	ida = x ? x->key.user_stack : -1;
	CHECK(!qp_cpu_table_stack(&t, ida, ips, QPROF_STACK_DEPTH, &n));
	CHECK_INT(n, 3);
	CHECK(n == 3 && ips[0] == a[0] && ips[1] == a[1] && ips[2] == a[2]);
	y = find(&t, 20, b[0]);
	idb = y ? y->key.user_stack : -1;
	CHECK(idb >= 0 && idb != ida);
	CHECK_INT(qp_cpu_table_stack(&t, -1, ips, QPROF_STACK_DEPTH, &n), -ENOENT);
	CHECK_INT(qp_cpu_table_stack(&t, 99, ips, QPROF_STACK_DEPTH, &n), -ENOENT);
	CHECK(!qp_cpu_table_stack(&t, ida, ips, 2, &n) && n == 2);	/* MAX frames */

	/* forget pid 20: b's stack is freed, a's (used by pid 10) stays */
	CHECK_INT(qp_cpu_table_forget(&t, 20), 0);
	CHECK_INT(t.naggs, 2);
	CHECK_INT(total(&t), 3);
	CHECK_INT(t.nlive, 2);	/* a and k */
	CHECK_INT(qp_cpu_table_stack(&t, idb, ips, QPROF_STACK_DEPTH, &n), -ENOENT);
	CHECK(!qp_cpu_table_stack(&t, ida, ips, QPROF_STACK_DEPTH, &n) && n == 3 && ips[0] == a[0]);
	x = find(&t, 10, a[0]);
	CHECK(x && x->key.user_stack == ida);
	/* b again: a new id, never the freed one */
	CHECK(add(&t, 30, NULL, 0, b, 2));
	y = find(&t, 30, b[0]);
	CHECK(y && y->key.user_stack != idb && y->key.user_stack > ida);
	CHECK_INT(qp_cpu_table_forget(&t, 12345), 0);	/* unknown pid: nothing */
	CHECK_INT(t.naggs, 3);
	qp_cpu_table_free(&t);

	/* caps: a new stack or a new key beyond them is refused */
	qp_cpu_table_init(&t, 2, 3, SIZE_MAX);
	CHECK(add(&t, 1, NULL, 0, a, 3));
	CHECK(add(&t, 1, NULL, 0, b, 2));
	CHECK(!add(&t, 1, k, 2, NULL, 0));	/* a third stack */
	CHECK(add(&t, 2, NULL, 0, a, 3));	/* a third key, known stack */
	CHECK(!add(&t, 3, NULL, 0, a, 3));	/* a fourth key */
	CHECK(add(&t, 1, NULL, 0, a, 3));	/* known key: counted */
	CHECK_INT(total(&t), 4);
	qp_cpu_table_free(&t);

	/* many distinct stacks, with forgets between: all kept, exactly */
	qp_cpu_table_init(&t, 1u << 20, 1u << 21, SIZE_MAX);
	for (i = 0; i < 200000; i++) {
		uint64_t s[4] = { 0x400000 + i, 0x410000 + (i >> 3), 0x420000 + (i >> 7), 0x430000 };

		if (!add(&t, 1 + (uint32_t)(i % 4), NULL, 0, s, 4))
			break;
		if (i == 100000)
			qp_cpu_table_forget(&t, 4);	/* i = 3, 7, .. 99999: 25,000 freed */
	}
	CHECK_INT(i, 200000);
	CHECK_INT(total(&t), 200000 - 25000);
	CHECK_INT(t.nlive, 200000 - 25000);
	for (i = 0, n = 0; i < t.naggs; i++) {
		size_t m;

		if (!qp_cpu_table_stack(&t, t.aggs[i].key.user_stack, ips, QPROF_STACK_DEPTH, &m) &&
		    m == 4 && ips[0] - 0x400000 < 200000 && ips[1] == 0x410000 + ((ips[0] - 0x400000) >> 3))
			n++;
	}
	CHECK_INT(n, t.naggs);
	qp_cpu_table_free(&t);

	/* a ring thread's open scopes: part of the key, interned like a stack
	 * (their list read back whole, 32 deep), freed with the last key */
	qp_cpu_table_init(&t, 1u << 20, 1u << 21, SIZE_MAX);
	{
		uint64_t open8[8], open32[32];
		struct qp_cpu_sample_in in = { .tgid = 5, .user = a, .nuser = 3, .scopes = no_scopes,
					       .comm = "prog\0\0\0\0\0\0\0\0\0\0\0" };
		size_t live0;

		for (i = 0; i < 32; i++)
			open32[i] = 0x600000 + 64 * i;
		memcpy(open8, open32, sizeof(open8));
		CHECK(qp_cpu_table_add(&t, &in));	/* no open scopes */
		in.open = open8;
		in.nopen = 8;
		CHECK(qp_cpu_table_add(&t, &in));
		CHECK(qp_cpu_table_add(&t, &in));
		in.open = open32;
		in.nopen = 32;
		CHECK(qp_cpu_table_add(&t, &in));
		CHECK_INT(t.naggs, 3);
		CHECK_INT(total(&t), 4);
		for (i = 0, n = 0; i < t.naggs; i++) {
			size_t m = 0;

			if (t.aggs[i].key.open_stack < 0) {
				CHECK_INT(t.aggs[i].count, 1);
				continue;
			}
			CHECK_INT(qp_cpu_table_stack(&t, t.aggs[i].key.open_stack, ips, QPROF_STACK_DEPTH, &m), 0);
			CHECK(m == 8 || m == 32);
			CHECK_INT(t.aggs[i].count, m == 8 ? 2 : 1);
			CHECK(m && ips[0] == 0x600000 && ips[m - 1] == 0x600000 + 64 * (m - 1));
			n++;
		}
		CHECK_INT(n, 2);
		live0 = t.nlive;
		CHECK_INT(live0, 3);		/* the user stack and the two lists */
		qp_cpu_table_forget(&t, 5);
		CHECK_INT(t.nlive, 0);
	}
	qp_cpu_table_free(&t);

	/* the span open on the thread is part of the key: the same stack under
	 * two span ids is two keys, under the same one key; an id without a
	 * site (no span) counts as none */
	qp_cpu_table_init(&t, 1u << 20, 1u << 21, SIZE_MAX);
	{
		struct qp_cpu_sample_in in = { .tgid = 6, .tid = 7, .user = a, .nuser = 3, .scopes = no_scopes,
					       .comm = "prog\0\0\0\0\0\0\0\0\0\0\0" };
		size_t spanned = 0;

		CHECK(qp_cpu_table_add(&t, &in));		/* no span */
		in.span_id = 42;
		CHECK(qp_cpu_table_add(&t, &in));		/* an id, no site: still none */
		in.span_site = 0x700000;
		CHECK(qp_cpu_table_add(&t, &in));
		CHECK(qp_cpu_table_add(&t, &in));
		in.span_id = 43;
		CHECK(qp_cpu_table_add(&t, &in));
		CHECK_INT(t.naggs, 3);
		CHECK_INT(total(&t), 5);
		CHECK_INT(t.nlive, 1);				/* one stack for all */
		for (i = 0; i < t.naggs; i++) {
			const struct sample_key *k = &t.aggs[i].key;

			if (!k->span_site) {
				CHECK(k->span_id == 0 && t.aggs[i].count == 2);
				continue;
			}
			CHECK(k->span_site == 0x700000);
			CHECK((k->span_id == 42 && t.aggs[i].count == 2) || (k->span_id == 43 && t.aggs[i].count == 1));
			spanned++;
		}
		CHECK_INT(spanned, 2);
	}
	qp_cpu_table_free(&t);
	return test_done("test_cpu_table");
}

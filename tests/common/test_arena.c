/* test_arena.c - common/arena.c: alignment, exact accounting, big requests
 * in chunks of their own behind the current one, strings, limits. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "common/arena.h"
#include "testlib.h"

static void test_small(void)
{
	struct qp_arena *a = qp_arena_new();
	char *p[1000];
	size_t i;
	bool zero = true, aligned = true;

	CHECK(a != NULL);
	CHECK_INT(qp_arena_used(a), 0);
	CHECK_INT(qp_arena_reserved(a), 0);
	for (i = 0; i < 1000; i++) {
		unsigned char *q = qp_arena_alloc(a, 24);
		size_t k;

		aligned &= ((uintptr_t)q & 15) == 0;
		for (k = 0; k < 24; k++)
			zero &= q[k] == 0;
		memset(q, 0xab, 24);
		p[i] = (char *)q;
	}
	CHECK(aligned);
	CHECK(zero);
	/* 24 bytes at 16-byte alignment: 32 a piece but the last, 64 KiB chunks */
	CHECK_INT(qp_arena_reserved(a), QP_ARENA_CHUNK);
	CHECK_INT(qp_arena_used(a), 999 * 32 + 24);
	for (i = 0; i < 1000; i++)	/* nothing overlapped */
		CHECK_INT((unsigned char)p[i][23], 0xab);
	/* the chunk runs out: a second one */
	for (i = 0; i < 1100; i++)
		qp_arena_alloc(a, 32);
	CHECK_INT(qp_arena_reserved(a), 2 * QP_ARENA_CHUNK);
	qp_arena_free(a);
	qp_arena_free(NULL);
}

static void test_strings(void)
{
	struct qp_arena *a = qp_arena_new();
	const char *s[3];
	char *n;

	s[0] = qp_arena_strdup(a, "abc");
	s[1] = qp_arena_strdup(a, "");
	s[2] = qp_arena_strdup(a, "defg");
	n = qp_arena_strndup(a, "xyz-not-this", 3);
	CHECK_STR(s[0], "abc");
	CHECK_STR(s[1], "");
	CHECK_STR(s[2], "defg");
	CHECK_STR(n, "xyz");
	/* strings pack: 4 + 1 + 5 + 4 bytes, no padding */
	CHECK_INT(qp_arena_used(a), 14);
	CHECK(s[1] == s[0] + 4 && s[2] == s[1] + 1);
	/* an allocation after a string is aligned again */
	CHECK_INT((uintptr_t)qp_arena_alloc(a, 1) & 15, 0);
	CHECK_INT(qp_arena_used(a), 17);
	qp_arena_free(a);
}

static void test_big(void)
{
	struct qp_arena *a = qp_arena_new();
	char *small = qp_arena_alloc(a, 100), *big, *after;
	size_t n = QP_ARENA_CHUNK / 4 + 1;

	/* more than a quarter chunk: its own chunk, exactly that size */
	big = qp_arena_alloc(a, n);
	CHECK(big != NULL);
	CHECK_INT(qp_arena_reserved(a), QP_ARENA_CHUNK + n);
	CHECK_INT(qp_arena_used(a), 100 + n);
	big[n - 1] = 1;
	/* and the first chunk keeps being filled */
	after = qp_arena_alloc(a, 100);
	CHECK(after == small + 112);
	CHECK_INT(qp_arena_reserved(a), QP_ARENA_CHUNK + n);
	/* exactly a quarter chunk is still cut from the current one */
	CHECK(qp_arena_alloc(a, QP_ARENA_CHUNK / 4) == after + 112);
	CHECK_INT(qp_arena_reserved(a), QP_ARENA_CHUNK + n);
	/* refused sizes */
	CHECK(qp_arena_alloc(a, QP_ARENA_MAX + 1) == NULL);
	CHECK(qp_arena_alloc(a, SIZE_MAX) == NULL);
	CHECK(qp_arena_strndup(a, "x", SIZE_MAX) == NULL);
	CHECK_INT(qp_arena_reserved(a), QP_ARENA_CHUNK + n);
	qp_arena_free(a);

	/* a big request first: it becomes the head, small ones go elsewhere */
	a = qp_arena_new();
	big = qp_arena_alloc(a, n);
	CHECK_INT(qp_arena_reserved(a), n);
	small = qp_arena_alloc(a, 8);
	CHECK(small != NULL);
	CHECK_INT(qp_arena_reserved(a), n + QP_ARENA_CHUNK);
	qp_arena_free(a);
}

int main(void)
{
	test_small();
	test_strings();
	test_big();
	return test_done("arena");
}

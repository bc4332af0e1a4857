/* test_grow.c - qp_grow (util.h), the one growth helper for arrays: the
 * capacity doubles from 16 or jumps to what is asked, the contents stay,
 * and a size that would overflow a size_t, a zero element size or a
 * failed allocation give -ENOMEM with the array and its capacity as they
 * were. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "testlib.h"
#include "common/util.h"

struct pair {
	uint64_t a, b;
};

static void check_growth(void)
{
	int *v = NULL;
	size_t cap = 0, i;

	CHECK_INT(qp_grow(&v, &cap, 1, sizeof(*v)), 0);
	CHECK(v != NULL);
	CHECK_INT(cap, 16);
	for (i = 0; i < 16; i++)
		v[i] = (int)i * 3;
	CHECK_INT(qp_grow(&v, &cap, 16, sizeof(*v)), 0);	/* room already */
	CHECK_INT(cap, 16);
	CHECK_INT(qp_grow(&v, &cap, 17, sizeof(*v)), 0);
	CHECK_INT(cap, 32);
	CHECK_INT(qp_grow(&v, &cap, 1000, sizeof(*v)), 0);	/* doubled until enough */
	CHECK_INT(cap, 1024);
	for (i = 0; i < 16; i++)
		CHECK_INT(v[i], (int)i * 3);
	v[1023] = 7;
	CHECK_INT(v[1023], 7);
	free(v);
}

static void check_overflow(void)
{
	struct pair *v = NULL, *was;
	size_t cap = 0;

	CHECK_INT(qp_grow(&v, &cap, 4, sizeof(*v)), 0);
	was = v;
	v[3].a = 42;
	/* NEED * ELEM past SIZE_MAX */
	CHECK_INT(qp_grow(&v, &cap, SIZE_MAX / sizeof(*v) + 1, sizeof(*v)), -ENOMEM);
	CHECK(v == was);
	CHECK_INT(cap, 16);
	CHECK_INT(qp_grow(&v, &cap, SIZE_MAX, 2), -ENOMEM);
	CHECK_INT(qp_grow(&v, &cap, SIZE_MAX, 1), -ENOMEM);	/* fits, no such memory */
	CHECK(v == was);
	CHECK_INT(cap, 16);
	/* fits in a size_t, not in memory: realloc fails, nothing changes */
	CHECK_INT(qp_grow(&v, &cap, SIZE_MAX / 4 / sizeof(*v), sizeof(*v)), -ENOMEM);
	CHECK(v == was);
	CHECK_INT(cap, 16);
	CHECK_INT(v[3].a, 42);
	/* no element size: refused */
	CHECK_INT(qp_grow(&v, &cap, 100, 0), -ENOMEM);
	CHECK_INT(cap, 16);
	free(v);
}

/* A capacity already past half of SIZE_MAX cannot double: the capacity
 * asked for is what it gets (refused here, for want of memory). */
static void check_doubling_limit(void)
{
	char *v = NULL;
	size_t cap = SIZE_MAX / 2 + 2;

	CHECK_INT(qp_grow(&v, &cap, SIZE_MAX - 1, 1), -ENOMEM);
	CHECK(v == NULL);
	CHECK_INT(cap == SIZE_MAX / 2 + 2, 1);
}

int main(void)
{
	check_growth();
	check_overflow();
	check_doubling_limit();
	return test_done("test_grow");
}

/* test_stackstats.c - common/stackstats.c: self and total per function,
 * recursion counted once per stack, the caller's extra bytes, order of
 * first appearance. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "common/stackstats.h"
#include "testlib.h"

struct extra {
	const char *tag;
	uint32_t seen;
};

/* STACK: frames separated by ';', root first. */
static void add(struct qp_stackstats *s, const char *stack, uint64_t count)
{
	const char *p = stack;

	qp_stackstats_stack(s, count);
	while (*p) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool made;
		int64_t i = qp_stackstats_frame(s, p, len, !e, &made);
		struct extra *x;

		CHECK(i >= 0);
		x = qp_stackstats_extra(s, (size_t)i);
		if (made)
			x->tag = "new";
		x->seen++;
		p += len + (e ? 1 : 0);
	}
}

static const struct qp_fnstat *get(struct qp_stackstats *s, const char *name)
{
	int64_t i = qp_htab_find_str(&s->fn, name);

	return i < 0 ? NULL : qp_stackstats_at(s, (size_t)i);
}

int main(void)
{
	struct qp_stackstats s;
	const struct qp_fnstat *f;
	size_t len;

	qp_stackstats_init(&s, sizeof(struct extra));
	add(&s, "a;b;c", 3);
	add(&s, "a;b;a", 2);	/* a recurses: its total counts this stack once */
	add(&s, "b", 1);
	add(&s, "c;c;c", 4);
	CHECK_INT(s.samples, 10);
	CHECK_INT(s.nstacks, 4);
	CHECK_INT(qp_stackstats_count(&s), 3);
	f = get(&s, "a");
	CHECK(f && f->total == 5 && f->self == 2);
	f = get(&s, "b");
	CHECK(f && f->total == 6 && f->self == 1);
	f = get(&s, "c");
	CHECK(f && f->total == 7 && f->self == 7);
	/* numbered in order of first appearance */
	CHECK_STR(qp_stackstats_key(&s, 0, &len), "a");
	CHECK_STR(qp_stackstats_key(&s, 1, NULL), "b");
	CHECK_STR(qp_stackstats_key(&s, 2, NULL), "c");
	CHECK_INT(len, 1);
	/* the extra bytes: set once, kept through the table's growth */
	CHECK_STR(((struct extra *)qp_stackstats_extra(&s, 0))->tag, "new");
	CHECK_INT(((struct extra *)qp_stackstats_extra(&s, 0))->seen, 3);
	CHECK_INT(((struct extra *)qp_stackstats_extra(&s, 2))->seen, 4);
	/* a stack of 0 samples counts nothing but is a stack */
	add(&s, "a", 0);
	f = get(&s, "a");
	CHECK(f && f->total == 5 && f->self == 2);
	qp_stackstats_free(&s);
	CHECK_INT(s.samples, 0);
	CHECK_INT(qp_stackstats_count(&s), 0);

	/* many functions: counts stay exact through growth */
	{
		char key[16];
		size_t i, bad = 0;

		qp_stackstats_init(&s, 0);
		for (i = 0; i < 5000; i++) {
			qp_stackstats_stack(&s, i + 1);
			snprintf(key, sizeof(key), "f%zu", i % 1000);
			qp_stackstats_frame(&s, key, strlen(key), false, NULL);
			qp_stackstats_frame(&s, "leaf", 4, true, NULL);
		}
		for (i = 0; i < 1000; i++) {
			uint64_t want = 0, k;

			for (k = i; k < 5000; k += 1000)
				want += k + 1;
			snprintf(key, sizeof(key), "f%zu", i);
			f = get(&s, key);
			if (!f || f->total != want || f->self)
				bad++;
		}
		CHECK_INT(bad, 0);
		f = get(&s, "leaf");
		CHECK(f && f->self == 5000ull * 5001 / 2 && f->total == f->self);
		CHECK_INT(qp_stackstats_count(&s), 1001);
		qp_stackstats_free(&s);
	}
	return test_done("stackstats");
}

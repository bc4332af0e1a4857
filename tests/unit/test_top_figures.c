/* test_top_figures.c - `qprof-cli top`'s figures without a daemon
 * (cli/top_figures.c): self and total out of folded stacks (the comm
 * dropped, recursion once per stack, unsymbolized frames grouped per
 * module, lines without a count skipped), the two sort orders, the scope
 * rows and the --json document. */
#include <errno.h>
#include <stdlib.h>
#include "cli.h"
#include "top.h"
#include "testlib.h"

static const struct fn_row *fn(const struct round *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nfns; i++)
		if (!strcmp(r->fns[i].name, name))
			return &r->fns[i];
	return NULL;
}

static void test_folded(void)
{
	char text[] = "strat;main;calc;calc;leaf 3\n"
		      "strat;main;libc.so.6+0x1a2b;libc.so.6+0xff 2\n"
		      "other;main 5\n"
		      "strat;main;calc 0\n"		/* no samples: skipped */
		      "garbage line\n"
		      "strat;[vdso]+0x10 1\n"
		      "onlycomm 4";			/* no frame: samples, no function */
	struct round *r = calloc(1, sizeof(*r));
	const struct fn_row *f;

	r->interval = 2;
	CHECK_INT(top_take_folded(r, text, strlen(text)), 0);
	CHECK_INT(r->samples, 15);
	CHECK_INT(r->nfns, 5);	/* main calc leaf libc.so.6 [vdso] */
	f = fn(r, "main");
	CHECK(f && f->total == 10 && f->self == 5);
	f = fn(r, "calc");
	CHECK(f && f->total == 3 && f->self == 0);	/* recursion counted once */
	f = fn(r, "leaf");
	CHECK(f && f->total == 3 && f->self == 3);
	f = fn(r, "libc.so.6");	/* two addresses, one row, once per stack */
	CHECK(f && f->total == 2 && f->self == 2);
	f = fn(r, "[vdso]");
	CHECK(f && f->total == 1 && f->self == 1);
	CHECK(fn(r, "strat") == NULL && fn(r, "other") == NULL && fn(r, "onlycomm") == NULL);

	top_sort_round(r, FS_SELF, SS_BUSY);
	CHECK_STR(r->fns[0].name, "main");	/* self 5 */
	CHECK_STR(r->fns[1].name, "leaf");	/* self 3 */
	CHECK_STR(r->fns[2].name, "libc.so.6");	/* self 2 */
	CHECK_STR(r->fns[3].name, "[vdso]");
	CHECK_STR(r->fns[4].name, "calc");
	top_sort_round(r, FS_TOTAL, SS_BUSY);
	CHECK_STR(r->fns[0].name, "main");	/* total 10 */
	CHECK_STR(r->fns[1].name, "leaf");	/* total 3, self 3 before calc's self 0 */
	CHECK_STR(r->fns[2].name, "calc");
	CHECK_STR(r->fns[3].name, "libc.so.6");
	top_round_free(r);
}

static void test_scopes_json(void)
{
	const char *doc = "{\"scopes\":[{\"pid\":7,\"name\":\"a\",\"parent\":null,\"kind\":\"scope\","
			  "\"count\":10,\"p50_ns\":100,\"p99_ns\":200,\"p999_ns\":300,\"max_ns\":400,"
			  "\"total_ns\":5000},{\"pid\":7,\"name\":\"m\",\"kind\":\"mark\",\"count\":40}]}";
	char text[] = "s;f 4\n";
	struct round *r = calloc(1, sizeof(*r));
	json_t *root = json_loads(doc, 0, NULL), *out;
	char *s;

	r->interval = 2;
	r->pid = 7;
	CHECK_INT(top_take_scopes(r, root), 0);
	CHECK_INT(top_take_folded(r, text, strlen(text)), 0);
	CHECK_INT(r->nscopes, 2);
	top_sort_round(r, FS_SELF, SS_RATE);
	CHECK_STR(r->scopes[0].name, "m");	/* rate 20/s before 5/s */
	top_sort_round(r, FS_SELF, SS_BUSY);
	CHECK_STR(r->scopes[0].name, "a");	/* timed rows first */
	out = top_round_json(r);
	s = json_dumps(out, JSON_COMPACT);
	CHECK_STR(s, "{\"interval_s\":2,\"pid\":7,\"samples\":4,\"functions\":[{\"name\":\"f\","
		  "\"self_pct\":100.0,\"total_pct\":100.0,\"samples\":4,\"total_samples\":4}],"
		  "\"scopes\":[{\"name\":\"a\",\"parent\":null,\"kind\":\"scope\",\"pid\":7,"
		  "\"rate_per_s\":5.0,\"p50_ns\":100.0,\"p99_ns\":200.0,\"p999_ns\":300.0,"
		  "\"max_ns\":400.0,\"total_ns\":5000.0},{\"name\":\"m\",\"parent\":null,"
		  "\"kind\":\"mark\",\"pid\":7,\"rate_per_s\":20.0,\"p50_ns\":null,\"p99_ns\":null,"
		  "\"p999_ns\":null,\"max_ns\":null,\"total_ns\":null}]}");
	free(s);
	json_decref(out);
	CHECK_INT(top_take_scopes(r, json_object()), -EPROTO);
	json_decref(root);
	top_round_free(r);
}

int main(void)
{
	test_folded();
	test_scopes_json();
	return test_done("top_figures");
}

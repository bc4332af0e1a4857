/* test_top_figures.c - `qprof-cli top`'s figures without a daemon
 * (cli/top_figures.c): self and total out of folded stacks (the comm
 * dropped, recursion once per stack, unsymbolized frames grouped per
 * module, lines without a count skipped), the two sort orders, the scope
 * rows and the --json document; the scopes' off-CPU columns of a frame
 * (cli/top_draw.c) at 80, 120 and unlimited columns. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/top.h"
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
		  "\"max_ns\":400.0,\"total_ns\":5000.0,\"off_cpu_ns\":null,\"voluntary_switches\":null,"
		  "\"involuntary_switches\":null},{\"name\":\"m\",\"parent\":null,"
		  "\"kind\":\"mark\",\"pid\":7,\"rate_per_s\":20.0,\"p50_ns\":null,\"p99_ns\":null,"
		  "\"p999_ns\":null,\"max_ns\":null,\"total_ns\":null,\"off_cpu_ns\":null,"
		  "\"voluntary_switches\":null,\"involuntary_switches\":null}]}");
	free(s);
	json_decref(out);
	CHECK_INT(top_take_scopes(r, json_object()), -EPROTO);
	json_decref(root);
	top_round_free(r);
}

/* A plain frame of R at WIDTH (0: unlimited), as text (malloc'ed). */
static char *frame(const struct round *r, int width)
{
	struct top_screen sc = { .width = width };

	qp_buf_init(&sc.b);
	top_draw_frame(&sc, r, 7, 2, 0, FS_SELF, SS_BUSY, NULL);
	CHECK(!sc.b.failed);
	return sc.b.data;
}

/* The cells of the scope line that starts with NAME, split at blanks. */
static int cells(const char *text, const char *name, char out[][32], int max)
{
	const char *l = text;
	int n = 0;

	while (l && *l) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);

		if (!strncmp(l, name, strlen(name)) && l[strlen(name)] == ' ') {
			char line[512], *tok, *save;

			snprintf(line, sizeof(line), "%.*s", (int)len, l);
			for (tok = strtok_r(line, " ", &save); tok && n < max; tok = strtok_r(NULL, " ", &save))
				snprintf(out[n++], 32, "%s", tok);
			return n;
		}
		l = e ? e + 1 : NULL;
	}
	return 0;
}

static size_t longest_line(const char *text)
{
	size_t best = 0;

	while (*text) {
		size_t len = strcspn(text, "\n");

		best = len > best ? len : best;
		text += len + (text[len] == '\n');
	}
	return best;
}

/* The off-CPU columns: drawn when a row has kernel figures and the frame
 * is unlimited or 100 columns or more; the figures in ms and switches. */
static void test_kernel_columns(void)
{
	const char *doc = "{\"scopes\":[{\"pid\":7,\"name\":\"tick\",\"parent\":null,\"kind\":\"scope\","
			  "\"count\":500,\"p50_ns\":20000,\"p99_ns\":2100000,\"p999_ns\":2100000,"
			  "\"max_ns\":2200000,\"total_ns\":50000000,\"off_cpu_ns\":20345678,"
			  "\"voluntary_switches\":10,\"involuntary_switches\":3},"
			  "{\"pid\":7,\"name\":\"m\",\"kind\":\"mark\",\"count\":40,\"off_cpu_ns\":null}]}";
	const char *plain = "{\"scopes\":[{\"pid\":7,\"name\":\"tick\",\"parent\":null,\"kind\":\"scope\","
			    "\"count\":500,\"p50_ns\":20000,\"p99_ns\":2100000,\"p999_ns\":2100000,"
			    "\"max_ns\":2200000,\"total_ns\":50000000}]}";
	char text[] = "s;f 4\n", text2[] = "s;f 4\n", c[16][32], *f;
	struct round *r = calloc(1, sizeof(*r)), *r2 = calloc(1, sizeof(*r2));
	json_t *root = json_loads(doc, 0, NULL), *root2 = json_loads(plain, 0, NULL), *out;
	int n;

	r->interval = r2->interval = 2;
	r->pid = r2->pid = 7;
	CHECK_INT(top_take_scopes(r, root), 0);
	CHECK_INT(top_take_folded(r, text, strlen(text)), 0);
	r->filled = true;
	CHECK(r->kernel);
	CHECK(r->scopes[0].has_kernel && !r->scopes[1].has_kernel);
	top_sort_round(r, FS_SELF, SS_BUSY);
	f = frame(r, 0);
	CHECK(strstr(f, "NAME  ") && strstr(f, "TOTAL*   OFF ms   SWITCH\n"));
	n = cells(f, "tick", c, 16);
	CHECK_INT(n, 15);	/* name, parent, rate, 5 durations of 2 cells, off ms, switches */
	if (n == 15) {
		CHECK_STR(c[2], "250");		/* 500 in 2 s */
		CHECK_STR(c[13], "20.35");	/* off-CPU ms */
		CHECK_STR(c[14], "13");		/* 10 + 3 switches */
	}
	n = cells(f, "m", c, 16);
	CHECK(n >= 2 && !strcmp(c[n - 2], "-") && !strcmp(c[n - 1], "-"));	/* a mark has none */
	free(f);
	f = frame(r, 120);
	CHECK(strstr(f, "OFF ms") && longest_line(f) <= 120);
	n = cells(f, "tick", c, 16);
	CHECK(n == 15 && !strcmp(c[13], "20.35") && !strcmp(c[14], "13"));
	free(f);
	f = frame(r, 80);	/* no room: the columns of before */
	CHECK(!strstr(f, "OFF ms") && !strstr(f, "SWITCH") && longest_line(f) <= 80);
	CHECK(strstr(f, "TOTAL*\n") != NULL);
	free(f);
	out = top_round_json(r);
	CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(out, "scopes"), 0),
						 "off_cpu_ns")) == 20345678);
	json_decref(out);

	/* a daemon without kernel figures: no columns even when unlimited */
	CHECK_INT(top_take_scopes(r2, root2), 0);
	CHECK_INT(top_take_folded(r2, text2, strlen(text2)), 0);
	r2->filled = true;
	CHECK(!r2->kernel);
	f = frame(r2, 0);
	CHECK(!strstr(f, "OFF ms") && strstr(f, "TOTAL*\n"));
	free(f);
	/* a P50 of 0 after the BPF collector's calibration is a bound */
	{
		const char *cal = "{\"scopes\":[{\"pid\":7,\"name\":\"tiny\",\"parent\":null,"
				  "\"kind\":\"scope\",\"count\":500,\"p50_ns\":0,\"p99_ns\":900,"
				  "\"p999_ns\":900,\"max_ns\":900,\"total_ns\":90000,\"calibration_ns\":691}]}";
		struct round *r3 = calloc(1, sizeof(*r3));
		json_t *root3 = json_loads(cal, 0, NULL);
		char text3[] = "s;f 4\n";

		r3->interval = 2;
		r3->pid = 7;
		CHECK_INT(top_take_scopes(r3, root3), 0);
		CHECK_INT(top_take_folded(r3, text3, strlen(text3)), 0);
		r3->filled = true;
		f = frame(r3, 0);
		n = cells(f, "tiny", c, 16);
		CHECK(n >= 5 && !strcmp(c[3], "<691") && !strcmp(c[4], "ns") && !strcmp(c[5], "900"));
		free(f);
		json_decref(root3);
		top_round_free(r3);
	}
	json_decref(root);
	json_decref(root2);
	top_round_free(r);
	top_round_free(r2);
}

int main(void)
{
	test_folded();
	test_scopes_json();
	test_kernel_columns();
	return test_done("top_figures");
}

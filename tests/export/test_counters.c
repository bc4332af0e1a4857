/* test_counters.c - the counter tables of counters.h against what the
 * encoders write, without root: every field a row names is filled with a
 * value of its own, then each row of the status, lifecycle and target ring
 * tables must be in the JSON at its path with that value (in the JSON's
 * unit), and each row with a metric in /metrics as a family of its own (or
 * its label's) with the same value (in seconds for the ns units), its HELP
 * and TYPE, a name that ends as its unit and kind say (_total for a
 * counter, _seconds, _bytes, _hertz). No two rows share a field, a key of
 * one object or a family.
 *
 * `test_counters --print` writes the filled model's /metrics text for
 * `promtool check metrics` (ctest unit_counters_promtool). */
#include <jansson.h>
#include <stdlib.h>
#include "common/buf.h"
#include "export/export_counters.h"
#include "export/export_json.h"
#include "export/export_metrics.h"
#include "export/export_targets.h"
#include "testlib.h"

/* A raw value of its own for each row, in table order. */
struct fill {
	uint64_t n;
	double raw[64 * 16];
	size_t k;
};

static double next_value(struct fill *f, enum qp_counter_kind kind)
{
	f->n++;
	if (kind == QP_CK_FLAG)
		return 1;
	if (kind == QP_CK_REAL)
		return 0.25 + (double)f->n;
	/* large, odd, and not a multiple of 1000: unit conversions show */
	return (double)(1000003 * f->n + 1234567891ull * (f->n % 3));
}

/* FROM = a fresh value; its raw value recorded */
#define FILL_ROW(kind, key, from, unit, metric, label, help)                                                   \
	do {                                                                                                   \
		double v_ = next_value(f, kind);                                                               \
		(from) = (__typeof__(from))v_;                                                                 \
		f->raw[f->k++] = v_;                                                                           \
	} while (0);

static void fill_status(struct qp_status_model *s, struct fill *f)
{
	QP_CTR_CPU(FILL_ROW)
	QP_CTR_CPU_UNWIND(FILL_ROW)
	QP_CTR_OFFCPU(FILL_ROW)
	QP_CTR_OFFCPU_SLOW(FILL_ROW)
	QP_CTR_SCOPES(FILL_ROW)
	QP_CTR_SCOPE_DROPS(FILL_ROW)
	QP_CTR_SCOPES_MINMAX(FILL_ROW)
	QP_CTR_SCOPES_POLL(FILL_ROW)
	QP_CTR_SCOPES_SPANS(FILL_ROW)
	QP_CTR_LOGS(FILL_ROW)
	QP_CTR_VALUES(FILL_ROW)
	QP_CTR_MARKS(FILL_ROW)
	QP_CTR_TRACE(FILL_ROW)
	QP_CTR_CALIBRATION(FILL_ROW)
	QP_CTR_RING(FILL_ROW)
}

static void fill_lifecycle(struct qp_lifecycle_figures *s, struct fill *f)
{
	QP_CTR_LIFECYCLE(FILL_ROW)
}

static void fill_target_ring(struct qp_target_view *s, struct fill *f)
{
	QP_CTR_TARGET_RING(FILL_ROW)
	QP_CTR_TARGET_RING_ACCOUNTING(FILL_ROW)
	s->ring_status.est.estimated = true;
}

/* What the JSON must say: the raw value in the JSON's unit. */
static double json_expect(const struct qp_counter_def *d, double raw)
{
	if (d->kind == QP_CK_REAL || d->kind == QP_CK_FLAG)
		return raw;
	if (d->unit == QP_CU_NS_US)
		return (double)((uint64_t)raw / 1000);
	if (d->unit == QP_CU_NS_MS)
		return (double)((uint64_t)raw / 1000000);
	return raw;
}

static bool is_ns(enum qp_counter_unit u)
{
	return u == QP_CU_NS || u == QP_CU_NS_US || u == QP_CU_NS_MS;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && !strcmp(s + a - b, tail);
}

/* The object at PATH ("cpu.unwind") of ROOT. */
static json_t *at_path(json_t *root, const char *path)
{
	char buf[64], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && root; tok = strtok_r(NULL, ".", &save))
		root = json_object_get(root, tok);
	return root;
}

static void check_json_row(json_t *obj, const struct qp_counter_def *d, double raw, const char *path)
{
	json_t *v = json_object_get(obj, d->key);

	if (!v) {
		fprintf(stderr, "%s.%s: not in the JSON\n", path, d->key);
		CHECK(v != NULL);
		return;
	}
	if (d->kind == QP_CK_FLAG) {
		CHECK(json_is_true(v) == (raw != 0));
		return;
	}
	if (d->kind == QP_CK_REAL) {
		CHECK(json_is_number(v));
		CHECK_REL(json_number_value(v), raw, 1e-15);
		return;
	}
	CHECK(json_is_integer(v));
	if (json_integer_value(v) != (json_int_t)json_expect(d, raw))
		fprintf(stderr, "%s.%s: %lld, expected %.0f\n", path, d->key, (long long)json_integer_value(v),
			json_expect(d, raw));
	CHECK_INT(json_integer_value(v), (json_int_t)json_expect(d, raw));
}

/* The sample of D in TEXT: "metric value" or "metric{label="key"} value". */
static bool metric_sample(const char *text, const struct qp_counter_def *d, double *out)
{
	char want[256];
	const char *p;

	if (d->label)
		snprintf(want, sizeof(want), "\n%s{%s=\"%s\"} ", d->metric, d->label, d->key);
	else
		snprintf(want, sizeof(want), "\n%s ", d->metric);
	p = strstr(text, want);
	if (!p)
		return false;
	*out = strtod(p + strlen(want), NULL);
	return true;
}

static void check_metric_row(const char *text, const struct qp_counter_def *d, double raw)
{
	char line[512];
	double got = NAN, want = (d->kind == QP_CK_FLAG ? (raw != 0) : raw) / (is_ns(d->unit) ? 1e9 : 1);

	if (!metric_sample(text, d, &got)) {
		fprintf(stderr, "%s{%s}: not in /metrics\n", d->metric, d->key);
		CHECK(false);
		return;
	}
	CHECK_REL(got, want, 1e-15);
	snprintf(line, sizeof(line), "\n# HELP %s %s\n", d->metric, d->help);
	CHECK(strstr(text, line) != NULL);
	snprintf(line, sizeof(line), "\n# TYPE %s %s\n", d->metric, d->kind == QP_CK_COUNTER ? "counter" : "gauge");
	CHECK(strstr(text, line) != NULL);
	/* the name says the unit and the kind */
	CHECK(ends_with(d->metric, "_total") == (d->kind == QP_CK_COUNTER));
	if (is_ns(d->unit))
		CHECK(strstr(d->metric, "_seconds") != NULL);
	if (d->unit == QP_CU_BYTES)
		CHECK(strstr(d->metric, "_bytes") != NULL);
	if (d->unit == QP_CU_HZ)
		CHECK(strstr(d->metric, "_hertz") != NULL);
	CHECK(strncmp(d->metric, "qprof_", 6) == 0);
	CHECK(d->help && strlen(d->help) > 10 && ends_with(d->help, "."));
}

/* Rows I..K of G all of one family. */
static bool same_run(const struct qp_counter_group *g, size_t i, size_t k)
{
	size_t x;

	for (x = i + 1; x <= k; x++)
		if (!g->defs[x].metric || strcmp(g->defs[x].metric, g->defs[i].metric))
			return false;
	return true;
}

/* Keys unique per object, families unique but for one labelled family's
 * consecutive rows. */
static void check_unique(const struct qp_counter_group *g, size_t ng)
{
	size_t a, b, i, k;

	for (a = 0; a < ng; a++)
		for (i = 0; i < g[a].n; i++)
			for (b = a; b < ng; b++)
				for (k = b == a ? i + 1 : 0; k < g[b].n; k++) {
					const struct qp_counter_def *x = &g[a].defs[i], *y = &g[b].defs[k];

					if (!strcmp(g[a].path, g[b].path))
						CHECK(strcmp(x->key, y->key) != 0);
					if (x->metric && y->metric && !strcmp(x->metric, y->metric))
						CHECK(a == b && x->label && y->label && same_run(&g[a], i, k));
				}
}

static char *status_json(const struct qp_status_model *m, const struct qp_targets_view *tv)
{
	struct qp_json j;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_export_status_targets_json(tv, &j);
	qp_export_status_figures_json(m, &j);
	qp_json_obj_end(&j);
	return qp_json_finish(&j, NULL);
}

static char *metrics_text(const struct qp_status_model *m, const struct qp_lifecycle_figures *lc)
{
	static const struct qp_metrics_opts o = { 0 };
	struct qp_scope_model sm = { 0 };
	struct qp_value_model vm = { 0 };
	struct qp_buf b;
	char *t;

	qp_buf_init(&b);
	CHECK_INT(qp_export_metrics(m, lc, &sm, &vm, NULL, &o, false, &b), 0);
	t = qp_buf_steal(&b, NULL);
	return t;
}

static void check_status(void)
{
	static struct qp_status_model m;
	static struct fill f;
	struct qp_targets_view tv = { .has_lifecycle = true };
	struct qp_counter_group g[QP_SG__N + 1];
	json_error_t err;
	json_t *root;
	char *js, *text;
	size_t a, i, k = 0, rows = 0, with_metric = 0;

	fill_status(&m, &f);
	fill_lifecycle(&tv.lifecycle, &f);
	qp_status_counter_groups(&m, g);
	qp_lifecycle_counter_group(&tv.lifecycle, &g[QP_SG__N]);
	js = status_json(&m, &tv);
	text = metrics_text(&m, &tv.lifecycle);
	root = js ? json_loads(js, 0, &err) : NULL;
	CHECK(root != NULL && text != NULL);
	if (!root || !text)
		goto out;
	check_unique(g, QP_ARRAY_SIZE(g));
	for (a = 0; a < QP_ARRAY_SIZE(g); a++) {
		json_t *obj = at_path(root, g[a].path);

		CHECK(g[a].present);
		CHECK(json_is_object(obj));
		for (i = 0; i < g[a].n; i++, k++) {
			const struct qp_counter_def *d = &g[a].defs[i];

			rows++;
			CHECK_REL(qp_counter_json_value(&g[a], i), json_expect(d, f.raw[k]), 1e-15);
			if (obj)
				check_json_row(obj, d, f.raw[k], g[a].path);
			if (!d->metric)
				continue;
			with_metric++;
			check_metric_row(text, d, f.raw[k]);
		}
	}
	CHECK_INT(k, f.k);
	/* JSON only: the sum of the drops, nothing else */
	CHECK_INT(rows - with_metric, 1);
	CHECK(!g[QP_SG_SCOPES].defs[2].metric && !strcmp(g[QP_SG_SCOPES].defs[2].key, "dropped"));
	/* the help of every family, and no family twice */
	{
		const char *p;
		size_t help = 0, type = 0;

		for (p = text; (p = strstr(p, "# HELP ")); p++)
			help++;
		for (p = text; (p = strstr(p, "# TYPE ")); p++)
			type++;
		CHECK_INT(help, type);
	}
out:
	json_decref(root);
	free(js);
	free(text);
}

/* Sampling stopped: no unwinding figures in either, and the lifecycle
 * absent from /metrics when fork/exec is not tracked. */
static void check_absent(void)
{
	struct qp_status_model m = { 0 };
	char *text = metrics_text(&m, NULL);

	CHECK(text && !strstr(text, "qprof_cpu_unwind_"));
	CHECK(text && !strstr(text, "qprof_lifecycle_"));
	CHECK(text && strstr(text, "\nqprof_cpu_samples_total 0\n"));
	free(text);
}

static void check_target_ring(void)
{
	static struct qp_target_view t;
	static struct fill f;
	struct qp_counter_group g[2];
	const struct qp_target_view *s = &t;
	json_error_t err;
	struct qp_json j;
	json_t *root, *ring;
	char *js;
	size_t a, i, k = 0;

	snprintf(t.comm, sizeof(t.comm), "x");
	t.exe = "/x";
	snprintf(t.collector_reason, sizeof(t.collector_reason), "ring (default)");
	t.has_ring_status = true;
	fill_target_ring(&t, &f);
	QP_COUNTER_GROUP(&g[0], "ring", QP_CTR_TARGET_RING);
	QP_COUNTER_GROUP(&g[1], "ring", QP_CTR_TARGET_RING_ACCOUNTING);
	check_unique(g, 2);
	qp_json_init(&j);
	qp_export_target_json(&t, &j);
	js = qp_json_finish(&j, NULL);
	root = js ? json_loads(js, 0, &err) : NULL;
	ring = json_object_get(root, "ring");
	CHECK(json_is_object(ring));
	for (a = 0; a < 2; a++)
		for (i = 0; i < g[a].n; i++) {
			const struct qp_counter_def *d = &g[a].defs[i];

			CHECK(d->metric == NULL);	/* one target's figure */
			if (ring)
				check_json_row(ring, d, f.raw[k], "ring");
			k++;
		}
	CHECK_INT(k, f.k);
	CHECK(json_is_true(json_object_get(ring, "lost_estimated")));
	json_decref(root);
	free(js);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--print")) {
		static struct qp_status_model m;
		static struct qp_lifecycle_figures lc;
		static struct fill f;
		char *text;

		fill_status(&m, &f);
		fill_lifecycle(&lc, &f);
		text = metrics_text(&m, &lc);
		fputs(text ? text : "", stdout);
		free(text);
		return text ? 0 : 1;
	}
	check_status();
	check_absent();
	check_target_ring();
	return test_done("test_counters");
}

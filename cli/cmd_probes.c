/* cmd_probes.c - `qprof-cli probes BINARY`: what a binary offers to qprof,
 * read from the ELF file alone (no daemon, no root): its qprof sites (kind,
 * name, file:line, function), how many qprof probe sites each probe name has,
 * and the other USDT probes (provider:name, argument spec, number of sites).
 * --json prints the same through the JSON writer. */
#include "cli.h"
#include "common/elf_probes.h"
#include "common/json_writer.h"
#include "table.h"

#include <stdlib.h>
#include <string.h>

static const char probes_help[] =
	"Usage: qprof-cli probes BINARY [--json]\n"
	"\n"
	"List the probes of an executable or shared library without running it and\n"
	"without qprofd: the qprof sites (KIND NAME FILE:LINE FUNCTION), the number\n"
	"of qprof probe sites per probe name, and the other USDT probes\n"
	"(PROVIDER:NAME ARGS SITES) that attach --usdt and --span can use.\n"
	"\n"
	"Exit status: 0 when the file was read, including a file without probes\n"
	"(\"no USDT probes in BINARY\"); 1 when it is missing or not an ELF file.\n";

/* A probe name (or provider:name) and how many sites carry it. */
struct probe_group {
	const struct qp_usdt_note *first;
	size_t sites;
	bool args_differ;
};

static int cmp_sites(const void *pa, const void *pb)
{
	const struct qp_site_info *a = *(const struct qp_site_info *const *)pa;
	const struct qp_site_info *b = *(const struct qp_site_info *const *)pb;
	int c = strcmp(a->file ? a->file : "", b->file ? b->file : "");

	if (c)
		return c;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_notes(const void *pa, const void *pb)
{
	const struct qp_usdt_note *a = *(const struct qp_usdt_note *const *)pa;
	const struct qp_usdt_note *b = *(const struct qp_usdt_note *const *)pb;
	int c = strcmp(a->provider, b->provider);

	if (c)
		return c;
	c = strcmp(a->name, b->name);
	if (c)
		return c;
	return a->pc < b->pc ? -1 : a->pc > b->pc;
}

/* Sorted views of the file's sites and notes, and notes grouped by
 * provider:name. */
struct probes_view {
	const struct qp_site_info **sites;
	struct probe_group *qprof, *other;
	size_t nqprof, nother;
};

static void view_free(struct probes_view *v)
{
	free(v->sites);
	free(v->qprof);
	free(v->other);
}

static int view_build(const struct qp_elf_probes *p, struct probes_view *v)
{
	const struct qp_usdt_note **notes;
	size_t i;

	memset(v, 0, sizeof(*v));
	v->sites = calloc(p->nsites + 1, sizeof(*v->sites));
	notes = calloc(p->nnotes + 1, sizeof(*notes));
	v->qprof = calloc(p->nnotes + 1, sizeof(*v->qprof));
	v->other = calloc(p->nnotes + 1, sizeof(*v->other));
	if (!v->sites || !notes || !v->qprof || !v->other) {
		free(notes);
		view_free(v);
		return -1;
	}
	for (i = 0; i < p->nsites; i++)
		v->sites[i] = &p->sites[i];
	qsort(v->sites, p->nsites, sizeof(*v->sites), cmp_sites);
	for (i = 0; i < p->nnotes; i++)
		notes[i] = &p->notes[i];
	qsort(notes, p->nnotes, sizeof(*notes), cmp_notes);
	for (i = 0; i < p->nnotes; i++) {
		const struct qp_usdt_note *n = notes[i];
		bool is_qprof = strcmp(n->provider, "qprof") == 0;
		struct probe_group *g = is_qprof ? v->qprof : v->other;
		size_t *ng = is_qprof ? &v->nqprof : &v->nother;

		if (*ng && strcmp(g[*ng - 1].first->provider, n->provider) == 0 &&
		    strcmp(g[*ng - 1].first->name, n->name) == 0) {
			g[*ng - 1].sites++;
			if (strcmp(g[*ng - 1].first->args, n->args) != 0)
				g[*ng - 1].args_differ = true;
			continue;
		}
		g[*ng] = (struct probe_group){ .first = n, .sites = 1 };
		(*ng)++;
	}
	free(notes);
	return 0;
}

static int print_json(const struct cli_ctx *ctx, const struct qp_elf_probes *p, const struct probes_view *v)
{
	struct qp_json j;
	char *out;
	size_t i;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_str(&j, "path", p->path);
	qp_json_kv_str(&j, "build_id", p->build_id[0] ? p->build_id : NULL);
	qp_json_key(&j, "sites");
	qp_json_arr_begin(&j);
	for (i = 0; i < p->nsites; i++) {
		const struct qp_site_info *s = v->sites[i];

		qp_json_obj_begin(&j);
		qp_json_kv_str(&j, "kind", qp_site_kind_name(s->kind));
		qp_json_kv_str(&j, "name", s->name);
		if (s->span)	/* a QPROF_SPAN_STEP: its span */
			qp_json_kv_str(&j, "span", s->span);
		qp_json_kv_str(&j, "file", s->file);
		qp_json_kv_u64(&j, "line", s->line);
		qp_json_kv_str(&j, "function", s->function);
		qp_json_kv_u64(&j, "address", s->vaddr);
		qp_json_obj_end(&j);
	}
	qp_json_arr_end(&j);
	qp_json_key(&j, "qprof_probes");
	qp_json_arr_begin(&j);
	for (i = 0; i < v->nqprof; i++) {
		qp_json_obj_begin(&j);
		qp_json_kv_str(&j, "name", v->qprof[i].first->name);
		qp_json_kv_u64(&j, "sites", v->qprof[i].sites);
		qp_json_obj_end(&j);
	}
	qp_json_arr_end(&j);
	qp_json_key(&j, "usdt");
	qp_json_arr_begin(&j);
	for (i = 0; i < v->nother; i++) {
		qp_json_obj_begin(&j);
		qp_json_kv_str(&j, "provider", v->other[i].first->provider);
		qp_json_kv_str(&j, "name", v->other[i].first->name);
		qp_json_kv_str(&j, "args", v->other[i].args_differ ? NULL : v->other[i].first->args);
		qp_json_kv_u64(&j, "sites", v->other[i].sites);
		qp_json_obj_end(&j);
	}
	qp_json_arr_end(&j);
	qp_json_obj_end(&j);
	out = qp_json_finish(&j, NULL);
	if (!out)
		return cli_fail(ctx, "out of memory");
	printf("%s\n", out);
	free(out);
	return CLI_OK;
}

static int print_human(const struct cli_ctx *ctx, const char *path, const struct qp_elf_probes *p,
		       const struct probes_view *v)
{
	static const struct table_col site_cols[] = {
		{ "KIND", false }, { "NAME", false }, { "FILE:LINE", false }, { "FUNCTION", false },
	};
	static const struct table_col other_cols[] = {
		{ "PROVIDER:NAME", false }, { "ARGS", false }, { "SITES", true },
	};
	struct table t;
	size_t i;
	int rc = 0;

	if (!p->nsites && !p->nnotes) {
		printf("no USDT probes in %s\n", path);
		return CLI_OK;
	}
	printf("qprof sites in %s: %zu\n", path, p->nsites);
	if (p->nsites) {
		table_init(&t, site_cols, QP_ARRAY_SIZE(site_cols));
		for (i = 0; i < p->nsites; i++) {
			const struct qp_site_info *s = v->sites[i];

			table_row(&t);
			table_cell(&t, qp_site_kind_name(s->kind));
			if (s->span)	/* a step: "span/step" */
				table_cellf(&t, "%s/%s", s->span, s->name);
			else
				table_cell(&t, s->name);
			table_cellf(&t, "%s:%u", s->file ? s->file : "?", s->line);
			table_cell(&t, s->function);
		}
		rc |= table_print(&t, stdout);
		table_free(&t);
	}
	if (v->nqprof) {
		printf("qprof probe sites:");
		for (i = 0; i < v->nqprof; i++)
			printf("%s %s %zu", i ? "," : "", v->qprof[i].first->name, v->qprof[i].sites);
		putchar('\n');
	}
	printf("\nother USDT probes: %zu\n", v->nother);
	if (v->nother) {
		table_init(&t, other_cols, QP_ARRAY_SIZE(other_cols));
		for (i = 0; i < v->nother; i++) {
			const struct probe_group *g = &v->other[i];

			table_row(&t);
			table_cellf(&t, "%s:%s", g->first->provider, g->first->name);
			table_cell(&t, g->args_differ ? "(varies)" : g->first->args[0] ? g->first->args : "-");
			table_cellf(&t, "%zu", g->sites);
		}
		rc |= table_print(&t, stdout);
		table_free(&t);
	}
	return rc ? cli_fail(ctx, "out of memory") : CLI_OK;
}

int cmd_probes(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = { CLI_COMMON_OPTS, { 0 } };
	struct qp_elf_probes *p = NULL;
	struct probes_view v;
	const char *path;
	char err[256];
	int c, rc;

	while ((c = cli_getopt(argc, argv, opts)) != -1) {
		rc = cli_common_opt(ctx, c, argv, opts, probes_help);
		if (rc >= 0)
			return rc;
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "missing BINARY");
	if (optind + 1 < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
	path = argv[optind];

	err[0] = '\0';
	rc = qp_elf_probes_open(path, &p, err, sizeof(err));
	if (rc < 0)
		return cli_fail(ctx, "cannot read probes of %s: %s", path,
				err[0] ? err : strerror(-rc));
	if (view_build(p, &v)) {
		qp_elf_probes_free(p);
		return cli_fail(ctx, "out of memory");
	}
	rc = ctx->json ? print_json(ctx, p, &v) : print_human(ctx, path, p, &v);
	view_free(&v);
	qp_elf_probes_free(p);
	return rc;
}

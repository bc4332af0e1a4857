/* export_callgraph.c - a call graph as Graphviz DOT (see export.h); its
 * rendering by `dot -Tsvg` is the HTTP stage's (http/render_dot.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export.h"
#include "common/stackstats.h"

#define MAX_NODES 100
#define NODE_FRACTION 200	/* keep nodes with total >= grand total / 200 (0.5%) */
#define EDGE_FRACTION 1000	/* keep edges with weight >= grand total / 1000 (0.1%) */

struct fn {
	const char *name, *module;
	bool kernel;
	uint64_t self, total;
	int kept;	/* node number in the output, 0 = dropped */
};

struct edge {
	uint32_t from, to;	/* 1-based function numbers */
	uint64_t weight;
};

struct graph {
	struct fn *fn;		/* in order of first appearance */
	size_t nfn;
	struct edge *edge;
	size_t nedge;
};

/* What the function table keeps beside self and total. */
struct fn_names {
	const char *name, *module;
	bool kernel;
};

/* Self and total per function (key: name, module, kernel), and per edge
 * (key: caller and callee numbers; its total is its weight). */
static int count(const struct qp_cpu_profile *p, struct qp_stackstats *fns,
		 struct qp_stackstats *edges)
{
	struct qp_buf key;
	size_t i, j;
	int ret = 0;

	qp_buf_init(&key);
	for (i = 0; i < p->nsamples && !ret; i++) {
		const struct qp_cpu_sample *s = &p->samples[i];
		int64_t prev = -1, cur;

		if (!s->count)
			continue;
		qp_stackstats_stack(fns, s->count);
		qp_stackstats_stack(edges, s->count);
		for (j = 0; j < s->nframes; j++, prev = cur) {
			const struct qp_cpu_frame *fr = &s->frames[j];
			const char *name = fr->name && *fr->name ? fr->name : "[unknown]";
			const char *module = fr->module ? fr->module : "";
			bool made;

			key.len = 0;
			qp_buf_add(&key, name, strlen(name) + 1);
			qp_buf_add(&key, module, strlen(module) + 1);
			qp_buf_add(&key, fr->kernel ? "k" : "u", 1);
			if (key.failed) {
				ret = -ENOMEM;
				break;
			}
			cur = qp_stackstats_frame(fns, key.data, key.len, j + 1 == s->nframes, &made);
			if (cur < 0) {
				ret = -ENOMEM;
				break;
			}
			if (made)
				*(struct fn_names *)qp_stackstats_extra(fns, (size_t)cur) =
					(struct fn_names){ name, module, fr->kernel };
			if (prev >= 0) {
				uint32_t e[2] = { (uint32_t)prev + 1, (uint32_t)cur + 1 };

				if (qp_stackstats_frame(edges, e, sizeof(e), false, NULL) < 0) {
					ret = -ENOMEM;
					break;
				}
			}
		}
	}
	qp_buf_free(&key);
	return ret;
}

static int build(const struct qp_cpu_profile *p, struct graph *g)
{
	struct qp_stackstats fns, edges;
	size_t i;
	int ret;

	qp_stackstats_init(&fns, sizeof(struct fn_names));
	qp_stackstats_init(&edges, 0);
	ret = count(p, &fns, &edges);
	g->nfn = qp_stackstats_count(&fns);
	g->nedge = qp_stackstats_count(&edges);
	g->fn = calloc(g->nfn ? g->nfn : 1, sizeof(*g->fn));
	g->edge = calloc(g->nedge ? g->nedge : 1, sizeof(*g->edge));
	if (!ret && (!g->fn || !g->edge))
		ret = -ENOMEM;
	for (i = 0; !ret && i < g->nfn; i++) {
		const struct fn_names *x = qp_stackstats_extra(&fns, i);
		const struct qp_fnstat *f = qp_stackstats_at(&fns, i);

		g->fn[i] = (struct fn){ .name = x->name, .module = x->module, .kernel = x->kernel,
					.self = f->self, .total = f->total };
	}
	for (i = 0; !ret && i < g->nedge; i++) {
		uint32_t e[2];

		memcpy(e, qp_stackstats_key(&edges, i, NULL), sizeof(e));
		g->edge[i] = (struct edge){ .from = e[0], .to = e[1],
					    .weight = qp_stackstats_at(&edges, i)->total };
	}
	qp_stackstats_free(&fns);
	qp_stackstats_free(&edges);
	return ret;
}

/* A DOT double-quoted string body: '"' and '\' escaped, newlines and other
 * controls as spaces, invalid UTF-8 as U+FFFD. */
static void dot_put(struct qp_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, l;

	while (i < n) {
		if (p[i] < 0x20) {
			qp_buf_add(b, " ", 1);
			i++;
			continue;
		}
		l = qp_utf8_seq_len(p + i, n - i);
		if (!l) {
			qp_buf_puts(b, "\xEF\xBF\xBD");
			i++;
			continue;
		}
		if (p[i] == '"' || p[i] == '\\')
			qp_buf_add(b, "\\", 1);
		qp_buf_add(b, p + i, l);
		i += l;
	}
}

static int cmp_fn(const void *a, const void *b, void *ctx)
{
	const struct graph *sort_graph = ctx;
	const struct fn *x = &sort_graph->fn[*(const uint32_t *)a];
	const struct fn *y = &sort_graph->fn[*(const uint32_t *)b];
	int c;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->module, y->module);
}

static int cmp_edge(const void *a, const void *b, void *ctx)
{
	const struct graph *sort_graph = ctx;
	const struct edge *x = a, *y = b;
	int fx = sort_graph->fn[x->from - 1].kept, fy = sort_graph->fn[y->from - 1].kept;
	int tx = sort_graph->fn[x->to - 1].kept, ty = sort_graph->fn[y->to - 1].kept;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return fx != fy ? fx - fy : tx - ty;
}

static double pct(uint64_t a, uint64_t total) { return total ? 100.0 * (double)a / (double)total : 0; }

static int emit(const struct qp_cpu_profile *p, struct graph *g, struct qp_buf *out)
{
	uint64_t total = qp_cpu_profile_total(p);
	uint32_t *order = NULL;
	size_t i, nkept = 0;

	qp_buf_puts(out, "digraph \"qprof\" {\n"
			 "graph [fontname=\"Helvetica\", labelloc=t, labeljust=l, label=\"");
	dot_put(out, p->title ? p->title : "qprof call graph");
	qp_buf_printf(out, "\\l%" PRIu64 " samples", total);
	if (p->duration_ns)
		qp_buf_printf(out, " in %.2f s", (double)p->duration_ns / 1e9);
	qp_buf_puts(out, "\\l\"];\n"
			 "node [shape=box, style=filled, fontname=\"Helvetica\", color=\"#999999\"];\n"
			 "edge [fontname=\"Helvetica\", color=\"#666666\"];\n");
	if (!g->nfn) {
		qp_buf_puts(out, "N0 [label=\"no samples\", fillcolor=\"#eeeeee\"];\n}\n");
		return 0;
	}
	order = malloc(g->nfn * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < g->nfn; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, g->nfn, sizeof(*order), cmp_fn, g);
	for (i = 0; i < g->nfn && nkept < MAX_NODES; i++) {
		struct fn *f = &g->fn[order[i]];

		if (f->total * NODE_FRACTION < total)
			break;
		f->kept = (int)++nkept;
	}
	qsort_r(g->edge, g->nedge, sizeof(*g->edge), cmp_edge, g);
	for (i = 0; i < nkept; i++) {
		const struct fn *f = &g->fn[order[i]];
		double share = (double)f->total / (double)total;
		double fs = 10 + 22 * (double)f->self / (double)total;
		int shade = 255 - (int)(175 * share);

		qp_buf_printf(out, "N%d [label=\"", f->kept);
		dot_put(out, f->name);
		qp_buf_puts(out, "\\n");
		dot_put(out, f->module);
		qp_buf_printf(out,
			      "\\nself %" PRIu64 " (%.2f%%)\\nof %" PRIu64 " (%.2f%%)\", "
			      "fontsize=%.1f, fillcolor=\"#ff%02x%02x\"",
			      f->self, pct(f->self, total), f->total, pct(f->total, total), fs, shade,
			      shade);
		if (f->kernel)
			qp_buf_puts(out, ", shape=box3d");
		qp_buf_puts(out, "];\n");
	}
	for (i = 0; i < g->nedge; i++) {
		const struct edge *e = &g->edge[i];
		int a = g->fn[e->from - 1].kept, b = g->fn[e->to - 1].kept;

		if (!a || !b || e->weight * EDGE_FRACTION < total)
			continue;
		qp_buf_printf(out, "N%d -> N%d [label=\" %" PRIu64 "\", penwidth=%.2f];\n", a, b,
			      e->weight, 1 + 5 * (double)e->weight / (double)total);
	}
	qp_buf_puts(out, "}\n");
	free(order);
	return 0;
}

int qp_export_callgraph_dot(const struct qp_cpu_profile *p, struct qp_buf *out)
{
	struct graph g = { 0 };
	int ret = build(p, &g);

	if (!ret)
		ret = emit(p, &g, out);
	free(g.fn);
	free(g.edge);
	if (!ret && out->failed)
		ret = -ENOMEM;
	return ret;
}

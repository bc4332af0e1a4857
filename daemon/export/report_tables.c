/* report_tables.c - the tables of an exit report's summary.txt (see
 * report_figures.h): scope rows, their kernel figures, top functions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/buf.h"
#include "report_figures.h"
#include "common/util.h"

static bool has_dur(const struct srow *r)
{
	return r->dur;
}

/* The widths of the name and the parent columns (from NW and PW, at most
 * NMAX and PMAX) over the first QP_REPORT_TOP rows KEEP keeps (all when NULL):
 * how many rows are shown. */
static size_t column_widths(const struct srow *rows, size_t n, bool (*keep)(const struct srow *r),
			    size_t nmax, size_t pmax, size_t *nw, size_t *pw)
{
	size_t i, shown = 0;

	for (i = 0; i < n && shown < QP_REPORT_TOP; i++) {
		if (keep && !keep(&rows[i]))
			continue;
		if (strlen(rows[i].name) > *nw)
			*nw = strlen(rows[i].name);
		if (rows[i].parent && strlen(rows[i].parent) > *pw)
			*pw = strlen(rows[i].parent);
		shown++;
	}
	*nw = *nw > nmax ? nmax : *nw;
	*pw = *pw > pmax ? pmax : *pw;
	return shown;
}

/* A duration of R: one that reads 0 after the BPF collector took its
 * probes' cost off is shown as the bound it is ("<N ns"), as the CLI does. */
static void dur_cell(char *buf, size_t len, const struct srow *r, double v)
{
	if (r->dur && v < 0.5 && r->calibration_ns && r->count)
		snprintf(buf, len, "<%" PRIu64 " ns", r->calibration_ns);
	else
		qp_fmt_duration(buf, len, v, r->dur);
}

void qp_report_scope_table(struct qp_buf *b, const char *title, struct srow *rows, size_t n,
			int (*cmp)(const void *, const void *), bool need_dur)
{
	static const char *const heads[] = { "COUNT", "MEAN", "P50", "P99", "MAX", "TOTAL" };
	size_t i, shown = 0, nw = 5, pw = 6;
	char cells[6][32];
	int c;

	qsort(rows, n, sizeof(*rows), cmp);
	qp_buf_printf(b, "\n%s\n", title);
	if (!column_widths(rows, n, need_dur ? has_dur : NULL, 48, 32, &nw, &pw)) {
		qp_buf_puts(b, "  (none)\n");
		return;
	}
	qp_buf_printf(b, "  %-*s  %-*s", (int)nw, "SCOPE", (int)pw, "PARENT");
	for (c = 0; c < 6; c++)
		qp_buf_printf(b, "  %10s", heads[c]);
	qp_buf_puts(b, "\n");
	for (i = 0, shown = 0; i < n && shown < QP_REPORT_TOP; i++) {
		const struct srow *r = &rows[i];

		if (need_dur && !r->dur)
			continue;
		shown++;
		snprintf(cells[0], sizeof(cells[0]), "%" PRIu64, r->count);
		dur_cell(cells[1], sizeof(cells[1]), r, r->mean);
		dur_cell(cells[2], sizeof(cells[2]), r, r->p50);
		dur_cell(cells[3], sizeof(cells[3]), r, r->p99);
		dur_cell(cells[4], sizeof(cells[4]), r, r->max);
		qp_fmt_duration(cells[5], sizeof(cells[5]), r->total, r->dur);
		qp_buf_printf(b, "  %-*.48s  %-*.32s", (int)nw, r->name, (int)pw, r->parent ? r->parent : "-");
		for (c = 0; c < 6; c++)
			qp_buf_printf(b, "  %10s", cells[c]);
		qp_buf_puts(b, "\n");
	}
}

static bool kernel_events(const struct srow *r)
{
	const struct scope_kstats *k = &r->kernel;

	return r->has_kernel && (k->off_cpu_ns | k->voluntary | k->involuntary | k->migrations |
				 k->page_faults | k->irq_ns);
}

void qp_report_kernel_table(struct qp_buf *b, struct srow *rows, size_t n)
{
	size_t i, shown = 0, nw = 5, pw = 6;
	char off[32], irq[32];

	for (i = 0; i < n && !rows[i].has_kernel; i++)
		;
	if (i == n)
		return;
	qsort(rows, n, sizeof(*rows), qp_srow_by_off_cpu);
	qp_buf_puts(b, "\nScopes by off-CPU time (kernel events in the innermost open scope)\n");
	if (!column_widths(rows, n, kernel_events, 32, 20, &nw, &pw)) {
		qp_buf_puts(b, "  (none)\n");
		return;
	}
	qp_buf_printf(b, "  %-*s  %-*s  %9s  %7s  %7s  %6s  %7s  %8s\n", (int)nw, "SCOPE", (int)pw, "PARENT",
		      "OFF ms", "VOL-SW", "INV-SW", "MIGR", "FAULTS", "IRQ ms");
	for (i = 0, shown = 0; i < n && shown < QP_REPORT_TOP; i++) {
		const struct scope_kstats *k = &rows[i].kernel;

		if (!kernel_events(&rows[i]))
			continue;
		shown++;
		snprintf(off, sizeof(off), "%.2f", (double)k->off_cpu_ns / 1e6);
		snprintf(irq, sizeof(irq), "%.2f", (double)k->irq_ns / 1e6);
		qp_buf_printf(b, "  %-*.32s  %-*.20s  %9s  %7" PRIu64 "  %7" PRIu64 "  %6" PRIu64 "  %7" PRIu64
			      "  %8s\n", (int)nw, rows[i].name, (int)pw, rows[i].parent ? rows[i].parent : "-",
			      off, (uint64_t)k->voluntary, (uint64_t)k->involuntary, (uint64_t)k->migrations,
			      (uint64_t)k->page_faults, irq);
	}
}

void qp_report_func_table(struct qp_buf *b, const char *title, const struct func *v, size_t n,
		       uint64_t samples, bool self_first)
{
	size_t i, m = n < QP_REPORT_TOP ? n : QP_REPORT_TOP;

	qp_buf_printf(b, "\n%s\n", title);
	if (!m) {
		qp_buf_puts(b, "  (no samples)\n");
		return;
	}
	qp_buf_printf(b, "  %8s %7s  %8s %7s  %s\n", self_first ? "SELF" : "TOTAL", "SHARE",
		      self_first ? "TOTAL" : "SELF", "SHARE", "FUNCTION");
	for (i = 0; i < m; i++) {
		uint64_t a = self_first ? v[i].self : v[i].total, o = self_first ? v[i].total : v[i].self;

		qp_buf_printf(b, "  %8" PRIu64 " %6.2f%%  %8" PRIu64 " %6.2f%%  %.200s%s%.100s%s\n", a,
			      samples ? 100.0 * (double)a / (double)samples : 0, o,
			      samples ? 100.0 * (double)o / (double)samples : 0, v[i].name,
			      v[i].module[0] ? " (" : "", v[i].module, v[i].module[0] ? ")" : "");
	}
}

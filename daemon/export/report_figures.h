/* report_figures.h - the figures of an exit report: scope rows of the scope
 * model sorted three ways, functions of the CPU profile
 * with self and total samples, and the text tables summary.txt shows them in. */
#ifndef QPROF_REPORT_FIGURES_H
#define QPROF_REPORT_FIGURES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "model/model_cpu_build.h"
#include "model/model_scopes.h"

struct srow {
	const char *kind, *name, *parent;	/* owned by the scope model */
	uint64_t count;
	bool dur;				/* has durations (not a mark or probe) */
	double total, mean, min, p50, p90, p99, p999, max;
	uint64_t calibration_ns;		/* the BPF collector's cost taken off each duration */
	bool has_kernel;			/* the kernel figures are traced */
	struct scope_kstats kernel;
};

/* The rows of M into *OUT (calloc'ed, strings owned by M); their number.
 * *OUT is NULL when out of memory. A figure that is not finite reads 0 and
 * makes the row one without durations, as /api/scopes writes it null. */
size_t qp_srows_from(const struct qp_scope_model *m, struct srow **out);
/* qsort comparators: timed rows first, then by total / p99 / count */
int qp_srow_by_total(const void *a, const void *b);
int qp_srow_by_p99(const void *a, const void *b);
int qp_srow_by_count(const void *a, const void *b);
/* rows with kernel figures first, then by off-CPU time, then switches */
int qp_srow_by_off_cpu(const void *a, const void *b);

/* A function of the CPU profile: samples where it is the leaf (self) and
 * samples where it is anywhere in the stack (total, once per sample). */
struct func {
	const char *name, *module;	/* P's strings */
	uint64_t self, total;
};

struct funcs {
	struct func *v;		/* n functions, in order of first appearance */
	size_t n;
	uint64_t samples;
};

/* F from profile P, counted by common/stackstats.h; F->v is malloc'ed (the
 * caller frees it, also on failure). 0 or -ENOMEM. */
int qp_funcs_build(const struct qp_cpu_profile *p, struct funcs *f);
int qp_func_by_self(const void *a, const void *b);
int qp_func_by_total(const void *a, const void *b);

/* The tables of summary.txt (report_tables.c), each at most QP_REPORT_TOP
 * rows, appended to B. */
#define QP_REPORT_TOP 20
struct qp_buf;
/* TITLE, then ROWS sorted by CMP (in place): COUNT, MEAN, P50, P99, MAX,
 * TOTAL; only rows with durations when NEED_DUR. A duration that reads 0
 * in a row the BPF collector corrected by calibration_ns is written as the
 * bound it is, "<N ns"; "(none)" when no row is shown. */
void qp_report_scope_table(struct qp_buf *b, const char *title, struct srow *rows, size_t n,
			   int (*cmp)(const void *, const void *), bool need_dur);
/* The rows with kernel figures, by off-CPU time (rows with no event left
 * out); nothing at all when no row has its kernel figures traced. */
void qp_report_kernel_table(struct qp_buf *b, struct srow *rows, size_t n);
/* TITLE, then V's first functions: SELF and TOTAL samples with their share
 * of SAMPLES (SELF first when SELF_FIRST), the function and its module. */
void qp_report_func_table(struct qp_buf *b, const char *title, const struct func *v, size_t n,
			  uint64_t samples, bool self_first);
#endif

/* report_figures.h - the figures of an exit report: scope rows of the scope
 * model sorted three ways, functions of the CPU profile
 * with self and total samples. */
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
#endif

/* model_cpu_build.h - raw CPU samples (collect_cpu) to a symbolized
 * profile (model_cpu.h): the difference of two snapshots for a window,
 * limited to a pid and to the samples taken inside a scope, stacks root
 * first, frames named by the symbolizer. */
#ifndef QPROF_MODEL_CPU_BUILD_H
#define QPROF_MODEL_CPU_BUILD_H
#include "collect_cpu.h"
#include "model_cpu.h"

struct qp_registry;
struct qp_symbolizer;

struct qp_cpu_query {
	int pid;		/* 0: every process */
	const char *scope;	/* NULL: all samples */
	uint64_t period_ns;
	uint64_t duration_ns;
	uint64_t time_ns;
};

/* Caller does NOT hold the registry lock: it is taken for the scope names
 * only (qp_registry_site_named); the symbolizer locks itself. */
int qp_cpu_build(struct qp_cpu *cpu, struct qp_symbolizer *sym, struct qp_registry *reg,
		 const struct qp_cpu_snapshot *now, const struct qp_cpu_snapshot *base,
		 const struct qp_cpu_query *q, struct qp_cpu_profile *out);
#endif

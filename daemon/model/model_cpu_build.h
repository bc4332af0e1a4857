/* model_cpu_build.h - raw CPU samples (collect_cpu) to a symbolized
 * profile (model_cpu.h): the difference of two snapshots for a window,
 * limited to a pid and to the samples taken inside a scope, stacks root
 * first, frames named by the symbolizer. */
#ifndef QPROF_MODEL_CPU_BUILD_H
#define QPROF_MODEL_CPU_BUILD_H
#include "collect/collect_cpu.h"
#include "common/hashtab.h"
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

/* Building a profile sample by sample, for other profiles of stacks (the
 * heap's): begin, add, finish. Frames are named as CPU samples' are. */
struct qp_cpu_builder {
	struct qp_cpu_profile *p;
	size_t cap_samples, cap_maps;
	struct qp_arena *a;
	struct qp_symbolizer *sym;	/* the last add's */
	struct qp_sym *ys;		/* QPROF_STACK_DEPTH user frames of one sample */
	struct qp_htab pids;		/* pid -> samples, to find the main executable */
};

/* OUT emptied, with its arena; -ENOMEM. */
int qp_cpu_builder_begin(struct qp_cpu_builder *b, struct qp_cpu_profile *out);
/* A sample of PID (named COMM) with COUNT: user stack UIPS[0..NU) and kernel
 * stack KIPS[0..NK), leaf first (either may be empty). NULL when out of
 * memory. */
struct qp_cpu_sample *qp_cpu_builder_add(struct qp_cpu_builder *b, struct qp_symbolizer *sym, uint32_t pid,
					 const char *comm, const uint64_t *uips, size_t nu,
					 const uint64_t *kips, size_t nk, uint64_t count);
/* S (of PID, in B) gets the names of the open scopes at sites INNER[0..N)
 * (innermost first; those REG cannot name are left out). REG NULL: none.
 * 0 or -ENOMEM. Takes the registry lock for the names. */
struct qp_registry;
int qp_cpu_sample_scopes(struct qp_cpu_builder *b, struct qp_registry *reg, int pid, const uint64_t *inner,
			 size_t n, struct qp_cpu_sample *s);
/* S (of PID) gets the name of the span begun at SITE (0: none; a site REG
 * cannot name: none). 0 or -ENOMEM. Takes the registry lock. */
int qp_cpu_sample_span(struct qp_cpu_builder *b, struct qp_registry *reg, int pid, uint64_t site,
		       struct qp_cpu_sample *s);
/* The samples moved into the arena, the main executable's mapping first
 * (of the process with the most samples). With RET != 0 (or no memory)
 * the profile is freed and that error returned. */
int qp_cpu_builder_finish(struct qp_cpu_builder *b, int ret);

/* Caller does NOT hold the registry lock: it is taken for the scope names
 * only (qp_registry_site_named); the symbolizer locks itself. */
int qp_cpu_build(struct qp_cpu *cpu, struct qp_symbolizer *sym, struct qp_registry *reg,
		 const struct qp_cpu_snapshot *now, const struct qp_cpu_snapshot *base,
		 const struct qp_cpu_query *q, struct qp_cpu_profile *out);
#endif

/* model_cpu.h - a CPU profile as the exporters see it: symbolized samples,
 * each a stack (root first) with a count, plus the mappings pprof wants.
 * Built by the CPU collector from raw BPF samples and the symbolizer; read
 * by export_folded.c, export_flamegraph.c, export_pprof.c. Read-only for
 * exporters. All strings are owned by the profile's string arena. */
#ifndef QPROF_MODEL_CPU_H
#define QPROF_MODEL_CPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/arena.h"

/* A user address where the compiler inlined functions gives several
 * frames with the same addr: the function that holds the code, then each
 * inlined one (inlined = true), the innermost last (nearest the leaf). */
struct qp_cpu_frame {
	const char *name;	/* demangled function, or "module+0xoffset" when unnamed */
	const char *module;	/* basename of the file, "[kernel]" for kernel frames */
	uint64_t addr;		/* runtime address */
	uint32_t mapping;	/* 1-based index into mappings, 0 = none (kernel) */
	bool kernel;
	bool inlined;		/* inlined into the frame before it, at the same addr */
	uint32_t line;		/* source line in file, 0 when unknown */
	const char *file;	/* source file (DWARF), NULL when unknown */
};

struct qp_cpu_sample {
	uint32_t pid;
	uint32_t tid;		/* the thread, 0 when unknown (a heap stack not kept) */
	const char *comm;	/* the thread's name (its first sample's): the root of folded stacks */
	uint64_t count;		/* samples with exactly this stack */
	size_t nframes;
	struct qp_cpu_frame *frames;	/* frames[0] is the root, frames[nframes-1] the leaf */
	const int64_t *values;	/* nvalues of them when the profile has value types, else NULL */
	/* The qprof scopes open when it was taken, innermost first (named;
	 * sites that could not be named are left out); none: nscopes 0. */
	size_t nscopes;
	const char *const *scopes;
	/* The span open on the thread when it was taken (QPROF_SPAN_BEGIN,
	 * not yet ended on it): its name (NULL: none, or not named) and id. */
	const char *span;
	uint64_t span_id;
	bool span_no_id;	/* the name only (heap stacks keep no span ids) */
};

/* A pprof sample or period type: "inuse_space", "bytes". */
struct qp_value_type {
	const char *type, *unit;
};

struct qp_cpu_mapping {
	uint64_t start, limit, offset;	/* runtime range and file offset of start */
	const char *file;
	const char *build_id;		/* hex, "" when unknown */
};

struct qp_cpu_profile {
	size_t nsamples;
	struct qp_cpu_sample *samples;
	size_t nmappings;
	struct qp_cpu_mapping *mappings;
	uint64_t period_ns;	/* time one sample stands for (1e9 / frequency) */
	uint64_t duration_ns;	/* wall time the profile covers */
	uint64_t time_ns;	/* wall clock (Unix ns) when collection started */
	const char *title;	/* e.g. "qprof: pid 1234 (strategy), 10 s, scope calc_ma" */
	/* Profiles of something else than CPU time (the heap): with nvalues
	 * > 0 every sample has values[nvalues] of these types, and pprof
	 * writes them (period_type, period_ns as the period, default_type)
	 * instead of samples/count and cpu/nanoseconds. count stays what the
	 * flame graph and folded stacks weigh; unit names it ("bytes"). */
	size_t nvalues;
	const struct qp_value_type *value_types;
	struct qp_value_type period_type;
	const char *default_type;
	const char *unit;	/* NULL: "samples" */
	bool off_cpu;		/* counts are nanoseconds off the CPU (stack at the
				 * switch-out), not samples; period_ns is 1 */
	struct qp_arena *arena;	/* owns every string and array above */
};

void qp_cpu_profile_free(struct qp_cpu_profile *p); /* frees the arena; accepts NULL */
uint64_t qp_cpu_profile_total(const struct qp_cpu_profile *p); /* sum of counts */
/* For a client that may not see kernel addresses: every kernel frame gets
 * address 0, and a kernel frame named by its address ("[kernel]+0x...")
 * becomes "[kernel]". Names and counts are otherwise unchanged. */
void qp_cpu_profile_hide_kernel(struct qp_cpu_profile *p);
/* Move the mapping of file EXE (the main executable) first, as pprof
 * expects, renumbering the frames' mappings; no change when EXE is NULL or
 * not among them. */
void qp_cpu_profile_main_first(struct qp_cpu_profile *p, const char *exe);
#endif

/* model_values.h - the values model: QPROF_VALUE sites as plain rows (those
 * of GET /api/values): the kernel's order keys turned back into doubles,
 * mean and percentiles read from the sparse histogram, names copied from
 * the registry through a namer. No JSON, no I/O of its own. */
#ifndef QPROF_MODEL_VALUES_H
#define QPROF_MODEL_VALUES_H
#include <stdint.h>
#include "collect/collect_scopes.h"
#include "model_src.h"
#include "targets/target_names.h"

struct qp_arena;

/* The double whose order key is KEY (see bpf/scopes.h). */
double qp_value_from_key(uint64_t key);
uint64_t qp_value_key(double v);

/* Mean and quantile Q of a row, from its buckets (each bucket's midpoint),
 * clamped to the exact min and max. 0 when the row has no finite value. */
double qp_value_mean(const struct qp_value_row *r);
double qp_value_quantile(const struct qp_value_row *r, double q);

struct qp_value_item {
	int32_t pid;
	const char *exe;	/* the basename of the process's executable ("" unknown) */
	const char *name;	/* "0x..." when the site is unknown */
	bool located;		/* a known site: file and line are its */
	const char *file;
	uint32_t line;
	uint64_t count;		/* finite values */
	double min, max, mean, p50, p99;	/* meaningful when count > 0 */
	double last;		/* the last value, NaN or infinite included */
	uint64_t last_ns;	/* when the last value came (CLOCK_MONOTONIC) */
	uint64_t nan, pos_inf, neg_inf;
	const struct qp_value_bucket *buckets;	/* the kernel's buckets, sorted (value_math.c) */
	size_t nbuckets;
};

struct qp_value_model {
	size_t n;
	struct qp_value_item *items;	/* in the collector's order (pid, site) */
	struct qp_arena *arena;		/* owns items and their strings */
};

/* The model of ROWS named through NM; rows of processes that are no target
 * are left out. 0 or -ENOMEM. */
int qp_value_model_make(const struct qp_value_row *rows, size_t n, const struct qp_namer *nm,
			struct qp_value_model *out);
void qp_value_model_free(struct qp_value_model *m); /* accepts NULL and a zeroed model */
/* Read the values of PID (all when pid <= 0) and name them under the
 * registry lock. 0, -EIO (the maps could not be read), -ENOMEM. */
int qp_value_model_build(const struct qp_model_src *src, int pid, struct qp_value_model *out);
#endif

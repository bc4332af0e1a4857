/* model_values.h - QPROF_VALUE sites as GET /api/values rows: the kernel's
 * order keys turned back into doubles, mean and percentiles read from the
 * sparse histogram. Reads only. */
#ifndef QPROF_MODEL_VALUES_H
#define QPROF_MODEL_VALUES_H
#include <stdint.h>
#include "collect_scopes.h"
#include "targets.h"

struct qp_json;

/* The double whose order key is KEY (see bpf/scopes.h). */
double qp_value_from_key(uint64_t key);
uint64_t qp_value_key(double v);

/* Mean and quantile Q of a row, from its buckets (each bucket's midpoint),
 * clamped to the exact min and max. 0 when the row has no finite value. */
double qp_value_mean(const struct qp_value_row *r);
double qp_value_quantile(const struct qp_value_row *r, double q);

/* {"values": [...]}; caller holds r->lock. */
void qp_model_values_json(struct qp_registry *reg, const struct qp_value_row *rows, size_t n,
			  struct qp_json *j);
#endif

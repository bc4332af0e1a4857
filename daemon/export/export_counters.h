/* export_counters.h - the counter tables of counters.h expanded over the
 * models: a group is the rows of one table with their values read from
 * one struct, and one writer each for JSON (export_json.c) and /metrics
 * (export_metrics.c) reads the groups, so a row added to a table shows in
 * both with the same value. Pure: no lock, no I/O. */
#ifndef QPROF_EXPORT_COUNTERS_H
#define QPROF_EXPORT_COUNTERS_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "common/counters.h"
#include "common/json_writer.h"
#include "model/model_status.h"
#include "targets/targets_view.h"
#include "common/util.h"

struct qp_counter_val {
	uint64_t u;	/* every kind but QP_CK_REAL */
	double d;	/* QP_CK_REAL */
};

#define QP_COUNTER_GROUP_MAX 32

struct qp_counter_group {
	const char *path;	/* where its keys are in the JSON, e.g. "cpu.unwind" */
	bool present;		/* false: neither JSON nor /metrics has it now */
	const struct qp_counter_def *defs;
	size_t n;
	struct qp_counter_val v[QP_COUNTER_GROUP_MAX];
};

#define QP_CTR_DEF_OF(kind, key, from, unit, metric, label, help) { kind, key, unit, metric, label, help },
#define QP_CTR_VAL_OF(kind, key, from, unit, metric, label, help) { (uint64_t)(from), (double)(from) },

/* *G = the rows of TABLE, their values read from the variable `s` in scope. */
#define QP_COUNTER_GROUP(g, p, TABLE)                                                                          \
	do {                                                                                                   \
		static const struct qp_counter_def defs_[] = { TABLE(QP_CTR_DEF_OF) };                         \
		const struct qp_counter_val v_[] = { TABLE(QP_CTR_VAL_OF) };                                   \
		_Static_assert(QP_ARRAY_SIZE(defs_) <= QP_COUNTER_GROUP_MAX, "a counter group too large");     \
		(g)->path = (p);                                                                               \
		(g)->present = true;                                                                           \
		(g)->defs = defs_;                                                                             \
		(g)->n = QP_ARRAY_SIZE(defs_);                                                                 \
		memcpy((g)->v, v_, sizeof(v_));                                                                \
	} while (0)

/* The status groups, in the order of the status JSON. */
enum qp_status_group {
	QP_SG_CPU, QP_SG_UNWIND, QP_SG_OFFCPU, QP_SG_SLOW, QP_SG_SCOPES, QP_SG_DROPS, QP_SG_MINMAX, QP_SG_POLL,
	QP_SG_SPANS, QP_SG_LOGS, QP_SG_VALUES, QP_SG_MARKS, QP_SG_TRACE, QP_SG_CALIB, QP_SG_RING, QP_SG__N
};

/* G[QP_SG__N] from S (the unwinding's only while CPU sampling runs). */
void qp_status_counter_groups(const struct qp_status_model *s, struct qp_counter_group *g);
/* The fork/exec figures ("lifecycle"), or no group (present false) when
 * LC is NULL. */
void qp_lifecycle_counter_group(const struct qp_lifecycle_figures *lc, struct qp_counter_group *g);

/* Row I of G as JSON "key": value in the object J is inside of. */
void qp_counter_json(struct qp_json *j, const struct qp_counter_group *g, size_t i);
/* Rows [FROM, TO) of G. */
void qp_counters_json(struct qp_json *j, const struct qp_counter_group *g, size_t from, size_t to);
/* The JSON value of row I: in the JSON's unit (µs for QP_CU_NS_US...),
 * as a double (0/1 for a flag, NaN for an unset QP_CK_OPT). */
double qp_counter_json_value(const struct qp_counter_group *g, size_t i);
/* The /metrics value of row I: seconds for the QP_CU_NS units. */
double qp_counter_metric_value(const struct qp_counter_group *g, size_t i);
#endif

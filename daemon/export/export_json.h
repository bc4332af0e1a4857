/* export_json.h - the JSON documents of the data routes, written from the
 * model's structs: {"scopes": [...]} (GET /api/scopes, and scopes.json of
 * an exit report), {"values": [...]} (GET /api/values), and the figure
 * sections of GET /api/status. Pure: no lock, no I/O. */
#ifndef QPROF_EXPORT_JSON_H
#define QPROF_EXPORT_JSON_H
#include "common/json_writer.h"
#include "model/model_scopes.h"
#include "model/model_status.h"
#include "model/model_values.h"

/* KEYS[i]: VALS[i] for each of the N keys, or null for every key when VALS
 * is NULL: a row's figures, or the same keys for a row without them. */
void qp_export_figures_json(struct qp_json *j, const char *const *keys, const double *vals, size_t n);
void qp_export_scopes_json(const struct qp_scope_model *m, struct qp_json *j);
void qp_export_values_json(const struct qp_value_model *m, struct qp_json *j);
/* The keys "cpu", "scopes", "logs", "values", "marks" of the status
 * object J is inside of. */
void qp_export_status_figures_json(const struct qp_status_model *m, struct qp_json *j);
/* export_cfi.c: the key "kernel" of the CPU unwind figures U: the walk in
 * the kernel by compiled CFI tables, its ends and its tables. */
void qp_export_cfi_kernel(struct qp_json *j, const struct qp_cpu_unwind_figures *u);
/* The same ends by name, for the text views (NULL past the last). */
const char *qp_cfi_walk_end_name(unsigned int e);
#endif

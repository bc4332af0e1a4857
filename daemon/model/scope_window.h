/* scope_window.h - the arithmetic of a window: the aggregates of scopes,
 * marks and counted probes over N seconds as the difference of two
 * snapshots of the collector (now - base), or since attach without a base.
 * Pure: no names, no registry, no I/O; unit-tested on hand-made snapshots. */
#ifndef QPROF_SCOPE_WINDOW_H
#define QPROF_SCOPE_WINDOW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect/collect_scopes.h"

/* One (process, site, parent) aggregate of a window. */
struct qp_wrow {
	struct scope_key key;
	struct scope_stats st;	/* figures of the window */
};

/* The rows of NOW (minus BASE when not NULL) for PID (all when pid <= 0)
 * with a count in the window, sorted by pid, then total time (most first),
 * then site: into *OUT (malloc'ed, free()), their number in *N. 0 or
 * -ENOMEM. A row whose base count exceeds its count now was deleted and
 * re-created meanwhile: it is left out. A row new in the window counts whole. */
int qp_scope_window(const struct qp_scope_snapshot *now, const struct qp_scope_snapshot *base, int pid,
		    struct qp_wrow **out, size_t *n);

/* Window figures of one row: counts and sums subtract exactly; the exact
 * min and max of a window are unknown, so they are the histogram's bounds
 * clamped to the lifetime min and max. false when the row is empty in the
 * window or its base is newer than it (re-created). */
bool qp_scope_window_row(const struct qp_scope_row *now, const struct qp_scope_row *base,
			 struct scope_stats *out);

/* The count of mark KEY in the window: NOW's count less BASE's row of the
 * same key (BASE sorted by key, NULL: since attach). A base larger than now
 * (re-created) is not subtracted. */
uint64_t qp_mark_window_count(const struct qp_mark_row *now, const struct qp_mark_row *base,
			      size_t nbase);
/* Likewise for a counted probe (BASE in any order). */
uint64_t qp_probe_window_count(const struct qp_probe_row *now, const struct qp_probe_row *base,
			       size_t nbase);

/* Distinct (process, site) pairs of a snapshot (rows sorted by key). */
size_t qp_scope_count_sites(const struct qp_scope_snapshot *s);
/* Scope events of a snapshot: the sum of its counts. */
uint64_t qp_scope_count_events(const struct qp_scope_snapshot *s);
#endif

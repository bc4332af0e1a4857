/* export_trace.h - a timeline as Chrome Trace Event Format JSON (what
 * Perfetto's UI, chrome://tracing and speedscope open): a pure function
 * from the plain timeline of trace_events.h to JSON. It knows no collector.
 *
 * Output: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}.
 *   - "M" process_name per process, thread_name per thread, first;
 *   - then the events in the order given (the caller sorts by time:
 *     qp_trace_events_sort), each with "pid", "tid", "ts" in us with three
 *     decimals (ns exact: "1234.567"):
 *       scope -> {"ph": "X", "cat": "scope", "name", "dur", "args": {"depth"}}
 *       mark  -> {"ph": "i", "s": "t", "cat": "mark", "name"}
 *       log   -> {"ph": "i", "s": "t", "cat": "log", "name": "log", "args": {"message", "site"}}
 *       value -> {"ph": "C", "cat": "value", "name", "args": {"value"}}
 *         (a value that is not finite has no number: it becomes an "i"
 *          event with "args": {"value": "nan"|"inf"|"-inf"})
 *   - when anything was dropped or lost, one global "i" event
 *     "qprof: events dropped" at the end with the counts in "args";
 *   - otherData: "collector", "begin_ns", "end_ns", "events" (written),
 *     "dropped_events" (past the cap), "lost_events" (no room in the
 *     collector's buffer), "calibration_ns" (subtracted from each duration).
 */
#ifndef QPROF_EXPORT_TRACE_H
#define QPROF_EXPORT_TRACE_H
#include <stddef.h>
#include <stdint.h>
#include "json_writer.h"
#include "trace_events.h"

/* D as JSON into J. 0, or -ENOMEM when the writer failed. */
int qp_export_trace(const struct qp_trace_doc *d, struct qp_json *j);
#endif

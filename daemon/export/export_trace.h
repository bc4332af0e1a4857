/* export_trace.h - a timeline as Chrome Trace Event Format JSON (what
 * Perfetto's UI, chrome://tracing and speedscope open): a pure function
 * from the plain timeline of trace_events.h to JSON. It knows no collector.
 *
 * Output: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}.
 *   - "M" process_name per process, thread_name per thread, first;
 *   - then the events in the order given (the caller sorts by time:
 *     qp_trace_events_sort), each with "pid", "tid", "ts" in us with three
 *     decimals (ns exact: "1234.567"):
 *       scope -> {"ph": "X", "cat": "scope", "name", "dur"} (no "args": a
 *                client such as speedscope names a frame by name and args
 *                together; the nesting is in the times)
 *       mark  -> {"ph": "i", "s": "t", "cat": "mark", "name"}
 *       log   -> {"ph": "i", "s": "t", "cat": "log", "name": "log", "args": {"message", "site"}}
 *       value -> {"ph": "C", "cat": "value", "name", "args": {"value"}}
 *         (a value that is not finite has no number: it becomes an "i"
 *          event with "args": {"value": "nan"|"inf"|"-inf"})
 *   - when anything was dropped or lost, one global "i" event
 *     "qprof: events dropped" at the end with the counts in "args";
 *   - under a size cap (MAX_BYTES > 0), the events that would take the
 *     answer past it are left out (a prefix in time order is kept), and one
 *     global "i" event "qprof: trace cut here (the N MB cap): ..." at the
 *     time of the first one left out says so, with "args":
 *     {"events_left_out", "max_bytes"};
 *   - otherData: "collector", "begin_ns", "end_ns", "events" (written),
 *     "dropped_events" (past the event cap), "lost_events" (no room in the
 *     collector's buffer), "calibration_ns" (subtracted from each duration),
 *     "max_bytes" (0: no size cap), "cut_events" (left out by it) and, when
 *     it cut, "cut_at_ns" (the first left out).
 */
#ifndef QPROF_EXPORT_TRACE_H
#define QPROF_EXPORT_TRACE_H
#include <stddef.h>
#include <stdint.h>
#include "common/json_writer.h"
#include "model/trace_events.h"

/* The largest size cap asked for (max_mb=, --max-mb), in 10^6 bytes. */
#define QP_TRACE_MAX_MB 4096

/* D as JSON into J, within MAX_BYTES when not 0 (the names of processes
 * and threads are always written). 0, or -ENOMEM when the writer failed. */
int qp_export_trace(const struct qp_trace_doc *d, uint64_t max_bytes, struct qp_json *j);

/* D in speedscope's own file format (https://www.speedscope.app/file-format-schema.json)
 * into J: what speedscope reads fastest. One frame table shared by all
 * threads ("shared": {"frames": [{"name"}...]}, a name once), then one
 * evented profile per thread ("type": "evented", "unit": "nanoseconds",
 * times from the window's begin) of "O"/"C" events (open, close a frame),
 * nested and in time order as speedscope demands: a scope that would end
 * after the one around it (the calibration subtracted from both) is closed
 * with it. Scopes only: marks, values, logs and spans across threads have
 * no place in the format, and are counted in the trailer. The profiles
 * are named "PROCESS (pid N), THREAD (tid N)"; the file's top level ends
 * with "qprof": {"collector", "begin_ns", "end_ns", "scopes" (written),
 * "dropped_events", "lost_events", "calibration_ns", "max_bytes",
 * "cut_scopes", ["cut_at_ns"], "left_out": {"marks", "values", "logs",
 * "span_events"}}. Under a size cap the scopes that begin from the first
 * one that would not fit are left out, and the file's name and every
 * profile's name end with "[cut at +S s: the N MB cap]".
 * 0, or -ENOMEM. */
int qp_export_speedscope(const struct qp_trace_doc *d, uint64_t max_bytes, struct qp_json *j);

/* "50 MB" (a whole number of 10^6 bytes) or "1234-byte": for the notes. */
const char *qp_trace_cap_text(uint64_t max_bytes, char *buf, size_t len);
#endif

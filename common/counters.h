/* counters.h - every counter of qprofd's own figures, declared once: the
 * tables below are X-macros, one row a counter, and the encoders expand
 * them (export/counters_encode.c: the status JSON and /metrics;
 * export_targets.c: the targets' JSON; the exit report and qprof-cli read
 * the text of the ring's losses). A counter added to a table appears in
 * each of them; see docs/internals/architecture.md ("Counters").
 *
 * A row is X(KIND, KEY, FROM, UNIT, METRIC, LABEL, HELP):
 *   KIND    QP_CK_COUNTER (only grows: a Prometheus counter), QP_CK_GAUGE
 *           (goes up and down), QP_CK_FLAG (a bool: JSON true/false, a 0/1
 *           gauge), QP_CK_REAL (a double gauge), QP_CK_OPT (a gauge whose 0
 *           means "not set": JSON null)
 *   KEY     the JSON key, and the label value when LABEL is set
 *   FROM    where the figure comes from: an expression of `s`, the group's
 *           struct (named at the top of each table); only the daemon's
 *           encoders expand it, the CLI never does
 *   UNIT    QP_CU_ONE (a count), QP_CU_BYTES, QP_CU_HZ, QP_CU_NS (JSON
 *           in ns; /metrics in seconds), QP_CU_NS_US (JSON in µs), QP_CU_NS_MS
 *           (JSON in ms)
 *   METRIC  the /metrics family, NULL for a figure that is JSON only (it is
 *           a sum of a family, or the figure of one target, not of qprofd)
 *   LABEL   NULL, or the label name that puts consecutive rows of one
 *           METRIC into one family (qprof_scopes_dropped_total{reason=KEY})
 *   HELP    the family's HELP text (the first row's, for a labelled family)
 * The rows keep the order of the JSON keys. Nothing here includes a
 * struct: FROM is only tokens until a daemon encoder expands it. */
#ifndef QPROF_COUNTERS_H
#define QPROF_COUNTERS_H

enum qp_counter_kind { QP_CK_COUNTER, QP_CK_GAUGE, QP_CK_FLAG, QP_CK_REAL, QP_CK_OPT };
enum qp_counter_unit { QP_CU_ONE, QP_CU_BYTES, QP_CU_HZ, QP_CU_NS, QP_CU_NS_US, QP_CU_NS_MS };

/* One row, as the encoders and tests read it (FROM left out). */
struct qp_counter_def {
	enum qp_counter_kind kind;
	const char *key;
	enum qp_counter_unit unit;
	const char *metric, *label, *help;
};

/* ---- GET /api/status and /metrics: s is a const struct qp_status_model * -- */

/* "cpu": CPU sampling */
#define QP_CTR_CPU(X)                                                                                          \
	X(QP_CK_FLAG, "running", s->cpu.running, QP_CU_ONE, "qprof_cpu_sampling", NULL,                        \
	  "1 while CPU sampling runs.")                                                                        \
	X(QP_CK_GAUGE, "frequency_hz", s->cpu.frequency_hz, QP_CU_HZ, "qprof_cpu_frequency_hertz", NULL,       \
	  "CPU samples a second taken of each CPU (--frequency).")                                             \
	X(QP_CK_COUNTER, "samples", s->cpu.samples, QP_CU_ONE, "qprof_cpu_samples_total", NULL,                \
	  "CPU samples taken.")                                                                                \
	X(QP_CK_COUNTER, "lost", s->cpu.lost, QP_CU_ONE, "qprof_cpu_samples_lost_total", NULL,                 \
	  "CPU samples lost (ring buffer full, stack unreadable, caps).")                                      \
	X(QP_CK_COUNTER, "aged", s->cpu.aged, QP_CU_ONE, "qprof_cpu_samples_aged_total", NULL,                 \
	  "CPU samples aged out of the since-attach views.")                                                   \
	X(QP_CK_GAUGE, "table_bytes", s->cpu.table_bytes, QP_CU_BYTES, "qprof_cpu_table_bytes", NULL,          \
	  "What the CPU sample table holds now.")                                                              \
	X(QP_CK_FLAG, "all", s->cpu.all, QP_CU_ONE, "qprof_cpu_all_processes", NULL,                          \
	  "1 when every process of the host is sampled (--all).")                                              \
	X(QP_CK_GAUGE, "cpus", s->cpu.cpus, QP_CU_ONE, "qprof_cpu_perf_events", NULL,                          \
	  "CPUs with a sampling perf event open.")

/* "cpu"."unwind": what the CFI unwinding did (only while sampling runs) */
#define QP_CTR_UNWIND_ROW(X, key, help) \
	X(QP_CK_COUNTER, #key, s->cpu.unwind.key, QP_CU_ONE, "qprof_cpu_unwind_" #key "_total", NULL, help)
#define QP_CTR_CPU_UNWIND(X)                                                                                   \
	QP_CTR_UNWIND_ROW(X, copied, "CPU samples that carried a copy of the user stack.")                     \
	QP_CTR_UNWIND_ROW(X, copy_fail, "CPU samples whose stack copy was wanted and not made (frame pointers only).") \
	QP_CTR_UNWIND_ROW(X, copy_short, "Stack copies under 16 KiB (the stack ended nearer).")                \
	QP_CTR_UNWIND_ROW(X, dwarf, "Samples with a stack copy whose CFI-unwound stack was kept.")              \
	QP_CTR_UNWIND_ROW(X, fp, "Samples with a stack copy whose frame-pointer stack was kept.")              \
	QP_CTR_UNWIND_ROW(X, complete, "CFI walks that unwound the whole stack.")                      \
	QP_CTR_UNWIND_ROW(X, partial, "CFI walks that stopped early (copy too short, no CFI, bad data).")                        \
	QP_CTR_UNWIND_ROW(X, truncated, "CFI walks cut at the frame limit.")                                   \
	QP_CTR_UNWIND_ROW(X, loops, "CFI walks stopped because the stack pointer did not rise.")               \
	QP_CTR_UNWIND_ROW(X, no_module, "Samples whose pc is in no file of the process.")                   \
	QP_CTR_UNWIND_ROW(X, refreshes, "Times the unwinder's view of a process was made again.")                            \
	QP_CTR_UNWIND_ROW(X, errors, "Samples for which the unwinder's view of the process could not be made.")                                                 \
	QP_CTR_UNWIND_ROW(X, deferred, "Samples not unwound: too many views of processes made in the last second.")                               \
	QP_CTR_UNWIND_ROW(X, fast, "CFI walks done by the cached rules.")                              \
	QP_CTR_UNWIND_ROW(X, slow, "CFI walks done by libdwfl.")                                               \
	QP_CTR_UNWIND_ROW(X, cache_resets, "Times a process's cache of unwind rules was emptied because full.")        \
	QP_CTR_UNWIND_ROW(X, files_refused, "Mapped files the CFI unwinder did not use: cut or changed while copied, not ELF, or too big.")

/* "offcpu": the kernel events (off-CPU intervals, scope kernel figures) */
#define QP_CTR_OFFCPU(X)                                                                                       \
	X(QP_CK_FLAG, "running", s->offcpu.running, QP_CU_ONE, "qprof_offcpu_tracing", NULL,                   \
	  "1 while kernel events (off-CPU intervals, scope kernel figures) are traced.")                       \
	X(QP_CK_COUNTER, "intervals", s->offcpu.intervals, QP_CU_ONE, "qprof_offcpu_intervals_total", NULL,    \
	  "Off-CPU intervals kept.")                                                                           \
	X(QP_CK_COUNTER, "lost", s->offcpu.lost, QP_CU_ONE, "qprof_offcpu_intervals_lost_total", NULL,         \
	  "Off-CPU intervals lost (ring buffer full, caps).")                                                  \
	X(QP_CK_COUNTER, "no_state", s->offcpu.no_state, QP_CU_ONE, "qprof_offcpu_no_state_total", NULL,       \
	  "Switches whose thread state could not be made.")                                                    \
	X(QP_CK_COUNTER, "kstats_full", s->offcpu.kstats_full, QP_CU_ONE, "qprof_offcpu_kstats_full_total",    \
	  NULL, "Scope kernel figures that found no room in their map.")

/* "offcpu"."slow": the store of the slowest instances */
#define QP_CTR_SLOW_ROW(X, kind, key, from, metric, help) \
	X(kind, #key, s->offcpu.from, QP_CU_ONE, "qprof_slow_" metric, NULL, help)
#define QP_CTR_OFFCPU_SLOW(X)                                                                                  \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, records, slow.records, "records_total",                              \
			"Slowest-instance records joined.")                                                    \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, lost, slow_lost, "records_lost_total",                               \
			"Slowest-instance records the kernel ring had no room for.")                           \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, pending_lost, slow.pending_lost, "pending_lost_total",               \
			"Slowest-instance records with no room in the pending queue.")                         \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, refused, slow.refused, "refused_total",                              \
			"Slowest instances refused: no reservoir or no memory left.")                          \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, partial, slow.partial, "partial_total",                              \
			"Slowest instances joined with a history that no longer reached their begin.")         \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, ring_missed, slow.ring_missed, "ring_missed_total",                  \
			"Ring collector instances overwritten before they were read.")                         \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, kevents, slow.kevents, "kevents_total",                              \
			"Faults and irq runs of ring threads remembered.")                                     \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, kevents_lost, slow.kevents_lost, "kevents_lost_total",               \
			"Faults and irq runs of ring threads lost on their way.")                              \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, received, slow.received, "received_total",                           \
			"Slowest-instance records queued (kernel ring, flight recorders).")                    \
	QP_CTR_SLOW_ROW(X, QP_CK_GAUGE, windows_open, slow.windows_open, "windows_open",                       \
			"Windows of the slowest instances open now.")                                          \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, window_records, slow.window_records, "window_records_total",         \
			"Instances a window of the slowest kept.")                                             \
	QP_CTR_SLOW_ROW(X, QP_CK_COUNTER, windows_refused, slow.windows_refused, "windows_refused_total",      \
			"Windows of the slowest refused: the most were open.")

/* "scopes": sites, events and their sum of drops */
#define QP_CTR_SCOPES(X)                                                                                       \
	X(QP_CK_GAUGE, "sites", s->scopes.sites, QP_CU_ONE, "qprof_scopes_sites", NULL,                         \
	  "Scope, mark, value and probe sites attached.")                                                      \
	X(QP_CK_COUNTER, "events", s->scopes.events, QP_CU_ONE, "qprof_scopes_events_total", NULL,              \
	  "Scope and span events measured.")                                                                   \
	X(QP_CK_COUNTER, "dropped", s->scopes.dropped, QP_CU_ONE, NULL, NULL,                                 \
	  "The sum of qprof_scopes_dropped_total.")

/* "scopes"."dropped_by_reason": one family, the reason a label */
#define QP_HELP_DROPS "Scope and span events that could not be measured, by reason."
#define QP_CTR_DROP_ROW(X, key) \
	X(QP_CK_COUNTER, #key, s->scopes.drops.key, QP_CU_ONE, "qprof_scopes_dropped_total", "reason", QP_HELP_DROPS)
#define QP_CTR_SCOPE_DROPS(X)                                                                                  \
	QP_CTR_DROP_ROW(X, exit_without_enter)                                                                 \
	QP_CTR_DROP_ROW(X, out_of_order)                                                                       \
	QP_CTR_DROP_ROW(X, too_deep)                                                                           \
	QP_CTR_DROP_ROW(X, thread_exit)                                                                        \
	QP_CTR_DROP_ROW(X, map_full)                                                                           \
	QP_CTR_DROP_ROW(X, stack_unavailable)                                                                  \
	QP_CTR_DROP_ROW(X, begin_unended)                                                                      \
	QP_CTR_DROP_ROW(X, span_end_without_begin)                                                             \
	QP_CTR_DROP_ROW(X, span_step_without_begin)                                                            \
	QP_CTR_DROP_ROW(X, span_id_reused)                                                                     \
	QP_CTR_DROP_ROW(X, span_table_full)                                                                    \
	QP_CTR_DROP_ROW(X, span_abandoned)                                                                     \
	QP_CTR_DROP_ROW(X, ring_lost)

/* "scopes", after the drops */
#define QP_CTR_SCOPES_MINMAX(X)                                                                                \
	X(QP_CK_COUNTER, "minmax_inexact", s->scopes.minmax_inexact, QP_CU_ONE,                                \
	  "qprof_scopes_minmax_inexact_total", NULL, "Scope min/max updates given up under contention.")

/* "scopes"."poll": the daemon's reads of the kernel's chunks */
#define QP_CTR_SCOPES_POLL(X)                                                                                  \
	X(QP_CK_COUNTER, "polls", s->scopes.poll.polls, QP_CU_ONE, "qprof_scopes_polls_total", NULL,            \
	  "Reads of the scope maps.")                                                                          \
	X(QP_CK_COUNTER, "chunks_read", s->scopes.poll.chunks_read, QP_CU_ONE,                                 \
	  "qprof_scopes_poll_chunks_read_total", NULL, "Scope chunk values copied out of the kernel.")          \
	X(QP_CK_COUNTER, "full_scans", s->scopes.poll.full_scans, QP_CU_ONE,                                   \
	  "qprof_scopes_poll_full_scans_total", NULL, "Scope map reads that read every chunk (dirty keys lost).") \
	X(QP_CK_COUNTER, "cpu_us", s->scopes.poll.cpu_ns, QP_CU_NS_US, "qprof_scopes_poll_cpu_seconds_total",   \
	  NULL, "CPU time of the threads that read the scope maps, in the reads.")                             \
	X(QP_CK_GAUGE, "chunks", s->scopes.poll.chunks, QP_CU_ONE, "qprof_scopes_poll_chunks", NULL,            \
	  "Scope chunks held now.")

/* "scopes", last: spans across threads */
#define QP_CTR_SCOPES_SPANS(X)                                                                                 \
	X(QP_CK_GAUGE, "spans_pending", s->scopes.spans_pending, QP_CU_ONE, "qprof_spans_pending", NULL,       \
	  "Spans across threads begun and not ended, after the last sweep.")                                   \
	X(QP_CK_GAUGE, "span_table", s->scopes.span_table, QP_CU_ONE, "qprof_span_table_entries", NULL,        \
	  "Entries of the table of pending spans (--span-pending).")

/* "logs" */
#define QP_CTR_LOGS(X)                                                                                         \
	X(QP_CK_FLAG, "running", s->logs.running, QP_CU_ONE, "qprof_logs_running", NULL,                       \
	  "1 while QPROF_LOG messages are collected.")                                                         \
	X(QP_CK_COUNTER, "received", s->logs.received, QP_CU_ONE, "qprof_logs_received_total", NULL,           \
	  "QPROF_LOG messages received.")                                                                      \
	X(QP_CK_COUNTER, "lost", s->logs.lost, QP_CU_ONE, "qprof_logs_lost_total", NULL,                       \
	  "QPROF_LOG messages lost (ring buffer full).")                                                       \
	X(QP_CK_GAUGE, "oldest_seq", s->logs.oldest_seq, QP_CU_ONE, "qprof_logs_oldest_seq", NULL,             \
	  "The sequence number of the oldest QPROF_LOG message held.")

/* "values" and "marks" */
#define QP_CTR_VALUES(X)                                                                                       \
	X(QP_CK_COUNTER, "lost", s->values_lost, QP_CU_ONE, "qprof_values_lost_total", NULL,                   \
	  "QPROF_VALUE hits whose kernel bucket found no room.")
#define QP_CTR_MARKS(X)                                                                                        \
	X(QP_CK_COUNTER, "lost", s->marks_lost, QP_CU_ONE, "qprof_marks_lost_total", NULL,                     \
	  "QPROF_MARK hits whose kernel entry found no room.")

/* "trace": the event tracer's sessions */
#define QP_CTR_TRACE(X)                                                                                        \
	X(QP_CK_FLAG, "running", s->trace.running, QP_CU_ONE, "qprof_trace_running", NULL,                     \
	  "1 while the event tracer is loaded.")                                                               \
	X(QP_CK_GAUGE, "active", s->trace.st.active, QP_CU_ONE, "qprof_trace_sessions_active", NULL,           \
	  "Trace sessions open now.")                                                                          \
	X(QP_CK_COUNTER, "sessions", s->trace.st.sessions, QP_CU_ONE, "qprof_trace_sessions_total", NULL,      \
	  "Trace sessions begun.")                                                                             \
	X(QP_CK_COUNTER, "records", s->trace.st.records, QP_CU_ONE, "qprof_trace_records_total", NULL,         \
	  "Trace records received.")                                                                           \
	X(QP_CK_COUNTER, "dropped", s->trace.st.dropped, QP_CU_ONE, "qprof_trace_records_dropped_total", NULL, \
	  "Trace records past a session's cap.")                                                               \
	X(QP_CK_COUNTER, "lost", s->trace.st.lost, QP_CU_ONE, "qprof_trace_records_lost_total", NULL,          \
	  "Trace records with no room in the kernel's ring buffer.")

/* "calibration": the probes' own cost */
#define QP_CTR_CALIBRATION(X)                                                                                  \
	X(QP_CK_FLAG, "done", s->calib.done, QP_CU_ONE, "qprof_calibration_done", NULL,                        \
	  "1 when the probes' own cost was measured and is taken off.")                                        \
	X(QP_CK_GAUGE, "correction_ns", s->calib.correction_ns, QP_CU_NS, "qprof_probe_correction_seconds",   \
	  NULL, "The probes' own cost taken off every scope duration (0: not calibrated).")                    \
	X(QP_CK_GAUGE, "samples", s->calib.samples, QP_CU_ONE, "qprof_calibration_samples", NULL,              \
	  "Empty scopes measured to calibrate.")                                                               \
	X(QP_CK_GAUGE, "p10_ns", s->calib.p10_ns, QP_CU_NS, "qprof_calibration_p10_seconds", NULL,             \
	  "The 10th percentile of the empty scopes' durations.")                                               \
	X(QP_CK_GAUGE, "p50_ns", s->calib.p50_ns, QP_CU_NS, "qprof_calibration_p50_seconds", NULL,             \
	  "The median of the empty scopes' durations.")                                                        \
	X(QP_CK_GAUGE, "p90_ns", s->calib.p90_ns, QP_CU_NS, "qprof_calibration_p90_seconds", NULL,             \
	  "The 90th percentile of the empty scopes' durations.")                                               \
	X(QP_CK_GAUGE, "mean_ns", s->calib.mean_ns, QP_CU_NS, "qprof_calibration_mean_seconds", NULL,          \
	  "The mean of the empty scopes' durations, the slowest 1 % left out.")

/* "ring": the ring collector's own counters (each target's are below) */
#define QP_CTR_RING(X)                                                                                         \
	X(QP_CK_FLAG, "running", s->ring.running, QP_CU_ONE, "qprof_ring_running", NULL,                       \
	  "1 while the ring collector runs.")                                                                  \
	X(QP_CK_FLAG, "default", s->ring.is_default, QP_CU_ONE, "qprof_ring_default", NULL,                    \
	  "1 when new targets go on the ring collector.")                                                      \
	X(QP_CK_COUNTER, "announcements", s->ring.announces, QP_CU_ONE, "qprof_ring_announcements_total",      \
	  NULL, "Rings announced by threads (ring_register hits received).")                                                  \
	X(QP_CK_COUNTER, "not_target", s->ring.not_target, QP_CU_ONE, "qprof_ring_not_target_total", NULL,     \
	  "Ring announcements of processes that are not targets.")                                             \
	X(QP_CK_COUNTER, "bad", s->ring.bad, QP_CU_ONE, "qprof_ring_bad_total", NULL,                          \
	  "Ring announcements naming no valid ring (address, size, header): skipped.")                                                        \
	X(QP_CK_COUNTER, "refused", s->ring.refused, QP_CU_ONE, "qprof_ring_refused_total", NULL,              \
	  "Ring announcements past the most rings qprofd reads.")                                                               \
	X(QP_CK_COUNTER, "lost", s->ring.lost, QP_CU_ONE, "qprof_ring_announcements_lost_total", NULL,         \
	  "Ring announcements the kernel ring had no room for.")                                               \
	X(QP_CK_COUNTER, "dropped_rings", s->ring.dropped_rings, QP_CU_ONE, "qprof_ring_dropped_rings_total",  \
	  NULL, "Rings dropped after they were read: their header changed.")                                                     \
	X(QP_CK_COUNTER, "thread_exits", s->ring.exits, QP_CU_ONE, "qprof_ring_thread_exits_total", NULL,      \
	  "Exits of threads with a ring reported.")                                                            \
	X(QP_CK_COUNTER, "thread_exits_lost", s->ring.exits_lost, QP_CU_ONE,                                   \
	  "qprof_ring_thread_exits_lost_total", NULL, "Exits of threads with a ring the kernel ring lost.")     \
	X(QP_CK_COUNTER, "thread_exit_heads_unread", s->ring.exit_heads_unread, QP_CU_ONE,                     \
	  "qprof_ring_thread_exit_heads_unread_total", NULL,                                                   \
	  "Exits of threads with a ring whose head the kernel could not read.")                                    \
	X(QP_CK_FLAG, "exit_hook", s->ring.exit_hook, QP_CU_ONE, "qprof_ring_exit_hook", NULL,                 \
	  "1 when thread exits are hooked to read each ring's last head.")                                     \
	X(QP_CK_OPT, "ring_records", s->ring.ring_records, QP_CU_ONE, "qprof_ring_new_ring_records", NULL,      \
	  "Records a new ring is asked to have (--ring-records; 0: the markers' own size).")                   \
	X(QP_CK_REAL, "tsc_ns_per_tick", s->ring.ns_per_tick, QP_CU_NS, "qprof_ring_tsc_seconds_per_tick",     \
	  NULL, "The TSC calibration: time a tick of the time stamp counter.")

/* ---- the targets' JSON: s is a const struct qp_target_view * ------------- */

/* The ring's losses in events (s is a struct qp_ring_lost_est): the rows
 * as Y(A, KEY, FROM, HELP, TEXT, IN_REPORT). TEXT is what the exit report
 * and qprof-cli write after the number (the first row always, the others
 * when not 0; NULL: not written), IN_REPORT whether the report does. */
#define QP_RING_LOSSES(Y, A, est)                                                                              \
	Y(A, "lost_scopes", (est).scopes, "Scopes short in the counts: records lost on the ring.",             \
	  "scopes lost on the ring", 1)                                                                        \
	Y(A, "lost_scopes_partial", (est).scopes_partial, "Of the scopes lost, those known one by one.", NULL, 0) \
	Y(A, "lost_marks", (est).marks, "QPROF_MARK hits lost on the ring (a share).", "marks", 1)             \
	Y(A, "lost_values", (est).values, "QPROF_VALUE hits lost on the ring (a share).", "values", 1)         \
	Y(A, "lost_other_records", (est).other, "Records of spans and logs lost on the ring (a share).",       \
	  "records of spans and logs", 0)
#define QP_RING_LOSS_AS_ROW(X, key, from, help, text, in_report) \
	X(QP_CK_COUNTER, key, from, QP_CU_ONE, NULL, NULL, help)

/* "ring" of a ring target: its records, then the accounting of its rings
 * (base + read + lost + unread == head) and the losses in events (then
 * "lost_estimated": whether a loss is a share). Figures of one target, not
 * of qprofd: JSON only. */
#define QP_CTR_TARGET_RING(X)                                                                                  \
	X(QP_CK_GAUGE, "rings", s->ring_status.rings, QP_CU_ONE, NULL, NULL, "Rings drained now.")              \
	X(QP_CK_COUNTER, "records", s->ring_status.c.records, QP_CU_ONE, NULL, NULL,                           \
	  "Records read and accepted.")                                                                        \
	X(QP_CK_COUNTER, "lost", s->ring_status.c.lost, QP_CU_ONE, NULL, NULL,                                 \
	  "Records the writer overwrote before they were read.")                                               \
	X(QP_CK_COUNTER, "garbage", s->ring_status.c.garbage, QP_CU_ONE, NULL, NULL,                           \
	  "Records that are no record (bad kind, time going back, a lone argument).")                          \
	X(QP_CK_COUNTER, "open_at_loss", s->ring_status.c.after_loss, QP_CU_ONE, NULL, NULL,                   \
	  "Scopes open when records were lost (their ends unknowable).")                                       \
	X(QP_CK_COUNTER, "before_attach", s->ring_status.c.before_attach, QP_CU_ONE, NULL, NULL,               \
	  "Records older than the attach: not counted.")                                                       \
	X(QP_CK_COUNTER, "logs", s->ring_status.c.logs, QP_CU_ONE, NULL, NULL, "QPROF_LOG messages read.")      \
	X(QP_CK_COUNTER, "logs_cut", s->ring_status.c.logs_cut, QP_CU_ONE, NULL, NULL,                         \
	  "QPROF_LOG messages cut short.")
#define QP_CTR_TARGET_RING_ACCOUNTING(X)                                                                       \
	X(QP_CK_COUNTER, "rings_gone", s->ring_status.rings_gone, QP_CU_ONE, NULL, NULL,                       \
	  "Rings drained once and gone since (their figures kept).")                                           \
	X(QP_CK_COUNTER, "head", s->ring_status.head, QP_CU_ONE, NULL, NULL, "Records written, over the rings.") \
	X(QP_CK_COUNTER, "base", s->ring_status.base, QP_CU_ONE, NULL, NULL,                                   \
	  "Records written before the rings were first read.")                                                 \
	X(QP_CK_COUNTER, "read", s->ring_status.read, QP_CU_ONE, NULL, NULL, "Records read, over the rings.")   \
	X(QP_CK_GAUGE, "unread", s->ring_status.unread, QP_CU_ONE, NULL, NULL, "Records not read yet.")         \
	X(QP_CK_COUNTER, "lost_at_exit", s->ring_status.c.lost_at_exit, QP_CU_ONE, NULL, NULL,                 \
	  "Of the records lost, those never read because the process ended first.")                            \
	X(QP_CK_COUNTER, "start_unknown", s->ring_status.c.start_unknown, QP_CU_ONE, NULL, NULL,               \
	  "Rings whose first read found their start lapped: their loss is an upper bound.")                    \
	X(QP_CK_COUNTER, "unreadable", s->ring_status.c.unreadable, QP_CU_ONE, NULL, NULL,                     \
	  "Times a ring became unreadable (unmapped, PROT_NONE): retried.")                                    \
	X(QP_CK_COUNTER, "unreadable_ms", s->ring_status.c.unreadable_ns, QP_CU_NS_MS, NULL, NULL,             \
	  "Time rings were unreadable, over the episodes that ended.")                                         \
	X(QP_CK_GAUGE, "bytes", s->ring_status.bytes, QP_CU_BYTES, NULL, NULL,                                 \
	  "The rings' memory in the process now.")                                                             \
	X(QP_CK_GAUGE, "bytes_max_ring", s->ring_status.bytes_max, QP_CU_BYTES, NULL, NULL,                    \
	  "The largest ring's memory.")                                                                        \
	QP_RING_LOSSES(QP_RING_LOSS_AS_ROW, X, s->ring_status.est)

/* ---- "lifecycle" of the status: s is a const struct qp_lifecycle_figures * */

#define QP_CTR_LC_ROW(X, kind, key, unit, metric, help) \
	X(kind, #key, s->key, unit, "qprof_lifecycle_" metric, NULL, help)
#define QP_CTR_LIFECYCLE(X)                                                                                    \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, forks, QP_CU_ONE, "forks_total", "Forks of watched processes (with their own memory).")             \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, shared_mm_children, QP_CU_ONE, "shared_mm_children_total",             \
		      "vfork and CLONE_VM children of watched processes: left alone.")               \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, children_stopped, QP_CU_ONE, "children_stopped_total",                 \
		      "Children stopped because their parent had uprobe trampolines.")                        \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, stop_failed, QP_CU_ONE, "stop_failed_total",                           \
		      "Children whose SIGSTOP could not be sent.")                                            \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, records_lost, QP_CU_ONE, "records_lost_total",                         \
		      "Fork and exec records with no room (no SIGSTOP then either).")                                \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, descendants_unwatched, QP_CU_ONE, "descendants_unwatched_total",       \
		      "Descendants not watched: the table of watched processes was full.")             \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, children_resumed, QP_CU_ONE, "children_resumed_total",                 \
		      "Forked children let run again.")                                                        \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, sites_restored_nop, QP_CU_ONE, "sites_restored_nop_total",             \
		      "Probe sites of forked children given back their nop.")                                  \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, sites_restored_int3, QP_CU_ONE, "sites_restored_int3_total",           \
		      "Probe sites of forked children whose int3 was kept (the child is a target).")           \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, site_rewrites_failed, QP_CU_ONE, "site_rewrites_failed_total",         \
		      "Probe sites of forked children that could not be written.")                             \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, semaphores_lowered, QP_CU_ONE, "semaphores_lowered_total",             \
		      "USDT semaphores of forked children lowered with their sites' nop.")                     \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, semaphore_writes_failed, QP_CU_ONE, "semaphore_writes_failed_total",   \
		      "USDT semaphores of forked children that could not be written.")                         \
	QP_CTR_LC_ROW(X, QP_CK_GAUGE, child_stall_max_ns, QP_CU_NS, "child_stall_max_seconds",                 \
		      "The longest a forked child was held stopped.")                                          \
	QP_CTR_LC_ROW(X, QP_CK_GAUGE, child_stall_mean_ns, QP_CU_NS, "child_stall_mean_seconds",               \
		      "The mean time a forked child was held stopped.")                                        \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, execs, QP_CU_ONE, "execs_total", "Execs of targets followed.")             \
	QP_CTR_LC_ROW(X, QP_CK_GAUGE, exec_stall_max_ns, QP_CU_NS, "exec_stall_max_seconds",                   \
		      "The longest a target was held after an exec.")                                          \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, binary_starts, QP_CU_ONE, "binary_starts_total",                       \
		      "Processes seen starting a --binary file.")                                              \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, execs_seen_in_proc, QP_CU_ONE, "execs_seen_in_proc_total",             \
		      "Execs found by reading /proc rather than by their record.")                                      \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, execs_dropped, QP_CU_ONE, "execs_dropped_total",                       \
		      "Execs of targets that could not be followed.")                                          \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_rendezvous, QP_CU_ONE, "dl_rendezvous_total",                       \
		      "Dynamic linker rendezvous of targets reported.")                                \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_held, QP_CU_ONE, "dl_held_total",                                   \
		      "Rendezvous held (SIGSTOP) until qprofd attached.")                                  \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_unheld, QP_CU_ONE, "dl_unheld_total", "Rendezvous not held: already held, no room or the signal failed.")    \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_released, QP_CU_ONE, "dl_released_total",                           \
		      "Held rendezvous released.")                                                            \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_released_late, QP_CU_ONE, "dl_released_late_total",                 \
		      "Held rendezvous released by the time limit.")                                          \
	QP_CTR_LC_ROW(X, QP_CK_GAUGE, dl_hold_max_ns, QP_CU_NS, "dl_hold_max_seconds",                         \
		      "The longest a rendezvous was held.")                                                  \
	QP_CTR_LC_ROW(X, QP_CK_GAUGE, dl_hold_mean_ns, QP_CU_NS, "dl_hold_mean_seconds",                       \
		      "The mean time a rendezvous was held.")                                                \
	QP_CTR_LC_ROW(X, QP_CK_GAUGE, dl_linkers, QP_CU_ONE, "dl_linkers", "Dynamic linkers watched.")         \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_skipped_unresponsive, QP_CU_ONE, "dl_skipped_unresponsive_total",   \
		      "Rendezvous not held: the process's poll loop was silent (stopped, stuck).")                     \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_skipped_traced, QP_CU_ONE, "dl_skipped_traced_total",               \
		      "Rendezvous not held: the process is ptraced.")                                        \
	QP_CTR_LC_ROW(X, QP_CK_COUNTER, dl_skipped_no_signal, QP_CU_ONE, "dl_skipped_no_signal_total",         \
		      "Rendezvous not held: qprofd may not signal the process.")
#endif

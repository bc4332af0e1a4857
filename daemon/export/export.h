/* export.h - the CPU profile exporters: pure functions from a
 * struct qp_cpu_profile (model_cpu.h) to bytes in a struct qp_buf (buf.h).
 * None of them keeps state or touches the profile; each returns 0, or
 * -ENOMEM when an allocation (or the buffer) failed. Output is deterministic
 * for a given profile.
 *
 *   folded      export_folded.c     text/plain, "comm;root;...;leaf count"
 *   flamegraph  export_flamegraph.c image/svg+xml, self-contained (inline JS)
 *   callgraph   export_callgraph.c  Graphviz DOT, rendered by `dot -Tsvg`
 *   pprof       export_pprof.c      gzipped perftools.profiles.Profile
 */
#ifndef QPROF_EXPORT_H
#define QPROF_EXPORT_H
#include <stdbool.h>
#include <stddef.h>
#include "common/buf.h"
#include "model/model_cpu.h"

/* Folded stacks, one line per distinct stack, root first, the process name
 * (comm) as the outermost frame: "strategy;main;run;calc_ma 42\n".
 * Identical stacks are merged; lines are sorted bytewise (strcmp) on the
 * stack part. Kernel frames get the suffix "_[k]" as perf's folded output.
 * To keep one stack per line and ';' as the only separator, in names ';'
 * becomes ':' and '\n', '\r' become ' '; an empty or NULL name is
 * "[unknown]". Samples with count 0 are skipped. An empty profile is an
 * empty text. Inlined frames (qp_cpu_frame.inlined) get the suffix "_[i]",
 * flamegraph.pl's annotation for them (as "_[k]" is for the kernel). */
int qp_export_folded(const struct qp_cpu_profile *p, struct qp_buf *out);

/* Flame graph options; NULL or zero fields take the defaults. */
struct qp_flame_opts {
	const char *title;	/* NULL: profile title, else "Flame Graph" */
	const char *subtitle;	/* NULL: "N samples, D s" from the profile */
	int width;		/* px, 0: 1200 (clamped to [200, 100000]) */
	bool color_by_module;	/* hue from a hash of the module; else kernel vs user */
};

/* A self-contained SVG flame graph (no external resources): the root
 * "all" at the bottom, then comm, then the stack. Each frame is a
 * <g class="f"> with <title>NAME (N samples, X.XX%)</title>, a <rect> of
 * width plot_width * N / total (plot_width = width - 20) and a <text>
 * truncated to fit. Sibling frames are sorted by name and merged like
 * folded stacks. Frames narrower than 0.1 px are left out (as
 * flamegraph.pl does) so huge profiles stay drawable. Inline JS: click a
 * frame to zoom, "Reset Zoom" (or Escape) to undo; "Search" (or Ctrl-F, /)
 * asks for a regex, highlights matching frames and shows their share of the
 * visible total. All text is XML-escaped, newlines and tabs become spaces,
 * and invalid UTF-8 and XML-invalid controls are replaced by U+FFFD. An empty profile gives a valid SVG saying "no samples" under the
 * title (the caller puts the reason in the title or subtitle). */
int qp_export_flamegraph(const struct qp_cpu_profile *p, const struct qp_flame_opts *o,
			 struct qp_buf *out);

/* A call graph as Graphviz DOT: a node per function (name + module) with its
 * self and total samples, an edge caller -> callee weighted by the samples
 * through it. Recursion counts a function (and an edge) once per sample.
 * Nodes under 0.5% of the total and edges under 0.1% are dropped, and at
 * most 100 nodes are kept (the heaviest), as go tool pprof does, so dot
 * stays fast. An empty profile gives a graph with a single "no samples"
 * node. */
int qp_export_callgraph_dot(const struct qp_cpu_profile *p, struct qp_buf *out);

/* Its SVG: http/render_dot.h (a child process, not the exporters'). */

/* pprof: a perftools.profiles.Profile (profile.proto), hand-encoded and
 * gzipped. sample_type [samples/count, cpu/nanoseconds], period_type
 * cpu/nanoseconds (an off-CPU profile: sample_type [off_cpu/nanoseconds],
 * values [count], period_type off_cpu/nanoseconds, period 1), period = period_ns; a sample per model sample, locations
 * leaf first, values [count, count * period_ns], labels pid (num), comm
 * and, when the thread is known (CPU, off-CPU), thread (str: its name) and tid (num), and when a
 * qprof scope was open qprof_scope (str: the innermost) and qprof_scopes
 * (str: all open ones, innermost first, joined by ';'). A frame and the frames inlined into it at the same address make
 * one Location with one Line (function, line) per level, the innermost
 * first; locations are deduplicated by (mapping, address, their lines),
 * functions by (name, source file, module); Function.filename is the
 * source file, "" when unknown. Every model mapping becomes a mapping in
 * the model's order (the main executable first: qp_cpu_profile_main_first)
 * with its build id and has_functions set (names are already resolved),
 * and has_filenames, has_line_numbers, has_inline_frames where its frames
 * have them; kernel frames get one synthetic "[kernel.kallsyms]" mapping
 * spanning their addresses. */
int qp_export_pprof(const struct qp_cpu_profile *p, struct qp_buf *out);

/* Shared by the SVG and DOT exporters (defined in export_flamegraph.c): the length of the
 * valid UTF-8 sequence (1..4) at s[0..n), or 0 when s[0] does not start a
 * valid, shortest-form, non-surrogate one. XML-invalid code points (C0
 * controls but tab/newline/CR, U+FFFE/U+FFFF) count as invalid too. */
size_t qp_utf8_seq_len(const unsigned char *s, size_t n);
#endif

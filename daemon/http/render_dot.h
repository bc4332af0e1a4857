/* render_dot.h - DOT text to SVG by `dot -Tsvg` in a child process: the
 * HTTP stage's, which may spawn processes (the exporters are pure: the call
 * graph's DOT is export_callgraph.c's). */
#ifndef QPROF_RENDER_DOT_H
#define QPROF_RENDER_DOT_H
#include <stddef.h>
#include "common/buf.h"

/* Render DOT text to SVG with `dot -Tsvg`, found in PATH. Returns 0 with the
 * SVG in *svg, -ENOENT when dot is not installed (the route answers 501),
 * -ETIMEDOUT when it ran longer than timeout_ms (it is killed; the _timeout
 * variant exists for the tests, qp_render_dot_svg uses 30 s), -EFBIG when it
 * wrote more than 256 MiB, -EIO when it failed (err holds the start of its
 * stderr or exit status), other -errno for pipe/spawn failures. err may be
 * NULL. */
int qp_render_dot_svg(const char *dot, size_t len, struct qp_buf *svg, char *err, size_t errlen);
int qp_render_dot_svg_timeout(const char *dot, size_t len, struct qp_buf *svg, char *err,
			      size_t errlen, int timeout_ms);
#endif

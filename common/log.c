/* log.c - see log.h. One line per message on stderr, prefixed with the level,
 * written with a single fprintf so lines from threads do not interleave. */
#include <stdarg.h>
#include <stdio.h>
#include "log.h"

static int log_level = QP_LOG_WARN; /* written once before threads start */

void qp_log_set_level(int level) { log_level = level; }
int qp_log_level(void) { return log_level; }

void qp_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "qprofd: %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], line);
}

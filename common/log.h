/* log.h - qprofd's leveled logger: errors, warnings and info by default
 * (main.c), debug with -vv; libbpf's own messages routed through it. The
 * level is set once in main() before any thread starts. */
#ifndef QPROF_LOG_H
#define QPROF_LOG_H
#include "util.h"

enum qp_log_level { QP_LOG_ERROR, QP_LOG_WARN, QP_LOG_INFO, QP_LOG_DEBUG };

void qp_log_set_level(int level);
int qp_log_level(void);
void qp_log(int level, const char *fmt, ...) __printf(2, 3);

#define qp_err(...) qp_log(QP_LOG_ERROR, __VA_ARGS__)
#define qp_warn(...) qp_log(QP_LOG_WARN, __VA_ARGS__)
#define qp_info(...) qp_log(QP_LOG_INFO, __VA_ARGS__)
#define qp_debug(...) qp_log(QP_LOG_DEBUG, __VA_ARGS__)
#endif

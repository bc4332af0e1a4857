/* cpu_window.h - a CPU profile over a window: the difference of two
 * snapshots of the sample table N seconds apart (several requests share
 * the one sample stream), or everything since the daemon started; built
 * and symbolized by model_cpu_build.c. */
#ifndef QPROF_CPU_WINDOW_H
#define QPROF_CPU_WINDOW_H
#include "model_cpu.h"
#include "model_src.h"

struct qp_cpu_window_query {
	int pid;		/* 0: every process */
	const char *scope;	/* NULL: all samples */
	unsigned int seconds;	/* > 0: the next SECONDS (qp_model_wait), else since the start */
	bool off;		/* the off-CPU profile (weights in ns) */
};

/* OUT for Q. 0; -ENODEV when sampling is unavailable (src->cpu_error says
 * why; for Q->off, or qp_cpu_off_error()), -EIO when the samples cannot be read, -ECANCELED when the daemon
 * stops during the wait, or the -errno of the build. */
int qp_cpu_window(const struct qp_model_src *src, const struct qp_cpu_window_query *q,
		  struct qp_cpu_profile *out);
#endif

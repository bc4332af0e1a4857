/* model_threads.c - the threads of a process for GET /api/threads: the
 * stacks read by collect_threads.c (nothing stopped), each thread's name,
 * state and CPU time from /proc/PID/task/TID, frames named by the daemon's
 * symbolizer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collect/collect_threads.h"
#include "model_src.h"
#include "model_threads.h"
#include "common/procfs.h"
#include "symbolize/symbolize.h"
#include "targets/targets.h"

static const char *unwind_name(enum qp_thread_unwind u)
{
	switch (u) {
	case QP_UNWIND_DWARF:
		return "dwarf";
	case QP_UNWIND_FP:
		return "fp";
	case QP_UNWIND_FP_SCAN:
		return "fp+scan";
	case QP_UNWIND_SCAN:
		return "scan";
	default:
		return "none";
	}
}

/* state letter and utime + stime (ms) of TID from its stat line */
static void task_stat(int pid, int tid, char *state, uint64_t *cpu_ms)
{
	char path[64], line[1024], *p;
	unsigned long long ut = 0, st = 0;
	long hz = sysconf(_SC_CLK_TCK);

	*state = '?';
	*cpu_ms = 0;
	snprintf(path, sizeof(path), "task/%d/stat", tid);
	if (qp_proc_file_line(pid, path, line, sizeof(line)))
		return;
	p = strrchr(line, ')');	/* the name may hold spaces and parentheses */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", state, &ut, &st) < 1)
		return;
	if (hz > 0)
		*cpu_ms = (ut + st) * 1000ull / (unsigned long long)hz;
}

int qp_thread_model_build(const struct qp_model_src *src, int pid, struct qp_thread_model *out, char *err,
			  size_t errlen)
{
	struct qp_thread_stack *v;
	struct qp_symbolizer *sym = src->reg ? src->reg->sym : NULL;
	size_t n, i, j;
	int ret;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	if (!src->threads) {
		snprintf(err, errlen, "thread stacks are unavailable: %s",
			 src->threads_error && src->threads_error[0] ? src->threads_error : "not started");
		return -ENOTSUP;
	}
	ret = qp_threads_stacks(src->threads, pid, &v, &n, &out->truncated, err, errlen);
	if (ret)
		return ret;
	out->rows = calloc(n, sizeof(*out->rows));
	if (!out->rows) {
		free(v);
		return -ENOMEM;
	}
	if (sym)
		qp_sym_process_refresh(sym, pid);
	for (i = 0; i < n; i++) {
		struct qp_thread_row *r = &out->rows[i];
		const struct qp_thread_stack *s = &v[i];
		char path[64];

		r->tid = s->tid;
		snprintf(path, sizeof(path), "task/%d/comm", s->tid);
		if (qp_proc_file_line(pid, path, r->name, sizeof(r->name)))
			snprintf(r->name, sizeof(r->name), "?");
		task_stat(pid, s->tid, &r->state, &r->cpu_ms);
		r->unwind = unwind_name(s->unwind);
		r->on_cpu = s->on_cpu;
		r->sampled = s->sampled;
		r->frames = calloc(s->nkernel + s->nuser + 1, sizeof(*r->frames));
		if (!r->frames) {
			out->n = i + 1;
			free(v);
			qp_thread_model_free(out);
			return -ENOMEM;
		}
		for (j = 0; j < s->nkernel; j++) {
			struct qp_thread_frame *f = &r->frames[r->nframes++];
			struct qp_sym y = { 0 };

			f->addr = s->kernel[j];
			f->kernel = true;
			if (sym)
				qp_sym_kernel(sym, f->addr, &y);
			f->name = y.name ? y.name : "?";
			f->module = y.module ? y.module : "[kernel]";
		}
		for (j = 0; j < s->nuser; j++) {
			struct qp_thread_frame *f = &r->frames[r->nframes++];
			struct qp_sym y = { 0 };

			/* a return address names the call before it */
			f->addr = s->user[j];
			if (sym)
				qp_sym_user(sym, pid, j ? f->addr - 1 : f->addr, &y);
			f->name = y.name ? y.name : "?";
			f->module = y.module ? y.module : "[unknown]";
		}
	}
	out->n = n;
	free(v);
	return 0;
}

void qp_thread_model_free(struct qp_thread_model *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->rows[i].frames);
	free(m->rows);
	memset(m, 0, sizeof(*m));
}

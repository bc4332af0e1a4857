/* model_threads.h - the threads of a process as plain structs: name, state
 * and CPU time from /proc, stacks from collect_threads.c, named by the
 * symbolizer (GET /api/threads, /api/thread/stacks). */
#ifndef QPROF_MODEL_THREADS_H
#define QPROF_MODEL_THREADS_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct qp_model_src;

struct qp_thread_frame {
	uint64_t addr;
	const char *name;	/* owned by the symbolizer */
	const char *module;
	bool kernel;
};

struct qp_thread_row {
	int tid;
	char name[64];		/* /proc/PID/task/TID/comm, as ps shows it */
	char state;		/* /proc's letter: R S D T t Z X I */
	uint64_t cpu_ms;	/* user + system */
	const char *unwind;	/* "fp", "fp+scan", "scan", "none" */
	bool on_cpu;		/* running when iterated and not sampled within 50 ms: its user
				 * stack is from its last kernel entry */
	bool sampled;		/* running when iterated: registers and stacks taken together
				 * at a tick of its own CPU time, right after */
	size_t nframes;		/* kernel frames first (innermost), then user */
	struct qp_thread_frame *frames;
};

struct qp_thread_model {
	int pid;
	size_t n;
	bool truncated;		/* more threads than QP_THREADS_MAX: the rest left out */
	struct qp_thread_row *rows;
};

/* The threads of PID. 0; -ESRCH (gone); -ENOTSUP (no thread iterator:
 * ERR says why); -ENOMEM; -errno. */
int qp_thread_model_build(const struct qp_model_src *src, int pid, struct qp_thread_model *out, char *err,
			  size_t errlen);
void qp_thread_model_free(struct qp_thread_model *m);
#endif

/* lifecycle.h - fork and exec of targets (bpf/lifecycle.bpf.c's user side).
 * A thread takes the kernel's fork records at once: a child stopped because
 * its parent had optimized uprobe sites gets those sites rewritten through
 * /proc/CHILD/mem, then SIGCONT. Exec records (and exe changes seen in
 * /proc, the safety net) are queued for the poll loop, which closes the old
 * image with a report and attaches to the new one (lifecycle_exec.c). */
#ifndef QPROF_LIFECYCLE_H_DAEMON
#define QPROF_LIFECYCLE_H_DAEMON
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

struct qp_lifecycle;
struct qp_lifecycle_figures;
struct qp_registry;

struct qp_lc_exec {
	int pid;
	int parent;		/* a fork of a process that may be a --binary target: 0 for an exec */
	bool stopped;		/* SIGSTOP was sent at the exec: resume after handling */
	bool adopt;		/* a new process started a --binary file */
	bool dl;		/* its dynamic linker's rendezvous: a library came or went;
				 * stopped = held in it (ts_ns: the hold's start) */
	bool unloaded;		/* dl: a library went (not held) */
	uint64_t ts_ns;		/* CLOCK_MONOTONIC of the exec, 0 when seen in /proc */
};

/* Load and attach the BPF side and start the thread. WAKE (may be 0) is
 * sent to the thread MAIN when an exec is queued, to wake the poll loop.
 * HOLD_MS bounds the hold of a target at its dynamic linker's rendezvous
 * (0: a load is reported but not held). */
#define QP_DL_HOLD_DEFAULT_MS	100
#define QP_DL_HOLD_MAX_MS	1000
int qp_lifecycle_open(struct qp_lifecycle **out, pthread_t main, int wake, unsigned int hold_ms,
		      char *err, size_t errlen);
/* Stop the thread, resume every child still stopped, unload. Accepts NULL. */
void qp_lifecycle_close(struct qp_lifecycle *lc);

/* Watch PID (a target) or stop watching it. Accepts lc == NULL. */
void qp_lifecycle_watch(struct qp_lifecycle *lc, int pid, bool on);
/* The dynamic linkers PID maps (0: qprofd's own) get a link on
 * _dl_debug_state, once per file: libraries its targets load and unload
 * are reported at once (lifecycle_dl.c). */
struct qp_maps;
void qp_lifecycle_watch_ldso(struct qp_lifecycle *lc, int pid, const struct qp_maps *maps);
/* A --binary file: its new processes are watched from their exec, and the
 * sites of a forked child in that file are rewritten to int3 (so the child
 * stays probed) rather than to the original nop. */
void qp_lifecycle_watch_file(struct qp_lifecycle *lc, dev_t dev, ino_t ino, bool on);
/* Before the --binary uprobes go: from now on children get the original nop. */
void qp_lifecycle_forget_files(struct qp_lifecycle *lc);

/* The safety net: queue an exec for every watched pid whose /proc/PID/exe
 * is no longer the file it was when watched. */
void qp_lifecycle_check_exes(struct qp_lifecycle *lc);
/* Take up to MAX queued execs; returns how many. */
size_t qp_lifecycle_take_execs(struct qp_lifecycle *lc, struct qp_lc_exec *v, size_t max);
/* After an exec was handled: note the new exe of PID, SIGCONT it if STOPPED.
 * For a rendezvous: true when the process ran on before it was handled (not
 * held, or its hold ended at the bound), so what it loaded was probed late. */
bool qp_lifecycle_exec_done(struct qp_lifecycle *lc, const struct qp_lc_exec *e);

/* The fork/exec figures of /api/status (targets_view.h): the kernel's
 * counters, then the thread's under its own lock. */
void qp_lifecycle_figures(struct qp_lifecycle *lc, struct qp_lifecycle_figures *out);

/* lifecycle_exec.c: handle the queued execs. r->lock NOT held: taken for
 * each exec, dropped while the old image's report is written. */
void qp_lifecycle_handle_execs(struct qp_registry *r);
/* lifecycle_dl.c: the poll loop turns (it ends holds): loads are held
 * only while it does (a silent loop for 2 s: not held, counted). */
void qp_lifecycle_alive(struct qp_lifecycle *lc);
/* lifecycle_dlsync.c: E is a rendezvous (e->dl); r->lock NOT held. The
 * mappings for the symbolizer (with unloaded libraries' ranges) go to
 * *SYM when it is to be told, to be fed once the hold is released. */
struct qp_maps;
/* Returns how many libraries it probed. */
unsigned int qp_lifecycle_handle_dl(struct qp_registry *r, const struct qp_lc_exec *e, struct qp_maps *sym);

/* The thread that handles execs as soon as the lifecycle thread queues one
 * (signal SIG, sent to it alone), whatever the poll loop is doing: a
 * target stopped at its exec waits for this thread only. Start it before
 * qp_lifecycle_open (which is told its id), then qp_exec_thread_go once
 * r->lc is set; stop it before the registry goes. */
struct qp_exec_thread {
	struct qp_registry *r;
	pthread_t tid;
	pthread_mutex_t go;	/* held by the starter until r->lc is set */
	int sig;
	int stop;		/* atomic */
	bool started, held;
};
int qp_exec_thread_start(struct qp_exec_thread *x, struct qp_registry *r, int sig);
void qp_exec_thread_go(struct qp_exec_thread *x);
void qp_exec_thread_stop(struct qp_exec_thread *x);	/* accepts one never started */
#endif

/* main.c - qprofd's top, which wires the stages: parse the command line,
 * load BPF, attach the targets given on it, serve the API, poll for exits
 * and new processes (their reports written through the callback it gives
 * the registry), and on SIGINT/SIGTERM detach everything and remove the
 * socket. main() is start() (one step a stage), run() (the poll loop) and
 * stop(), the one cleanup path, which undoes as much as start() did.
 *
 * Exit codes: 0 clean shutdown, 1 runtime error, 2 usage error, 3 BPF could
 * not be loaded (not root, no BTF, no uprobes). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>
#include "collect/collect_cpu.h"
#include "collect/collect_heap.h"
#include "collect/collect_scopes.h"
#include "collect/collect_threads.h"
#include "symbolize/symbolize.h"
#include "http/http.h"
#include "http/http_auth.h"
#include "targets/lifecycle.h"
#include "common/log.h"
#include "collect/logs.h"
#include "collect/collect_trace.h"
#include "collect/collect_calibrate.h"
#include "http/qprofd.h"
#include "export/report.h"
#include "collect/ring_collect.h"
#include "http/otlp_push.h"
#include "symbolize/debuginfod.h"
#include "common/util.h"
#include "options.h"
#include "phases.h"
#include "side_load.h"

#define POLL_MS 250
/* the calibration: 3 rounds of 10 000 empty scopes, 1 us apart (the first one warms up) */
#define CALIB_ROUNDS 3
#define CALIB_ITERS 10000

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && qp_log_level() < QP_LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && qp_log_level() < QP_LOG_INFO)
		return 0;
	/* verifier logs are long: straight to stderr, not through a line buffer */
	fputs("qprofd: libbpf: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

/* Kernel symbols are read on first use (/proc/kallsyms, ~120,000 lines,
 * hundreds of ms): read them once serving, on a thread, so that no report (an
 * exec'd target waits stopped while its old image's figures are read) and
 * no request pays for it. */
static void *warm_kernel_symbols(void *arg)
{
	struct qp_sym y;

	qp_sym_kernel(arg, 0, &y);
	return NULL;
}

/* The symbolizer and the debuginfod fetcher, wired (neither knows the other). */
static void want_debug(void *ctx, const char *bid, const char *path)
{
	qp_dbgf_want(ctx, bid, path);
}

static void debug_arrived(void *ctx, const char *bid, const char *path)
{
	qp_sym_debug_arrived(ctx, bid, path);
}

/* A shutdown is asked (the signals the main loop waits for are pending):
 * the writing of a storm of exit reports stops, so that SIGTERM is obeyed
 * at once. */
static bool stop_pending(void)
{
	sigset_t p;

	return !sigpending(&p) &&
	       (sigismember(&p, SIGTERM) == 1 || sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGHUP) == 1);
}

/* The calibration (collect_calibrate.h), run by the scope collector once,
 * before the first program that measures a duration is attached: a daemon
 * whose targets are all on the ring never runs it. */
static void calibrate_first(void *arg, struct qp_scopes *s)
{
	struct qprofd *d = arg;
	struct qp_calibration c;
	uint64_t t0 = qp_now_ns();

	pthread_mutex_lock(&d->slow_lock);	/* the CPU sampler's publish waits */
	qp_scopes_set_slow(s, false);	/* its 30,000 scopes are not the targets' */
	qp_calibrate(s, d->tracer, CALIB_ROUNDS, CALIB_ITERS, &c);
	qp_scopes_set_slow(s, qp_cpu_slow_on(qprofd_cpu(d)));
	pthread_mutex_unlock(&d->slow_lock);
	qp_scopes_publish_calibration(s, &c);
	qp_info("calibration in %.1f ms", (double)(qp_now_ns() - t0) / 1e6);
}

static void *collect_report(void *arg, const struct qp_target *t)
{
	struct qprofd *d = arg;
	struct qp_model_src src;

	qprofd_model_src(d, NULL, &src);
	return qp_report_collect(&src, t);
}

static void *emit_report(void *arg, void *figs)
{
	return qp_report_stage(figs, &((struct qprofd *)arg)->report_fs, ((struct qprofd *)arg)->report_dir);
}

static void commit_reports(void *arg, void **staged, size_t n, char (*dirs)[QP_REPORT_DIR_MAX])
{
	qp_report_commit(&((struct qprofd *)arg)->report_fs, (struct qp_report_staged **)staged, n, dirs);
}

/* What qprofd holds between start and stop. STAGE says how far start-up
 * went, so that stop() is the one cleanup path for every exit. */
enum stage {
	STAGE_ARGS,	/* nothing loaded: the sockets and options only */
	STAGE_BPF,	/* the scopes object and the registry: the collectors go at stop */
	STAGE_HTTP,	/* the server asked to start: it stops first */
};

struct daemon {
	struct options o;
	struct qprofd d;
	enum stage stage;
	struct qp_http *http, *http_tcp;
	struct qp_http_policy pol_unix, pol_tcp;
	struct qp_lifecycle *lc;
	struct qp_ring *ring;
	char *token;
	int fd_unix, fd_tcp;
	char err[512];
	sigset_t stop_sigs;	/* what the main loop waits for */
	struct qp_exec_thread execs;
	struct qp_fleet_opts fleet;
	pthread_t warm;
	bool warm_started;
	struct phases ph;
	struct side_load side;
};

static void daemon_init(struct daemon *q)
{
	memset(q, 0, sizeof(*q));
	q->o = (struct options){ .socket = DEFAULT_SOCKET, .frequency = 99, .unwind = QP_CPU_UNWIND_DWARF,
				 .cfi_memory_mb = 16, .max_sites = 4096, .max_exited = 1000, .report_dir = QPROF_REPORT_DIR,
				 .trace_max_events = 1000000, .flight_events = 1u << 20,
				 .ring_records = QP_RING_RECORDS_DEFAULT, .dl_hold_ms = QP_DL_HOLD_DEFAULT_MS,
				 .trace_ring_mb = QP_TRACE_RING_MB_DEFAULT, .offcpu_ring_mb = QP_OFFCPU_RING_MB_DEFAULT,
				 .heap_opts = { .interval = 512 * 1024, .max_live = 65536, .max_stacks = 16384 } };
	q->d.report_fs.fd = -1;
	q->fd_unix = q->fd_tcp = -1;
	pthread_mutex_init(&q->d.slow_lock, NULL);
	side_init(&q->side, &q->d, &q->o.heap_opts);
}

/* The command line, the log level, the token: 0, or the exit code. */
static int start_args(struct daemon *q, int argc, char **argv)
{
	const char *env;
	int ret;

	if ((env = getenv("QPROF_SOCKET")) && *env)
		q->o.socket = env;
	ret = qp_fleet_args(&argc, argv, &q->fleet) ? 2 : qp_options_parse(argc, argv, &q->o);
	if (ret)
		return ret;
	/* info by default: every attach and detach, with who asked, is logged;
	 * -v (info before) changes nothing, -vv adds debug as it did */
	qp_log_set_level(q->o.verbose >= 2 ? QP_LOG_DEBUG : QP_LOG_INFO);
	libbpf_set_print(libbpf_print);
	if (q->o.token_file && qp_token_load(q->o.token_file, &q->token, q->err, sizeof(q->err))) {
		fprintf(stderr, "qprofd: %s\n", q->err);
		return 2;
	}
	/* a refused server or cache is bad usage, said before anything loads */
	if (qp_fleet_debuginfod(&q->fleet, q->o.report_dir, &q->d.dbgf))
		return 2;
	phase_mark(&q->ph, "arguments");
	return 0;
}

/* The sockets before anything else: a live daemon on the socket is
 * refused before any target is touched. Then the signals, blocked before
 * any thread starts (the main loop takes them). 0 or the exit code. */
static int start_sockets(struct daemon *q)
{
	sigset_t sigs;

	qp_http_policy_unix(&q->pol_unix);
	if (qp_raise_fd_limit(8192))
		qp_warn("cannot raise the descriptor limit: %s", strerror(errno));
	q->fd_unix = qp_http_listen_unix(q->o.socket, q->err, sizeof(q->err));
	if (q->fd_unix < 0) {
		fprintf(stderr, "qprofd: %s\n", q->err[0] ? q->err : strerror(-q->fd_unix));
		return 1;
	}
	if (q->o.listen) {
		q->fd_tcp = qp_http_listen_tcp(q->o.listen, q->err, sizeof(q->err));
		if (q->fd_tcp < 0 || qp_http_policy_tcp(&q->pol_tcp, q->o.listen, q->token)) {
			fprintf(stderr, "qprofd: %s\n", q->fd_tcp < 0 ? q->err : "--listen address too long");
			return 1;
		}
	}
	phase_mark(&q->ph, "sockets");
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	q->stop_sigs = sigs;
	sigaddset(&sigs, SIGRTMIN);	/* the lifecycle thread: an exec is waiting (the exec thread's) */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The scopes object (BPF at all: exit 3 without it), the registry and the
 * ring collector; thread stacks, the heap and the CPU sampler start
 * loading on a side thread. 0 or the exit code. */
static int start_scopes(struct daemon *q)
{
	struct qprofd *d = &q->d;
	const struct options *o = &q->o;
	/* 1 ms drains; the flight recorder per target, grown as it fills */
	struct qp_ring_opts ro = { .max_rows = o->max_sites, .max_rings = 65536, .flight = o->flight_events,
				   .period_us = 1000, .ring_records = o->ring_records };

	d->start_ns = qp_now_ns();
	qp_cpu_set_cfi_bytes((uint64_t)o->cfi_memory_mb << 20);
	side_start(&q->side, o, d->start_ns);
	d->frequency_hz = o->frequency;
	d->report_dir = o->report_dir;
	qp_stop_init(&d->stop);
	if (qp_scopes_open(&d->scopes, o->max_sites, !o->no_multi, &o->spans, o->trace_ring_mb << 20, q->err,
			   sizeof(q->err))) {
		fprintf(stderr, "qprofd: %s\nqprofd: BPF is unavailable: run as root on a kernel with BTF, uprobes and the BPF JIT\n",
			q->err);
		return 3;
	}
	phase_mark(&q->ph, "scopes BPF");
	qp_registry_init(&d->reg, d->scopes);
	q->stage = STAGE_BPF;
	ro.span_pending = o->spans.pending ? o->spans.pending : QP_SPAN_PENDING_DEFAULT;
	ro.span_timeout_ns = (o->spans.timeout_ms ? o->spans.timeout_ms : QP_SPAN_TIMEOUT_MS_DEFAULT) * 1000000ull;
	if (qp_ring_open(&q->ring, &ro, q->err, sizeof(q->err)))
		qp_warn("the ring collector is unavailable: %s", q->err);
	d->reg.ring = q->ring;
	qp_registry_set_collector(&d->reg, o->collector);
	qp_scopes_set_ring(d->scopes, q->ring);
	side_fds(&q->side, qp_scopes_thread_stacks_fd(d->scopes), qp_ring_tids_fd(q->ring),
		 qp_scopes_slow_rb_fd(d->scopes), qp_scopes_slow_min_fd(d->scopes), q->ring);
	phase_mark(&q->ph, "ring BPF");
	return 0;
}

/* The reports (callbacks, symbolizer and its debug files, directory) and
 * the fork/exec watch, before any target. 0 or the exit code. */
static int start_registry(struct daemon *q)
{
	struct qprofd *d = &q->d;
	/* debug files fetched in the background, looked for in their cache */
	struct qp_sym_opts so = { .fetched_root = qp_dbgf_cache_dir(d->dbgf),
				  .want_debug = d->dbgf ? want_debug : NULL, .want_ctx = d->dbgf };
	int ret;

	qp_registry_set_reporter(&d->reg, collect_report, emit_report, commit_reports, d);
	qp_registry_set_report_stop(&d->reg, stop_pending);
	d->reg.sym = qp_symbolizer_new(&so);
	if (!d->reg.sym) {
		fprintf(stderr, "qprofd: out of memory\n");
		return 1;
	}
	if (d->dbgf && qp_dbgf_start(d->dbgf, debug_arrived, d->reg.sym)) {
		fprintf(stderr, "qprofd: cannot start the debuginfod thread\n");
		return 1;
	}
	/* the report directory, once (after the BPF check, so that a user
	 * without root hears that first): refused when others could plant in it */
	ret = qp_report_fs_open(&d->report_fs, q->o.report_dir, q->err, sizeof(q->err));
	if (ret) {
		fprintf(stderr, "qprofd: %s\n", q->err);
		return ret == -EPERM || ret == -ENOTDIR ? 2 : 1;
	}
	phase_mark(&q->ph, "symbolizer, report dir");
	/* before any target: their forks and execs are watched from the start;
	 * execs are handled on a thread of their own, at once */
	ret = qp_exec_thread_start(&q->execs, &d->reg, SIGRTMIN);
	if (ret) {
		fprintf(stderr, "qprofd: cannot start the exec thread: %s\n", strerror(-ret));
		return 1;
	}
	if (qp_lifecycle_open(&q->lc, q->execs.tid, SIGRTMIN, q->o.dl_hold_ms, q->err, sizeof(q->err)))
		qp_warn("fork and exec of targets are not watched: %s. A target that forks may lose "
			"children to optimized uprobe sites", q->err);
	d->reg.lc = q->lc;
	qp_exec_thread_go(&q->execs);
	phase_mark(&q->ph, "lifecycle BPF");
	return 0;
}

/* Logs, the tracer, the calibration, then the side thread's heap and
 * thread stacks waited for (the CPU sampler too for --heap only: it is
 * published while qprofd serves, side_load.h). 0 or the exit code. */
static int start_collectors(struct daemon *q)
{
	struct qprofd *d = &q->d;
	const struct options *o = &q->o;

	d->sample_all = o->all;
	d->heap_default = o->heap;
	if (qp_logs_start(&d->logs, qp_scopes_logs_fd(d->scopes), 65536, q->err, sizeof(q->err)))
		qp_warn("QPROF_LOG messages unavailable: %s", q->err);
	qp_ring_set_logs(q->ring, d->logs);
	d->trace_max_events = o->trace_max_events;
	d->metrics = o->metrics;
	if (qp_tracer_open(&d->tracer, d->scopes, q->err, sizeof(q->err)))
		qp_warn("traces unavailable: %s", q->err);
	phase_mark(&q->ph, "logs, tracer");
	{
		/* before the first target on the BPF collector: every duration
		 * it measures gets the same correction */
		struct qp_calibration c = { .done = false };

		if (o->no_calibrate)
			snprintf(c.error, sizeof(c.error), "turned off (--no-calibrate)");
		else if (!d->tracer)
			snprintf(c.error, sizeof(c.error), "no trace recorder to measure with");
		else
			snprintf(c.error, sizeof(c.error), "not measured yet: measured when a target first needs "
				 "the BPF collector");
		qp_scopes_publish_calibration(d->scopes, &c);
		if (!o->no_calibrate && d->tracer)
			qp_scopes_set_first_use(d->scopes, calibrate_first, d);
	}
	/* thread stacks and the heap opened; the CPU sampler goes on loading
	 * while qprofd serves, but for --heap: the heap walks with its tables */
	side_wait_opened(&q->side);
	if (o->heap) {
		side_join(&q->side);
		if (!q->side.heap_ret)
			q->side.heap_ret = qp_heap_load(d->heap, d->heap_error, sizeof(d->heap_error));
		phase_mark(&q->ph, "threads, heap and CPU BPF (waited for)");
	} else {
		phase_mark(&q->ph, "threads and heap opened (waited for)");
	}
	if (!d->threads)
		qp_warn("thread stacks unavailable: %s", d->threads_error);
	if (q->side.heap_ret) {
		if (o->heap) {
			fprintf(stderr, "qprofd: --heap: %s\n", d->heap_error);
			return 1;
		}
		qp_warn("heap profiling unavailable: %s", d->heap_error);
	}
	return 0;
}

/* The targets of --pid and --binary. 0 or the exit code. */
static int start_targets(struct daemon *q)
{
	struct qprofd *d = &q->d;
	const struct options *o = &q->o;
	size_t i;

	for (i = 0; i < o->npids; i++) {
		int status;

		/* the heap first: when it cannot be profiled, no scope link was made */
		if (o->heap && qp_heap_attach(d->heap, o->pids[i], NULL, q->err, sizeof(q->err))) {
			fprintf(stderr, "qprofd: --pid %d --heap: %s\n", o->pids[i], q->err);
			return 1;
		}
		if (qp_registry_add_pid(&d->reg, o->pids[i], NULL, NULL, &status, q->err, sizeof(q->err))) {
			fprintf(stderr, "qprofd: --pid %d: %s\n", o->pids[i], q->err);
			return 1;
		}
	}
	for (i = 0; i < o->nbinaries; i++) {
		/* command-line flags come from root: any ELF file may be named */
		struct qp_attach_extra trusted = { .privileged = true };
		int status;

		if (qp_registry_add_binary(&d->reg, o->binaries[i], &trusted, NULL, &status, q->err,
					   sizeof(q->err))) {
			fprintf(stderr, "qprofd: --binary %s: %s\n", o->binaries[i], q->err);
			return 1;
		}
	}
	phase_mark(&q->ph, "targets");
	return 0;
}

/* The OTLP push and the HTTP servers, then "ready". 0 or the exit code. */
static int start_serving(struct daemon *q)
{
	struct qprofd *d = &q->d;
	const struct options *o = &q->o;

	if (qp_otlp_start(d, &q->fleet, &d->otlp))	/* the OTLP push, on threads of its own */
		return 1;
	if (qp_http_start(d, q->fd_unix, &q->pol_unix, &q->http, q->err, sizeof(q->err))) {
		fprintf(stderr, "qprofd: %s\n", q->err);
		return 1;
	}
	q->fd_unix = -1;	/* the server's now */
	q->stage = STAGE_HTTP;
	if (o->listen) {
		if (qp_http_start(d, q->fd_tcp, &q->pol_tcp, &q->http_tcp, q->err, sizeof(q->err))) {
			fprintf(stderr, "qprofd: %s\n", q->err);
			return 1;
		}
		q->fd_tcp = -1;
	}
	qp_info("serving on %s%s%s%s", o->socket, o->listen ? " and " : "", o->listen ? o->listen : "",
		!o->listen ? "" : q->token ? " (POST/DELETE over TCP with the token)"
					   : " (GET only over TCP: no --token-file)");
	phase_mark(&q->ph, "HTTP");
	phase_log(&q->ph, "started");
	/* once serving: its CPU is not the start-up's (on 2 CPUs it was a third of it) */
	q->warm_started = !pthread_create(&q->warm, NULL, warm_kernel_symbols, d->reg.sym);
	fprintf(stderr, "qprofd: ready on %s (%zu target(s))\n", o->socket, d->reg.ntargets);
	/* systemd (Type=notify): started once the socket answers; a no-op
	 * without $NOTIFY_SOCKET */
	sd_notifyf(0, "READY=1\nSTATUS=serving on %s\nMAINPID=%d", o->socket, (int)getpid());
	return 0;
}

/* Start-up, step by step: 0, or the exit code of the step that failed
 * (stop() undoes what was done, whichever it was). */
static int start(struct daemon *q, int argc, char **argv)
{
	int ret;

	phase_begin(&q->ph);
	if ((ret = start_args(q, argc, argv)) || (ret = start_sockets(q)) || (ret = start_scopes(q)) ||
	    (ret = start_registry(q)) || (ret = start_collectors(q)) || (ret = start_targets(q)) ||
	    (ret = start_serving(q)))
		return ret;
	return 0;
}

/* The poll loop, until SIGINT, SIGTERM or SIGHUP: exits and new processes,
 * pending spans, exit reports, the exited targets kept, unloaded
 * libraries, the heap's targets. The registry lock is taken inside each
 * step, never across the slow ones (a report, a symbolizer refresh);
 * execs are the exec thread's. */
static void run(struct daemon *q)
{
	struct qprofd *d = &q->d;
	uint64_t next_poll = qp_now_ns() + POLL_MS * 1000000ull;
	int ret, tick = 0;

	for (;;) {
		uint64_t now = qp_now_ns(), left = next_poll > now ? next_poll - now : 0;
		struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
		int sig = sigtimedwait(&q->stop_sigs, NULL, &ts);

		if (sig > 0) {
			qp_info("signal %d: shutting down", sig);
			phase_begin(&q->ph);
			sd_notify(0, "STOPPING=1\nSTATUS=detaching");
			return;
		}
		if (qp_now_ns() < next_poll)
			continue;
		next_poll = qp_now_ns() + POLL_MS * 1000000ull;
		qp_registry_poll(&d->reg, ++tick % 4 == 0);
		ret = qp_spans_sweep(d->scopes, qp_now_ns());
		if (ret)
			qp_warn("cannot sweep pending spans: %s", strerror(-ret));
		if (tick % 4 == 0)
			qp_lifecycle_check_exes(q->lc);
		qp_registry_write_reports(&d->reg);
		pthread_mutex_lock(&d->reg.lock);
		qp_registry_trim(&d->reg, q->o.max_exited);
		pthread_mutex_unlock(&d->reg.lock);
		qp_registry_reap(&d->reg);
		qp_registry_heap_sync(&d->reg, d->heap, d->heap_default);
	}
}

/* The collectors, last started first closed (each phase timed). */
static void stop_collectors(struct daemon *q)
{
	struct qprofd *d = &q->d;

	side_cancel(&q->side);	/* a start that failed before the maps */
	side_join(&q->side);	/* the CPU sampler, when it is still loading */
	qp_otlp_stop(d->otlp);	/* after the server that shows it, before the collectors it reads */
	qp_tracer_close(d->tracer);	/* no handler is left to end a session */
	qp_ring_set_logs(q->ring, NULL);	/* the drain stops pushing before the store goes */
	qp_logs_stop(d->logs);
	phase_mark(&q->ph, "tracer, logs");
	qp_cpu_set_ring(d->cpu, NULL);
	qp_cpu_close(d->cpu);	/* perf events first: no sample while the rest goes */
	phase_mark(&q->ph, "CPU");
	qp_threads_close(d->threads);
	d->threads = NULL;
	qp_heap_close(d->heap);	/* its probes, before the targets' */
	d->heap = NULL;
	d->reg.cpu = NULL;
	phase_mark(&q->ph, "threads, heap");
	qp_symbolizer_stop(d->reg.sym);	/* a kallsyms read under way gives up */
	if (q->warm_started)
		pthread_join(q->warm, NULL);
	qp_dbgf_free(d->dbgf);	/* its thread hands files to the symbolizer */
	d->dbgf = NULL;
	qp_symbolizer_free(d->reg.sym);
	d->reg.sym = NULL;
	phase_mark(&q->ph, "symbolizer");
	qp_exec_thread_stop(&q->execs);	/* before the registry and the lifecycle go */
	phase_mark(&q->ph, "exec thread");
	qp_registry_destroy(&d->reg);
	phase_mark(&q->ph, "targets");
	qp_scopes_set_ring(d->scopes, NULL);
	qp_ring_close(q->ring);
	phase_mark(&q->ph, "ring");
	qp_lifecycle_close(q->lc);	/* after the uprobes: it resumes any child still stopped */
	phase_mark(&q->ph, "lifecycle");
	qp_scopes_close(d->scopes);
	phase_mark(&q->ph, "scopes");
}

/* The one cleanup path: undo what start() did, as far as it went. */
static void stop(struct daemon *q, int exit_code)
{
	if (q->stage >= STAGE_HTTP) {
		qp_stop_set(&q->d.stop);
		qp_http_stop(q->http_tcp);
		qp_http_stop(q->http);
		phase_mark(&q->ph, "HTTP");
	}
	if (q->stage >= STAGE_BPF) {
		stop_collectors(q);
		if (!exit_code) {
			phase_log(&q->ph, "stopped");
			fprintf(stderr, "qprofd: stopped, everything detached\n");
		}
	}
	if (q->stage < STAGE_BPF) {	/* BPF unavailable: what it loaded goes too */
		side_cancel(&q->side);
		side_join(&q->side);
		qp_threads_close(q->d.threads);
		qp_heap_close(q->d.heap);
	}
	side_destroy(&q->side);
	if (q->fd_tcp >= 0)
		close(q->fd_tcp);
	if (q->fd_unix >= 0)
		close(q->fd_unix);
	if (q->http || q->fd_unix >= 0)
		unlink(q->o.socket);
	free(q->token);
	qp_dbgf_free(q->d.dbgf);	/* made with the arguments; NULL once the shutdown freed it */
	qp_report_fs_close(&q->d.report_fs);
	free(q->o.pids);
	free(q->o.binaries);
}

int main(int argc, char **argv)
{
	struct daemon q;
	int exit_code;

	daemon_init(&q);
	exit_code = start(&q, argc, argv);
	if (!exit_code)
		run(&q);
	stop(&q, exit_code);
	return exit_code;
}

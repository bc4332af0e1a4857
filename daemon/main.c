/* main.c - qprofd's top, which wires the stages: parse the command line,
 * load BPF, attach the targets given on it, serve the API, poll for exits
 * and new processes (their reports written through the callback it gives
 * the registry), and on SIGINT/SIGTERM detach everything and remove the
 * socket.
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

#define POLL_MS 250
/* the calibration: 3 rounds of 10 000 empty scopes, 1 us apart (the first one warms up) */
#define CALIB_ROUNDS 3
#define CALIB_ITERS 10000

/* The phases of start-up and shutdown, timed for the log: where the time
 * goes (bench/lifecycle.sh reads these lines). */
#define MAX_PHASES 24

struct phases {
	const char *name[MAX_PHASES];
	uint64_t ns[MAX_PHASES];
	size_t n;
	uint64_t t0, last;
};

static void phase_begin(struct phases *p)
{
	p->n = 0;
	p->t0 = p->last = qp_now_ns();
}

static void phase_mark(struct phases *p, const char *name)
{
	uint64_t now = qp_now_ns();

	if (p->n < MAX_PHASES) {
		p->name[p->n] = name;
		p->ns[p->n++] = now - p->last;
	}
	p->last = now;
}

static void phase_log(const struct phases *p, const char *what)
{
	char buf[1024];
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < p->n && off < sizeof(buf); i++) {
		int k = snprintf(buf + off, sizeof(buf) - off, "%s%s %.1f", i ? ", " : "", p->name[i],
				 (double)p->ns[i] / 1e6);

		if (k < 0)
			break;
		off += (size_t)k;
	}
	qp_info("%s in %.1f ms (ms: %s)", what, (double)(p->last - p->t0) / 1e6, buf);
}

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


/* Each connection holds two descriptors (the server's and the watchdog's
 * dup, http_conn.h): room for the connection limits beside BPF's own. */
/* The registry's report callbacks: the exporter, which targets/ may not call. */
/* Kernel symbols are read on first use (/proc/kallsyms, ~120,000 lines,
 * hundreds of ms): read them at start, on a thread, so that no report (an
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

	if (sigpending(&p))
		return false;
	return sigismember(&p, SIGTERM) == 1 || sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGHUP) == 1;
}

/* The BPF objects that nothing else needs at start (thread stacks, the
 * heap): loaded on a thread of their own while the main thread loads the
 * scopes, the ring, the lifecycle and CPU objects and calibrates (the
 * kernel's verifier takes most of the start-up: on 2 CPUs the two halves
 * overlap). */
struct side_load {
	struct qprofd *d;
	struct qp_heap_opts *heap_opts;
	int heap_ret;
	/* the heap shares the maps of the threads' open scopes: it waits for
	 * the main thread to have loaded them (or to give up) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool fds_set;
};

/* The maps the heap's programs share (-1: none); once. */
static void side_fds(struct side_load *s, int thread_stacks_fd, int ring_tids_fd)
{
	pthread_mutex_lock(&s->lock);
	if (!s->fds_set) {
		s->heap_opts->thread_stacks_fd = thread_stacks_fd;
		s->heap_opts->ring_tids_fd = ring_tids_fd;
		s->fds_set = true;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

static void *side_load(void *arg)
{
	struct side_load *s = arg;

	/* thread stacks (GET /api/threads): a task iterator, loaded once */
	if (qp_threads_open(&s->d->threads, s->d->threads_error, sizeof(s->d->threads_error)))
		s->d->threads = NULL;
	/* loaded always (a POST may ask for a heap); its tracepoints and
	 * probes only come with a heap target */
	pthread_mutex_lock(&s->lock);
	while (!s->fds_set)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	s->heap_ret = qp_heap_open(&s->d->heap, s->heap_opts, s->d->heap_error, sizeof(s->d->heap_error));
	return NULL;
}

static void *collect_report(void *arg, const struct qp_target *t)
{
	struct qprofd *d = arg;
	struct qp_model_src src;

	qprofd_model_src(d, &src);
	return qp_report_collect(&src, t);
}

static void emit_report(void *arg, void *figs, char *dir, size_t dirlen)
{
	struct qprofd *d = arg;

	qp_report_emit(figs, &d->report_fs, d->report_dir, dir, dirlen);
	qp_report_free(figs);
}

int main(int argc, char **argv)
{
	struct options o = { .socket = DEFAULT_SOCKET, .frequency = 99, .unwind = QP_CPU_UNWIND_DWARF, .max_sites = 4096,
			     .max_exited = 1000, .report_dir = QPROF_REPORT_DIR,
			     .trace_max_events = 1000000, .flight_events = 1u << 20,
			     .ring_records = QP_RING_RECORDS_DEFAULT, .dl_hold_ms = QP_DL_HOLD_DEFAULT_MS,
			     .heap_opts = { .interval = 512 * 1024, .max_live = 65536, .max_stacks = 16384 } };
	struct qp_http *http = NULL, *http_tcp = NULL;
	struct qp_http_policy pol_unix, pol_tcp;
	struct qp_lifecycle *lc = NULL;
	struct qprofd d = { .report_fs.fd = -1 };
	struct qp_ring *ring = NULL;
	char *token = NULL;
	int fd_unix = -1, fd_tcp = -1;
	char err[512] = "";
	sigset_t sigs, stop_sigs;
	struct qp_exec_thread execs = { 0 };
	struct qp_fleet_opts fleet = { 0 };
	pthread_t warm;
	bool warm_started = false;
	int ret, tick = 0, exit_code = 1;
	uint64_t next_poll;
	size_t i;
	const char *env;
	struct phases ph;
	struct side_load side = { .d = &d, .heap_opts = &o.heap_opts, .lock = PTHREAD_MUTEX_INITIALIZER,
				  .cond = PTHREAD_COND_INITIALIZER };
	pthread_t side_th;
	bool side_started = false;

	phase_begin(&ph);
	if ((env = getenv("QPROF_SOCKET")) && *env)
		o.socket = env;
	ret = qp_fleet_args(&argc, argv, &fleet) ? 2 : qp_options_parse(argc, argv, &o);
	if (ret) {
		free(o.pids);
		free(o.binaries);
		return ret;
	}
	/* info by default: every attach and detach, with who asked, is logged;
	 * -v (info before) changes nothing, -vv adds debug as it did */
	qp_log_set_level(o.verbose >= 2 ? QP_LOG_DEBUG : QP_LOG_INFO);
	libbpf_set_print(libbpf_print);
	if (o.token_file && qp_token_load(o.token_file, &token, err, sizeof(err))) {
		fprintf(stderr, "qprofd: %s\n", err);
		exit_code = 2;
		goto out_free;
	}
	/* a refused server or cache is bad usage, said before anything loads */
	if (qp_fleet_debuginfod(&fleet, o.report_dir, &d.dbgf)) {
		exit_code = 2;
		goto out_free;
	}
	phase_mark(&ph, "arguments");
	qp_http_policy_unix(&pol_unix);
	if (qp_raise_fd_limit(8192))
		qp_warn("cannot raise the descriptor limit: %s", strerror(errno));
	/* The sockets before anything else: a live daemon on the socket is
	 * refused before any target is touched. */
	fd_unix = qp_http_listen_unix(o.socket, err, sizeof(err));
	if (fd_unix < 0) {
		fprintf(stderr, "qprofd: %s\n", err[0] ? err : strerror(-fd_unix));
		goto out_free;
	}
	if (o.listen) {
		fd_tcp = qp_http_listen_tcp(o.listen, err, sizeof(err));
		if (fd_tcp < 0 || qp_http_policy_tcp(&pol_tcp, o.listen, token)) {
			fprintf(stderr, "qprofd: %s\n", fd_tcp < 0 ? err : "--listen address too long");
			goto out_free;
		}
	}

	phase_mark(&ph, "sockets");
	/* signals are taken by the main loop only: block them before threads */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	stop_sigs = sigs;		/* what the main loop waits for */
	sigaddset(&sigs, SIGRTMIN);	/* the lifecycle thread: an exec is waiting (the exec thread's) */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	d.start_ns = qp_now_ns();
	side_started = !pthread_create(&side_th, NULL, side_load, &side);
	d.frequency_hz = o.frequency;
	d.report_dir = o.report_dir;
	qp_stop_init(&d.stop);

	ret = qp_scopes_open(&d.scopes, o.max_sites, !o.no_multi, &o.spans, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "qprofd: %s\nqprofd: BPF is unavailable: run as root on a kernel with BTF, uprobes and the BPF JIT\n",
			err);
		exit_code = 3;
		goto out_free;
	}
	phase_mark(&ph, "scopes BPF");
	qp_registry_init(&d.reg, d.scopes);
	{
		/* 1 ms drains; the flight recorder per target, grown as it fills */
		struct qp_ring_opts ro = { .max_rows = o.max_sites, .max_rings = 65536, .flight = o.flight_events,
					   .period_us = 1000, .ring_records = o.ring_records };

		ro.span_pending = o.spans.pending ? o.spans.pending : QP_SPAN_PENDING_DEFAULT;
		ro.span_timeout_ns = (o.spans.timeout_ms ? o.spans.timeout_ms : QP_SPAN_TIMEOUT_MS_DEFAULT) * 1000000ull;
		if (qp_ring_open(&ring, &ro, err, sizeof(err)))
			qp_warn("the ring collector is unavailable: %s", err);
		d.reg.ring = ring;
		qp_registry_set_collector(&d.reg, o.collector);
		qp_scopes_set_ring(d.scopes, ring);
	}
	side_fds(&side, qp_scopes_thread_stacks_fd(d.scopes), qp_ring_tids_fd(ring));
	if (!side_started)	/* no thread for it: loaded here, after the maps it shares */
		side_load(&side);
	phase_mark(&ph, "ring BPF");
	qp_registry_set_reporter(&d.reg, collect_report, emit_report, &d);
	qp_registry_set_report_stop(&d.reg, stop_pending);
	{
		/* debug files fetched in the background, looked for in their cache */
		struct qp_sym_opts so = { .fetched_root = qp_dbgf_cache_dir(d.dbgf),
					  .want_debug = d.dbgf ? want_debug : NULL, .want_ctx = d.dbgf };

		d.reg.sym = qp_symbolizer_new(&so);
	}
	if (!d.reg.sym) {
		fprintf(stderr, "qprofd: out of memory\n");
		goto out;
	}
	if (d.dbgf && qp_dbgf_start(d.dbgf, debug_arrived, d.reg.sym)) {
		fprintf(stderr, "qprofd: cannot start the debuginfod thread\n");
		goto out;
	}
	warm_started = !pthread_create(&warm, NULL, warm_kernel_symbols, d.reg.sym);
	/* the report directory, once (after the BPF check, so that a user
	 * without root hears that first): refused when others could plant in it */
	ret = qp_report_fs_open(&d.report_fs, o.report_dir, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "qprofd: %s\n", err);
		exit_code = ret == -EPERM || ret == -ENOTDIR ? 2 : 1;
		goto out;
	}
	phase_mark(&ph, "symbolizer, report dir");
	/* before any target: their forks and execs are watched from the start;
	 * execs are handled on a thread of their own, at once */
	ret = qp_exec_thread_start(&execs, &d.reg, SIGRTMIN);
	if (ret) {
		fprintf(stderr, "qprofd: cannot start the exec thread: %s\n", strerror(-ret));
		goto out;
	}
	if (qp_lifecycle_open(&lc, execs.tid, SIGRTMIN, o.dl_hold_ms, err, sizeof(err)))
		qp_warn("fork and exec of targets are not watched: %s. A target that forks may lose "
			"children to optimized uprobe sites", err);
	d.reg.lc = lc;
	qp_exec_thread_go(&execs);
	phase_mark(&ph, "lifecycle BPF");
	d.sample_all = o.all;
	ret = qp_cpu_open(&d.cpu, qp_scopes_thread_stacks_fd(d.scopes), qp_ring_tids_fd(ring),
			  qp_scopes_slow_rb_fd(d.scopes), qp_scopes_slow_min_fd(d.scopes), o.frequency, o.all, o.unwind,
			  d.cpu_error, sizeof(d.cpu_error));
	if (ret)
		qp_warn("CPU sampling unavailable: %s (scopes still work)", d.cpu_error);
	d.reg.cpu = d.cpu;
	phase_mark(&ph, "CPU BPF");
	d.heap_default = o.heap;
	if (qp_logs_start(&d.logs, qp_scopes_logs_fd(d.scopes), 65536, err, sizeof(err)))
		qp_warn("QPROF_LOG messages unavailable: %s", err);
	qp_ring_set_logs(ring, d.logs);
	d.trace_max_events = o.trace_max_events;
	d.metrics = o.metrics;
	if (qp_tracer_open(&d.tracer, d.scopes, err, sizeof(err)))
		qp_warn("traces unavailable: %s", err);
	phase_mark(&ph, "logs, tracer");
	/* before any target: every duration measured gets the same correction */
	if (o.no_calibrate)
		snprintf(d.calib.error, sizeof(d.calib.error), "turned off (--no-calibrate)");
	else if (!d.tracer)
		snprintf(d.calib.error, sizeof(d.calib.error), "no trace recorder to measure with");
	else
		qp_calibrate(d.scopes, d.tracer, CALIB_ROUNDS, CALIB_ITERS, &d.calib);
	/* after the calibration, whose 60 000 scopes are not the targets' */
	qp_scopes_set_slow(d.scopes, qp_cpu_slow_on(d.cpu));
	qp_cpu_set_ring(d.cpu, ring);
	phase_mark(&ph, "calibration");
	if (side_started)
		pthread_join(side_th, NULL);
	side_started = false;
	phase_mark(&ph, "threads and heap BPF (waited for)");
	if (!d.threads)
		qp_warn("thread stacks unavailable: %s", d.threads_error);
	if (side.heap_ret) {
		if (o.heap) {
			fprintf(stderr, "qprofd: --heap: %s\n", d.heap_error);
			goto out;
		}
		qp_warn("heap profiling unavailable: %s", d.heap_error);
	}

	for (i = 0; i < o.npids; i++) {
		int status;

		/* the heap first: when it cannot be profiled, no scope link was made */
		if (o.heap && qp_heap_attach(d.heap, o.pids[i], NULL, err, sizeof(err))) {
			fprintf(stderr, "qprofd: --pid %d --heap: %s\n", o.pids[i], err);
			goto out;
		}
		if (qp_registry_add_pid(&d.reg, o.pids[i], NULL, NULL, &status, err, sizeof(err))) {
			fprintf(stderr, "qprofd: --pid %d: %s\n", o.pids[i], err);
			goto out;
		}
	}
	for (i = 0; i < o.nbinaries; i++) {
		/* command-line flags come from root: any ELF file may be named */
		struct qp_attach_extra trusted = { .privileged = true };
		int status;

		ret = qp_registry_add_binary(&d.reg, o.binaries[i], &trusted, NULL, &status, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "qprofd: --binary %s: %s\n", o.binaries[i], err);
			goto out;
		}
	}

	phase_mark(&ph, "targets");
	if (qp_otlp_start(&d, &fleet, &d.otlp))	/* the OTLP push, on threads of its own */
		goto out;
	if (qp_http_start(&d, fd_unix, &pol_unix, &http, err, sizeof(err))) {
		fprintf(stderr, "qprofd: %s\n", err);
		goto out;
	}
	fd_unix = -1;	/* the server's now */
	if (o.listen) {
		if (qp_http_start(&d, fd_tcp, &pol_tcp, &http_tcp, err, sizeof(err))) {
			fprintf(stderr, "qprofd: %s\n", err);
			goto out_http;
		}
		fd_tcp = -1;
	}
	qp_info("serving on %s%s%s%s", o.socket, o.listen ? " and " : "", o.listen ? o.listen : "",
		!o.listen ? "" : token ? " (POST/DELETE over TCP with the token)" : " (GET only over TCP: no --token-file)");
	phase_mark(&ph, "HTTP");
	phase_log(&ph, "started");
	fprintf(stderr, "qprofd: ready on %s (%zu target(s))\n", o.socket, d.reg.ntargets);
	/* systemd (Type=notify): started once the socket answers; a no-op
	 * without $NOTIFY_SOCKET */
	sd_notifyf(0, "READY=1\nSTATUS=serving on %s\nMAINPID=%d", o.socket, (int)getpid());

	next_poll = qp_now_ns() + POLL_MS * 1000000ull;
	for (;;) {
		uint64_t now = qp_now_ns(), left = next_poll > now ? next_poll - now : 0;
		struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
		int sig = sigtimedwait(&stop_sigs, NULL, &ts);

		if (sig > 0) {
			qp_info("signal %d: shutting down", sig);
			phase_begin(&ph);
			sd_notify(0, "STOPPING=1\nSTATUS=detaching");
			break;
		}
		/* the registry lock is taken inside each step, never across
		 * the slow ones (a report, a symbolizer refresh); execs are the
		 * exec thread's */
		if (qp_now_ns() < next_poll)
			continue;
		next_poll = qp_now_ns() + POLL_MS * 1000000ull;
		qp_registry_poll(&d.reg, ++tick % 4 == 0);
		ret = qp_spans_sweep(d.scopes, qp_now_ns());
		if (ret)
			qp_warn("cannot sweep pending spans: %s", strerror(-ret));
		if (tick % 4 == 0)
			qp_lifecycle_check_exes(lc);
		qp_registry_write_reports(&d.reg);
		pthread_mutex_lock(&d.reg.lock);
		qp_registry_trim(&d.reg, o.max_exited);
		pthread_mutex_unlock(&d.reg.lock);
		qp_registry_reap(&d.reg);
		qp_registry_heap_sync(&d.reg, d.heap, d.heap_default);
	}
	exit_code = 0;
out_http:
	qp_stop_set(&d.stop);
	qp_http_stop(http_tcp);
	qp_http_stop(http);
	phase_mark(&ph, "HTTP");
out:
	if (side_started) {	/* a start that failed before the join */
		side_fds(&side, -1, -1);
		pthread_join(side_th, NULL);
	}
	side_started = false;
	qp_otlp_stop(d.otlp);	/* after the server that shows it, before the collectors it reads */
	qp_tracer_close(d.tracer);	/* no handler is left to end a session */
	qp_ring_set_logs(ring, NULL);	/* the drain stops pushing before the store goes */
	qp_logs_stop(d.logs);
	phase_mark(&ph, "tracer, logs");
	qp_cpu_set_ring(d.cpu, NULL);
	qp_cpu_close(d.cpu);	/* perf events first: no sample while the rest goes */
	phase_mark(&ph, "CPU");
	qp_threads_close(d.threads);
	d.threads = NULL;
	qp_heap_close(d.heap);	/* its probes, before the targets' */
	d.heap = NULL;
	d.reg.cpu = NULL;
	phase_mark(&ph, "threads, heap");
	if (warm_started)
		pthread_join(warm, NULL);
	qp_dbgf_free(d.dbgf);	/* its thread hands files to the symbolizer */
	d.dbgf = NULL;
	qp_symbolizer_free(d.reg.sym);
	d.reg.sym = NULL;
	phase_mark(&ph, "symbolizer");
	qp_exec_thread_stop(&execs);	/* before the registry and the lifecycle go */
	phase_mark(&ph, "exec thread");
	qp_registry_destroy(&d.reg);
	phase_mark(&ph, "targets");
	qp_scopes_set_ring(d.scopes, NULL);
	qp_ring_close(ring);
	phase_mark(&ph, "ring");
	qp_lifecycle_close(lc);	/* after the uprobes: it resumes any child still stopped */
	phase_mark(&ph, "lifecycle");
	qp_scopes_close(d.scopes);
	phase_mark(&ph, "scopes");
	if (!exit_code) {
		phase_log(&ph, "stopped");
		fprintf(stderr, "qprofd: stopped, everything detached\n");
	}
out_free:
	if (side_started) {	/* BPF unavailable: what it loaded goes too */
		side_fds(&side, -1, -1);
		pthread_join(side_th, NULL);
		qp_threads_close(d.threads);
		qp_heap_close(d.heap);
	}
	if (fd_tcp >= 0)
		close(fd_tcp);
	if (fd_unix >= 0)
		close(fd_unix);
	if (http || fd_unix >= 0)
		unlink(o.socket);
	free(token);
	qp_dbgf_free(d.dbgf);	/* made with the arguments; NULL once the shutdown freed it */
	qp_report_fs_close(&d.report_fs);
	free(o.pids);
	free(o.binaries);
	return exit_code;
}

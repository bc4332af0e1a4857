/* cmd_top.c - `qprof-cli top`: a live view in the spirit of perf top and
 * htop. Every interval of S seconds it asks the daemon, concurrently, for the
 * folded CPU stacks and the scope figures of the next S seconds, and shows
 * the hottest functions (self and total share of the samples) and the scopes
 * (rate, p50, p99, p99.9, max, total time) of that interval.
 *
 * Live mode draws with plain ANSI escapes on the alternate screen (no
 * ncurses), reads single keys in raw mode, fits the terminal and redraws on
 * SIGWINCH; the terminal is restored on every way out. A collector thread
 * runs the rounds back to back and hands each finished round to the drawing
 * thread through a pipe, so keys stay responsive while a round collects.
 * --once prints one plain frame, --json the figures of one interval.
 * This file is the command and its live mode (terminal, keys, the collector
 * thread); fetching, figures and drawing are top_fetch.c, top_figures.c and
 * top_draw.c (top.h). */
#define _GNU_SOURCE	/* pipe2 */
#include "cli.h"
#include "top.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static const char top_help[] =
	"Usage: qprof-cli top [--pid N] [--interval S] [--once] [--json]\n"
	"\n"
	"A live view of the last interval, refreshed every S seconds: the hottest\n"
	"functions by SELF% (samples where the function is the leaf) and TOTAL%\n"
	"(samples whose stack holds it) of all CPU samples, with the SAMPLES of the\n"
	"sorted column, and the scopes with\n"
	"RATE/s, P50, P99, P99.9, MAX and TOTAL time inside them. The first figures\n"
	"appear after the first interval. Unsymbolized frames are grouped by module.\n"
	"\n"
	"  --pid N       only process N (default: every target)\n"
	"  --interval S  seconds per refresh, 1..60 (default 2)\n"
	"  --once        collect one interval, print one plain frame and exit (the\n"
	"                default when standard output is not a terminal)\n"
	"  --json        collect one interval and print its figures as JSON:\n"
	"                {interval_s, pid, samples, functions[{name, self_pct,\n"
	"                total_pct, samples}], scopes[{name, parent, kind,\n"
	"                rate_per_s, p50_ns, p99_ns, p999_ns, max_ns, total_ns}]}\n"
	"\n"
	"Keys: q quit; s / t sort functions by self / total; p next pid (every\n"
	"target, then each one); b / r / 5 / 9 / m sort scopes by total time\n"
	"(the default: the busiest scope first) / rate / p50 / p99 / max; h help.\n";

#define TOP_INTERVAL_MAX 60

static int run_once(struct cli_ctx *ctx, int64_t pid, int interval)
{
	struct round *r;
	int rc = CLI_OK;

	cli_say_collecting(interval);
	r = top_collect(cli_socket(ctx), pid, interval);
	if (!r)
		return cli_fail(ctx, "out of memory");
	if (r->err[0]) {
		rc = cli_fail(ctx, "%s", r->err);
	} else if (ctx->json) {
		json_t *root;
		char *text;

		top_sort_round(r, FS_SELF, SS_BUSY);
		root = top_round_json(r);
		text = root ? json_dumps(root, JSON_COMPACT) : NULL;
		if (text)
			printf("%s\n", text);
		else
			rc = cli_fail(ctx, "out of memory");
		free(text);
		json_decref(root);
	} else {
		struct top_screen s = { 0 };

		qp_buf_init(&s.b);
		top_sort_round(r, FS_SELF, SS_BUSY);
		top_draw_frame(&s, r, pid, interval, 0, FS_SELF, SS_BUSY, NULL);
		if (s.b.failed)
			rc = cli_fail(ctx, "out of memory");
		else
			fwrite(s.b.data, 1, s.b.len, stdout);
		qp_buf_free(&s.b);
	}
	if (!rc && fflush(stdout))
		rc = cli_fail(ctx, "cannot write to standard output");
	top_round_free(r);
	return rc;
}

/* ---- live mode --------------------------------------------------------- */

static int sig_pipe[2] = { -1, -1 };	/* signals -> drawing thread */
static struct termios saved_tio;
static bool tio_saved, screen_on;

static void restore_terminal(void)
{
	static const char leave[] = "\033[0m\033[?25h\033[?1049l";

	if (screen_on) {
		screen_on = false;
		if (write(STDOUT_FILENO, leave, sizeof(leave) - 1) < 0) {
			/* nothing more to do on the way out */
		}
	}
	if (tio_saved) {
		tio_saved = false;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
	}
}

static void on_signal(int sig)
{
	int e = errno;
	char c = (char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a redraw or exit is pending anyway */
	}
	errno = e;
}

struct live {
	const char *sock;
	int interval;
	pthread_mutex_t lock;
	int64_t want_pid;	/* under lock */
	struct round *ready;	/* under lock: the latest finished round */
	int wake[2];		/* collector -> drawing thread */
};

static void *collector(void *arg)
{
	struct live *lv = arg;

	for (;;) {
		struct round *r, *old;
		int64_t pid;
		char c = 'd';

		pthread_mutex_lock(&lv->lock);
		pid = lv->want_pid;
		pthread_mutex_unlock(&lv->lock);
		r = top_collect(lv->sock, pid, lv->interval);
		if (!r) {
			sleep(1);
			continue;
		}
		pthread_mutex_lock(&lv->lock);
		old = lv->ready;
		lv->ready = r;
		pthread_mutex_unlock(&lv->lock);
		top_round_free(old);
		if (write(lv->wake[1], &c, 1) < 0) {
			/* full: the drawing thread has a wake-up pending */
		}
		if (r->err[0])
			sleep(1);	/* the daemon went away: retry, slowly */
	}
	return NULL;
}

static void term_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static int64_t next_pid(const struct round *r, int64_t pid)
{
	size_t i;

	if (!r || !r->ntargets)
		return 0;
	if (!pid)
		return r->targets[0].pid;
	for (i = 0; i < r->ntargets; i++)
		if (r->targets[i].pid == pid)
			return i + 1 < r->ntargets ? r->targets[i + 1].pid : 0;
	return 0;
}

/* What the live screen shows and how: the keys change it. */
struct view {
	int64_t pid;
	int interval;
	struct round *shown;	/* the status answer (no figures) until the first round */
	enum fn_sort fs;
	enum sc_sort ss;
	bool help, keys;
};

/* Keys one at a time, no echo (ISIG kept: Ctrl-C quits); the terminal put
 * back at exit whatever happens. */
static void terminal_raw(bool keys)
{
	if (keys && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
		struct termios raw = saved_tio;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tio_saved = true;
		atexit(restore_terminal);
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	} else {
		atexit(restore_terminal);
	}
}

/* The signals that redraw or quit, through sig_pipe; then the alternate
 * screen, cursor hidden. */
static void screen_enter(void)
{
	static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	screen_on = true;
	write_all(enter, sizeof(enter) - 1);
}

/* The collector thread, which inherits no signal: they all go to this one.
 * 0 or the error of pthread_create. */
static int collector_start(struct live *lv)
{
	sigset_t all, old;
	pthread_t th;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&th, NULL, collector, lv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		pthread_detach(th);
	return ret;
}

static void draw(struct view *v)
{
	struct top_screen s = { .ansi = true };
	char status[256];
	int rows, cols;

	term_size(&rows, &cols);
	s.width = cols;
	qp_buf_init(&s.b);
	top_screen_raw(&s, "\033[H", 3);
	if (v->shown)
		top_sort_round(v->shown, v->fs, v->ss);
	if (v->help)
		snprintf(status, sizeof(status),
			 "q quit  s/t functions by self/total  b/r/5/9/m scopes by "
			 "time/rate/p50/p99/max  p next pid  h close help");
	else
		snprintf(status, sizeof(status), "q quit  h help  p pid  functions by %s, "
			 "scopes by %s", top_fs_names[v->fs], top_ss_names[v->ss]);
	top_draw_frame(&s, v->shown, v->pid, v->interval, rows, v->fs, v->ss, status);
	if (!s.b.failed)
		write_all(s.b.data, s.b.len);
	qp_buf_free(&s.b);
}

/* The signals arrived: true when one of them quits (not SIGWINCH). */
static bool signals_quit(void)
{
	bool quit = false;
	char buf[64];
	ssize_t got, i;

	while ((got = read(sig_pipe[0], buf, sizeof(buf))) > 0)
		for (i = 0; i < got; i++)
			if (buf[i] != SIGWINCH)
				quit = true;
	return quit;
}

/* The collector's new round, if any, in place of the one shown. */
static void take_round(struct live *lv, struct view *v)
{
	struct round *r;
	char buf[64];

	while (read(lv->wake[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&lv->lock);
	r = lv->ready;
	lv->ready = NULL;
	pthread_mutex_unlock(&lv->lock);
	if (r) {
		top_round_free(v->shown);
		v->shown = r;
	}
}

/* The keys typed: true on q. */
static bool keys_quit(struct live *lv, struct view *v)
{
	bool quit = false;
	char buf[64];
	ssize_t got = read(STDIN_FILENO, buf, sizeof(buf)), i;

	if (got <= 0)
		v->keys = false;	/* end of input: keys are over, Ctrl-C still quits */
	for (i = 0; i < got; i++) {
		switch (buf[i]) {
		case 'q': case 'Q': quit = true; break;
		case 's': v->fs = FS_SELF; break;
		case 't': v->fs = FS_TOTAL; break;
		case 'b': v->ss = SS_BUSY; break;
		case 'r': v->ss = SS_RATE; break;
		case '5': v->ss = SS_P50; break;
		case '9': v->ss = SS_P99; break;
		case 'm': v->ss = SS_MAX; break;
		case 'h': case '?': v->help = !v->help; break;
		case 'p':
			v->pid = next_pid(v->shown, v->pid);
			pthread_mutex_lock(&lv->lock);
			lv->want_pid = v->pid;
			pthread_mutex_unlock(&lv->lock);
			break;
		}
	}
	return quit;
}

static int run_live(struct cli_ctx *ctx, int64_t pid, int interval, struct round *first)
{
	struct live lv = { .sock = cli_socket(ctx), .interval = interval, .want_pid = pid };
	struct view v = { .pid = pid, .interval = interval, .shown = first, .fs = FS_SELF, .ss = SS_BUSY,
			  .keys = isatty(STDIN_FILENO) };
	int ret;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) || pipe2(lv.wake, O_CLOEXEC | O_NONBLOCK))
		return cli_fail(ctx, "pipe: %s", strerror(errno));
	pthread_mutex_init(&lv.lock, NULL);
	terminal_raw(v.keys);
	screen_enter();
	if ((ret = collector_start(&lv))) {
		restore_terminal();
		return cli_fail(ctx, "cannot start a thread: %s", strerror(ret));
	}
	for (;;) {
		struct pollfd pf[3] = {
			{ .fd = sig_pipe[0], .events = POLLIN },
			{ .fd = lv.wake[0], .events = POLLIN },
			{ .fd = v.keys ? STDIN_FILENO : -1, .events = POLLIN },
		};

		draw(&v);
		if (poll(pf, 3, -1) < 0 && errno != EINTR)
			break;
		if ((pf[0].revents & POLLIN) && signals_quit())
			break;
		if (pf[1].revents & POLLIN)
			take_round(&lv, &v);
		if ((pf[2].revents & (POLLIN | POLLHUP)) && keys_quit(&lv, &v))
			break;
	}
	restore_terminal();
	/* the collector may be in the middle of a request: exit without it */
	fflush(stdout);
	_exit(CLI_OK);
}

/* ---- the command ------------------------------------------------------- */

int cmd_top(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_INTERVAL, OPT_ONCE };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ 0 },
	};
	const char *pid_arg = NULL, *int_arg = NULL;
	int64_t pid = 0, interval = 2;
	struct http_response resp;
	struct round *first;
	bool once = false;
	json_t *root;
	int c, rc;

	while ((c = cli_next_opt(ctx, argc, argv, opts, top_help, &rc)) > 0) {
		switch (c) {
		case OPT_PID:
			pid_arg = optarg;
			continue;
		case OPT_INTERVAL:
			int_arg = optarg;
			continue;
		case OPT_ONCE:
			once = true;
			continue;
		}
	}
	if (rc >= 0)
		return rc;
	if (pid_arg && (rc = cli_parse_pid(ctx, "--pid", pid_arg, &pid)))
		return rc;
	if (int_arg && qp_parse_i64(int_arg, 1, TOP_INTERVAL_MAX, &interval))
		return cli_usage_error(ctx, "invalid --interval '%s': a whole number of seconds "
				       "from 1 to %d", int_arg, TOP_INTERVAL_MAX);
	if (!once && !ctx->json && !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s top: standard output is not a terminal: printing one frame "
			"(as --once)\n", CLI_PROG);
		once = true;
	}
	if (once || ctx->json)
		return run_once(ctx, pid, (int)interval);

	/* live: check the daemon (and the pid) before taking the terminal */
	rc = cli_api_call(ctx, "GET", "/api/status", NULL, CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		return rc;
	root = cli_api_json(ctx, &resp);
	http_response_free(&resp);
	if (!root)
		return CLI_FAIL;
	first = calloc(1, sizeof(*first));
	if (!first || top_take_status(first, root)) {
		json_decref(root);
		top_round_free(first);
		return cli_fail(ctx, "out of memory");
	}
	json_decref(root);
	if (pid) {
		size_t i;

		for (i = 0; i < first->ntargets && first->targets[i].pid != pid; i++)
			;
		if (i == first->ntargets) {
			top_round_free(first);
			return cli_fail(ctx, "pid %lld is not a target of qprofd (see qprof-cli status)",
					(long long)pid);
		}
	}
	return run_live(ctx, pid, (int)interval, first);
}

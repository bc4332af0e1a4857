/* render_dot.c - see render_dot.h: find dot in PATH, spawn it on three
 * pipes, feed it the DOT and read its SVG and stderr under one deadline,
 * then reap it and say why it failed. A write to a dot that died gives
 * EPIPE, never a SIGPIPE to qprofd. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "render_dot.h"

#define MAX_SVG ((size_t)256 << 20)

/* dot, its pipes (our ends after the spawn) and what it said on stderr. */
struct dot_child {
	pid_t pid;
	int in[2], out[2], err[2];
	char ebuf[1024];
	size_t elen;
};

static int find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *e;
	struct stat st;

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		if (e == p) /* an empty entry would mean the cwd: not for a daemon */
			continue;
		if ((size_t)snprintf(out, len, "%.*s/%s", (int)(e - p), p, name) >= len)
			continue;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void close_all(struct dot_child *c)
{
	close_fd(&c->in[0]);
	close_fd(&c->in[1]);
	close_fd(&c->out[0]);
	close_fd(&c->out[1]);
	close_fd(&c->err[0]);
	close_fd(&c->err[1]);
}

/* EXE on the pipes of C (stdin, stdout, stderr), with SIGPIPE at its
 * default and no signal blocked; our ends of the pipes left open. */
static int spawn_dot(const char *exe, struct dot_child *c)
{
	char *argv[] = { "dot", "-Tsvg", NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t pipeset, none;
	int ret;

	if (pipe2(c->in, O_CLOEXEC) || pipe2(c->out, O_CLOEXEC) || pipe2(c->err, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, c->in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, c->out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, c->err[1], 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&attr);
	sigemptyset(&pipeset);
	sigaddset(&pipeset, SIGPIPE);
	posix_spawnattr_setsigdefault(&attr, &pipeset); /* the daemon ignores SIGPIPE */
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	ret = -posix_spawn(&c->pid, exe, &fa, &attr, argv, NULL);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (ret) {
		c->pid = -1;
		return ret;
	}
	close_fd(&c->in[0]);
	close_fd(&c->out[1]);
	close_fd(&c->err[1]);
	fcntl(c->in[1], F_SETFL, fcntl(c->in[1], F_GETFL) | O_NONBLOCK);
	return 0;
}

/* SIGPIPE blocked on this thread while we write to dot; whether one was
 * pending before, so that only ours is taken back. */
struct pipe_guard {
	sigset_t set, old;
	bool had, blocked;
};

static void guard_sigpipe(struct pipe_guard *g)
{
	sigset_t pending;

	sigemptyset(&g->set);
	sigaddset(&g->set, SIGPIPE);
	sigpending(&pending);
	g->had = sigismember(&pending, SIGPIPE);
	g->blocked = pthread_sigmask(SIG_BLOCK, &g->set, &g->old) == 0;
}

static void unguard_sigpipe(struct pipe_guard *g)
{
	struct timespec zero = { 0, 0 };
	sigset_t pending;

	if (!g->blocked)
		return;
	sigpending(&pending);
	if (!g->had && sigismember(&pending, SIGPIPE))
		sigtimedwait(&g->set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* Feed DOT to C and read its stdout into SVG and its stderr into c->ebuf
 * until both end: 0, -ETIMEDOUT, -EFBIG or -errno. */
static int pump(struct dot_child *c, const char *dot, size_t len, struct qp_buf *svg, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	char chunk[65536];
	size_t sent = 0;

	if (!len)
		close_fd(&c->in[1]);
	while (c->out[0] >= 0 || c->err[0] >= 0) {
		struct pollfd pf[3];
		int n = 0, io = -1, oo = -1, eo = -1;
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (c->in[1] >= 0)
			pf[io = n++] = (struct pollfd){ .fd = c->in[1], .events = POLLOUT };
		if (c->out[0] >= 0)
			pf[oo = n++] = (struct pollfd){ .fd = c->out[0], .events = POLLIN };
		if (c->err[0] >= 0)
			pf[eo = n++] = (struct pollfd){ .fd = c->err[0], .events = POLLIN };
		if (poll(pf, (nfds_t)n, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (io >= 0 && pf[io].revents) {
			ssize_t w = write(c->in[1], dot + sent, len - sent > 65536 ? 65536 : len - sent);

			if (w > 0)
				sent += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == len)
				close_fd(&c->in[1]); /* done, or dot stopped reading */
		}
		if (oo >= 0 && pf[oo].revents) {
			ssize_t r = read(c->out[0], chunk, sizeof(chunk));

			if (r > 0)
				qp_buf_add(svg, chunk, (size_t)r);
			else if (r == 0 || (errno != EAGAIN && errno != EINTR))
				close_fd(&c->out[0]);
			if (svg->len > MAX_SVG)
				return -EFBIG;
		}
		if (eo >= 0 && pf[eo].revents) {
			ssize_t r = read(c->err[0], chunk, sizeof(chunk));

			if (r > 0) {
				size_t room = sizeof(c->ebuf) - 1 - c->elen, k = (size_t)r < room ? (size_t)r : room;

				memcpy(c->ebuf + c->elen, chunk, k);
				c->elen += k;
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				close_fd(&c->err[0]);
			}
		}
	}
	return 0;
}

/* Kill C if RET says it failed, wait for it, and judge: RET, or -EIO when
 * it did not exit 0 (with the end of its stderr in ERR). */
static int reap(struct dot_child *c, int ret, char *err, size_t errlen)
{
	int st = 0;

	if (ret) {
		kill(c->pid, SIGKILL);
		if (err && errlen)
			snprintf(err, errlen, "dot %s",
				 ret == -ETIMEDOUT ? "timed out" : ret == -EFBIG ? "output too large" : strerror(-ret));
	}
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	c->pid = -1;
	if (ret || (WIFEXITED(st) && WEXITSTATUS(st) == 0))
		return ret;
	c->ebuf[c->elen] = '\0';
	while (c->elen && (c->ebuf[c->elen - 1] == '\n' || c->ebuf[c->elen - 1] == '\r'))
		c->ebuf[--c->elen] = '\0';
	if (err && errlen) {
		if (WIFEXITED(st))
			snprintf(err, errlen, "dot exited with status %d: %s", WEXITSTATUS(st), c->ebuf);
		else
			snprintf(err, errlen, "dot killed by signal %d: %s", WIFSIGNALED(st) ? WTERMSIG(st) : 0,
				 c->ebuf);
	}
	return -EIO;
}

int qp_render_dot_svg(const char *dot, size_t len, struct qp_buf *svg, char *err, size_t errlen)
{
	return qp_render_dot_svg_timeout(dot, len, svg, err, errlen, 30000);
}

int qp_render_dot_svg_timeout(const char *dot, size_t len, struct qp_buf *svg, char *err,
			      size_t errlen, int timeout_ms)
{
	struct dot_child c = { .pid = -1, .in = { -1, -1 }, .out = { -1, -1 }, .err = { -1, -1 } };
	struct pipe_guard g = { .blocked = false };
	size_t start = svg->len;
	char exe[4096];
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (find_in_path("dot", exe, sizeof(exe))) {
		if (err && errlen)
			snprintf(err, errlen, "graphviz dot not found in PATH");
		return -ENOENT;
	}
	ret = spawn_dot(exe, &c);
	if (!ret) {
		guard_sigpipe(&g);
		ret = reap(&c, pump(&c, dot, len, svg, timeout_ms), err, errlen);
		unguard_sigpipe(&g);
	}
	if (!ret && svg->failed)
		ret = -ENOMEM;
	if (!ret && svg->len == start) {
		ret = -EIO;
		if (err && errlen)
			snprintf(err, errlen, "dot wrote nothing");
	}
	close_all(&c);
	return ret;
}

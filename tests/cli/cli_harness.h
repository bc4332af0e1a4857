/* cli_harness.h - what the qprof-cli tests share: run the real qprof-cli
 * binary with arguments and capture its exit code, stdout and stderr; a fake
 * HTTP server on a temporary unix socket that answers canned bytes, piece
 * by piece, and records the request. Static functions: one test program
 * includes it once. */
#ifndef QPROF_CLI_HARNESS_H
#define QPROF_CLI_HARNESS_H
#include "testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *cli_path;
static char tmpdir[64];

struct run {
	int code;	/* exit code, or -1 when killed */
	char out[65536];
	char err[8192];
};

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* Run qprof-cli with ARGS (NULL-terminated); QPROF_SOCKET set to ENV_SOCK
 * when not NULL, unset otherwise. */
static void run_cli(struct run *r, const char *env_sock, const char *const *args)
{
	char outp[128], errp[128];
	const char *argv[32];
	int status = 0;
	size_t n = 0;
	pid_t pid;

	argv[n++] = cli_path;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	snprintf(outp, sizeof(outp), "%s/out", tmpdir);
	snprintf(errp, sizeof(errp), "%s/err", tmpdir);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0)
			_exit(127);
		dup2(o, 1);
		dup2(e, 2);
		if (env_sock)
			setenv("QPROF_SOCKET", env_sock, 1);
		else
			unsetenv("QPROF_SOCKET");
		alarm(20);
		execv(cli_path, (char *const *)argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	slurp(outp, r->out, sizeof(r->out));
	slurp(errp, r->err, sizeof(r->err));
}

#define CHECK_HAS(hay, needle)                                                   \
	do {                                                                     \
		if (strstr((hay), (needle))) {                                   \
			tl_pass++;                                               \
		} else {                                                         \
			tl_fail++;                                               \
			fprintf(stderr, "%s:%d: \"%s\" not found in:\n%s\n",     \
				__FILE__, __LINE__, (needle), (hay));            \
		}                                                                \
	} while (0)

/* ---- fake server -------------------------------------------------------- */

struct fake {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	const char *const *pieces;	/* the answer, written piece by piece */
	char req[65536];		/* what the client sent */
	pthread_t th;
};

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	size_t n = 0, need = 0;
	char *hend;
	int fd;

	fd = accept(f->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	/* the head, then Content-Length bytes of body */
	for (;;) {
		ssize_t r = read(fd, f->req + n, sizeof(f->req) - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		f->req[n] = '\0';
		hend = strstr(f->req, "\r\n\r\n");
		if (hend) {
			char *cl = strcasestr(f->req, "\r\nContent-Length: ");

			need = (size_t)(hend + 4 - f->req);
			if (cl && cl < hend)
				need += strtoul(cl + 18, NULL, 10);
			if (n >= need)
				break;
		}
	}
	for (; *f->pieces; f->pieces++) {
		size_t len = strlen(*f->pieces);

		if (write(fd, *f->pieces, len) != (ssize_t)len)
			break;
		usleep(3000);	/* so the client sees the pieces apart */
	}
	close(fd);
	/* Later requests of the same command (scopes and status ask for
	 * /api/status to say what the ring lost) get a status of no targets,
	 * until fake_stop shuts the socket. f->req keeps the first request. */
	for (;;) {
		static const char none[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
					   "Content-Length: 14\r\n\r\n{\"targets\":[]}";
		char scratch[4096];
		size_t got = 0;

		fd = accept(f->lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		for (;;) {
			ssize_t r = read(fd, scratch + got, sizeof(scratch) - 1 - got);

			if (r <= 0)
				break;
			got += (size_t)r;
			scratch[got] = '\0';
			if (strstr(scratch, "\r\n\r\n") || got >= sizeof(scratch) - 1)
				break;
		}
		if (write(fd, none, sizeof(none) - 1) < 0) {
			/* the client went: nothing to answer */
		}
		close(fd);
	}
}

static void fake_start(struct fake *f, const char *const *pieces)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f->req, 0, sizeof(f->req));
	snprintf(f->path, sizeof(f->path), "%s/fake.sock", tmpdir);
	unlink(f->path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(f->lfd, 4)) {
		perror("fake server");
		exit(1);
	}
	f->pieces = pieces;
	pthread_create(&f->th, NULL, fake_serve, f);
}

static void fake_stop(struct fake *f)
{
	/* the CLI has exited: wake the server if it never connected */
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->lfd);
	unlink(f->path);
}

/* Run the CLI against a fake server answering PIECES. */
static void run_fake(struct run *r, struct fake *f, const char *const *pieces,
		     const char *const *args)
{
	const char *argv[32];
	size_t n = 0;

	fake_start(f, pieces);
	argv[n++] = "--socket";
	argv[n++] = f->path;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	run_cli(r, NULL, argv);
	fake_stop(f);
}

#endif

/* http.h - qprofd's HTTP server: libmicrohttpd on a unix socket (and
 * optionally on a loopback TCP port), one thread per connection so that a
 * windowed request (seconds=N) never blocks the others. */
#ifndef QPROF_HTTP_H
#define QPROF_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct qprofd;
struct qp_http;

#define QP_HTTP_MAX_BODY (64 * 1024)

/* Bind PATH: refuse when a live daemon answers there, replace a stale socket
 * file. Returns the listening fd or -errno with a reason in err. */
int qp_http_listen_unix(const char *path, char *err, size_t errlen);
/* Parse "127.0.0.1:PORT" (loopback only) and bind it. fd or -errno. */
int qp_http_listen_tcp(const char *spec, char *err, size_t errlen);

struct qp_http_policy;
/* Serve the API on FD under POLICY (http_auth.h; copied, its token must
 * outlive the server). */
int qp_http_start(struct qprofd *d, int fd, const struct qp_http_policy *policy, struct qp_http **out,
		  char *err, size_t errlen);
void qp_http_stop(struct qp_http *h); /* accepts NULL */

/* The router, for the server and for tests: METHOD URL with query getter. */
struct qp_request {
	const char *method;
	const char *url;
	const char *body;
	size_t body_len;
	bool body_too_large;
	/* value of query parameter NAME or NULL; ARG is the connection */
	const char *(*query)(void *arg, const char *name);
	/* calls fn(arg2, key, value, value_len) for every query pair, in
	 * order: VALUE is NULL when the pair had no '=', VALUE_LEN is its
	 * decoded length (a %00 inside makes it exceed strlen(VALUE)). Used to
	 * reject unknown, repeated and malformed parameters. */
	void (*query_keys)(void *arg, void (*fn)(void *arg2, const char *key, const char *value, size_t value_len),
			   void *arg2);
	void *arg;
	/* value of request header NAME or NULL; NULL getter: no headers */
	const char *(*header)(void *arg, const char *name);
	/* the client hung up (seen on the unix socket; over TCP only when the
	 * connection was reset); NULL getter: never */
	bool (*gone)(void *arg);
	/* a root peer on the unix socket: sees kernel addresses, may name any
	 * ELF file. False for TCP clients (and by default). */
	bool privileged;
	/* the client's pid (SO_PEERCRED) on the unix socket: paths it names
	 * are resolved in its root; 0 over TCP (qprofd's root) */
	int peer_pid;
};

struct qp_response {
	int status;
	char *body;		/* malloc'ed */
	size_t len;
	const char *content_type;
	const char *allow;	/* for 405 */
	const char *disposition; /* Content-Disposition, e.g. attachment; filename="cpu.svg" */
	char note[256];		/* X-Qprof-Note: why a profile is empty, when it is */
	char seconds[64];	/* X-Qprof-Seconds: "300 (clamped from 301)", when clamped */
	/* A streamed body instead of `body`: read() fills BUF with up to MAX
	 * bytes and returns how many, 0 for "nothing yet" (after waiting a
	 * little), QP_STREAM_END or QP_STREAM_ERROR; done() frees the state, also
	 * when the client goes away. */
	ssize_t (*read)(void *state, char *buf, size_t max);
	void (*done)(void *state);
	void *state;
};

#define QP_STREAM_END ((ssize_t)-1)
#define QP_STREAM_ERROR ((ssize_t)-2)

void qp_http_route(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
#endif

/* http.c - the libmicrohttpd side of qprofd: sockets, per-connection state
 * (the request body, bounded), the admission of each request (http_auth.h)
 * and its log line, the limits on connections and long polls, handing each
 * request to the router in http_routes.c and sending its answer. Nothing
 * here knows a route. The deadline on receiving a request is in
 * http_conn.c. */
#define _GNU_SOURCE /* struct ucred */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <microhttpd.h>
#include "http.h"
#include "http_auth.h"
#include "http_conn.h"
#include "http_query.h"
#include "common/log.h"
#include "qprofd.h"
#include "common/util.h"

struct qp_http {
	struct MHD_Daemon *mhd;
	struct qprofd *d;
	int fd;
	struct qp_http_policy policy;
	struct qp_conns *conns;		/* open connections, deadlines, long polls */
};

/* One request: its body (bounded) and, decided when its headers arrived,
 * whether it may go on. */
struct conn {
	char *body;
	size_t len;
	bool too_large;
	int deny;		/* 0, or the HTTP status that refuses it */
	bool token_ok;
	char peer[96];		/* "uid 1000 pid 4242" or "127.0.0.1:50312" */
	bool privileged;
	int peer_pid;		/* SO_PEERCRED's pid on the unix socket, 0 over TCP */
	char why[320];
};

static int mkdir_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int qp_http_listen_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	struct group *g;
	int fd, ret;

	if (!path[0] || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path is empty or longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ret = mkdir_parent(path);
	if (ret) {
		snprintf(err, errlen, "cannot create the directory of %s: %s", path, strerror(-ret));
		return ret;
	}
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket; not replacing it", path);
			return -EEXIST;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			snprintf(err, errlen, "another qprofd is already listening on %s", path);
			return -EADDRINUSE;
		}
		close(fd);
		/* nobody answers: a stale file left by a daemon that died */
		qp_warn("replacing stale socket %s", path);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		ret = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	g = getgrnam("qprof");
	if (g && chown(path, 0, g->gr_gid))
		qp_warn("cannot give %s to group qprof: %s", path, strerror(errno));
	if (chmod(path, g ? 0660 : 0600))
		qp_warn("chmod %s: %s", path, strerror(errno));
	return fd;
}

int qp_http_listen_tcp(const char *spec, char *err, size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(spec, ':');
	int64_t port;
	int fd, one = 1, ret;

	if (!colon || (size_t)(colon - spec) >= sizeof(host) ||
	    qp_parse_i64(colon + 1, 1, 65535, &port)) {
		snprintf(err, errlen, "--listen wants 127.0.0.1:PORT, got '%s'", spec);
		return -EINVAL;
	}
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
	    (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
		snprintf(err, errlen, "--listen accepts loopback addresses only (127.x.x.x), got '%s'", host);
		return -EINVAL;
	}
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		ret = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

static size_t unescape_cb(void *cls, struct MHD_Connection *c, char *s)
{
	return qp_http_unescape(s);
}

static const char *query_get(void *arg, const char *name)
{
	return MHD_lookup_connection_value(arg, MHD_GET_ARGUMENT_KIND, name);
}

struct keys_ctx {
	void (*fn)(void *, const char *, const char *, size_t);
	void *arg;
};

static enum MHD_Result key_it(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
			      const char *value, size_t value_size)
{
	struct keys_ctx *k = cls;

	k->fn(k->arg, key, value, value ? value_size : 0);
	return MHD_YES;
}

static void query_keys(void *arg, void (*fn)(void *, const char *, const char *, size_t), void *arg2)
{
	struct keys_ctx k = { fn, arg2 };

	MHD_get_connection_values_n(arg, MHD_GET_ARGUMENT_KIND, key_it, &k);
}

static const char *header_get(void *arg, const char *name)
{
	return MHD_lookup_connection_value(arg, MHD_HEADER_KIND, name);
}

/* Called from the connection's own thread (one per connection), the only
 * one using its socket while the handler runs. */
static bool client_gone(void *arg)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(arg, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p;

	if (!ci)
		return false;
	p.fd = ci->connect_fd;
	p.events = 0;	/* POLLHUP and POLLERR are reported whatever is asked */
	p.revents = 0;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
}

/* A streamed answer (follow=1): MHD calls stream_read from the connection's
 * thread, which may block a little; stream_free runs when the stream ends or
 * the client hangs up, and gives the long-poll slot back. */
struct stream {
	ssize_t (*read)(void *state, char *buf, size_t max);
	void (*done)(void *state);
	void *state;
	struct qp_conns *conns;	/* holds a long-poll slot there, when not NULL */
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	ssize_t n = st->read(st->state, buf, max);

	if (n == QP_STREAM_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;

	st->done(st->state);
	if (st->conns)
		qp_conns_long_end(st->conns);
	free(st);
}

static struct qp_conn_slot *conn_slot(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Who is asking: SO_PEERCRED on the unix socket, the address over TCP. */
static void peer_of(struct qp_http *h, struct MHD_Connection *c, struct conn *cn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int fd = ci ? ci->connect_fd : -1;

	snprintf(cn->peer, sizeof(cn->peer), "an unknown peer");
	if (fd < 0)
		return;
	if (!h->policy.tcp) {
		struct ucred uc;
		socklen_t len = sizeof(uc);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) || len != sizeof(uc))
			return;
		snprintf(cn->peer, sizeof(cn->peer), "uid %u gid %u pid %d", (unsigned int)uc.uid,
			 (unsigned int)uc.gid, (int)uc.pid);
		cn->privileged = uc.uid == 0;
		cn->peer_pid = uc.pid > 0 ? (int)uc.pid : 0;
	} else {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);
		char a[INET_ADDRSTRLEN];

		if (getpeername(fd, (struct sockaddr *)&sa, &len) || sa.sin_family != AF_INET ||
		    !inet_ntop(AF_INET, &sa.sin_addr, a, sizeof(a)))
			return;
		snprintf(cn->peer, sizeof(cn->peer), "%s:%u", a, (unsigned int)ntohs(sa.sin_port));
	}
}

/* Headers are in: decide whether this request may go on. */
static void admit(struct qp_http *h, struct MHD_Connection *c, struct conn *cn, const char *url,
		  const char *method)
{
	struct qp_http_headers hd = {
		.host = header_get(c, "Host"),
		.origin = header_get(c, "Origin"),
		.sec_fetch_site = header_get(c, "Sec-Fetch-Site"),
		.authorization = header_get(c, "Authorization"),
		.content_type = header_get(c, "Content-Type"),
	};

	peer_of(h, c, cn);
	if (qp_conn_over_limit(conn_slot(c))) {
		cn->deny = 503;
		snprintf(cn->why, sizeof(cn->why), "too many connections (more than %d open): retry later",
			 QP_HTTP_MAX_CONNECTIONS);
		qp_conns_count_refused_full(h->conns);
		return;
	}
	cn->deny = qp_http_admit(&h->policy, method, url, &hd, &cn->token_ok, cn->why, sizeof(cn->why));
}

/* seconds= or follow=1: the answer takes as long as the client asks. */
static bool long_poll(struct MHD_Connection *c)
{
	const char *follow = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");

	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds") ||
	       (follow && strcmp(follow, "0"));
}

static void error_response(struct qp_response *resp, int status, const char *msg)
{
	size_t n = strlen(msg) * 2 + 32;	/* every byte escaped at worst */
	char *b = malloc(n);
	size_t k = 0;

	memset(resp, 0, sizeof(*resp));
	resp->status = status;
	if (!b)
		return;
	k = (size_t)snprintf(b, n, "{\"error\": \"");
	for (; *msg && k + 8 < n; msg++) {
		unsigned char ch = (unsigned char)*msg;

		if (ch == '"' || ch == '\\')
			b[k++] = '\\';
		/* header bytes echoed in the reason: keep the JSON valid ASCII */
		b[k++] = ch < 0x20 ? ' ' : ch >= 0x7f ? '?' : (char)ch;
	}
	k += (size_t)snprintf(b + k, n - k, "\"}\n");
	resp->body = b;
	resp->len = k;
}

/* In place: control bytes (CR and LF among them, which MHD refuses in a
 * header value) become '?'; UTF-8 stays as it is. */
static void header_safe(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static enum MHD_Result send_response(struct MHD_Connection *c, struct qp_response *resp)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(resp->len, resp->body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;
	char retry[16];

	if (!r) {
		free(resp->body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", resp->content_type ? resp->content_type : "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (resp->allow)
		MHD_add_response_header(r, "Allow", resp->allow);
	if (resp->disposition)
		MHD_add_response_header(r, "Content-Disposition", resp->disposition);
	if (resp->note[0]) {
		/* the note quotes the client's scope=: a CR or LF there made MHD
		 * drop the header, and the empty profile went unmarked */
		header_safe(resp->note);
		MHD_add_response_header(r, "X-Qprof-Note", resp->note);
	}
	if (resp->seconds[0])
		MHD_add_response_header(r, "X-Qprof-Seconds", resp->seconds);
	if (resp->status == 503) {
		snprintf(retry, sizeof(retry), "%d", QP_HTTP_RETRY_AFTER_S);
		MHD_add_response_header(r, "Retry-After", retry);
	}
	if (resp->status == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"qprofd\"");
	ret = MHD_queue_response(c, (unsigned int)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_stream(struct MHD_Connection *c, struct qp_response *resp, struct qp_conns *slot)
{
	struct stream *st = malloc(sizeof(*st));
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!st) {
		resp->done(resp->state);
		if (slot)
			qp_conns_long_end(slot);
		return MHD_NO;
	}
	st->read = resp->read;
	st->done = resp->done;
	st->state = resp->state;
	st->conns = slot;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st, stream_free);
	if (!r) {
		stream_free(st);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", resp->content_type ? resp->content_type : "application/x-ndjson");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, (unsigned int)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* S cut to fit OUT, anything but printable ASCII as '?'. */
static void printable(const char *s, char *out, size_t n)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
	out[i] = '\0';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct qp_http *h = cls;
	struct conn *cn = *con_cls;
	struct qp_response resp = { 0 };
	struct qp_request req;
	char safe_url[256];
	bool mutating, slot = false, limited = false;

	if (!cn) {
		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return MHD_NO;
		*con_cls = cn;
		admit(h, c, cn, url, method);
		return MHD_YES;
	}
	if (*upload_size) {
		/* keep reading an oversized or refused body, but only to answer */
		if (!cn->deny && !cn->too_large && cn->len + *upload_size <= QP_HTTP_MAX_BODY) {
			char *nb = realloc(cn->body, cn->len + *upload_size + 1);

			if (!nb)
				return MHD_NO;
			memcpy(nb + cn->len, upload, *upload_size);
			cn->body = nb;
			cn->len += *upload_size;
			cn->body[cn->len] = '\0';
		} else {
			cn->too_large = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	qp_conns_request_in(h->conns, conn_slot(c));
	mutating = qp_http_mutating(method, url);
	if (cn->deny) {
		error_response(&resp, cn->deny, cn->why);
		limited = cn->deny == 503;
	} else if (long_poll(c) && !(slot = qp_conns_long_begin(h->conns))) {
		char why[128];

		snprintf(why, sizeof(why), "too many long polls (seconds= or follow=1): %d are running; retry later",
			 QP_HTTP_MAX_LONG_POLLS);
		error_response(&resp, 503, why);
		limited = true;
	} else {
		req = (struct qp_request){
			.method = method, .url = url, .body = cn->body, .body_len = cn->len,
			.body_too_large = cn->too_large, .query = query_get, .query_keys = query_keys,
			.arg = c, .header = header_get, .gone = client_gone, .privileged = cn->privileged, .peer_pid = cn->peer_pid,
		};
		qp_http_route(h->d, &req, &resp);
		if (slot && !resp.read) {
			qp_conns_long_end(h->conns);
			slot = false;
		}
	}
	printable(url, safe_url, sizeof(safe_url));
	url = safe_url;	/* the log gets no control bytes from a client */
	if (mutating) {
		qp_info("%s %.200s from %s%s -> %d", method, url, cn->peer,
			!h->policy.tcp ? "" : !h->policy.token ? " (no token configured)"
			: cn->token_ok ? " (token matched)" : " (no matching token)", resp.status);
	} else if (resp.status >= 500 && !limited) {
		size_t n = resp.len < 300 ? resp.len : 300;

		while (n && resp.body[n - 1] == '\n')
			n--;
		qp_warn("%s %.200s from %s -> %d %.*s", method, url, cn->peer, resp.status, (int)n,
			resp.body ? resp.body : "");
	} else {	/* refusals for the limits are logged, counted, by http_conn.c */
		qp_debug("%s %.200s from %s -> %d", method, url, cn->peer, resp.status);
	}
	if (resp.read)
		return send_stream(c, &resp, slot ? h->conns : NULL);
	return send_response(c, &resp);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct qp_http *h = cls;
	struct conn *cn = *con_cls;

	qp_conns_request_done(h->conns, conn_slot(c));
	if (!cn)
		return;
	free(cn->body);
	free(cn);
	*con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct qp_http *h = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		*socket_context = ci ? qp_conns_open(h->conns, ci->connect_fd) : NULL;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		qp_conns_close(h->conns, *socket_context);
		*socket_context = NULL;
	}
}

int qp_http_start(struct qprofd *d, int fd, const struct qp_http_policy *policy, struct qp_http **out,
		  char *err, size_t errlen)
{
	struct qp_http *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->d = d;
	h->fd = fd;
	h->policy = *policy;
	h->conns = qp_conns_new(policy->tcp ? "tcp" : "unix", QP_HTTP_REQUEST_DEADLINE_S);
	if (!h->conns) {
		snprintf(err, errlen, "cannot start the connection watchdog");
		free(h);
		return -ENOMEM;
	}
	h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
					  MHD_USE_POLL | MHD_USE_ITC,
				  0, NULL, NULL, on_request, h,
				  MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)QP_HTTP_HARD_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
				  MHD_OPTION_UNESCAPE_CALLBACK, unescape_cb, NULL,
				  MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(err, errlen, "libmicrohttpd could not start");
		qp_conns_free(h->conns);
		free(h);
		return -EIO;
	}
	*out = h;
	return 0;
}

void qp_http_stop(struct qp_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);	/* closes every connection: their slots go */
	qp_conns_free(h->conns);
	close(h->fd);
	free(h);
}

/* http_client.c - the HTTP/1.1 client of qprof-cli. It connects to a unix
 * socket, writes one request with Connection: close, then reads into one
 * growing buffer until the answer is complete: the head (status line and
 * headers, 1xx interim answers skipped), then a body framed by
 * Content-Length, by the chunked transfer coding (decoded as it arrives) or by
 * the end of the connection. Every wait is bounded by one deadline, every
 * size by a cap; anything that is not HTTP/1.x is a protocol error. The
 * bytes themselves (head, chunks, query) are parsed by http_parse.c. */
#include "http_client_priv.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

/* Wait for EVENTS until the deadline. 0, or HTTP_ERR_IO with the reason set. */
static int wait_fd(struct conn *c, short events)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };

	for (;;) {
		uint64_t now = qp_now_ns();
		int ms, rc;

		if (now >= c->deadline_ns) {
			hc_seterr(c, "timed out waiting for qprofd");
			return HTTP_ERR_IO;
		}
		ms = (int)((c->deadline_ns - now + 999999) / 1000000);
		rc = poll(&pfd, 1, ms);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR) {
			hc_seterr(c, "poll: %s", strerror(errno));
			return HTTP_ERR_IO;
		}
	}
}

static int send_all(struct conn *c, const char *p, size_t n)
{
	while (n) {
		ssize_t w;
		int rc = wait_fd(c, POLLOUT);

		if (rc)
			return rc;
		w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			hc_seterr(c, "send: %s", strerror(errno));
			return HTTP_ERR_IO;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read what is there (waiting until the deadline). Returns the byte count,
 * 0 at the end of the connection, or an http_err. */
static ssize_t read_more(struct conn *c, struct rbuf *raw, size_t limit)
{
	ssize_t r;
	int rc;

	if (raw->len >= limit) {
		hc_seterr(c, "answer larger than %zu bytes", limit);
		return HTTP_ERR_TOO_BIG;
	}
	if (hc_rbuf_reserve(raw, 65536))
		return HTTP_ERR_NOMEM;
	for (;;) {
		rc = wait_fd(c, POLLIN);
		if (rc)
			return rc;
		r = recv(c->fd, raw->p + raw->len, raw->cap - raw->len - 1, MSG_DONTWAIT);
		if (r >= 0)
			break;
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			continue;
		hc_seterr(c, "recv: %s", strerror(errno));
		return HTTP_ERR_IO;
	}
	raw->len += (size_t)r;
	raw->p[raw->len] = '\0';
	return r;
}

static int connect_unix(struct conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path)) {
		hc_seterr(c, "%s", strerror(ENAMETOOLONG));
		return HTTP_ERR_CONNECT;
	}
	strcpy(sa.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		hc_seterr(c, "%s", strerror(errno));
		return HTTP_ERR_CONNECT;
	}
	/* blocking connect: on a unix socket it does not wait for the peer */
	while (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		hc_seterr(c, "%s", strerror(errno));
		return HTTP_ERR_CONNECT;
	}
	return 0;
}

static int write_request(struct conn *c, const char *method, const char *target,
			 const char *ctype, const char *body, size_t body_len)
{
	char head[4096];
	int n;

	if (body)
		n = snprintf(head, sizeof(head),
			     "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
			     "User-Agent: qprof-cli\r\nAccept: */*\r\n"
			     "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
			     method, target, ctype ? ctype : "application/json", body_len);
	else
		n = snprintf(head, sizeof(head),
			     "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
			     "User-Agent: qprof-cli\r\nAccept: */*\r\n\r\n",
			     method, target);
	if (n < 0 || (size_t)n >= sizeof(head)) {
		hc_seterr(c, "request target too long");
		return HTTP_ERR_PROTO;
	}
	if (send_all(c, head, (size_t)n))
		return HTTP_ERR_IO;
	if (body && body_len && send_all(c, body, body_len))
		return HTTP_ERR_IO;
	return 0;
}

/* Read the head; on return raw->p[0, *body_off) is it. 1xx answers skipped. */
static int read_head(struct conn *c, struct rbuf *raw, struct head *h,
		     struct http_response *resp, size_t *body_off)
{
	for (;;) {
		size_t end = hc_head_end(raw->p ? raw->p : "", raw->len);
		ssize_t r;
		int rc;

		if (end) {
			rc = hc_parse_head(c, raw->p, end, h, resp);
			if (rc)
				return rc;
			if (h->status >= 200) {
				*body_off = end;
				return 0;
			}
			/* an interim answer: drop it and read the real one */
			memmove(raw->p, raw->p + end, raw->len - end + 1);
			raw->len -= end;
			continue;
		}
		if (raw->len >= HTTP_MAX_HEAD) {
			hc_seterr(c, "HTTP head larger than %u bytes", HTTP_MAX_HEAD);
			return HTTP_ERR_TOO_BIG;
		}
		r = read_more(c, raw, HTTP_MAX_HEAD);
		if (r < 0)
			return (int)r;
		if (r == 0) {
			if (!raw->len)
				hc_seterr(c, "connection closed without an answer");
			else
				hc_seterr(c, "connection closed in the middle of the HTTP head");
			return raw->len ? HTTP_ERR_PROTO : HTTP_ERR_IO;
		}
	}
}

static int read_body(struct conn *c, struct rbuf *raw, const struct head *h, size_t off,
		     struct http_response *resp)
{
	struct chunked ch = { .st = CH_SIZE, .pos = off };
	size_t limit = off + HTTP_MAX_BODY;
	ssize_t r;
	int rc = 0;

	if (h->status == 204 || h->status == 304) {
		resp->body = strdup("");
		return resp->body ? 0 : HTTP_ERR_NOMEM;
	}
	if (h->chunked) {
		/* raw keeps growing with the encoded bytes; the cap on the
		 * decoded size is checked by chunked_feed */
		limit = SIZE_MAX;
	} else if (h->has_length) {
		if (h->length > HTTP_MAX_BODY) {
			hc_seterr(c, "answer larger than %u bytes", HTTP_MAX_BODY);
			return HTTP_ERR_TOO_BIG;
		}
		limit = off + (size_t)h->length;
	}
	for (;;) {
		if (h->chunked) {
			rc = hc_chunked_feed(c, &ch, raw->p, raw->len);
			if (rc)
				goto out;
			if (ch.st == CH_DONE)
				break;
			/* drop what was decoded so raw stays small */
			if (ch.pos > 65536) {
				memmove(raw->p, raw->p + ch.pos, raw->len - ch.pos + 1);
				raw->len -= ch.pos;
				ch.pos = 0;
			}
		} else if (h->has_length && raw->len >= limit) {
			break;
		}
		r = read_more(c, raw, limit);
		if (r < 0) {
			rc = (int)r;
			goto out;
		}
		if (r == 0) {
			if (h->chunked || h->has_length) {
				hc_seterr(c, "connection closed before the end of the answer");
				rc = HTTP_ERR_PROTO;
				goto out;
			}
			break;	/* framed by the end of the connection */
		}
	}
	if (h->chunked) {
		if (!ch.out.p && hc_rbuf_reserve(&ch.out, 0)) {
			rc = HTTP_ERR_NOMEM;
			goto out;
		}
		ch.out.p[ch.out.len] = '\0';
		resp->body = ch.out.p;
		resp->body_len = ch.out.len;
		return 0;
	}
	resp->body_len = (h->has_length ? limit : raw->len) - off;
	resp->body = malloc(resp->body_len + 1);
	if (!resp->body)
		return HTTP_ERR_NOMEM;
	memcpy(resp->body, raw->p + off, resp->body_len);
	resp->body[resp->body_len] = '\0';
	return 0;
out:
	free(ch.out.p);
	return rc;
}

int http_request(const char *sock_path, const char *method, const char *target,
		 const char *content_type, const char *body, size_t body_len,
		 int timeout_s, struct http_response *resp, char *err, size_t errlen)
{
	struct conn c = { .fd = -1, .err = err, .errlen = errlen };
	struct rbuf raw = { 0 };
	struct head h;
	size_t off = 0;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (errlen)
		err[0] = '\0';
	c.deadline_ns = qp_now_ns() + (uint64_t)(timeout_s > 0 ? timeout_s : 1) * 1000000000ull;

	rc = connect_unix(&c, sock_path);
	if (rc)
		goto out;
	rc = write_request(&c, method, target, content_type, body, body_len);
	if (rc)
		goto out;
	rc = read_head(&c, &raw, &h, resp, &off);
	if (rc)
		goto out;
	rc = read_body(&c, &raw, &h, off, resp);
out:
	if (rc == HTTP_ERR_NOMEM)
		hc_seterr(&c, "out of memory");
	if (rc)
		http_response_free(resp);
	free(raw.p);
	if (c.fd >= 0)
		close(c.fd);
	return rc;
}

void http_response_free(struct http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}


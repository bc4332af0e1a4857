/* http_client.c - the HTTP/1.1 client of qprof-cli. It connects to a unix
 * socket, writes one request with Connection: close, then reads into one
 * growing buffer until the answer is complete: the head (status line and
 * headers, 1xx interim answers skipped), then a body framed by
 * Content-Length, by the chunked transfer coding (decoded as it arrives) or by
 * the end of the connection. Every wait is bounded by one deadline, every
 * size by a cap; anything that is not HTTP/1.x is a protocol error. */
#include "http_client.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

struct conn {
	int fd;
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC */
	char *err;
	size_t errlen;
};

struct rbuf {
	char *p;
	size_t len, cap;
};

/* Chunked decoder state; it consumes raw bytes from `pos` on. */
enum chunk_state { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

struct chunked {
	enum chunk_state st;
	uint64_t remain;
	size_t pos;
	struct rbuf out;
};

static __printf(2, 3) void seterr(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait for EVENTS until the deadline. 0, or HTTP_ERR_IO with the reason set. */
static int wait_fd(struct conn *c, short events)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };

	for (;;) {
		uint64_t now = mono_ns();
		int ms, rc;

		if (now >= c->deadline_ns) {
			seterr(c, "timed out waiting for qprofd");
			return HTTP_ERR_IO;
		}
		ms = (int)((c->deadline_ns - now + 999999) / 1000000);
		rc = poll(&pfd, 1, ms);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR) {
			seterr(c, "poll: %s", strerror(errno));
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
			seterr(c, "send: %s", strerror(errno));
			return HTTP_ERR_IO;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int rbuf_reserve(struct rbuf *b, size_t more)
{
	size_t cap;
	char *np;

	if (b->len + more + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 16384;
	while (cap < b->len + more + 1)
		cap *= 2;
	np = realloc(b->p, cap);
	if (!np)
		return HTTP_ERR_NOMEM;
	b->p = np;
	b->cap = cap;
	return 0;
}

static int rbuf_append(struct rbuf *b, const char *p, size_t n)
{
	if (rbuf_reserve(b, n))
		return HTTP_ERR_NOMEM;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Read what is there (waiting until the deadline). Returns the byte count,
 * 0 at the end of the connection, or an http_err. */
static ssize_t read_more(struct conn *c, struct rbuf *raw, size_t limit)
{
	ssize_t r;
	int rc;

	if (raw->len >= limit) {
		seterr(c, "answer larger than %zu bytes", limit);
		return HTTP_ERR_TOO_BIG;
	}
	if (rbuf_reserve(raw, 65536))
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
		seterr(c, "recv: %s", strerror(errno));
		return HTTP_ERR_IO;
	}
	raw->len += (size_t)r;
	raw->p[raw->len] = '\0';
	return r;
}

/* End of the head (index after the empty line) or 0 when not there yet.
 * Lines end in CRLF; a bare LF is accepted too. */
static size_t head_end(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != '\n')
			continue;
		if (i + 1 < len && p[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && p[i + 1] == '\r' && p[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

struct head {
	int status;
	bool chunked;
	bool has_length;
	uint64_t length;
};

static void trim(const char **s, const char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
		(*e)--;
}

static bool name_is(const char *s, const char *e, const char *name)
{
	return (size_t)(e - s) == strlen(name) && strncasecmp(s, name, (size_t)(e - s)) == 0;
}

static void copy_field(char *dst, size_t dstlen, const char *s, const char *e)
{
	size_t n = (size_t)(e - s);

	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* Parse the head in p[0, len) (which ends with the empty line). */
static int parse_head(struct conn *c, char *p, size_t len, struct head *h,
		      struct http_response *resp)
{
	const char *end = p + len, *line = p, *eol, *s, *e;
	char digits[24];
	uint64_t v;

	memset(h, 0, sizeof(*h));
	resp->note[0] = '\0';	/* an interim 1xx head's note is not the answer's */
	eol = memchr(line, '\n', (size_t)(end - line));
	/* "HTTP/1.x SSS reason" */
	if (!eol || eol - line < 12 || memcmp(line, "HTTP/1.", 7) != 0 ||
	    (line[7] != '0' && line[7] != '1') || line[8] != ' ') {
		seterr(c, "not an HTTP/1.x answer");
		return HTTP_ERR_PROTO;
	}
	memcpy(digits, line + 9, 3);
	digits[3] = '\0';
	if (qp_parse_u64(digits, 599, &v) || v < 100 || (line[12] != ' ' && line[12] != '\r' &&
							 line[12] != '\n')) {
		seterr(c, "malformed HTTP status line");
		return HTTP_ERR_PROTO;
	}
	h->status = (int)v;
	s = line + 12;
	e = eol;
	trim(&s, &e);
	copy_field(resp->reason, sizeof(resp->reason), s, e);

	for (line = eol + 1; line < end; line = eol + 1) {
		const char *colon;

		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			break;
		if (eol == line || (eol == line + 1 && line[0] == '\r'))
			break;	/* the empty line */
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || colon == line) {
			seterr(c, "malformed HTTP header line");
			return HTTP_ERR_PROTO;
		}
		s = colon + 1;
		e = eol;
		trim(&s, &e);
		if (name_is(line, colon, "Content-Length")) {
			if ((size_t)(e - s) >= sizeof(digits)) {
				seterr(c, "bad Content-Length");
				return HTTP_ERR_PROTO;
			}
			copy_field(digits, sizeof(digits), s, e);
			if (qp_parse_u64(digits, UINT64_MAX, &v) ||
			    (h->has_length && v != h->length)) {
				seterr(c, "bad Content-Length");
				return HTTP_ERR_PROTO;
			}
			h->has_length = true;
			h->length = v;
		} else if (name_is(line, colon, "Transfer-Encoding")) {
			/* chunked must be the last coding; anything else is
			 * read to the end of the connection */
			h->chunked = (size_t)(e - s) >= 7 &&
				     strncasecmp(e - 7, "chunked", 7) == 0;
		} else if (name_is(line, colon, "Content-Type")) {
			copy_field(resp->content_type, sizeof(resp->content_type), s, e);
		} else if (name_is(line, colon, "X-Qprof-Note")) {
			copy_field(resp->note, sizeof(resp->note), s, e);
		}
	}
	resp->status = h->status;
	return 0;
}

/* Decode what has arrived of a chunked body. 0 (more needed or done: see
 * ch->st), or an http_err. */
static int chunked_feed(struct conn *c, struct chunked *ch, const char *raw, size_t len)
{
	while (ch->st != CH_DONE && ch->pos < len) {
		const char *p = raw + ch->pos, *eol;
		size_t avail = len - ch->pos, n;

		switch (ch->st) {
		case CH_SIZE: {
			uint64_t size = 0;
			size_t i, ndig = 0;

			eol = memchr(p, '\n', avail);
			if (!eol) {
				if (avail > 1024)
					goto bad;
				return 0;
			}
			for (i = 0; p + i < eol; i++) {
				char d = p[i];
				int x;

				if (d >= '0' && d <= '9')
					x = d - '0';
				else if (d >= 'a' && d <= 'f')
					x = d - 'a' + 10;
				else if (d >= 'A' && d <= 'F')
					x = d - 'A' + 10;
				else
					break;
				if (size > HTTP_MAX_BODY) {
					seterr(c, "chunk larger than %u bytes", HTTP_MAX_BODY);
					return HTTP_ERR_TOO_BIG;
				}
				size = size * 16 + (uint64_t)x;
				ndig++;
			}
			/* after the digits: optional spaces, ";ext", CR */
			if (!ndig || (p + i < eol && p[i] != ';' && p[i] != ' ' &&
				      p[i] != '\t' && p[i] != '\r'))
				goto bad;
			ch->pos += (size_t)(eol - p) + 1;
			ch->remain = size;
			ch->st = size ? CH_DATA : CH_TRAILER;
			break;
		}
		case CH_DATA:
			n = avail < ch->remain ? avail : (size_t)ch->remain;
			if (ch->out.len + n > HTTP_MAX_BODY) {
				seterr(c, "answer larger than %u bytes", HTTP_MAX_BODY);
				return HTTP_ERR_TOO_BIG;
			}
			if (rbuf_append(&ch->out, p, n))
				return HTTP_ERR_NOMEM;
			ch->pos += n;
			ch->remain -= n;
			if (!ch->remain)
				ch->st = CH_DATA_END;
			break;
		case CH_DATA_END:
			if (p[0] == '\n') {
				ch->pos += 1;
			} else if (p[0] == '\r') {
				if (avail < 2)
					return 0;
				if (p[1] != '\n')
					goto bad;
				ch->pos += 2;
			} else {
				goto bad;
			}
			ch->st = CH_SIZE;
			break;
		case CH_TRAILER:
			eol = memchr(p, '\n', avail);
			if (!eol) {
				if (avail > HTTP_MAX_HEAD)
					goto bad;
				return 0;
			}
			ch->pos += (size_t)(eol - p) + 1;
			if (eol == p || (eol == p + 1 && p[0] == '\r'))
				ch->st = CH_DONE;
			break;
		case CH_DONE:
			break;
		}
	}
	return 0;
bad:
	seterr(c, "malformed chunked encoding");
	return HTTP_ERR_PROTO;
}

static int connect_unix(struct conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path)) {
		seterr(c, "%s", strerror(ENAMETOOLONG));
		return HTTP_ERR_CONNECT;
	}
	strcpy(sa.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		seterr(c, "%s", strerror(errno));
		return HTTP_ERR_CONNECT;
	}
	/* blocking connect: on a unix socket it does not wait for the peer */
	while (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		seterr(c, "%s", strerror(errno));
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
		seterr(c, "request target too long");
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
		size_t end = head_end(raw->p ? raw->p : "", raw->len);
		ssize_t r;
		int rc;

		if (end) {
			rc = parse_head(c, raw->p, end, h, resp);
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
			seterr(c, "HTTP head larger than %u bytes", HTTP_MAX_HEAD);
			return HTTP_ERR_TOO_BIG;
		}
		r = read_more(c, raw, HTTP_MAX_HEAD);
		if (r < 0)
			return (int)r;
		if (r == 0) {
			if (!raw->len)
				seterr(c, "connection closed without an answer");
			else
				seterr(c, "connection closed in the middle of the HTTP head");
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
			seterr(c, "answer larger than %u bytes", HTTP_MAX_BODY);
			return HTTP_ERR_TOO_BIG;
		}
		limit = off + (size_t)h->length;
	}
	for (;;) {
		if (h->chunked) {
			rc = chunked_feed(c, &ch, raw->p, raw->len);
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
				seterr(c, "connection closed before the end of the answer");
				rc = HTTP_ERR_PROTO;
				goto out;
			}
			break;	/* framed by the end of the connection */
		}
	}
	if (h->chunked) {
		if (!ch.out.p && rbuf_reserve(&ch.out, 0)) {
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
	c.deadline_ns = mono_ns() + (uint64_t)(timeout_s > 0 ? timeout_s : 1) * 1000000000ull;

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
		seterr(&c, "out of memory");
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

int http_add_query(char *buf, size_t len, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n0 = strlen(buf), n = n0;
	const unsigned char *v;

#define PUT(ch)                                  \
	do {                                     \
		if (n + 1 >= len)                \
			goto too_long;           \
		buf[n++] = (ch);                 \
		buf[n] = '\0';                   \
	} while (0)

	PUT(strchr(buf, '?') ? '&' : '?');
	for (; *key; key++)
		PUT(*key);
	PUT('=');
	for (v = (const unsigned char *)value; *v; v++) {
		if ((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') ||
		    (*v >= '0' && *v <= '9') || *v == '-' || *v == '.' || *v == '_' || *v == '~') {
			PUT((char)*v);
		} else {
			PUT('%');
			PUT(hex[*v >> 4]);
			PUT(hex[*v & 15]);
		}
	}
#undef PUT
	return 0;
too_long:
	buf[n0] = '\0';	/* leave the target as it was */
	return -ENAMETOOLONG;
}

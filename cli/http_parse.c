/* http_parse.c - the bytes of HTTP/1.x for the CLI's client: the answer's
 * head (status line and the headers qprof-cli reads), the chunked transfer
 * coding decoded as it arrives, and the percent-encoded query of a request
 * target. Pure functions over buffers; the connection is http_client.c. */
#include "http_client_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void hc_seterr(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
}

int hc_rbuf_reserve(struct rbuf *b, size_t more)
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

int hc_rbuf_append(struct rbuf *b, const char *p, size_t n)
{
	if (hc_rbuf_reserve(b, n))
		return HTTP_ERR_NOMEM;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

size_t hc_head_end(const char *p, size_t len)
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

int hc_parse_head(struct conn *c, char *p, size_t len, struct head *h,
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
		hc_seterr(c, "not an HTTP/1.x answer");
		return HTTP_ERR_PROTO;
	}
	memcpy(digits, line + 9, 3);
	digits[3] = '\0';
	if (qp_parse_u64(digits, 599, &v) || v < 100 || (line[12] != ' ' && line[12] != '\r' &&
							 line[12] != '\n')) {
		hc_seterr(c, "malformed HTTP status line");
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
			hc_seterr(c, "malformed HTTP header line");
			return HTTP_ERR_PROTO;
		}
		s = colon + 1;
		e = eol;
		trim(&s, &e);
		if (name_is(line, colon, "Content-Length")) {
			if ((size_t)(e - s) >= sizeof(digits)) {
				hc_seterr(c, "bad Content-Length");
				return HTTP_ERR_PROTO;
			}
			copy_field(digits, sizeof(digits), s, e);
			if (qp_parse_u64(digits, UINT64_MAX, &v) ||
			    (h->has_length && v != h->length)) {
				hc_seterr(c, "bad Content-Length");
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

int hc_chunked_feed(struct conn *c, struct chunked *ch, const char *raw, size_t len)
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
					hc_seterr(c, "chunk larger than %u bytes", HTTP_MAX_BODY);
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
				hc_seterr(c, "answer larger than %u bytes", HTTP_MAX_BODY);
				return HTTP_ERR_TOO_BIG;
			}
			if (hc_rbuf_append(&ch->out, p, n))
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
	hc_seterr(c, "malformed chunked encoding");
	return HTTP_ERR_PROTO;
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

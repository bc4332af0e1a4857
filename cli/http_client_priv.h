/* http_client_priv.h - what the two files of the CLI's HTTP client share:
 * http_client.c (the connection: connect, write, read until complete) and
 * http_parse.c (the bytes: the answer's head, the chunked coding, the
 * request target's query). Nothing else includes it. */
#ifndef QPROF_CLI_HTTP_CLIENT_PRIV_H
#define QPROF_CLI_HTTP_CLIENT_PRIV_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "http_client.h"
#include "common/util.h"

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

struct head {
	int status;
	bool chunked;
	bool has_length;
	uint64_t length;
};

/* The reason of a failure, into c->err. */
__printf(2, 3) void hc_seterr(struct conn *c, const char *fmt, ...);
/* Room for MORE bytes and a NUL / append N bytes (kept NUL-terminated):
 * 0 or HTTP_ERR_NOMEM. */
int hc_rbuf_reserve(struct rbuf *b, size_t more);
int hc_rbuf_append(struct rbuf *b, const char *p, size_t n);
/* End of the head (index after the empty line) or 0 when not there yet.
 * Lines end in CRLF; a bare LF is accepted too. */
size_t hc_head_end(const char *p, size_t len);
/* Parse the head in p[0, len) (which ends with the empty line) into H and
 * RESP's status, reason, content type and note. 0 or HTTP_ERR_PROTO. */
int hc_parse_head(struct conn *c, char *p, size_t len, struct head *h, struct http_response *resp);
/* Decode what has arrived of a chunked body. 0 (more needed or done: see
 * ch->st), or an http_err. */
int hc_chunked_feed(struct conn *c, struct chunked *ch, const char *raw, size_t len);
#endif

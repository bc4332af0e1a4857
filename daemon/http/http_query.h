/* http_query.h - the pure part of query-string checking for the HTTP API:
 * no request, no registry, no locks, so the unit tests can drive it with
 * plain strings. A NULL value means the parameter is absent. Numbers go
 * through qp_parse_i64, so a value is one decimal integer filling the whole
 * string: no blanks, no exponent, no trailing junk. A leading '+' is accepted
 * ("+5" is 5), a leading '-' is accepted for seconds (then clamped to 1). */
#ifndef QPROF_HTTP_QUERY_H
#define QPROF_HTTP_QUERY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* seconds= is clamped to 1..QP_QUERY_MAX_SECONDS (docs/internals/design.md, "HTTP API conventions");
 * the answer then says so in the header X-Qprof-Seconds: "300 (clamped
 * from 301)". */
#define QP_QUERY_MAX_SECONDS 300

/* seconds=: absent (NULL) -> *out = 0 (everything since attach); an integer
 * -> clamped to 1..300; anything else (or an integer beyond int64) -> -EINVAL
 * and "seconds must be an integer (clamped to 1..300)" in err. */
int qp_query_seconds(const char *s, unsigned int *out, char *err, size_t errlen);
/* The same, and *asked = the integer as given (0 when absent), so that the
 * caller can tell a clamped value from an exact one. */
int qp_query_seconds_ex(const char *s, unsigned int *out, int64_t *asked, char *err, size_t errlen);

/* pid=: absent (NULL) -> *out = 0; an integer in 1..INT32_MAX -> *out;
 * anything else -> -EINVAL and "pid must be a positive integer" in err.
 * Whether the pid is a target is the caller's business. */
int qp_query_pid(const char *s, int *out, char *err, size_t errlen);

/* The first of keys[0..nkeys) that is not in the NULL-terminated allowed
 * list, or NULL when all are allowed. When one is found and err is not NULL,
 * err gets "unknown query parameter 'KEY'" (KEY cut to 63 bytes). */
const char *qp_query_unknown_key(const char *const *allowed, const char *const *keys, size_t nkeys,
				 char *err, size_t errlen);

/* The whole query string, one pair at a time, before any route reads it: a
 * route reads the first value of a key, so a second one (a proxy or a
 * cache may read the last), a value cut short by a NUL byte ("pid=5%00x"
 * would read as 5), or a key without '=' (read as absent) would answer a
 * request other than the one sent. Each is a 400 instead. */
#define QP_QUERY_MAX_ARGS 32
struct qp_query_scan {
	const char *keys[QP_QUERY_MAX_ARGS];	/* borrowed from the request */
	size_t n;
	bool bad;
	char err[192];	/* the first problem found, when bad */
};
/* Feed one pair: KEY as decoded, VALUE NULL when the pair had no '=',
 * VALUE_LEN its decoded length (a NUL inside makes it longer than
 * strlen(VALUE)). After the first problem the rest is ignored. */
void qp_query_scan_arg(struct qp_query_scan *s, const char *key, const char *value, size_t value_len);

/* libmicrohttpd's unescaping of the URL path, query keys and values, in
 * place, but "%00" is left as those three characters: a decoded NUL would
 * end the C string early, so "/api/targets/12%00x" would detach 12 and
 * "pid=5%00x" read as 5. Returns the new length. */
size_t qp_http_unescape(char *s);

/* The Accept header of a /metrics scrape: true when it offers the protobuf
 * exposition (application/vnd.google.protobuf with
 * proto=io.prometheus.client.MetricFamily and encoding=delimited) with a q
 * above 0 and no lower than that of text/plain or of a wildcard range that
 * covers it. NULL, empty or unreadable: false (the text format). A media
 * range whose q is not a number in 0..1 is ignored. */
bool qp_accept_protobuf(const char *accept);
#endif

/* http_query.c - checks of query parameters, kept free of the request and
 * the registry (see http_query.h). Messages are the exact texts the API
 * answers with, so http_routes.c passes them through unchanged. */
#include "http_query.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "common/util.h"

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int qp_query_seconds_ex(const char *s, unsigned int *out, int64_t *asked, char *err, size_t errlen)
{
	int64_t v;

	*out = 0;
	if (asked)
		*asked = 0;
	if (!s)
		return 0;
	/* any int64 is a number here; only then is it clamped */
	if (qp_parse_i64(s, INT64_MIN, INT64_MAX, &v)) {
		if (err && errlen)
			snprintf(err, errlen, "seconds must be an integer (clamped to 1..%d)", QP_QUERY_MAX_SECONDS);
		return -EINVAL;
	}
	*out = v < 1 ? 1 : v > QP_QUERY_MAX_SECONDS ? QP_QUERY_MAX_SECONDS : (unsigned int)v;
	if (asked)
		*asked = v;
	return 0;
}

int qp_query_seconds(const char *s, unsigned int *out, char *err, size_t errlen)
{
	return qp_query_seconds_ex(s, out, NULL, err, errlen);
}

int qp_query_pid(const char *s, int *out, char *err, size_t errlen)
{
	int64_t v;

	*out = 0;
	if (!s)
		return 0;
	if (qp_parse_i64(s, 1, INT32_MAX, &v)) {
		set_err(err, errlen, "pid must be a positive integer");
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

const char *qp_query_unknown_key(const char *const *allowed, const char *const *keys, size_t nkeys,
				 char *err, size_t errlen)
{
	size_t i, j;

	for (i = 0; i < nkeys; i++) {
		bool ok = false;

		for (j = 0; allowed && allowed[j] && !ok; j++)
			ok = !strcmp(allowed[j], keys[i]);
		if (ok)
			continue;
		if (err && errlen) {
			char name[64];

			snprintf(name, sizeof(name), "%s", keys[i]);
			snprintf(err, errlen, "unknown query parameter '%s'", name);
		}
		return keys[i];
	}
	return NULL;
}

static int hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t qp_http_unescape(char *s)
{
	char *w = s, *r = s;

	while (*r) {
		int hi = r[0] == '%' ? hexdigit(r[1]) : -1;
		int lo = hi >= 0 ? hexdigit(r[2]) : -1;

		if (lo >= 0 && (hi | lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else {
			*w++ = *r++;	/* a bad escape, or %00, stays as it is */
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

void qp_query_scan_arg(struct qp_query_scan *s, const char *key, const char *value, size_t value_len)
{
	char name[64];
	size_t i;

	if (s->bad)
		return;
	snprintf(name, sizeof(name), "%s", key);
	s->bad = true;
	if (s->n == QP_QUERY_MAX_ARGS) {
		snprintf(s->err, sizeof(s->err), "more than %d query parameters", QP_QUERY_MAX_ARGS);
		return;
	}
	for (i = 0; i < s->n; i++) {
		if (!strcmp(s->keys[i], key)) {
			snprintf(s->err, sizeof(s->err), "query parameter '%s' is given more than once", name);
			return;
		}
	}
	if (!value) {
		snprintf(s->err, sizeof(s->err), "query parameter '%s' has no value (write %s=VALUE)", name, name);
		return;
	}
	if (memchr(value, '\0', value_len)) {
		snprintf(s->err, sizeof(s->err), "query parameter '%s' holds a NUL byte (%%00)", name);
		return;
	}
	s->keys[s->n++] = key;
	s->bad = false;
}

static bool tok_eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !strncasecmp(s, lit, n);
}

static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* q=V: 0..1, at most 5 characters ("0.125"); false when it is not. */
static bool parse_q(const char *v, size_t n, double *q)
{
	char buf[8];
	char *end;

	if (!n || n > 5)
		return false;
	memcpy(buf, v, n);
	buf[n] = '\0';
	if (!((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '.'))
		return false;
	*q = strtod(buf, &end);
	return !*end && *q >= 0 && *q <= 1;
}

/* One media range [P, P+LEN): its q, and whether it is the protobuf
 * exposition or a text type we serve. false when its q is unreadable. */
static bool media_range(const char *p, size_t len, double *q, bool *pb, bool *text)
{
	const char *semi = memchr(p, ';', len), *ps, *end = p + len, *type = p;
	size_t tlen = semi ? (size_t)(semi - p) : len;
	bool proto = false, delimited = false;

	*q = 1;
	trim(&type, &tlen);
	for (ps = semi ? semi + 1 : NULL; ps && ps < end;) {
		const char *ne = memchr(ps, ';', (size_t)(end - ps));
		size_t plen = ne ? (size_t)(ne - ps) : (size_t)(end - ps);
		const char *eq = memchr(ps, '=', plen);

		if (eq) {
			const char *k = ps, *v = eq + 1;
			size_t kl = (size_t)(eq - ps), vl = plen - kl - 1;

			trim(&k, &kl);
			trim(&v, &vl);
			if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
				v++;
				vl -= 2;
			}
			if (tok_eq(k, kl, "q") && !parse_q(v, vl, q))
				return false;
			if (tok_eq(k, kl, "proto"))
				proto = vl == strlen("io.prometheus.client.MetricFamily") &&
					!strncmp(v, "io.prometheus.client.MetricFamily", vl);
			if (tok_eq(k, kl, "encoding"))
				delimited = tok_eq(v, vl, "delimited");
		}
		ps = ne ? ne + 1 : NULL;
	}
	*pb = tok_eq(type, tlen, "application/vnd.google.protobuf") && proto && delimited;
	*text = tok_eq(type, tlen, "text/plain") || tok_eq(type, tlen, "text/*") || tok_eq(type, tlen, "*/*");
	return true;
}

bool qp_accept_protobuf(const char *accept)
{
	double best_pb = 0, best_text = 0;
	const char *p = accept;

	while (p && *p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		bool pb, text;
		double q;

		if (media_range(p, len, &q, &pb, &text)) {
			if (pb && q > best_pb)
				best_pb = q;
			if (text && q > best_text)
				best_text = q;
		}
		p = comma ? comma + 1 : NULL;
	}
	return best_pb > 0 && best_pb >= best_text;
}

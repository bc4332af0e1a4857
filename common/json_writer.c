/* json_writer.c - the one JSON writer of qprof. Text goes into a growing
 * buffer; the writer inserts the commas and colons, counts the nesting (at
 * most QP_JSON_MAX_DEPTH open containers), escapes every string (quotes,
 * backslashes, all control characters, invalid UTF-8 replaced by U+FFFD) and
 * writes doubles with the fewest digits that read back to the same value
 * (non-finite ones as null). Any misuse or allocation failure sets `failed`;
 * from then on every call is a no-op and qp_json_finish returns NULL, so a
 * caller checks once, at the end. */
#include "json_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QP_JSON_MAX_LEN ((size_t)1 << 31) /* 2 GiB: more is a bug, not data */

void qp_json_init(struct qp_json *j)
{
	memset(j, 0, sizeof(*j));
}

void qp_json_free(struct qp_json *j)
{
	if (!j)
		return;
	free(j->buf);
	qp_json_init(j);
}

static void put(struct qp_json *j, const char *s, size_t n)
{
	if (j->failed)
		return;
	if (n > QP_JSON_MAX_LEN - j->len - 1) {
		j->failed = true;
		return;
	}
	if (j->len + n + 1 > j->cap) {
		size_t cap = j->cap ? j->cap : 256;
		char *nb;

		while (cap < j->len + n + 1)
			cap *= 2;
		nb = realloc(j->buf, cap);
		if (!nb) {
			j->failed = true;
			return;
		}
		j->buf = nb;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void putc_(struct qp_json *j, char c)
{
	put(j, &c, 1);
}

/* Before any value: a comma between siblings, nothing after a key. At the
 * top level only one value is allowed. Returns false when the writer failed. */
static bool begin_value(struct qp_json *j)
{
	if (j->failed)
		return false;
	if (j->after_key) {
		j->after_key = false;
		return true;
	}
	if (j->depth == 0) {
		if (j->len > 0)
			j->failed = true;	/* a second top-level value */
		return !j->failed;
	}
	if (!j->first[j->depth - 1])
		putc_(j, ',');
	j->first[j->depth - 1] = false;
	return !j->failed;
}

static void open_(struct qp_json *j, char c)
{
	if (!begin_value(j))
		return;
	if (j->depth >= QP_JSON_MAX_DEPTH) {
		j->failed = true;
		return;
	}
	putc_(j, c);
	j->first[j->depth++] = true;
}

static void close_(struct qp_json *j, char c)
{
	if (j->failed)
		return;
	if (j->depth == 0 || j->after_key) {	/* nothing open, or a dangling key */
		j->failed = true;
		return;
	}
	j->depth--;
	putc_(j, c);
}

void qp_json_obj_begin(struct qp_json *j) { open_(j, '{'); }
void qp_json_obj_end(struct qp_json *j) { close_(j, '}'); }
void qp_json_arr_begin(struct qp_json *j) { open_(j, '['); }
void qp_json_arr_end(struct qp_json *j) { close_(j, ']'); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there
 * are not one (overlong forms, surrogates and code points above U+10FFFF
 * included). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;	/* allowed range of byte 2 */

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (c == 0xed)
			hi = 0x9f;	/* UTF-16 surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;	/* overlong */
		else if (c == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

size_t qp_utf8_seq(const unsigned char *s, size_t n)
{
	return n ? utf8_seq(s, n) : 0;
}

static void put_string(struct qp_json *j, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0;	/* bytes s[i - run, i) copy as they are */

	putc_(j, '"');
	while (i < n) {
		unsigned char c = s[i];
		const char *esc = NULL;
		char ubuf[8];
		size_t len;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			run++;
			continue;
		}
		if (c >= 0x80) {
			len = utf8_seq(s + i, n - i);
			if (len) {
				i += len;
				run += len;
				continue;
			}
			esc = "\\ufffd";	/* one replacement per bad byte */
		} else {
			switch (c) {
			case '"': esc = "\\\""; break;
			case '\\': esc = "\\\\"; break;
			case '\n': esc = "\\n"; break;
			case '\t': esc = "\\t"; break;
			case '\r': esc = "\\r"; break;
			case '\b': esc = "\\b"; break;
			case '\f': esc = "\\f"; break;
			default:
				snprintf(ubuf, sizeof(ubuf), "\\u%04x", c);
				esc = ubuf;
			}
		}
		put(j, (const char *)s + i - run, run);
		put(j, esc, strlen(esc));
		run = 0;
		i++;
	}
	put(j, (const char *)s + i - run, run);
	putc_(j, '"');
}

void qp_json_key(struct qp_json *j, const char *key)
{
	/* a key needs an open container and no key already waiting for its value */
	if (j->failed)
		return;
	if (!key || j->after_key || j->depth == 0) {
		j->failed = true;
		return;
	}
	if (!j->first[j->depth - 1])
		putc_(j, ',');
	j->first[j->depth - 1] = false;
	put_string(j, key, strlen(key));
	putc_(j, ':');
	j->after_key = true;
}

void qp_json_strn(struct qp_json *j, const char *s, size_t n)
{
	if (!s) {
		qp_json_null(j);
		return;
	}
	if (begin_value(j))
		put_string(j, s, n);
}

void qp_json_str(struct qp_json *j, const char *s)
{
	qp_json_strn(j, s, s ? strlen(s) : 0);
}

static void put_raw_value(struct qp_json *j, const char *text)
{
	if (begin_value(j))
		put(j, text, strlen(text));
}

void qp_json_u64(struct qp_json *j, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	put_raw_value(j, b);
}

void qp_json_milli(struct qp_json *j, uint64_t v)
{
	char b[32];

	/* exact: integer division, no double rounding */
	snprintf(b, sizeof(b), "%llu.%03llu", (unsigned long long)(v / 1000),
		 (unsigned long long)(v % 1000));
	put_raw_value(j, b);
}

void qp_json_kv_milli(struct qp_json *j, const char *key, uint64_t v)
{
	qp_json_key(j, key);
	qp_json_milli(j, v);
}

void qp_json_i64(struct qp_json *j, int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%lld", (long long)v);
	put_raw_value(j, b);
}

void qp_json_double(struct qp_json *j, double v)
{
	char b[32];
	int prec;

	if (!isfinite(v)) {
		qp_json_null(j);
		return;
	}
	/* the shortest of %.15g..%.17g that reads back exactly; %.17g always does */
	for (prec = 15; prec <= 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	/* a locale with a decimal comma must not leak into JSON */
	for (char *p = b; *p; p++)
		if (*p == ',')
			*p = '.';
	put_raw_value(j, b);
}

void qp_json_bool(struct qp_json *j, bool v)
{
	put_raw_value(j, v ? "true" : "false");
}

void qp_json_null(struct qp_json *j)
{
	put_raw_value(j, "null");
}

void qp_json_kv_str(struct qp_json *j, const char *key, const char *s)
{
	qp_json_key(j, key);
	qp_json_str(j, s);
}

void qp_json_kv_u64(struct qp_json *j, const char *key, uint64_t v)
{
	qp_json_key(j, key);
	qp_json_u64(j, v);
}

void qp_json_kv_i64(struct qp_json *j, const char *key, int64_t v)
{
	qp_json_key(j, key);
	qp_json_i64(j, v);
}

void qp_json_kv_double(struct qp_json *j, const char *key, double v)
{
	qp_json_key(j, key);
	qp_json_double(j, v);
}

void qp_json_kv_bool(struct qp_json *j, const char *key, bool v)
{
	qp_json_key(j, key);
	qp_json_bool(j, v);
}

void qp_json_kv_null(struct qp_json *j, const char *key)
{
	qp_json_key(j, key);
	qp_json_null(j);
}

char *qp_json_finish(struct qp_json *j, size_t *len)
{
	char *out = NULL;

	/* an unclosed container, a dangling key or nothing written is a failure */
	if (!j->failed && j->depth == 0 && !j->after_key && j->len > 0) {
		out = j->buf;
		if (len)
			*len = j->len;
		j->buf = NULL;
	}
	qp_json_free(j);
	if (!out && len)
		*len = 0;
	return out;
}

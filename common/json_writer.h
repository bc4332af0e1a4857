/* json_writer.h - the one JSON writer of qprof: a growing buffer, commas and
 * nesting handled for the caller, every string escaped (control characters,
 * quotes, backslashes, invalid UTF-8 replaced by U+FFFD). Doubles that are not
 * finite are written as null. */
#ifndef QPROF_JSON_WRITER_H
#define QPROF_JSON_WRITER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QP_JSON_MAX_DEPTH 32

struct qp_json {
	char *buf;
	size_t len, cap;
	int depth;
	bool first[QP_JSON_MAX_DEPTH]; /* no value written yet at this level */
	bool after_key;
	bool failed;	/* out of memory or misuse; qp_json_finish returns NULL */
};

void qp_json_init(struct qp_json *j);
void qp_json_free(struct qp_json *j);
void qp_json_obj_begin(struct qp_json *j);
void qp_json_obj_end(struct qp_json *j);
void qp_json_arr_begin(struct qp_json *j);
void qp_json_arr_end(struct qp_json *j);
void qp_json_key(struct qp_json *j, const char *key);
void qp_json_str(struct qp_json *j, const char *s);	/* NULL -> null */
void qp_json_strn(struct qp_json *j, const char *s, size_t n);
void qp_json_u64(struct qp_json *j, uint64_t v);
void qp_json_i64(struct qp_json *j, int64_t v);
/* V / 1000 with exactly three decimals ("1234.567"): ns written as us */
void qp_json_milli(struct qp_json *j, uint64_t v);
void qp_json_double(struct qp_json *j, double v);
void qp_json_bool(struct qp_json *j, bool v);
void qp_json_null(struct qp_json *j);
/* key + value in one call */
void qp_json_kv_str(struct qp_json *j, const char *key, const char *s);
void qp_json_kv_u64(struct qp_json *j, const char *key, uint64_t v);
void qp_json_kv_i64(struct qp_json *j, const char *key, int64_t v);
void qp_json_kv_milli(struct qp_json *j, const char *key, uint64_t v);
void qp_json_kv_double(struct qp_json *j, const char *key, double v);
void qp_json_kv_bool(struct qp_json *j, const char *key, bool v);
void qp_json_kv_null(struct qp_json *j, const char *key);
/* NUL-terminated text, ownership to the caller (free()); NULL on failure.
 * The writer is reset and can be reused or freed. */
char *qp_json_finish(struct qp_json *j, size_t *len);
/* Length of the valid UTF-8 sequence at S (1..4; N bytes there), or 0 when
 * the bytes there are not one: the check the writer replaces by U+FFFD,
 * for other encoders of hostile text (the Prometheus exposition). */
size_t qp_utf8_seq(const unsigned char *s, size_t n);
#endif

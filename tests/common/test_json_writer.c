/* test_json_writer.c - the JSON writer byte for byte: nesting and commas,
 * every escape, UTF-8 kept or replaced, numbers at their limits, doubles that
 * read back exactly, the depth limit and misuse; then each output is parsed
 * back with jansson to check that a real parser sees the same strings. */
#include "common/json_writer.h"
#include "testlib.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

/* Finish J, compare with EXPECT, free. */
#define CHECK_JSON(j, expect)                                                    \
	do {                                                                     \
		size_t cj_len = 0;                                               \
		char *cj_out = qp_json_finish((j), &cj_len);                     \
		CHECK_STR(cj_out, (expect));                                     \
		if (cj_out)                                                      \
			CHECK_INT(cj_len, strlen(expect));                       \
		free(cj_out);                                                    \
	} while (0)

static void test_nesting(void)
{
	struct qp_json j;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_str(&j, "a", "x");
	qp_json_key(&j, "list");
	qp_json_arr_begin(&j);
	qp_json_u64(&j, 1);
	qp_json_obj_begin(&j);
	qp_json_obj_end(&j);
	qp_json_arr_begin(&j);
	qp_json_arr_end(&j);
	qp_json_null(&j);
	qp_json_bool(&j, true);
	qp_json_bool(&j, false);
	qp_json_arr_end(&j);
	qp_json_key(&j, "o");
	qp_json_obj_begin(&j);
	qp_json_kv_i64(&j, "n", -3);
	qp_json_kv_null(&j, "z");
	qp_json_kv_bool(&j, "t", true);
	qp_json_obj_end(&j);
	qp_json_obj_end(&j);
	CHECK_JSON(&j, "{\"a\":\"x\",\"list\":[1,{},[],null,true,false],"
		       "\"o\":{\"n\":-3,\"z\":null,\"t\":true}}");

	/* a bare top-level value is a document too */
	qp_json_init(&j);
	qp_json_str(&j, "only");
	CHECK_JSON(&j, "\"only\"");
}

static void test_escapes(void)
{
	struct qp_json j;
	char all[32];
	char expect[256];
	size_t off = 0;
	int c;

	qp_json_init(&j);
	qp_json_arr_begin(&j);
	qp_json_str(&j, "q\"b\\s/e");
	qp_json_str(&j, "\n\t\r\b\f");
	qp_json_strn(&j, "a\0b", 3);	/* an embedded NUL survives */
	qp_json_str(&j, NULL);
	qp_json_arr_end(&j);
	CHECK_JSON(&j, "[\"q\\\"b\\\\s/e\",\"\\n\\t\\r\\b\\f\",\"a\\u0000b\",null]");

	/* every control character 0x01..0x1f, then DEL (which JSON allows as is) */
	for (c = 1; c < 32; c++)
		all[c - 1] = (char)c;
	all[31] = 0x7f;
	off += snprintf(expect + off, sizeof(expect) - off, "\"");
	for (c = 1; c < 32; c++) {
		const char *s = NULL;

		switch (c) {
		case '\b': s = "\\b"; break;
		case '\t': s = "\\t"; break;
		case '\n': s = "\\n"; break;
		case '\f': s = "\\f"; break;
		case '\r': s = "\\r"; break;
		}
		if (s)
			off += snprintf(expect + off, sizeof(expect) - off, "%s", s);
		else
			off += snprintf(expect + off, sizeof(expect) - off, "\\u%04x", c);
	}
	snprintf(expect + off, sizeof(expect) - off, "\x7f\"");
	qp_json_init(&j);
	qp_json_strn(&j, all, sizeof(all));
	CHECK_JSON(&j, expect);
	/* spot-check the table above against literal text */
	CHECK(strstr(expect, "\\u0001\\u0002") != NULL);
	CHECK(strstr(expect, "\\u001f\x7f") != NULL);
	CHECK(strstr(expect, "\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e") != NULL);

	/* keys are escaped too */
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "k\"\n", 0);
	qp_json_obj_end(&j);
	CHECK_JSON(&j, "{\"k\\\"\\n\":0}");
}

static void test_utf8(void)
{
	struct qp_json j;

	/* valid: 2, 3 and 4 byte sequences, kept byte for byte */
	qp_json_init(&j);
	qp_json_str(&j, "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf");
	CHECK_JSON(&j, "\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"");

	/* invalid: a lone continuation byte, 0xff, a truncated sequence at the
	 * end, an overlong '/', a surrogate, a code point above U+10FFFF */
	qp_json_init(&j);
	qp_json_arr_begin(&j);
	qp_json_str(&j, "a\x80z");
	qp_json_str(&j, "\xff");
	qp_json_str(&j, "x\xe2\x82");
	qp_json_str(&j, "\xc0\xaf");
	qp_json_str(&j, "\xed\xa0\x80");
	qp_json_str(&j, "\xf4\x90\x80\x80");
	qp_json_arr_end(&j);
	CHECK_JSON(&j, "[\"a\\ufffdz\",\"\\ufffd\",\"x\\ufffd\\ufffd\",\"\\ufffd\\ufffd\","
		       "\"\\ufffd\\ufffd\\ufffd\",\"\\ufffd\\ufffd\\ufffd\\ufffd\"]");
}

static void test_numbers(void)
{
	struct qp_json j;

	qp_json_init(&j);
	qp_json_arr_begin(&j);
	qp_json_u64(&j, UINT64_MAX);
	qp_json_i64(&j, INT64_MIN);
	qp_json_i64(&j, INT64_MAX);
	qp_json_u64(&j, 0);
	qp_json_double(&j, NAN);
	qp_json_double(&j, INFINITY);
	qp_json_double(&j, -INFINITY);
	qp_json_double(&j, 0.1);
	qp_json_double(&j, 1.0);
	qp_json_double(&j, -2.5);
	qp_json_double(&j, 1.0 / 3.0);
	qp_json_double(&j, 1e300);
	qp_json_double(&j, 5e-324);
	qp_json_double(&j, 123456789.125);
	qp_json_double(&j, 0.1 + 0.2);	/* needs all 17 digits */
	qp_json_arr_end(&j);
	CHECK_JSON(&j, "[18446744073709551615,-9223372036854775808,9223372036854775807,0,"
		       "null,null,null,0.1,1,-2.5,0.3333333333333333,1e+300,"
		       "4.94065645841247e-324,123456789.125,0.30000000000000004]");

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_double(&j, "nan", NAN);
	qp_json_kv_double(&j, "pi", 3.141592653589793);
	qp_json_obj_end(&j);
	CHECK_JSON(&j, "{\"nan\":null,\"pi\":3.141592653589793}");
}

static void test_depth_and_misuse(void)
{
	struct qp_json j;
	size_t len = 99;
	char *out;
	int i;

	/* exactly QP_JSON_MAX_DEPTH open arrays is fine ... */
	qp_json_init(&j);
	for (i = 0; i < QP_JSON_MAX_DEPTH; i++)
		qp_json_arr_begin(&j);
	for (i = 0; i < QP_JSON_MAX_DEPTH; i++)
		qp_json_arr_end(&j);
	out = qp_json_finish(&j, &len);
	CHECK(out != NULL);
	CHECK_INT(len, 2 * QP_JSON_MAX_DEPTH);
	free(out);

	/* ... one more fails, and keeps failing after the closes */
	qp_json_init(&j);
	for (i = 0; i <= QP_JSON_MAX_DEPTH; i++)
		qp_json_obj_begin(&j);
	CHECK(j.failed);
	for (i = 0; i <= QP_JSON_MAX_DEPTH; i++)
		qp_json_obj_end(&j);
	CHECK(qp_json_finish(&j, &len) == NULL);
	CHECK_INT(len, 0);

	/* unclosed */
	qp_json_init(&j);
	qp_json_arr_begin(&j);
	CHECK(qp_json_finish(&j, NULL) == NULL);
	/* close without open */
	qp_json_init(&j);
	qp_json_arr_end(&j);
	CHECK(qp_json_finish(&j, NULL) == NULL);
	/* dangling key */
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_key(&j, "k");
	qp_json_obj_end(&j);
	CHECK(qp_json_finish(&j, NULL) == NULL);
	/* two keys in a row */
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_key(&j, "a");
	qp_json_key(&j, "b");
	CHECK(j.failed);
	qp_json_free(&j);
	/* a key at the top level */
	qp_json_init(&j);
	qp_json_key(&j, "a");
	CHECK(j.failed);
	qp_json_free(&j);
	/* two top-level values */
	qp_json_init(&j);
	qp_json_u64(&j, 1);
	qp_json_u64(&j, 2);
	CHECK(qp_json_finish(&j, NULL) == NULL);
	/* nothing written */
	qp_json_init(&j);
	CHECK(qp_json_finish(&j, NULL) == NULL);
	/* free accepts an initialised, unused writer twice */
	qp_json_init(&j);
	qp_json_free(&j);
	qp_json_free(&j);
	CHECK(j.buf == NULL);
}

/* What a real parser reads from the writer's output. */
static void test_roundtrip(void)
{
	static const char *strs[] = {
		"plain", "q\"b\\s", "\n\t\r\b\f\x01\x1f", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
		"", "/slash/", "\x7f",
	};
	struct qp_json j;
	json_error_t err;
	json_t *root, *arr;
	char *out;
	size_t i;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_key(&j, "strs");
	qp_json_arr_begin(&j);
	for (i = 0; i < (sizeof(strs) / sizeof(strs[0])); i++)
		qp_json_str(&j, strs[i]);
	qp_json_str(&j, "bad\xff");
	qp_json_strn(&j, "n\0ul", 4);
	qp_json_arr_end(&j);
	qp_json_kv_u64(&j, "u", UINT64_MAX / 2);
	qp_json_kv_i64(&j, "i", INT64_MIN);
	qp_json_kv_double(&j, "d", 0.1);
	qp_json_kv_double(&j, "inf", INFINITY);
	qp_json_obj_end(&j);
	out = qp_json_finish(&j, NULL);
	CHECK(out != NULL);
	if (!out)
		return;

	root = json_loads(out, JSON_ALLOW_NUL, &err);
	CHECK(root != NULL);
	if (!root) {
		fprintf(stderr, "jansson: %s in %s\n", err.text, out);
		free(out);
		return;
	}
	arr = json_object_get(root, "strs");
	CHECK_INT(json_array_size(arr), (sizeof(strs) / sizeof(strs[0])) + 2);
	for (i = 0; i < (sizeof(strs) / sizeof(strs[0])); i++)
		CHECK_STR(json_string_value(json_array_get(arr, i)), strs[i]);
	CHECK_STR(json_string_value(json_array_get(arr, i)), "bad\xef\xbf\xbd");
	CHECK_INT(json_string_length(json_array_get(arr, i + 1)), 4);
	CHECK(memcmp(json_string_value(json_array_get(arr, i + 1)), "n\0ul", 4) == 0);
	/* jansson integers are signed 64-bit: UINT64_MAX / 2 is INT64_MAX */
	CHECK(json_integer_value(json_object_get(root, "u")) == INT64_MAX);
	CHECK(json_integer_value(json_object_get(root, "i")) == INT64_MIN);
	CHECK(json_real_value(json_object_get(root, "d")) == 0.1);
	CHECK(json_is_null(json_object_get(root, "inf")));
	json_decref(root);
	free(out);
}

int main(void)
{
	test_nesting();
	test_escapes();
	test_utf8();
	test_numbers();
	test_depth_and_misuse();
	test_roundtrip();
	return test_done("test_json_writer");
}

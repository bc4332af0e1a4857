/* test_util.c - util: the checked parsers on every edge the daemon and the
 * CLI can meet (empty, blanks, signs, junk, overflow, bounds), the human
 * formatters to the exact string including unit roll-over at rounding
 * boundaries, and the clocks. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "testlib.h"
#include "common/util.h"

#define U64(s, max, want_ret, want)                                              \
	do {                                                                     \
		uint64_t v_ = 4242;                                              \
		CHECK_INT(qp_parse_u64((s), (max), &v_), (want_ret));            \
		CHECK(v_ == ((want_ret) ? 4242 : (uint64_t)(want)));             \
	} while (0)
#define I64(s, min, max, want_ret, want)                                         \
	do {                                                                     \
		int64_t v_ = 4242;                                               \
		CHECK_INT(qp_parse_i64((s), (min), (max), &v_), (want_ret));     \
		CHECK(v_ == ((want_ret) ? 4242 : (int64_t)(want)));              \
	} while (0)
#define DUR(ns, want)                                                            \
	do {                                                                     \
		char b_[32];                                                     \
		CHECK_STR(qp_fmt_duration(b_, sizeof(b_), (ns), true), (want));  \
	} while (0)
#define CNT(v, want)                                                             \
	do {                                                                     \
		char b_[32];                                                     \
		CHECK_STR(qp_fmt_count(b_, sizeof(b_), (v)), (want));            \
	} while (0)

static void test_parse(void)
{
	U64("0", UINT64_MAX, 0, 0);
	U64("007", UINT64_MAX, 0, 7);
	U64("18446744073709551615", UINT64_MAX, 0, UINT64_MAX);
	U64("18446744073709551616", UINT64_MAX, -ERANGE, 0);
	U64("99999999999999999999999", UINT64_MAX, -ERANGE, 0);
	U64("100", 99, -ERANGE, 0);
	U64("99", 99, 0, 99);
	U64("-1", UINT64_MAX, -EINVAL, 0);
	U64("+1", UINT64_MAX, -EINVAL, 0);
	U64("12x", UINT64_MAX, -EINVAL, 0);
	U64("", UINT64_MAX, -EINVAL, 0);
	U64(" 5", UINT64_MAX, -EINVAL, 0);
	U64("5 ", UINT64_MAX, -EINVAL, 0);
	U64("5\n", UINT64_MAX, -EINVAL, 0);
	U64("0x10", UINT64_MAX, -EINVAL, 0);
	U64("1e3", UINT64_MAX, -EINVAL, 0);
	U64(NULL, UINT64_MAX, -EINVAL, 0);

	I64("0", INT64_MIN, INT64_MAX, 0, 0);
	I64("-5", INT64_MIN, INT64_MAX, 0, -5);
	I64("+7", INT64_MIN, INT64_MAX, 0, 7);
	I64("9223372036854775807", INT64_MIN, INT64_MAX, 0, INT64_MAX);
	I64("9223372036854775808", INT64_MIN, INT64_MAX, -ERANGE, 0);
	I64("-9223372036854775808", INT64_MIN, INT64_MAX, 0, INT64_MIN);
	I64("-9223372036854775809", INT64_MIN, INT64_MAX, -ERANGE, 0);
	I64("-99999999999999999999999", INT64_MIN, INT64_MAX, -ERANGE, 0);
	I64("-5", 0, 10, -ERANGE, 0);
	I64("11", 0, 10, -ERANGE, 0);
	I64("10", 0, 10, 0, 10);
	I64("-", INT64_MIN, INT64_MAX, -EINVAL, 0);
	I64("--1", INT64_MIN, INT64_MAX, -EINVAL, 0);
	I64("- 1", INT64_MIN, INT64_MAX, -EINVAL, 0);
	I64(" -1", INT64_MIN, INT64_MAX, -EINVAL, 0);
	I64("12x", INT64_MIN, INT64_MAX, -EINVAL, 0);
	I64("", INT64_MIN, INT64_MAX, -EINVAL, 0);
	I64(NULL, INT64_MIN, INT64_MAX, -EINVAL, 0);
}

static void test_duration(void)
{
	char b[32];

	DUR(0, "0 ns");
	DUR(812, "812 ns");
	DUR(999.4, "999 ns");
	DUR(999.5, "1.00 us");
	DUR(1000, "1.00 us");
	DUR(1234, "1.23 us");
	DUR(12345, "12.3 us");
	DUR(99949, "99.9 us");
	DUR(99950, "100 us");
	DUR(123456, "123 us");
	DUR(999499, "999 us");
	DUR(999500, "1.00 ms");
	DUR(4560000, "4.56 ms");
	DUR(45600000, "45.6 ms");
	DUR(456000000, "456 ms");
	DUR(999600000, "1.00 s");
	DUR(1.2e9, "1.20 s");
	DUR(12.3e9, "12.3 s");
	DUR(1234e9, "1234 s");
	DUR(-1500, "-1.50 us");
	DUR(NAN, "-");
	CHECK_STR(qp_fmt_duration(b, sizeof(b), 812, false), "-");
	/* Cut, terminated, no overflow. */
	CHECK_STR(qp_fmt_duration(b, 4, 4560000, true), "4.5");
	CHECK(qp_fmt_duration(NULL, 0, 1, true) == NULL);
}

static void test_count(void)
{
	char b[32];

	CNT(0, "0");
	CNT(812, "812");
	CNT(9999, "9999");
	CNT(10000, "10.0k");
	CNT(12345, "12.3k");
	CNT(123456, "123k");
	CNT(999499, "999k");
	CNT(999500, "1.00M");
	CNT(1234567, "1.23M");
	CNT(45600000, "45.6M");
	CNT(4560000000ull, "4.56G");
	CNT(UINT64_MAX, "18446744074G");
	CHECK_STR(qp_fmt_count(b, 3, 12345), "12");
}

static void test_clocks(void)
{
	uint64_t a = qp_now_ns(), b = qp_now_ns(), r = qp_realtime_ns();

	CHECK(a > 0);
	CHECK(b >= a);
	CHECK(r > 1600000000ull * 1000000000ull); /* after Sept 2020 */
	CHECK_INT(QP_ARRAY_SIZE("abc"), 4);
}

int main(void)
{
	test_parse();
	test_duration();
	test_count();
	test_clocks();
	return test_done("test_util");
}

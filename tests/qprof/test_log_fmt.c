/* test_log_fmt.c - QPROF_LOG's own formatter (include/qprof/log_fmt.h)
 * against the C library's snprintf: the same bytes and the same result for
 * every format it writes itself, and for those it hands to vsnprintf;
 * every buffer size from 0 to past the message (cut messages); integers at
 * their limits and 100,000 random ones of every length modifier. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <qprof/qprof.h>

/* arguments the conversions narrow (%hhd of 300), formats cut on purpose,
 * a trailing %: what is checked here, not mistakes */
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
#pragma GCC diagnostic ignored "-Wformat-zero-length"
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wformat-truncation"
#pragma GCC diagnostic ignored "-Wformat-overflow"
#endif

static int fails, checks;

/* Both formatters at every size up to LEN + 2 of the whole message. */
#define SAME(...)                                                                                  \
	do {                                                                                       \
		char want[300], got[300];                                                          \
		int w = snprintf(want, sizeof(want), __VA_ARGS__);                                 \
		for (size_t size = 0; size < sizeof(want) && size <= (size_t)w + 2; size++) {      \
			int g;                                                                     \
			memset(got, 'Z', sizeof(got));                                             \
			memset(want, 'Z', sizeof(want));                                           \
			w = snprintf(want, size, __VA_ARGS__);                                     \
			g = qprof__log_fmt(got, size, __VA_ARGS__);                                \
			checks++;                                                                  \
			if (g != w || memcmp(got, want, sizeof(got))) {                            \
				if (fails++ < 20)                                                  \
					fprintf(stderr, "FAIL line %d size %zu: %d \"%.*s\" vs %d \"%.*s\"\n", \
						__LINE__, size, g, (int)(size ? size : 1), got, w,         \
						(int)(size ? size : 1), want);                             \
			}                                                                          \
		}                                                                                  \
	} while (0)

static uint64_t rnd(void)
{
	static uint64_t x = 88172645463325252ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

int main(void)
{
	const char *nul = NULL;
	int i;

	SAME("plain text");
	SAME("%s", "");
	SAME("");
	SAME("100%% sure, %d%%", 5);
	SAME("order %llu sym %u px %lld", 123456789012ull, 17u, -10042ll);
	SAME("%d %i %u %x %X", INT_MIN, INT_MAX, UINT_MAX, 0xdeadbeefu, 0xabcdefu);
	SAME("%ld %lu %lx", LONG_MIN, ULONG_MAX, 0x7fffffffffffffffl);
	SAME("%lld %llu %llX", LLONG_MIN, ULLONG_MAX, 0ull);
	SAME("%hhd %hhu %hd %hu %hhx", -129, 511, 70000, 70000, 300);
	SAME("%zd %zu %zx %jd %ju %td %tu", (ssize_t)-5, (size_t)-1, (size_t)4096, (intmax_t)INT64_MIN,
	     (uintmax_t)UINT64_MAX, (ptrdiff_t)-77, (size_t)77);
	SAME("%c%c%c", 'a', 0x141, '\n');
	SAME("[%s] [%s]", "a string", "another, longer string of text");
	SAME("%c in the middle", 0);
	/* handed to vsnprintf whole */
	SAME("%5d|%-5d|%05d|%+d|% d|%#x", 42, 42, 42, 42, 42, 42);
	SAME("%.3s %10s %*d", "abcdef", "right", 6, 7);
	SAME("%f %e %g %a", 3.25, 1e-300, 2.5, 1.0);
	SAME("%p", (void *)&i);
	SAME("%s then %d", nul, 3);
	SAME("%lc", (wint_t)'w');
	SAME("%o %Lf", 8u, (long double)1.5);
	SAME("trailing %");
	SAME("trailing %l");
	for (i = 0; i < 100000; i++) {
		uint64_t v = rnd() >> (rnd() % 64);

		switch (i % 8) {
		case 0: SAME("%d %u %x", (int)v, (unsigned)v, (unsigned)v); break;
		case 1: SAME("%ld|%lu|%lX", (long)v, (unsigned long)v, (unsigned long)v); break;
		case 2: SAME("%lld,%llu", (long long)v, (unsigned long long)v); break;
		case 3: SAME("%hd %hu %hhd %hhu", (int)v, (int)v, (int)v, (int)v); break;
		case 4: SAME("%zu %zd %jd %td", (size_t)v, (ssize_t)v, (intmax_t)v, (ptrdiff_t)v); break;
		case 5: SAME("x=%i y=%c", (int)(v - (v >> 1)), (int)(v & 0x7f) | 1); break;
		case 6: SAME("%d", -(int)(v & 0x7fffffff)); break;
		default: SAME("%lld", -(long long)v); break;
		}
	}
	printf("test_log_fmt: %d checks, %d failed\n", checks, fails);
	return fails != 0;
}

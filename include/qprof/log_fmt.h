/* SPDX-License-Identifier: MIT */
/* log_fmt.h - QPROF_LOG's formatting while a tracer listens, included by
 * qprof.h; not meant to be included alone.
 *
 * qprof__log_fmt(buf, size, fmt, ...) gives what snprintf gives, byte for
 * byte, with the same result (the length the whole message would have).
 * The formats markers mostly log, plain text with %% and the conversions
 * d i u x X c s (length modifiers hh h l ll z j t; no flags, width or
 * precision), it writes itself, at a fraction of the C library's cost (in a
 * 3-thread program logging once a tick, snprintf was most of what the ring
 * collector cost it). Any other format, and a %s of a null pointer, goes
 * to vsnprintf whole. */
#ifndef QPROF_LOG_FMT_H
#define QPROF_LOG_FMT_H

#ifdef __cplusplus
#include <cstdarg>
#include <cstddef>
#include <cstring>
#else
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#endif

/* LEN bytes of SRC at N of BUF (of SIZE bytes), as many as there is room
 * for before the NUL. */
static inline __attribute__((always_inline)) void qprof__fmt_put(char *buf, size_t size, size_t n,
								  const char *src, size_t len)
{
	if (n + 1 < size)
		memcpy(buf + n, src, n + len < size ? len : size - 1 - n);
}

static __attribute__((noinline, unused, format(printf, 3, 4))) int qprof__log_fmt(char *buf, size_t size,
										     const char *fmt, ...)
{
	va_list ap, again;
	size_t n = 0;
	const char *p;
	int ret;

	va_start(ap, fmt);
	va_copy(again, ap);
	for (p = fmt; *p; p++) {
		/* a number's digits end at tmp + 24, written backwards */
		static const char two[] = "00010203040506070809101112131415161718192021222324"
					  "25262728293031323334353637383940414243444546474849"
					  "50515253545556575859606162636465666768697071727374"
					  "75767778798081828384858687888990919293949596979899";
		char tmp[24], *d = tmp + sizeof(tmp);
		unsigned long long u = 0;
		int len = 0, neg = 0;
		const char *s;
		char conv;

		if (*p != '%') {
			for (s = p; p[1] && p[1] != '%'; p++)
				;
			qprof__fmt_put(buf, size, n, s, (size_t)(p + 1 - s));
			n += (size_t)(p + 1 - s);
			continue;
		}
		p++;
		if (*p == '%') {
			qprof__fmt_put(buf, size, n++, "%", 1);
			continue;
		}
		/* the length modifier: 1 hh, 2 h, 3 l, 4 ll, 5 z, 6 j, 7 t */
		if (p[0] == 'h' && p[1] == 'h')
			len = 1;
		else if (p[0] == 'h')
			len = 2;
		else if (p[0] == 'l' && p[1] == 'l')
			len = 4;
		else if (p[0] == 'l')
			len = 3;
		else if (p[0] == 'z')
			len = 5;
		else if (p[0] == 'j')
			len = 6;
		else if (p[0] == 't')
			len = 7;
		p += len == 1 || len == 4 ? 2 : len ? 1 : 0;
		conv = *p;
		if (conv == 'd' || conv == 'i') {
			long long v = len == 3 ? va_arg(ap, long) : len == 4 ? va_arg(ap, long long)
				    : len == 5 ? (long long)va_arg(ap, ptrdiff_t) : len == 6 ? (long long)va_arg(ap, intmax_t)
				    : len == 7 ? (long long)va_arg(ap, ptrdiff_t) : (long long)va_arg(ap, int);

			if (len == 1)
				v = (signed char)v;
			else if (len == 2)
				v = (short)v;
			neg = v < 0;
			u = neg ? 0ull - (unsigned long long)v : (unsigned long long)v;
		} else if (conv == 'u' || conv == 'x' || conv == 'X') {
			u = len == 3 ? va_arg(ap, unsigned long) : len == 4 ? va_arg(ap, unsigned long long)
			  : len == 5 ? (unsigned long long)va_arg(ap, size_t) : len == 6 ? (unsigned long long)va_arg(ap, uintmax_t)
			  : len == 7 ? (unsigned long long)va_arg(ap, size_t) : (unsigned long long)va_arg(ap, unsigned int);
			if (len == 1)
				u = (unsigned char)u;
			else if (len == 2)
				u = (unsigned short)u;
		} else if (conv == 'c' && !len) {
			char c = (char)va_arg(ap, int);

			qprof__fmt_put(buf, size, n++, &c, 1);
			continue;
		} else if (conv == 's' && !len) {
			size_t l;

			s = va_arg(ap, const char *);
			if (!s)
				goto whole;
			l = strlen(s);
			qprof__fmt_put(buf, size, n, s, l);
			n += l;
			continue;
		} else {
			goto whole; /* flags, width, precision, other conversions */
		}
		if (conv == 'x' || conv == 'X') {
			const char *dig = conv == 'x' ? "0123456789abcdef" : "0123456789ABCDEF";

			do
				*--d = dig[u & 15];
			while (u >>= 4);
		} else {
			while (u >= 100) {
				unsigned int r = (unsigned int)(u % 100) * 2;

				u /= 100;
				*--d = two[r + 1];
				*--d = two[r];
			}
			if (u >= 10) {
				*--d = two[u * 2 + 1];
				*--d = two[u * 2];
			} else {
				*--d = (char)('0' + u);
			}
		}
		if (neg)
			*--d = '-';
		qprof__fmt_put(buf, size, n, d, (size_t)(tmp + sizeof(tmp) - d));
		n += (size_t)(tmp + sizeof(tmp) - d);
	}
	if (size)
		buf[n < size ? n : size - 1] = '\0';
	va_end(ap);
	va_end(again);
	return n > 0x7fffffff ? -1 : (int)n;
whole:
	va_end(ap);
	ret = vsnprintf(buf, size, fmt, again);
	va_end(again);
	return ret;
}

#endif /* QPROF_LOG_FMT_H */

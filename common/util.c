/* util.c - checked number parsing, clocks and human-readable formatting shared
 * by qprofd and qprof-cli. Every number that comes from outside (command line,
 * HTTP query, /proc) goes through qp_parse_*, which accept exactly one decimal
 * integer filling the whole string: no leading blanks, no trailing junk, no
 * sign on unsigned values, no silent wrap-around. The formatters keep three
 * significant digits so that columns in `qprof-cli top` stay narrow and
 * comparable. */
#include "util.h"

#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* strtoull would accept leading blanks and a '-' (which it negates modulo
 * 2^64), so the first character is checked here before it gets a chance. */
static int parse_magnitude(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !is_digit(*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (errno)
		return -EINVAL;
	*out = v;
	return 0;
}

int qp_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int err;

	err = parse_magnitude(s, &v);
	if (err)
		return err;
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int qp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	bool neg = false;
	uint64_t mag;
	int64_t v;
	int err;

	if (!s)
		return -EINVAL;
	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	err = parse_magnitude(s, &mag);
	if (err)
		return err;
	if (neg) {
		/* |INT64_MIN| is one more than INT64_MAX. */
		if (mag > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return -ERANGE;
		v = (int64_t)mag;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t qp_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t qp_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void qp_cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

static __thread uint64_t lock_waited_ns;

void qp_lock(pthread_mutex_t *m)
{
	uint64_t t0;

	if (!pthread_mutex_trylock(m))
		return;
	t0 = qp_now_ns();
	pthread_mutex_lock(m);
	lock_waited_ns += qp_now_ns() - t0;
}

uint64_t qp_lock_waited_ns(void)
{
	return lock_waited_ns;
}

/* Print V (already scaled, >= 0) with three significant digits. The decision
 * is taken on the rounded value so that 9.996 gives "10.0", not "10.00".
 * Returns false when V rounds to 1000 or more, i.e. the caller should move
 * to the next unit. */
static bool fmt_sig3(char *buf, size_t len, double v, const char *unit, bool last)
{
	int prec;

	if (v < 9.995)
		prec = 2;
	else if (v < 99.95)
		prec = 1;
	else if (v < 999.5 || last)
		prec = 0;
	else
		return false;
	snprintf(buf, len, "%.*f%s", prec, v, unit);
	return true;
}

char *qp_fmt_duration(char *buf, size_t len, double ns, bool has_value)
{
	static const struct {
		double div;
		const char *unit;
	} units[] = { { 1e3, " us" }, { 1e6, " ms" }, { 1e9, " s" } };
	const char *sign = "";
	char tmp[64];
	size_t i;

	if (!buf || !len)
		return buf;
	if (!has_value || isnan(ns)) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (ns < 0) {
		sign = "-";
		ns = -ns;
	}
	if (isinf(ns)) {
		snprintf(buf, len, "%sinf", sign);
		return buf;
	}
	/* Whole nanoseconds below one microsecond: "812 ns". */
	if (ns < 999.5) {
		snprintf(buf, len, "%s%.0f ns", sign, ns);
		return buf;
	}
	for (i = 0; i < QP_ARRAY_SIZE(units); i++) {
		if (fmt_sig3(tmp, sizeof(tmp), ns / units[i].div, units[i].unit,
			     i + 1 == QP_ARRAY_SIZE(units)))
			break;
	}
	snprintf(buf, len, "%s%s", sign, tmp);
	return buf;
}

char *qp_fmt_count(char *buf, size_t len, uint64_t v)
{
	static const struct {
		double div;
		const char *unit;
	} units[] = { { 1e3, "k" }, { 1e6, "M" }, { 1e9, "G" } };
	size_t i;

	if (!buf || !len)
		return buf;
	if (v <= 9999) {
		snprintf(buf, len, "%" PRIu64, v);
		return buf;
	}
	for (i = 0; i < QP_ARRAY_SIZE(units); i++) {
		if (fmt_sig3(buf, len, (double)v / units[i].div, units[i].unit,
			     i + 1 == QP_ARRAY_SIZE(units)))
			break;
	}
	return buf;
}

int qp_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *old, *nv;

	if (need <= *cap)
		return 0;
	if (!elem || need > SIZE_MAX / elem)
		return -ENOMEM;
	ncap = *cap ? *cap : 16;
	while (ncap < need && ncap <= SIZE_MAX / 2)
		ncap *= 2;
	if (ncap < need || ncap > SIZE_MAX / elem)
		ncap = need;	/* doubling would overflow: exactly what is asked */
	/* the pointer copied, not read through a void **: P may be an int ** */
	memcpy(&old, p, sizeof(old));
	nv = realloc(old, ncap * elem);
	if (!nv)
		return -ENOMEM;
	memcpy(p, &nv, sizeof(nv));
	*cap = ncap;
	return 0;
}

int qp_read_file(const char *path, size_t max, char **buf, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b, *nb;
	ssize_t r;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	b = malloc(cap);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (cap - n < 2) {
			if (cap >= max) {
				err = -EFBIG;
				goto fail;
			}
			nb = realloc(b, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
fail:
	close(fd);
	free(b);
	return err;
}

bool qp_addr_is_kernel(unsigned long long addr)
{
	return addr >= 0xffff800000000000ull;
}

int qp_raise_fd_limit(unsigned long want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	if (rl.rlim_cur >= want)
		return 0;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

/* test_instrument.c - the tutorial API (instrument.h) in C.
 *
 * Built twice by tests/unit_instrument.cmake: with -DENABLE_INSTRUMENT (the
 * markers are qprof probes) and without (they are nothing). Both builds must
 * compute the same results; the enabled one also checks its own site
 * descriptors. test_instrument_notes.cmake then counts the .note.stapsdt
 * entries of both binaries, so the probe sites below are laid out to give
 * exact counts: every marked function is noinline, has a single way out and no
 * marker inside a loop.
 *
 * Expected probes (enabled): scope_enter 3, scope_exit 3, value 3, log 2.
 */
#include <qprof/instrument.h>

#include "../testlib.h"

static int bumps;

static __attribute__((noinline, unused)) double bump(void)
{
	bumps++;
	return 1.0;
}

/* The 20-period moving average of the tutorial's strategy. */
static __attribute__((noinline)) double calc_ma(const double *prices, int n, int period)
{
	INSTRUMENT_FUNC();
	double s = 0.0;
	{
		INSTRUMENT_SCOPE(sum_loop);
		for (int i = n - period; i < n; i++)
			s += prices[i];
	}
	INSTRUMENT_VALUE(s);
	return s / period;
}

static __attribute__((noinline)) int decide(double dev, double threshold)
{
	INSTRUMENT_FUNCTION();
	int sig = 0;
	if (dev > threshold)
		sig = -1;
	else if (dev < -threshold)
		sig = 1;
	INSTRUMENT_LOG("deviation=%f signal=%d", dev, sig);
	INSTRUMENT_LOG("decided");
	INSTRUMENT_VALUE(dev);
	return sig;
}

/* The argument of INSTRUMENT_VALUE is evaluated only while a tracer listens:
 * never here. */
static __attribute__((noinline)) void side_effect(void)
{
	INSTRUMENT_VALUE(bump());
}

#if defined(ENABLE_INSTRUMENT) && !defined(QPROF_DISABLE)
/* The linker delimits the section "qprof_sites" with __start_/__stop_. */
extern const struct qprof_site __start_qprof_sites[], __stop_qprof_sites[];

static const struct qprof_site *find_site(const char *name, int kind)
{
	for (const struct qprof_site *s = __start_qprof_sites; s < __stop_qprof_sites; s++)
		if (s->kind == kind && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

static void check_sites(void)
{
	CHECK_INT(__stop_qprof_sites - __start_qprof_sites, 8);
	for (const struct qprof_site *s = __start_qprof_sites; s < __stop_qprof_sites; s++) {
		CHECK_INT(s->magic, QPROF_SITE_MAGIC);
		CHECK_INT(s->version, QPROF_SITE_VERSION);
		CHECK(strstr(s->file, "test_instrument.c") != NULL);
	}
	const struct qprof_site *s;
	CHECK((s = find_site("calc_ma", QPROF_KIND_FUNC)) != NULL);
	if (s)
		CHECK_STR(s->function, "calc_ma");
	CHECK((s = find_site("sum_loop", QPROF_KIND_SCOPE)) != NULL);
	if (s)
		CHECK_STR(s->function, "calc_ma");
	CHECK(find_site("decide", QPROF_KIND_FUNC) != NULL);
	CHECK(find_site("s", QPROF_KIND_VALUE) != NULL);
	CHECK(find_site("dev", QPROF_KIND_VALUE) != NULL);
	CHECK(find_site("bump()", QPROF_KIND_VALUE) != NULL);
	int logs = 0;
	for (s = __start_qprof_sites; s < __stop_qprof_sites; s++)
		logs += s->kind == QPROF_KIND_LOG;
	CHECK_INT(logs, 2);
	/* Nobody is attached: the semaphores are down. */
	CHECK_INT(qprof_value_semaphore, 0);
	CHECK_INT(qprof_log_semaphore, 0);
}
#endif

int main(void)
{
	double prices[40];
	for (int i = 0; i < 40; i++)
		prices[i] = 100.0 + (i % 7) - 3.0; /* mean of any 20 around 100 */
	prices[39] = 104.0;

	double ma = calc_ma(prices, 40, 20);
	double expect = 0.0;
	for (int i = 20; i < 40; i++)
		expect += prices[i];
	expect /= 20;
	CHECK_REL(ma, expect, 1e-12);

	CHECK_INT(decide((104.0 - ma) / ma, 0.02), -1);
	CHECK_INT(decide(-0.03, 0.02), 1);
	CHECK_INT(decide(0.01, 0.02), 0);

	side_effect();
	CHECK_INT(bumps, 0);

#if defined(ENABLE_INSTRUMENT) && !defined(QPROF_DISABLE)
	check_sites();
	return test_done("test_instrument (C, ENABLE_INSTRUMENT)");
#else
	return test_done("test_instrument (C, disabled)");
#endif
}

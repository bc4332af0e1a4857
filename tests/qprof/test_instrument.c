/* test_instrument.c - the tutorial API (instrument.h) in C.
 *
 * Built twice by tests/unit_instrument.cmake: with -DENABLE_INSTRUMENT (the
 * markers are qprof probes) and without (they are nothing). Both builds must
 * compute the same results, and both read their own executable through
 * elf_probes (what qprofd does): the enabled one must list exactly the sites
 * below (names, kinds, lines, functions), the disabled one none.
 * test_instrument_notes.cmake then counts the .note.stapsdt
 * entries of both binaries, so the probe sites below are laid out to give
 * exact counts: every marked function is noinline, has a single way out and no
 * marker inside a loop.
 *
 * Expected probes (enabled): scope_enter 3, scope_exit 3, value 3, log 2.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <qprof/instrument.h>
/* The descriptor layout and kinds, in both builds (no marker: instrument.h
 * without ENABLE_INSTRUMENT does not include qprof.h). */
#ifndef ENABLE_INSTRUMENT
#define QPROF_DISABLE
#endif
#include <qprof/qprof.h>

#include <link.h>
#include <stdint.h>
#include <stdlib.h>

#include "testlib.h"
#include "common/elf_probes.h"
#include "common/util.h"

static int bumps;

static __attribute__((noinline, unused)) double bump(void)
{
	bumps++;
	return 1.0;
}

/* The 20-period moving average of the tutorial's strategy. */
static __attribute__((noinline)) double calc_ma(const double *prices, int n, int period)
{
	INSTRUMENT_FUNC(); /* line 43 */
	double s = 0.0;
	{
		INSTRUMENT_SCOPE(sum_loop); /* line 46 */
		for (int i = n - period; i < n; i++)
			s += prices[i];
	}
	INSTRUMENT_VALUE(s); /* line 50 */
	return s / period;
}

static __attribute__((noinline)) int decide(double dev, double threshold)
{
	INSTRUMENT_FUNCTION(); /* line 56 */
	int sig = 0;
	if (dev > threshold)
		sig = -1;
	else if (dev < -threshold)
		sig = 1;
	INSTRUMENT_LOG("deviation=%f signal=%d", dev, sig); /* line 62 */
	INSTRUMENT_LOG("decided"); /* line 63 */
	INSTRUMENT_VALUE(dev); /* line 64 */
	return sig;
}

/* The argument of INSTRUMENT_VALUE is evaluated only while a tracer listens:
 * never here. */
static __attribute__((noinline)) void side_effect(void)
{
	INSTRUMENT_VALUE(bump()); /* line 72 */
}

#if defined(ENABLE_INSTRUMENT) && !defined(QPROF_DISABLE)
#define INSTRUMENTED 1
#else
#define INSTRUMENTED 0
#endif

struct want_site {
	const char *name;
	int kind;
	unsigned line;
	const char *function;
};

/* The sites above, as qprofd reads them from this executable. Every marker
 * line is listed; do not move them. */
static const struct want_site want_sites[] = {
	{ "calc_ma", QPROF_KIND_FUNC, 43, "calc_ma" },
	{ "sum_loop", QPROF_KIND_SCOPE, 46, "calc_ma" },
	{ "s", QPROF_KIND_VALUE, 50, "calc_ma" },
	{ "decide", QPROF_KIND_FUNC, 56, "decide" },
	{ "log", QPROF_KIND_LOG, 62, "decide" },
	{ "log", QPROF_KIND_LOG, 63, "decide" },
	{ "dev", QPROF_KIND_VALUE, 64, "decide" },
	{ "bump()", QPROF_KIND_VALUE, 72, "side_effect" },
};

static int main_bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
	return 1; /* the first object is the executable */
}

static size_t count_probe(const struct qp_elf_probes *p, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nnotes; i++)
		n += !strcmp(p->notes[i].provider, "qprof") && !strcmp(p->notes[i].name, name);
	return n;
}

/* Reads this very executable as qprofd would (/proc/self/exe with
 * elf_probes): the exact site list, and each descriptor found through
 * .qprof_refs is the live one at the same address once the load bias is
 * added. Disabled: no qprof note and no site at all. */
static void check_sites(void)
{
	struct qp_elf_probes *p = NULL;
	char err[256];
	uintptr_t bias = 0;
	int ret = qp_elf_probes_open("/proc/self/exe", &p, err, sizeof(err));

	if (ret)
		fprintf(stderr, "/proc/self/exe: %s (%d)\n", err, ret);
	CHECK_INT(ret, 0);
	if (ret)
		return;
	CHECK_INT(p->nbad_sites, 0);
	if (!INSTRUMENTED) {
		CHECK_INT(qp_elf_count_notes(p, "qprof"), 0);
		CHECK_INT(p->nsites, 0);
		qp_elf_probes_free(p);
		return;
	}
	CHECK_INT(qp_elf_count_notes(p, "qprof"), 13); /* ring_register and ring_config included */
	CHECK_INT(count_probe(p, "scope_enter"), 3);
	CHECK_INT(count_probe(p, "scope_exit"), 3);
	CHECK_INT(count_probe(p, "value"), 3);
	CHECK_INT(count_probe(p, "log"), 2);
	CHECK_INT(p->nsites, QP_ARRAY_SIZE(want_sites));
	dl_iterate_phdr(main_bias_cb, &bias);
	for (size_t i = 0; i < QP_ARRAY_SIZE(want_sites); i++) {
		const struct want_site *w = &want_sites[i];
		size_t hits = 0;

		for (size_t j = 0; j < p->nsites; j++) {
			const struct qp_site_info *s = &p->sites[j];
			const struct qprof_site *live;

			if (strcmp(s->name, w->name) || (int)s->kind != w->kind || s->line != w->line)
				continue;
			hits++;
			CHECK_STR(s->function, w->function);
			CHECK(strstr(s->file, "qprof/test_instrument.c") != NULL);
			live = (const struct qprof_site *)(bias + (uintptr_t)s->vaddr);
			CHECK_INT(live->magic, QPROF_SITE_MAGIC);
			CHECK_INT(live->version, QPROF_SITE_VERSION);
			CHECK_INT(live->kind, w->kind);
			CHECK_INT(live->line, w->line);
			CHECK_STR(live->name, w->name);
			CHECK_STR(live->function, w->function);
			CHECK_STR(live->file, s->file);
		}
		if (hits != 1)
			fprintf(stderr, "site %s line %u: %zu hits\n", w->name, w->line, hits);
		CHECK_INT(hits, 1);
	}
	qp_elf_probes_free(p);
#if INSTRUMENTED
	/* Nobody is attached: the semaphores are down. */
	CHECK_INT(qprof_value_semaphore, 0);
	CHECK_INT(qprof_log_semaphore, 0);
#endif
}

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

	check_sites();
#if INSTRUMENTED
	return test_done("test_instrument (C, ENABLE_INSTRUMENT)");
#else
	return test_done("test_instrument (C, disabled)");
#endif
}

// test_instrument_cxx.cpp - the tutorial API (instrument.h) in C++11: its
// mean-reversion strategy class, written as the tutorial writes it (member
// function, INSTRUMENT_SCOPE on identifiers, INSTRUMENT_VALUE on members).
//
// Built with and without -DENABLE_INSTRUMENT. Each build reads its own
// executable through elf_probes (as qprofd does): the enabled one must list
// exactly the sites below (names, kinds, lines), the disabled one none. The
// notes are counted by test_instrument_notes.cmake. For exact counts the marked function has one
// way out and its scopes hold nothing that may throw (a throwing call would
// add a landing pad, i.e. a second scope_exit site for the same scope).
//
// Expected probes (enabled): scope_enter 3, scope_exit 3, value 3, log 4.
#include <qprof/instrument.h>
// The descriptor layout and kinds, in both builds (no marker).
#ifndef ENABLE_INSTRUMENT
#define QPROF_DISABLE
#endif
#include <qprof/qprof.h>

#include <link.h>
#include <vector>

#include "testlib.h"
extern "C" {
#include "common/elf_probes.h"
}

namespace {

class SimpleMeanReversionStrategy {
public:
	SimpleMeanReversionStrategy(size_t period, double threshold)
		: m_ma_period(period), m_threshold(threshold)
	{
	}

	__attribute__((noinline)) double generateSignal(const std::vector<double> &prices)
	{
		INSTRUMENT_FUNCTION(); // line 39
		double signal = 0.0;
		if (prices.size() < m_ma_period) {
			INSTRUMENT_LOG("Insufficient data. Prices size=%zu, MA period=%zu", // line 42
				       prices.size(), m_ma_period);
		} else {
			double current_price = prices.back();
			INSTRUMENT_VALUE(current_price); // line 46
			{
				INSTRUMENT_SCOPE(CalculateMA); // line 48
				double sum = 0.0;
				for (size_t i = prices.size() - m_ma_period; i < prices.size(); ++i)
					sum += prices[i];
				m_last_ma = sum / static_cast<double>(m_ma_period);
			}
			INSTRUMENT_VALUE(m_last_ma); // line 54
			double deviation = (current_price - m_last_ma) / m_last_ma;
			INSTRUMENT_VALUE(deviation); // line 56
			{
				INSTRUMENT_SCOPE(DecisionLogic); // line 58
				if (deviation > m_threshold) {
					signal = -1.0;
					INSTRUMENT_LOG("Generate SELL signal, deviation=%f", deviation); // line 61
				} else if (deviation < -m_threshold) {
					signal = 1.0;
					INSTRUMENT_LOG("Generate BUY signal, deviation=%f", deviation); // line 64
				} else {
					INSTRUMENT_LOG("No signal, deviation=%f within threshold", deviation); // line 66
				}
			}
		}
		return signal;
	}

	double last_ma() const { return m_last_ma; }

private:
	size_t m_ma_period;
	double m_threshold;
	double m_last_ma = 0.0;
};

} // namespace

#if defined(ENABLE_INSTRUMENT) && !defined(QPROF_DISABLE)
#define INSTRUMENTED 1
#else
#define INSTRUMENTED 0
#endif

namespace {

struct WantSite {
	const char *name;
	int kind;
	unsigned line;
};

// The sites above, all in generateSignal (__func__ is the unqualified name).
const WantSite want_sites[] = {
	{ "generateSignal", QPROF_KIND_FUNC, 39 },
	{ "log", QPROF_KIND_LOG, 42 },
	{ "current_price", QPROF_KIND_VALUE, 46 },
	{ "CalculateMA", QPROF_KIND_SCOPE, 48 },
	{ "m_last_ma", QPROF_KIND_VALUE, 54 },
	{ "deviation", QPROF_KIND_VALUE, 56 },
	{ "DecisionLogic", QPROF_KIND_SCOPE, 58 },
	{ "log", QPROF_KIND_LOG, 61 },
	{ "log", QPROF_KIND_LOG, 64 },
	{ "log", QPROF_KIND_LOG, 66 },
};
const size_t n_want = sizeof(want_sites) / sizeof(want_sites[0]);

int main_bias_cb(struct dl_phdr_info *info, size_t, void *data)
{
	*static_cast<uintptr_t *>(data) = static_cast<uintptr_t>(info->dlpi_addr);
	return 1; // the first object is the executable
}

size_t count_probe(const qp_elf_probes *p, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nnotes; i++)
		n += !strcmp(p->notes[i].provider, "qprof") && !strcmp(p->notes[i].name, name);
	return n;
}

// /proc/self/exe through elf_probes: the exact site list, and each descriptor
// found through .qprof_refs is the live one once the load bias is added.
void check_sites()
{
	qp_elf_probes *p = nullptr;
	char err[256];
	uintptr_t bias = 0;
	int ret = qp_elf_probes_open("/proc/self/exe", &p, err, sizeof(err));

	if (ret)
		std::fprintf(stderr, "/proc/self/exe: %s (%d)\n", err, ret);
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
	CHECK_INT(qp_elf_count_notes(p, "qprof"), 15); /* ring_register and ring_config included */
	CHECK_INT(count_probe(p, "scope_enter"), 3);
	/* one exit per scope: the ring's cold calls are no calls to the
	 * compiler (ring.h), so there is no exception path that would copy a
	 * destructor's exit onto a landing pad */
	CHECK_INT(count_probe(p, "scope_exit"), 3);
	CHECK_INT(count_probe(p, "value"), 3);
	CHECK_INT(count_probe(p, "log"), 4);
	CHECK_INT(p->nsites, n_want);
	dl_iterate_phdr(main_bias_cb, &bias);
	for (size_t i = 0; i < n_want; i++) {
		const WantSite &w = want_sites[i];
		size_t hits = 0;

		for (size_t j = 0; j < p->nsites; j++) {
			const qp_site_info &s = p->sites[j];
			if (strcmp(s.name, w.name) || static_cast<int>(s.kind) != w.kind || s.line != w.line)
				continue;
			hits++;
			CHECK_STR(s.function, "generateSignal");
			CHECK(strstr(s.file, "qprof/test_instrument_cxx.cpp") != nullptr);
			const qprof_site *live = reinterpret_cast<const qprof_site *>(bias + s.vaddr);
			CHECK_INT(live->magic, QPROF_SITE_MAGIC);
			CHECK_INT(live->version, QPROF_SITE_VERSION);
			CHECK_INT(live->kind, w.kind);
			CHECK_INT(live->line, w.line);
			CHECK_STR(live->name, w.name);
			CHECK_STR(live->function, "generateSignal");
			CHECK_STR(live->file, s.file);
		}
		if (hits != 1)
			std::fprintf(stderr, "site %s line %u: %zu hits\n", w.name, w.line, hits);
		CHECK_INT(hits, 1);
	}
	qp_elf_probes_free(p);
}

} // namespace

int main()
{
	SimpleMeanReversionStrategy strategy(20, 0.02);
	std::vector<double> prices;

	for (int i = 0; i < 19; i++)
		prices.push_back(100.0);
	CHECK(strategy.generateSignal(prices) == 0.0); // not enough data
	prices.push_back(100.0);
	CHECK(strategy.generateSignal(prices) == 0.0); // on the average
	CHECK_REL(strategy.last_ma(), 100.0, 1e-12);
	prices.push_back(110.0);
	CHECK(strategy.generateSignal(prices) == -1.0); // far above: sell
	CHECK_REL(strategy.last_ma(), 100.5, 1e-12);
	prices.push_back(80.0);
	CHECK(strategy.generateSignal(prices) == 1.0); // far below: buy

	check_sites();
#if INSTRUMENTED
	CHECK_INT(qprof_value_semaphore, 0);
	CHECK_INT(qprof_log_semaphore, 0);
	return test_done("test_instrument_cxx (C++, ENABLE_INSTRUMENT)");
#else
	return test_done("test_instrument_cxx (C++, disabled)");
#endif
}

// test_instrument_cxx.cpp - the tutorial API (instrument.h) in C++11: its
// mean-reversion strategy class, written as the tutorial writes it (member
// function, INSTRUMENT_SCOPE on identifiers, INSTRUMENT_VALUE on members).
//
// Built with and without -DENABLE_INSTRUMENT; the notes are counted by
// test_instrument_notes.cmake. For exact counts the marked function has one
// way out and its scopes hold nothing that may throw (a throwing call would
// add a landing pad, i.e. a second scope_exit site for the same scope).
//
// Expected probes (enabled): scope_enter 3, scope_exit 3, value 3, log 4.
#include <qprof/instrument.h>

#include <vector>

#include "../testlib.h"

namespace {

class SimpleMeanReversionStrategy {
public:
	SimpleMeanReversionStrategy(size_t period, double threshold)
		: m_ma_period(period), m_threshold(threshold)
	{
	}

	__attribute__((noinline)) double generateSignal(const std::vector<double> &prices)
	{
		INSTRUMENT_FUNCTION();
		double signal = 0.0;
		if (prices.size() < m_ma_period) {
			INSTRUMENT_LOG("Insufficient data. Prices size=%zu, MA period=%zu",
				       prices.size(), m_ma_period);
		} else {
			double current_price = prices.back();
			INSTRUMENT_VALUE(current_price);
			{
				INSTRUMENT_SCOPE(CalculateMA);
				double sum = 0.0;
				for (size_t i = prices.size() - m_ma_period; i < prices.size(); ++i)
					sum += prices[i];
				m_last_ma = sum / static_cast<double>(m_ma_period);
			}
			INSTRUMENT_VALUE(m_last_ma);
			double deviation = (current_price - m_last_ma) / m_last_ma;
			INSTRUMENT_VALUE(deviation);
			{
				INSTRUMENT_SCOPE(DecisionLogic);
				if (deviation > m_threshold) {
					signal = -1.0;
					INSTRUMENT_LOG("Generate SELL signal, deviation=%f", deviation);
				} else if (deviation < -m_threshold) {
					signal = 1.0;
					INSTRUMENT_LOG("Generate BUY signal, deviation=%f", deviation);
				} else {
					INSTRUMENT_LOG("No signal, deviation=%f within threshold", deviation);
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
extern "C" const struct qprof_site __start_qprof_sites[], __stop_qprof_sites[];

static int count_sites(const char *name, int kind)
{
	int n = 0;
	for (const struct qprof_site *s = __start_qprof_sites; s < __stop_qprof_sites; s++)
		if (s->kind == kind && (!name || strcmp(s->name, name) == 0))
			n++;
	return n;
}
#endif

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

#if defined(ENABLE_INSTRUMENT) && !defined(QPROF_DISABLE)
	CHECK_INT(__stop_qprof_sites - __start_qprof_sites, 10);
	CHECK_INT(count_sites("generateSignal", QPROF_KIND_FUNC), 1);
	CHECK_INT(count_sites("CalculateMA", QPROF_KIND_SCOPE), 1);
	CHECK_INT(count_sites("DecisionLogic", QPROF_KIND_SCOPE), 1);
	CHECK_INT(count_sites("current_price", QPROF_KIND_VALUE), 1);
	CHECK_INT(count_sites("m_last_ma", QPROF_KIND_VALUE), 1);
	CHECK_INT(count_sites("deviation", QPROF_KIND_VALUE), 1);
	CHECK_INT(count_sites(NULL, QPROF_KIND_LOG), 4);
	CHECK_INT(qprof_value_semaphore, 0);
	CHECK_INT(qprof_log_semaphore, 0);
	return test_done("test_instrument_cxx (C++, ENABLE_INSTRUMENT)");
#else
	return test_done("test_instrument_cxx (C++, disabled)");
#endif
}

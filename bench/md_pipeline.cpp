// md_pipeline.cpp - a market-data program of the shape the ring collector
// is for, the workload of bench/md_pipeline.sh: three threads, feed ->
// strategy -> gateway. The feed makes price updates for 64 symbols and
// hands them over a lock-free single-producer queue; the strategy keeps a
// std::map order book per symbol, computes a signal and sends one order a
// tick over a mutex-guarded queue; the gateway encodes and "sends" it. Per
// tick exactly 9 scopes, one QPROF_VALUE (the mid price) and one QPROF_LOG
// (the order), so that every figure qprofd gives can be checked against
// the program's own counts.
//
//   md_pipeline TICKS RATE [--start-file PATH] [--end-file PATH] [--self-ring]
//     RATE ticks/s, paced in 1 ms steps (0: flat out)
//     --self-ring: the program raises its own ring semaphores (no qprofd):
//     the markers write their rings, nobody reads them (the writers' cost
//     alone, without a drain thread on the CPUs)
// Prints "ready PID" (with --start-file, then waits for it), runs, prints
//   md_pipeline ticks T scopes S values V logs L cpu_ns C wall_ns W idle_ns I idles N
// (C: the process's CPU time, user and system, all threads, during the
// run; I: the part of it spent in the N waits of a thread with nothing to
// do, each a short sleep: what a slower neighbour or a busy CPU adds, not
// what the work costs), then waits for --end-file, if given, before exiting.
//
// Built with the markers (md_pipeline), with QPROF_DISABLE (md_pipeline_off:
// no marker at all, the baseline), with MD_TIMER (md_pipeline_timer: each
// scope timed in process instead, two clock_gettime calls and a store into a
// per-scope table, the tutorial's timer), and with the markers but without
// the log (MD_NO_LOG: md_pipeline_nolog) or without the log and the value
// (MD_NO_LOG MD_NO_VALUE: md_pipeline_scopes), which split a tick's cost by
// marker kind.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <ctime>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef MD_TIMER
#define QPROF_DISABLE 1
#endif
#include <qprof/qprof.h>

namespace {

uint64_t now_ns(clockid_t c = CLOCK_MONOTONIC)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#ifdef MD_TIMER
// the in-process timer: per scope name, a count and a sum of durations
struct Stat {
	std::atomic<uint64_t> n{ 0 }, sum{ 0 };
};
struct Timer {
	Stat &s;
	uint64_t t0;
	explicit Timer(Stat &st) : s(st), t0(now_ns()) {}
	~Timer()
	{
		s.sum.fetch_add(now_ns() - t0, std::memory_order_relaxed);
		s.n.fetch_add(1, std::memory_order_relaxed);
	}
};
#define MD_CAT2(a, b) a##b
#define MD_CAT(a, b) MD_CAT2(a, b)
#define SCOPE(name)                                                                                \
	static Stat MD_CAT(md_stat_, __LINE__);                                                    \
	Timer MD_CAT(md_timer_, __LINE__)(MD_CAT(md_stat_, __LINE__))
#else
#define SCOPE(name) QPROF_SCOPE(name)
#endif
#ifdef MD_NO_LOG
#define LOG(...) ((void)0)
#else
#define LOG(...) QPROF_LOG(__VA_ARGS__)
#endif
#ifdef MD_NO_VALUE
#define VALUE(name, v) ((void)(v))
#else
#define VALUE(name, v) QPROF_VALUE(name, v)
#endif

struct Tick {
	uint32_t sym;
	int64_t px;	// price in ticks
	int32_t qty;
	uint64_t seq;
};

struct Order {
	uint32_t sym;
	int64_t px;
	int32_t qty;
	uint64_t seq;
};

// single producer, single consumer
template <unsigned N> struct Spsc {
	Tick v[N];
	alignas(64) std::atomic<uint64_t> head{ 0 };
	alignas(64) std::atomic<uint64_t> tail{ 0 };
	bool push(const Tick &t)
	{
		uint64_t h = head.load(std::memory_order_relaxed);

		if (h - tail.load(std::memory_order_acquire) == N)
			return false;
		v[h % N] = t;
		head.store(h + 1, std::memory_order_release);
		return true;
	}
	bool pop(Tick &t)
	{
		uint64_t tl = tail.load(std::memory_order_relaxed);

		if (tl == head.load(std::memory_order_acquire))
			return false;
		t = v[tl % N];
		tail.store(tl + 1, std::memory_order_release);
		return true;
	}
};

Spsc<4096> md_q;
std::mutex ord_mu;
std::deque<Order> ord_q;
std::atomic<bool> feed_done{ false }, strat_done{ false };
uint64_t n_ticks, rate;
std::atomic<uint64_t> scopes{ 0 }, values{ 0 }, logs{ 0 }, idle_ns{ 0 }, idles{ 0 };
volatile uint64_t sink;

// this thread's CPU time (a system call: only around the idle waits)
uint64_t thread_cpu_ns()
{
	return now_ns(CLOCK_THREAD_CPUTIME_ID);
}

// nothing to do: sleep a little (a spin would count as the program's
// CPU), and count what the wait cost this thread
void idle()
{
	struct timespec ts = { 0, 20000 };
	uint64_t c0 = thread_cpu_ns();

	nanosleep(&ts, nullptr);
	idle_ns.fetch_add(thread_cpu_ns() - c0, std::memory_order_relaxed);
	idles.fetch_add(1, std::memory_order_relaxed);
}

uint64_t encode(const void *p, size_t n)
{
	SCOPE("encode");
	const unsigned char *b = static_cast<const unsigned char *>(p);
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

void feed()
{
	uint64_t seq = 0, x = 88172645463325252ull, t0 = now_ns(), step = 0;
	uint64_t per_ms = rate ? (rate + 999) / 1000 : n_ticks;

	while (seq < n_ticks) {
		if (rate) {
			uint64_t at = t0 + step++ * 1000000ull;
			struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
		}
		for (uint64_t i = 0; i < per_ms && seq < n_ticks; i++) {
			SCOPE("feed_tick");
			Tick t;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			t.sym = (uint32_t)(x % 64);
			t.px = 10000 + (int64_t)(x >> 40) % 200 - 100;
			t.qty = 1 + (int32_t)((x >> 20) % 100);
			t.seq = seq++;
			sink = encode(&t, sizeof(t));
			while (!md_q.push(t))
				idle();
			scopes.fetch_add(2, std::memory_order_relaxed);
		}
	}
	feed_done.store(true, std::memory_order_release);
}

void strategy()
{
	static std::map<int64_t, int64_t> books[64];
	Tick t;

	for (;;) {
		if (!md_q.pop(t)) {
			if (feed_done.load(std::memory_order_acquire) && !md_q.pop(t))
				break;
			if (!md_q.pop(t)) {
				idle();
				continue;
			}
		}
		SCOPE("strategy_tick");
		std::map<int64_t, int64_t> &b = books[t.sym];
		int64_t mid;
		{
			SCOPE("book_update");
			b[t.px] += t.qty;
			if (b.size() > 32)
				b.erase(b.begin());
		}
		{
			SCOPE("signal");
			int64_t lo = b.begin()->first, hi = b.rbegin()->first;

			mid = (lo + hi) / 2;
			VALUE("mid", (double)mid);
		}
		{
			SCOPE("risk");
			Order o = { t.sym, mid, t.qty > 50 ? 50 : t.qty, t.seq };
			std::lock_guard<std::mutex> g(ord_mu);

			ord_q.push_back(o);
		}
		scopes.fetch_add(4, std::memory_order_relaxed);
#ifndef MD_NO_VALUE
		values.fetch_add(1, std::memory_order_relaxed);
#endif
	}
	strat_done.store(true, std::memory_order_release);
}

void gateway()
{
	for (;;) {
		Order o;
		bool got = false;
		{
			std::lock_guard<std::mutex> g(ord_mu);

			if (!ord_q.empty()) {
				o = ord_q.front();
				ord_q.pop_front();
				got = true;
			}
		}
		if (!got) {
			if (strat_done.load(std::memory_order_acquire)) {
				std::lock_guard<std::mutex> g(ord_mu);

				if (ord_q.empty())
					break;
				continue;
			}
			idle();
			continue;
		}
		SCOPE("gateway_order");
		uint64_t h = encode(&o, sizeof(o));
		{
			SCOPE("send");
			sink = h;
			LOG("order %llu sym %u px %lld", (unsigned long long)o.seq, o.sym, (long long)o.px);
		}
		scopes.fetch_add(3, std::memory_order_relaxed);
#ifndef MD_NO_LOG
		logs.fetch_add(1, std::memory_order_relaxed);
#endif
	}
}

void wait_file(const char *p)
{
	struct stat st;

	while (stat(p, &st))
		usleep(10000);
}

uint64_t cpu_ns()
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return ((uint64_t)u.ru_utime.tv_sec + (uint64_t)u.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)u.ru_utime.tv_usec + (uint64_t)u.ru_stime.tv_usec) * 1000ull;
}

} // namespace

int main(int argc, char **argv)
{
	const char *start = nullptr, *end = nullptr;
	bool self_ring = false;
	int i;

	for (i = 3; i < argc; i += 2) {
		if (!strcmp(argv[i], "--self-ring")) {
			self_ring = true;
			i--;
		} else if (i + 1 < argc && !strcmp(argv[i], "--start-file"))
			start = argv[i + 1];
		else if (i + 1 < argc && !strcmp(argv[i], "--end-file"))
			end = argv[i + 1];
		else
			break;
	}
	if (argc < 3 || i != argc || !(n_ticks = strtoull(argv[1], nullptr, 10))) {
		fprintf(stderr, "usage: %s TICKS RATE [--start-file PATH] [--end-file PATH]\n", argv[0]);
		return 2;
	}
	rate = strtoull(argv[2], nullptr, 10);
#ifndef QPROF_DISABLE
	if (self_ring) {	// as qprofd would: rings of its default size, every kind on
		qprof__ring_cfg.records = 262144;
		qprof_ring_semaphore = 1;
		qprof_log_semaphore = 1;
	}
#else
	(void)self_ring;
#endif
	if (start) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		wait_file(start);
	}
	uint64_t c0 = cpu_ns(), w0 = now_ns();
	std::thread g(gateway), s(strategy), f(feed);

	f.join();
	s.join();
	g.join();
	uint64_t c1 = cpu_ns(), w1 = now_ns();

	printf("md_pipeline ticks %llu scopes %llu values %llu logs %llu cpu_ns %llu wall_ns %llu idle_ns %llu "
	       "idles %llu\n",
	       (unsigned long long)n_ticks, (unsigned long long)scopes.load(), (unsigned long long)values.load(),
	       (unsigned long long)logs.load(), (unsigned long long)(c1 - c0), (unsigned long long)(w1 - w0),
	       (unsigned long long)idle_ns.load(), (unsigned long long)idles.load());
	if (end) {
		printf("done\n");
		fflush(stdout);
		wait_file(end);
	}
	return 0;
}

// sort_target.cpp - the C++ case of the unwinding test: three
// instances of a function template whose CPU time splits 1:2:3 inside
// std::sort, with the comparator (a functor template) and most of std::sort
// inlined. Built -O2 -g -fomit-frame-pointer. Same protocol as
// qsort_target.c: pid, SIGUSR1, SIGUSR2, then each caller's CPU time.
#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <unistd.h>
#include <vector>

static volatile sig_atomic_t go, leave;
static void on_usr1(int) { go = 1; }
static void on_usr2(int) { leave = 1; }

volatile std::uint64_t sink;

namespace work {

template <typename T> struct by_low_bits {
	bool operator()(const T &a, const T &b) const { return (a & 0xffffffu) < (b & 0xffffffu); }
};

static std::vector<std::uint64_t> orig;

// the length of the next sort, at random (a fixed seed): half of orig to
// all of it, so that no fixed period of the program can lock onto the
// sampling rate (see qsort_target.c)
static std::uint64_t rng = 0x9e3779b97f4a7c15ull;

static std::uint64_t next_random()
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

template <int K> __attribute__((noinline)) void caller()
{
	std::vector<std::uint64_t> v;

	for (int r = 0; r < K; r++) {
		std::size_t n = orig.size() / 2 + next_random() % (orig.size() / 2 + 1);

		v.assign(orig.begin(), orig.begin() + static_cast<std::ptrdiff_t>(n));
		std::sort(v.begin(), v.end(), by_low_bits<std::uint64_t>());
		sink += v[n / 2] + static_cast<std::uint64_t>(r);
	}
}

} // namespace work

static void (*const CALLERS[3])() = { work::caller<1>, work::caller<2>, work::caller<3> };
static const int ORDERS[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };

static std::uint64_t thread_ns()
{
	timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

int main()
{
	std::uint64_t x = 88172645463325252ull, ns[3] = { 0, 0, 0 }, t;

	for (int i = 0; i < 4096; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		work::orig.push_back(x);
	}
	std::signal(SIGUSR1, on_usr1);
	std::signal(SIGUSR2, on_usr2);
	std::printf("{\"pid\": %d}\n", static_cast<int>(getpid()));
	std::fflush(stdout);
	while (!go)
		usleep(1000);
	while (!leave) {
		// and the three callers in a random order each round
		std::uint64_t order = work::next_random() % 6;

		for (int i = 0; i < 3; i++) {
			int k = ORDERS[order][i];

			t = thread_ns();
			CALLERS[k]();
			ns[k] += thread_ns() - t;
		}
	}
	std::printf("{\"caller_one\": %llu, \"caller_two\": %llu, \"caller_three\": %llu}\n",
		    static_cast<unsigned long long>(ns[0]), static_cast<unsigned long long>(ns[1]),
		    static_cast<unsigned long long>(ns[2]));
	std::fflush(stdout);
	return 0;
}

// sort_target.cpp - the C++ case of the unwinding test: three
// instances of a function template whose CPU time splits 1:2:3 inside
// std::sort, with the comparator (a functor template) and most of std::sort
// inlined. Built -O2 -g -fomit-frame-pointer. Same protocol as
// qsort_target.c: pid, SIGUSR1, SIGUSR2, then each caller's CPU time.
#include <algorithm>
#include <csignal>
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

template <int K> __attribute__((noinline)) void caller()
{
	std::vector<std::uint64_t> v;

	for (int r = 0; r < K; r++) {
		v = orig;
		std::sort(v.begin(), v.end(), by_low_bits<std::uint64_t>());
		sink += v[v.size() / 2] + static_cast<std::uint64_t>(r);
	}
}

} // namespace work

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
		t = thread_ns();
		work::caller<1>();
		ns[0] += thread_ns() - t;
		t = thread_ns();
		work::caller<2>();
		ns[1] += thread_ns() - t;
		t = thread_ns();
		work::caller<3>();
		ns[2] += thread_ns() - t;
	}
	std::printf("{\"caller_one\": %llu, \"caller_two\": %llu, \"caller_three\": %llu}\n",
		    static_cast<unsigned long long>(ns[0]), static_cast<unsigned long long>(ns[1]),
		    static_cast<unsigned long long>(ns[2]));
	std::fflush(stdout);
	return 0;
}

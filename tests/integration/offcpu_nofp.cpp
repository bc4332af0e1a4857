// offcpu_nofp.cpp - off-CPU stacks without frame pointers (built -O2
// -fomit-frame-pointer, no qprof marker: a CPU-only target). Three threads
// that do little but block, each in its own function under its own thread
// function: "sleeper" in sleep_path() (std::this_thread::sleep_for, that is
// glibc's clock_nanosleep), "locker" in lock_path() (a std::mutex that the
// "holder" thread keeps 2 ms at a time: glibc's futex wait), "reader" in
// read_path() (read(2) on a pipe the "writer" thread writes a byte to every
// millisecond). It prints its pid, waits for SIGUSR1, blocks until SIGUSR2,
// then prints each blocking function's wall time inside its calls (the
// truth the off-CPU profile is checked against).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <unistd.h>
#include <vector>

static volatile sig_atomic_t go, leave;
static void on_usr1(int) { go = 1; }
static void on_usr2(int) { leave = 1; }

static std::atomic<bool> stop{ false };
static std::mutex m;
static int pipefd[2];
static std::vector<int> counts(3);

static std::uint64_t mono_ns()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

__attribute__((noinline)) void sleep_path()
{
	std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

__attribute__((noinline)) void lock_path()
{
	std::lock_guard<std::mutex> g(m);
	counts[1]++;
}

__attribute__((noinline)) ssize_t read_path(int fd)
{
	char c;

	return read(fd, &c, 1);
}

// each thread function times its blocking calls; the sum is its truth
__attribute__((noinline)) void sleeper_main(std::uint64_t *ns)
{
	pthread_setname_np(pthread_self(), "sleeper");
	while (!stop.load()) {
		std::uint64_t t = mono_ns();

		sleep_path();
		*ns += mono_ns() - t;
	}
}

__attribute__((noinline)) void locker_main(std::uint64_t *ns)
{
	pthread_setname_np(pthread_self(), "locker");
	while (!stop.load()) {
		std::uint64_t t = mono_ns();

		lock_path();
		*ns += mono_ns() - t;
	}
}

__attribute__((noinline)) void reader_main(std::uint64_t *ns)
{
	pthread_setname_np(pthread_self(), "reader");
	while (!stop.load()) {
		std::uint64_t t = mono_ns();

		if (read_path(pipefd[0]) <= 0)
			break;
		*ns += mono_ns() - t;
	}
}

static void holder_main()
{
	pthread_setname_np(pthread_self(), "holder");
	while (!stop.load()) {
		m.lock();
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
		m.unlock();
	}
}

static void writer_main()
{
	pthread_setname_np(pthread_self(), "writer");
	while (!stop.load()) {
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		if (write(pipefd[1], "x", 1) != 1)
			break;
	}
	close(pipefd[1]);
}

int main()
{
	std::uint64_t ns[3] = { 0, 0, 0 };

	if (pipe(pipefd))
		return 1;
	std::signal(SIGUSR1, on_usr1);
	std::signal(SIGUSR2, on_usr2);
	std::printf("{\"pid\": %d}\n", int(getpid()));
	std::fflush(stdout);
	while (!go)
		pause();
	std::thread holder(holder_main), writer(writer_main);
	std::thread a(sleeper_main, &ns[0]), b(locker_main, &ns[1]), c(reader_main, &ns[2]);
	while (!leave)
		pause();
	stop = true;
	holder.join();
	a.join();
	b.join();
	writer.join();
	c.join();
	std::printf("{\"sleep_path\": %llu, \"lock_path\": %llu, \"read_path\": %llu}\n", (unsigned long long)ns[0],
		    (unsigned long long)ns[1], (unsigned long long)ns[2]);
	return 0;
}

// cfi_walk_cxx.cpp - the C++ half of test_cfi_walk: a std::thread, so that
// the stack captured in its body runs through libstdc++'s thread start
// (execute_native_thread_routine) into glibc's start_thread.
#include <thread>

extern "C" void cfi_cxx_thread(void (*fn)(void *), void *arg)
{
	std::thread t([fn, arg] { fn(arg); });
	t.join();
}

/* sf_cxx.cpp - symbolizer fixture: namespaced, templated and static member
 * functions whose demangled names the test asserts exactly. Prints "PID
 * TWICE ADD POKE" and waits for EOF on stdin. */
#include <cstdint>
#include <cstdio>
#include <unistd.h>

volatile int sfx_sink;

namespace sfx {
namespace inner {
template <typename T> __attribute__((noinline)) T twice(T v)
{
	for (int i = 0; i < 3; i++)
		v = v + v * sfx_sink;
	return v + v;
}

__attribute__((noinline)) long add(long a, long b)
{
	for (int i = 0; i < 3; i++)
		a += b * sfx_sink;
	return a + b;
}

struct Widget {
	__attribute__((noinline)) static int poke(int x)
	{
		for (int i = 0; i < 3; i++)
			x += i * sfx_sink;
		return x;
	}
};
} // namespace inner
} // namespace sfx

int main()
{
	char buf[64];

	std::printf("%d %#lx %#lx %#lx\n", (int)getpid(),
		    (unsigned long)(std::uintptr_t)&sfx::inner::twice<int>,
		    (unsigned long)(std::uintptr_t)&sfx::inner::add,
		    (unsigned long)(std::uintptr_t)&sfx::inner::Widget::poke);
	std::fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return sfx::inner::twice(1) + (int)sfx::inner::add(1, 2) + sfx::inner::Widget::poke(1) == 12345;
}

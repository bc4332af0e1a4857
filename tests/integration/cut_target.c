/* cut_target.c - loads the library named by argv[1] (integration_cut_lib's
 * own copy of cut_lib), prints {"pid": N} and spins in it until killed. The
 * loop calls through a pointer found once: after the test truncates the
 * library nothing of it is read again but its code. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

typedef uint64_t (*spin_fn)(uint64_t);

__attribute__((noinline)) static uint64_t spin_caller(spin_fn f, uint64_t n)
{
	return f(n) + 1;
}

int main(int argc, char **argv)
{
	volatile uint64_t sink = 0;
	spin_fn f;
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: cut_target LIBRARY\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	f = h ? (spin_fn)(uintptr_t)dlsym(h, "cut_spin") : NULL;
	if (!f) {
		fprintf(stderr, "cut_target: %s\n", dlerror());
		return 1;
	}
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	for (;;)
		sink += spin_caller(f, 1000);
}

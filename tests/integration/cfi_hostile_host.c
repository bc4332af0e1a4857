/* cfi_hostile_host.c - loads each library named on its command line (the
 * copies of cfi_hostile_lib with rewritten CFI) and, on each "spin" line
 * of stdin, spins in every one of them for 300 ms of CPU, printing "ok"
 * after each round; it prints its pid first and exits at end of input. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef uint64_t (*spin_fn)(unsigned int ms);

__attribute__((noinline)) uint64_t spin_round(spin_fn *fns, int n)
{
	uint64_t x = 0;

	for (int i = 0; i < n; i++)
		x += fns[i](300);
	return x;
}

int main(int argc, char **argv)
{
	spin_fn fns[16];
	char line[64];
	int n = 0;

	for (int i = 1; i < argc && n < 16; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);

		if (!h || !(fns[n] = (spin_fn)dlsym(h, "hostile_spin"))) {
			fprintf(stderr, "cfi_hostile_host: %s: %s\n", argv[i], dlerror());
			return 1;
		}
		n++;
	}
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		if (!strncmp(line, "spin", 4)) {
			volatile uint64_t x = spin_round(fns, n);

			(void)x;
			printf("ok\n");
			fflush(stdout);
		}
	return 0;
}

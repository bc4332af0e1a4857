/* cut_lib.c - the library that integration_cut_lib truncates and rewrites
 * under qprofd while qprofd unwinds samples in it. cut_spin runs a block of
 * 4,096 distinct instructions, so that samples keep landing at addresses
 * whose unwind rule qprofd has not cached yet and must read from the
 * library's CFI again. It reads nothing from the library's own data (no
 * constant, no call): only its code pages, which the test keeps. */
#include <stdint.h>

__attribute__((noinline)) uint64_t cut_spin(uint64_t n)
{
	uint64_t acc = n;

	while (n--) {
		__asm__ volatile(".rept 4096\n\taddq $1, %0\n\t.endr" : "+r"(acc));
	}
	return acc;
}

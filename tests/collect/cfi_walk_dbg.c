/* cfi_walk_dbg.c - a call chain of test_cfi_walk whose CFI is only in
 * .debug_frame: built -g -fno-asynchronous-unwind-tables (and -O2 without
 * frame pointers, as the rest), so no .eh_frame entry covers it. */
#include <stdint.h>

extern volatile uint64_t sink;
void *ra_d1, *ra_d2;

__attribute__((noinline, noclone)) void dbg_level2(void (*leaf)(void))
{
	ra_d2 = __builtin_return_address(0);
	leaf();
	sink++;
}

__attribute__((noinline, noclone)) void dbg_level1(void (*leaf)(void))
{
	ra_d1 = __builtin_return_address(0);
	dbg_level2(leaf);
	sink++;
}

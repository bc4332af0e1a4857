/* test_lc_hold.c - when the release process ends a hold at a dynamic
 * linker's rendezvous (lifecycle_priv.h, lc_hold_over): at its bound, and
 * never a hold that began after the sweep read the clock (the difference
 * wrapped and such a hold ended at once, before qprofd probed the library
 * it was loading). */
#include <stdint.h>
#include "targets/lifecycle_priv.h"
#include "testlib.h"

int main(void)
{
	const uint64_t ms = 1000000, bound = 250 * ms, now = 5000 * ms;

	CHECK(!lc_hold_over(now, now, bound));
	CHECK(!lc_hold_over(now, now - bound + 1, bound));
	CHECK(lc_hold_over(now, now - bound, bound));
	CHECK(lc_hold_over(now, now - 10 * bound, bound));
	/* began 1 ns to 1 ms after the clock was read */
	CHECK(!lc_hold_over(now, now + 1, bound));
	CHECK(!lc_hold_over(now, now + ms, bound));
	CHECK(!lc_hold_over(0, UINT64_MAX, bound));
	return test_done("test_lc_hold");
}

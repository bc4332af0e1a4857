/* test_unwind.c - unit test of daemon/collect/unwind.c without root or BPF:
 * this program takes its own registers and a copy of its stack the way the
 * sampler does, and unwinds them through its own /proc/self/maps. Built -O2
 * -fomit-frame-pointer (twice: PIE and not). Checks, against return
 * addresses the functions recorded themselves (__builtin_return_address
 * needs no frame pointer): a plain chain frame by frame; a chain through
 * glibc's qsort (no frame pointers in Debian's build) with a frame-pointer
 * function below it; the frame limit on a stack that repeats one frame
 * forever; a loop whose sp does not rise; hostile registers and stacks;
 * a signal handler's stack, through the kernel's signal frame.
 * Differential: every walk is made twice, by the default unwinder (the
 * cached rules of unwind_fast.c where they serve) and by one held to
 * libdwfl alone (dwfl_only), and both must give the same frames, the same
 * result and the same count; the cases that must take the fast path (and
 * the signal frame, which must not) are checked to have. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "testlib.h"
#include "collect/unwind.h"
#include "self_stack.h"

#define MAX_FRAMES 127

static void *ra_l1, *ra_l2, *ra_l3, *ra_cmp, *ra_outer, *ra_grab, *ra_sig;
volatile uint64_t sink;


__attribute__((noinline, noclone)) void level3(void)
{
	ra_l3 = __builtin_return_address(0);
	CAPTURE();
	sink++;
}

__attribute__((noinline, noclone)) void level2(void)
{
	ra_l2 = __builtin_return_address(0);
	level3();
	sink++;
}

__attribute__((noinline, noclone)) void level1(void)
{
	ra_l1 = __builtin_return_address(0);
	level2();
	sink++;
}

__attribute__((noinline, noclone)) int cmp_capture(const void *a, const void *b)
{
	ra_cmp = __builtin_return_address(0);
	CAPTURE();
	return *(const int *)a - *(const int *)b;
}

/* with a frame pointer, calling into glibc: the mixed case */
__attribute__((noinline, noclone, optimize("no-omit-frame-pointer"))) void outer(void)
{
	int v[2] = { 2, 1 };

	ra_outer = __builtin_return_address(0);
	qsort(v, 2, sizeof(v[0]), cmp_capture);
	sink += (uint64_t)v[0];
}

__attribute__((noinline, noclone)) void grab(void)
{
	ra_grab = __builtin_return_address(0);
}

/* its CFA is rbp + 16 after the prologue */
__attribute__((noinline, noclone, optimize("no-omit-frame-pointer"))) void fp_fn(void)
{
	grab();
	sink++;
}

/* no stack of its own: CFA = sp + 8 from its first byte to its last */
__attribute__((noinline, noclone)) int leaf_fn(int x)
{
	return x * 3 + 1;
}

/* the kernel's signal frame lies between the handler and the function
 * the signal interrupted: its CFI is a signal frame of expressions */
static void on_signal(int sig)
{
	(void)sig;
	CAPTURE();
	sink++;
}

__attribute__((noinline, noclone)) void sig_caller(void)
{
	ra_sig = __builtin_return_address(0);
	raise(SIGUSR1);
	sink++;
}

static uint32_t known;	/* qp_unwind_in.known: 0, all registers */
static struct qp_unwind *ref;	/* held to libdwfl (dwfl_only): the reference */
static uint64_t last_fast;	/* the last unwind_copy took the fast path (0 or 1) */
static bool ref_on = true;	/* compare with REF (off for the bulk walks) */

static int unwind_copy(struct qp_unwind *u, uint64_t *ips, size_t *n)
{
	struct qp_unwind_in in = {
		.pid = (uint32_t)getpid(), .tid = (uint32_t)syscall(SYS_gettid),
		.regs = regs, .stack = copy, .len = copy_len, .known = known,
	};
	struct qp_unwind_stats a0, a1, b0, b1;
	uint64_t rips[MAX_FRAMES];
	size_t rn = 0;
	int ret, rret;

	qp_unwind_stats(u, &a0);
	ret = qp_unwind_stack(u, &in, ips, MAX_FRAMES, n);
	qp_unwind_stats(u, &a1);
	last_fast = a1.fast - a0.fast;
	if (!ref || !ref_on)
		return ret;
	qp_unwind_stats(ref, &b0);
	rret = qp_unwind_stack(ref, &in, rips, MAX_FRAMES, &rn);
	qp_unwind_stats(ref, &b1);
	CHECK_INT(rret, ret);
	CHECK_INT(rn, *n);
	CHECK(rn == *n && !memcmp(rips, ips, rn * sizeof(*ips)));
	CHECK_INT(b1.fast - b0.fast, 0);
	CHECK_INT(b1.unwound - b0.unwound, a1.unwound - a0.unwound);
	CHECK_INT(b1.partial - b0.partial, a1.partial - a0.partial);
	CHECK_INT(b1.truncated - b0.truncated, a1.truncated - a0.truncated);
	CHECK_INT(b1.loops - b0.loops, a1.loops - a0.loops);
	/* a walk is by one path or the other */
	CHECK_INT(a1.fast - a0.fast + a1.slow - a0.slow, a1.unwound - a0.unwound + a1.partial -
			  a0.partial + a1.truncated - a0.truncated + a1.loops - a0.loops);
	return ret;
}

static bool has(const uint64_t *ips, size_t n, size_t from, const void *addr)
{
	for (size_t i = from; i < n; i++)
		if (ips[i] == (uint64_t)(uintptr_t)addr)
			return true;
	return false;
}

int main(void)
{
	struct qp_unwind_opts ro = { .dwfl_only = true };
	struct qp_unwind *u = qp_unwind_new(NULL);
	struct qp_unwind_stats st;
	uint64_t ips[MAX_FRAMES], fake_sp = 0x7ffd00000000ull;
	pthread_attr_t attr;
	void *addr;
	size_t n, size, i;
	int ret;

	ref = qp_unwind_new(&ro);
	CHECK(u != NULL && ref != NULL);
	if (!u || !ref)
		return test_done("unit_unwind");
	pthread_getattr_np(pthread_self(), &attr);
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	stack_top = (uint64_t)(uintptr_t)addr + size;

	/* a plain chain: exactly the recorded return addresses */
	level1();
	ret = unwind_copy(u, ips, &n);
	CHECK(n >= 5);
	CHECK_INT(ips[0], regs[16]);
	CHECK_INT(ips[1], (uintptr_t)ra_l3);
	CHECK_INT(ips[2], (uintptr_t)ra_l2);
	CHECK_INT(ips[3], (uintptr_t)ra_l1);
	/* and on to main's callers in glibc (__libc_start_call_main) */
	CHECK(n >= 5 && ret >= 0);
	CHECK_INT(last_fast, 1);
	/* again: now from the rules cached */
	ret = unwind_copy(u, ips, &n);
	CHECK(n >= 5 && ret >= 0 && ips[1] == (uintptr_t)ra_l3);
	CHECK_INT(last_fast, 1);

	/* through glibc's qsort, into a frame-pointer function, on to main */
	outer();
	ret = unwind_copy(u, ips, &n);
	CHECK(n >= 4);
	CHECK_INT(ips[1], (uintptr_t)ra_cmp);
	CHECK(has(ips, n, 2, ra_outer));
	CHECK(ret >= 0);
	CHECK_INT(last_fast, 1);

	/* a signal handler: libdwfl goes on through the signal frame to the
	 * interrupted function and its caller; the fast path leaves it all to
	 * libdwfl (the frames are compared all the same) */
	signal(SIGUSR1, on_signal);
	sig_caller();
	ret = unwind_copy(u, ips, &n);
	CHECK(has(ips, n, 2, ra_sig));
	CHECK(ret >= 0);
	CHECK_INT(last_fast, 0);
	signal(SIGUSR1, SIG_DFL);

	/* one frameless frame repeated over the whole copy: cut at the limit */
	qp_unwind_stats(u, &st);
	memset(regs, 0, sizeof(regs));
	regs[16] = (uint64_t)(uintptr_t)leaf_fn + 2;
	regs[7] = fake_sp;
	copy_len = sizeof(copy);
	for (i = 0; i < sizeof(copy) / 8; i++) {
		uint64_t w = (uint64_t)(uintptr_t)leaf_fn + 2;

		memcpy(copy + i * 8, &w, 8);
	}
	{
		uint64_t truncated = st.truncated;

		ret = unwind_copy(u, ips, &n);
		qp_unwind_stats(u, &st);
		CHECK_INT(ret, 0);
		CHECK_INT(n, MAX_FRAMES);
		CHECK_INT(st.truncated, truncated + 1);
		CHECK_INT(last_fast, 1);
	}

	/* a saved frame pointer that points at itself: the CFA stops rising */
	fp_fn();
	{
		uint64_t loops = st.loops, self = fake_sp + 64, ra = (uint64_t)(uintptr_t)ra_grab;

		memset(regs, 0, sizeof(regs));
		memset(copy, 0, sizeof(copy));
		regs[16] = ra;
		regs[7] = fake_sp;
		regs[6] = self;
		memcpy(copy + 64, &self, 8);
		memcpy(copy + 72, &ra, 8);
		copy_len = 4096;
		ret = unwind_copy(u, ips, &n);
		qp_unwind_stats(u, &st);
		CHECK_INT(ret, 0);
		CHECK_INT(n, 2);
		CHECK_INT(st.loops, loops + 1);
		CHECK_INT(last_fast, 1);
	}

	/* only ip, sp and bp known (the thread iterator's case): a frame whose
	 * CFA is rbp + 16 (fp_fn after its call to grab) goes on with bp, and
	 * without it ends the walk there instead of taking 0 for rbp (with 0
	 * it would read the return address at 8, outside the copy) */
	{
		uint64_t fp = fake_sp + 64, up = 0, ra = (uint64_t)(uintptr_t)ra_l1;

		memset(regs, 0, sizeof(regs));
		memset(copy, 0, sizeof(copy));
		regs[16] = (uint64_t)(uintptr_t)ra_grab;
		regs[7] = fake_sp;
		regs[6] = fp;
		memcpy(copy + 64, &up, 8);
		memcpy(copy + 72, &ra, 8);
		copy_len = 4096;
		known = 1u << 6 | 1u << 7 | 1u << 16;
		ret = unwind_copy(u, ips, &n);
		CHECK(n >= 2);
		CHECK_INT(ips[0], (uintptr_t)ra_grab);
		CHECK_INT(ips[1], (uintptr_t)ra_l1);
		CHECK_INT(last_fast, 1);
		known = 1u << 7 | 1u << 16;
		ret = unwind_copy(u, ips, &n);
		CHECK_INT(ret, 1);	/* libdwfl takes it for the outermost frame */
		CHECK_INT(n, 1);
		CHECK_INT(last_fast, 1);
		known = 0;
	}

	/* hostile: nothing copied, pc at 0, pc in no module, sp at the top */
	memset(regs, 0, sizeof(regs));
	copy_len = 0;
	ret = unwind_copy(u, ips, &n);
	CHECK(ret >= -1000 && n <= 1);
	regs[16] = 0xdead0000ull;
	regs[7] = ~0ull - 7;
	copy_len = 8;
	ret = unwind_copy(u, ips, &n);
	CHECK(n <= 1);
	regs[16] = (uint64_t)(uintptr_t)level3;
	regs[7] = ~0ull - 100;
	copy_len = sizeof(copy);
	for (i = 0; i < sizeof(copy); i++)
		copy[i] = (uint8_t)(i * 131 + 7);
	ret = unwind_copy(u, ips, &n);
	CHECK(n <= MAX_FRAMES);
	qp_unwind_stats(u, &st);
	printf("unwound %llu, partial %llu, truncated %llu, loops %llu, no_module %llu, refreshes %llu, "
	       "fast %llu, slow %llu\n",
	       (unsigned long long)st.unwound, (unsigned long long)st.partial,
	       (unsigned long long)st.truncated, (unsigned long long)st.loops,
	       (unsigned long long)st.no_module, (unsigned long long)st.refreshes,
	       (unsigned long long)st.fast, (unsigned long long)st.slow);
	CHECK(st.no_module >= 1);
	CHECK_INT(st.fast + st.slow, st.unwound + st.partial + st.truncated + st.loops);
	CHECK_INT(st.fast, 7);	/* the walks checked above to take it */
	CHECK(st.slow >= 1);	/* the signal frame */

	/* glibc's own CFI, all of it alike: a walk from every 61st byte of
	 * 256 KiB of glibc's code past qsort, over a real stack (level3's
	 * copy): each pc's rule reads "return addresses" where that code would
	 * have them, and walks go on wherever those lead. Both paths must
	 * agree on every one (unwind_copy compares) */
	{
		uint64_t base = (uint64_t)(uintptr_t)ra_cmp, nfast = 0, walks = 0;

		level1();
		{
			uint64_t sp0 = regs[7];

			for (i = 0; i < 262144; i += 61) {
				memset(regs, 0, sizeof(regs));
				regs[7] = sp0;
				regs[6] = sp0 + 64;
				regs[16] = base + i;
				unwind_copy(u, ips, &n);
				nfast += last_fast;
				walks++;
			}
		}
		printf("glibc sweep: %llu walks, %llu by the cached rules\n", (unsigned long long)walks,
		       (unsigned long long)nfast);
		/* many end on a "return address" in no file: libdwfl, whole */
		CHECK(nfast * 4 > walks);	/* a quarter at least compared the fast path */
	}

	/* the rule table is bounded: 49,152 addresses (65,536 slots at 3/4),
	 * then emptied and counted. Each walk here looks up one address, a
	 * new one (a pc inside glibc past qsort, nothing copied: the walk
	 * ends there) */
	{
		uint64_t base = (uint64_t)(uintptr_t)ra_cmp, resets0 = st.fast_resets;	/* in glibc */
		struct qp_unwind_stats s1;

		qp_unwind_forget(u, (uint32_t)getpid());	/* an empty table */
		memset(regs, 0, sizeof(regs));
		regs[7] = fake_sp;
		copy_len = 0;
		ref_on = false;
		for (i = 0; i < 49152; i++) {
			regs[16] = base + i;
			unwind_copy(u, ips, &n);
		}
		qp_unwind_stats(u, &s1);
		CHECK_INT(s1.fast_resets, resets0);
		regs[16] = base + 49152;
		unwind_copy(u, ips, &n);
		qp_unwind_stats(u, &s1);
		CHECK_INT(s1.fast_resets, resets0 + 1);
		ref_on = true;
		/* and the walks go on right after it */
		level1();
		ret = unwind_copy(u, ips, &n);
		CHECK(n >= 5 && ret >= 0 && ips[1] == (uintptr_t)ra_l3 && ips[3] == (uintptr_t)ra_l1);
		CHECK_INT(last_fast, 1);
		qp_unwind_stats(u, &st);
	}
	qp_unwind_forget(u, (uint32_t)getpid());
	qp_unwind_free(u);
	qp_unwind_free(ref);
	ref = NULL;	/* below: budgets, one unwinder */

	/* a stream of new processes (under --all: a build's compilers) must
	 * not starve a busy one of its Dwfl: 20 pids sampled once each (none
	 * exists, each make fails but counts against the budget of 16 a
	 * second), then this process sampled 10 times within the same second.
	 * New processes take at most half the budget, a process sampled 8
	 * times the rest, and a deferred one tries again at its next sample:
	 * the 10th sample is unwound (before: deferred for a whole second). */
	{
		struct qp_unwind_opts o = { .max_procs = 64 };
		struct qp_unwind_stats s2;
		int last = -1;

		u = qp_unwind_new(&o);
		CHECK(u != NULL);
		level1();
		for (i = 0; u && i < 20; i++) {
			struct qp_unwind_in in = { .pid = 4194400u + (uint32_t)i, .tid = 4194400u + (uint32_t)i,
						   .regs = regs, .stack = copy, .len = copy_len };

			qp_unwind_stack(u, &in, ips, MAX_FRAMES, &n);
		}
		for (i = 0; u && i < 10; i++)
			last = unwind_copy(u, ips, &n);
		if (u)
			qp_unwind_stats(u, &s2);
		CHECK(u && last >= 0 && n >= 4);
		CHECK(u && s2.deferred >= 1);
		qp_unwind_free(u);
	}
	return test_done("unit_unwind");
}

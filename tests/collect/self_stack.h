/* self_stack.h - for the unwinding tests (test_unwind.c, test_cfi_walk.c):
 * CAPTURE() takes the calling frame's registers (callee-saved ones, sp, ip)
 * and a copy of the stack from sp up to stack_top, the way the sampler
 * does. A macro, so that the registers are the caller's own frame's. Each
 * test program includes it once (its storage is the program's). */
#ifndef QPROF_TEST_SELF_STACK_H
#define QPROF_TEST_SELF_STACK_H
#include <stdint.h>
#include <string.h>
#include "collect/unwind.h"

static uint64_t regs[QP_UNWIND_REGS];
static uint8_t copy[16384];
static size_t copy_len;
static uint64_t stack_top;

#define CAPTURE()                                                                    \
	do {                                                                         \
		__asm__ volatile("lea 0(%%rip), %%rax\n\t"                           \
				 "mov %%rax, 128(%0)\n\t"                            \
				 "mov %%rsp, 56(%0)\n\t"                             \
				 "mov %%rbp, 48(%0)\n\t"                             \
				 "mov %%rbx, 24(%0)\n\t"                             \
				 "mov %%r12, 96(%0)\n\t"                             \
				 "mov %%r13, 104(%0)\n\t"                            \
				 "mov %%r14, 112(%0)\n\t"                            \
				 "mov %%r15, 120(%0)\n\t"                            \
				 :                                                   \
				 : "r"(regs)                                         \
				 : "rax", "memory");                                 \
		copy_len = stack_top - regs[7] < sizeof(copy) ? stack_top - regs[7]  \
							      : sizeof(copy);        \
		memcpy(copy, (const void *)regs[7], copy_len);                       \
	} while (0)
#endif

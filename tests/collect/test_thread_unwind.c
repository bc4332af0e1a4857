/* test_thread_unwind.c - the pure parts of collect_threads.c: the
 * frame-pointer walk over a copied stack (frames in order, the walk stops
 * at a pointer outside the copy, misaligned or going down the stack), and
 * the call-instruction check of the stack scan on the encodings compilers
 * emit (e8 rel32; ff /2 register, memory, SIB, disp8, disp32, RIP-relative,
 * with and without REX) and on bytes that are no call. */
#include <stdint.h>
#include <string.h>
#include <linux/types.h>
#include "collect/collect_threads.h"
#include "testlib.h"

static void put(uint8_t *stack, uint64_t sp, uint64_t at, uint64_t v)
{
	memcpy(stack + (at - sp), &v, 8);
}

static bool call_before(const uint8_t *ins, size_t n)
{
	uint8_t code[8] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };

	memcpy(code + 8 - n, ins, n);
	return qp_is_after_call(code);
}

int main(void)
{
	uint8_t stack[512];
	uint64_t sp = 0x7ffc00001000ull, out[16];
	size_t n;

	/* three frames: bp -> sp+64 -> sp+160 -> sp+320 (end: next 0) */
	memset(stack, 0, sizeof(stack));
	put(stack, sp, sp + 64, sp + 160);
	put(stack, sp, sp + 72, 0x401111);
	put(stack, sp, sp + 160, sp + 320);
	put(stack, sp, sp + 168, 0x402222);
	put(stack, sp, sp + 320, 0);
	put(stack, sp, sp + 328, 0x403333);
	n = qp_unwind_fp(0x400000, sp, sp + 64, stack, sizeof(stack), out, 16);
	CHECK_INT(n, 4);
	CHECK_INT(out[0], 0x400000);
	CHECK_INT(out[1], 0x401111);
	CHECK_INT(out[2], 0x402222);
	CHECK_INT(out[3], 0x403333);
	/* MAX bounds it */
	CHECK_INT(qp_unwind_fp(0x400000, sp, sp + 64, stack, sizeof(stack), out, 2), 2);
	CHECK_INT(qp_unwind_fp(0x400000, sp, sp + 64, stack, sizeof(stack), out, 0), 0);
	/* bp outside the copy, below sp, misaligned: the ip only */
	CHECK_INT(qp_unwind_fp(0x400000, sp, sp + 4096, stack, sizeof(stack), out, 16), 1);
	CHECK_INT(qp_unwind_fp(0x400000, sp, sp - 16, stack, sizeof(stack), out, 16), 1);
	CHECK_INT(qp_unwind_fp(0x400000, sp, sp + 65, stack, sizeof(stack), out, 16), 1);
	/* the last 8 bytes of the copy: no room for a return address */
	CHECK_INT(qp_unwind_fp(0x400000, sp, sp + sizeof(stack) - 8, stack, sizeof(stack), out, 16), 1);
	/* a loop (next pointer back down the stack) ends the walk */
	put(stack, sp, sp + 160, sp + 64);
	n = qp_unwind_fp(0x400000, sp, sp + 64, stack, sizeof(stack), out, 16);
	CHECK_INT(n, 3);
	/* a frame pointer to itself ends it too */
	put(stack, sp, sp + 64, sp + 64);
	CHECK_INT(qp_unwind_fp(0x400000, sp, sp + 64, stack, sizeof(stack), out, 16), 2);

	/* calls */
	CHECK(call_before((const uint8_t[]){ 0xe8, 0x10, 0x20, 0x30, 0x40 }, 5));	/* call rel32 */
	CHECK(call_before((const uint8_t[]){ 0xff, 0xd0 }, 2));			/* call *%rax */
	CHECK(call_before((const uint8_t[]){ 0x41, 0xff, 0xd3 }, 3));		/* call *%r11 */
	CHECK(call_before((const uint8_t[]){ 0xff, 0x15, 1, 2, 3, 4 }, 6));	/* call *x(%rip) */
	CHECK(call_before((const uint8_t[]){ 0xff, 0x10 }, 2));			/* call *(%rax) */
	CHECK(call_before((const uint8_t[]){ 0xff, 0x50, 0x08 }, 3));		/* call *8(%rax) */
	CHECK(call_before((const uint8_t[]){ 0xff, 0x90, 1, 2, 3, 4 }, 6));	/* call *d32(%rax) */
	CHECK(call_before((const uint8_t[]){ 0xff, 0x14, 0x24 }, 3));		/* call *(%rsp): SIB */
	CHECK(call_before((const uint8_t[]){ 0xff, 0x54, 0x24, 0x08 }, 4));	/* call *8(%rsp) */
	CHECK(call_before((const uint8_t[]){ 0xff, 0x94, 0x24, 1, 2, 3, 4 }, 7));	/* call *d32(%rsp) */
	CHECK(call_before((const uint8_t[]){ 0x41, 0xff, 0x54, 0x24, 0x08 }, 5));	/* call *8(%r12) */
	/* no calls: jmp (ff /4), push (ff /6), plain data, a ret */
	CHECK(!call_before((const uint8_t[]){ 0xff, 0xe0 }, 2));
	CHECK(!call_before((const uint8_t[]){ 0xff, 0x25, 1, 2, 3, 4 }, 6));
	CHECK(!call_before((const uint8_t[]){ 0xff, 0x70, 0x08 }, 3));
	CHECK(!call_before((const uint8_t[]){ 0xc3 }, 1));
	CHECK(!call_before((const uint8_t[]){ 0x48, 0x89, 0xe5 }, 3));
	{
		uint8_t zero[8] = { 0 };

		CHECK(!qp_is_after_call(zero));
	}
	return test_done("thread_unwind");
}

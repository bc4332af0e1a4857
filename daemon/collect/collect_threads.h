/* collect_threads.h - every thread of a process with its user and kernel
 * stacks, read without stopping it (bpf/threads.bpf.c for threads off the
 * CPU; a one-shot sample for those running). */
#ifndef QPROF_COLLECT_THREADS_H
#define QPROF_COLLECT_THREADS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QP_THREAD_MAX_FRAMES 128
#define QP_THREAD_SCAN_FRAMES 48	/* frames a stack scan keeps at most */

/* How a thread's user stack was unwound: frame pointers; frame pointers
 * with the return addresses of frameless functions (glibc's) found between
 * the stack pointer and the first frame; a scan of the copied stack for
 * return addresses (words pointing just after a call instruction in an
 * executable mapping: may include stale ones); by the CFI of each file
 * (unwind.c, as CPU samples are); not at all. */
enum qp_thread_unwind { QP_UNWIND_NONE, QP_UNWIND_FP, QP_UNWIND_FP_SCAN, QP_UNWIND_SCAN, QP_UNWIND_DWARF };

struct qp_threads;

struct qp_thread_stack {
	int tid;
	uint32_t state;			/* the kernel's task state bits */
	bool kthread;			/* no user stack */
	bool sampled;			/* running: the stacks come from a sample taken now */
	bool user_ok;			/* the user stack could be read */
	bool on_cpu;			/* running when read: its saved registers are stale */
	enum qp_thread_unwind unwind;
	size_t nuser, nkernel;
	uint64_t user[QP_THREAD_MAX_FRAMES];	/* innermost first: ip, then return addresses */
	uint64_t kernel[QP_THREAD_MAX_FRAMES];
};

/* Load the programs once, at start. 0 or -errno (ERR says why). */
int qp_threads_open(struct qp_threads **out, char *err, size_t errlen);
void qp_threads_close(struct qp_threads *t);	/* accepts NULL */

#define QP_THREADS_MAX 8192	/* threads read per request; the rest are left out, said so */

/* The threads of process PID, in the kernel's order (at most
 * QP_THREADS_MAX: *TRUNCATED then). *OUT is malloc'd. 0, -ESRCH (no such
 * process), or -errno (ERR says why). */
int qp_threads_stacks(struct qp_threads *t, int pid, struct qp_thread_stack **out, size_t *n,
		      bool *truncated, char *err, size_t errlen);

/* Unwind a copied user stack by frame pointers (no BPF; unit-tested):
 * IP, SP, BP the saved registers, STACK the LEN bytes copied from SP.
 * Frames, innermost first, into OUT (at most MAX); their count. A frame
 * pointer must point into the copy, 16-aligned or 8-aligned, and move up
 * the stack at each step; the walk stops at the first that does not. */
size_t qp_unwind_fp(uint64_t ip, uint64_t sp, uint64_t bp, const uint8_t *stack, size_t len, uint64_t *out,
		    size_t max);

/* RET is a return address if CODE, the 8 bytes before it, end with a call
 * (e8 rel32, or ff /2 in any addressing form, with or without REX). */
bool qp_is_after_call(const uint8_t code[8]);
#endif

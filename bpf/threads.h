/* threads.h - the contract of bpf/threads.bpf.c with the daemon: one record
 * per thread of a process, written by a task iterator to its seq file
 * (GET /api/threads): the thread's saved user registers, the top of its
 * user stack copied, its kernel stack. Nothing is stopped: the registers
 * are those the kernel saved when the thread last entered it. */
#ifndef QPROF_THREADS_H
#define QPROF_THREADS_H

#define QP_THREAD_KFRAMES 64		/* kernel return addresses kept */
#define QP_THREAD_USTACK_CHUNK 512	/* the user stack is copied in these */
#define QP_THREAD_USTACK_CHUNKS 32	/* 16 KiB at most from the stack pointer */
#define QP_THREAD_USTACK (QP_THREAD_USTACK_CHUNK * QP_THREAD_USTACK_CHUNKS)

#define QP_THREAD_F_USER 1u		/* ip/sp/bp are the user registers */
#define QP_THREAD_F_KTHREAD 2u		/* no user memory */
#define QP_THREAD_F_ON_CPU 4u		/* running now: its saved registers are stale */
#define QP_THREAD_F_SAMPLED 8u		/* taken by thread_sample at a tick of its own CPU time */
#define QP_THREAD_SAMPLED_MAX 1024	/* running threads sampled at once, all requests */

struct qp_thread_rec {
	__u32 magic;			/* QP_THREAD_MAGIC */
	__u32 tid;
	__u32 flags;
	__u32 state;			/* task->__state */
	__u64 ip, sp, bp;
	__s64 kstack_bytes;		/* bpf_get_task_stack's result: bytes or -errno */
	__u32 ustack_len;		/* bytes of ustack copied from sp */
	__u32 pad;
	__u64 kstack[QP_THREAD_KFRAMES];
	__u8 ustack[QP_THREAD_USTACK];
};
#define QP_THREAD_MAGIC 0x51544852u	/* "QTHR" */
#endif

// SPDX-License-Identifier: GPL-2.0
/* threads.bpf.c - the stacks of every thread of a process, without
 * stopping it: a sleepable task iterator (the daemon makes one link per
 * request, filtered to the process by the link's task.pid) writes, per
 * thread, its saved user registers (bpf_task_pt_regs), up to 16 KiB of its
 * user stack from the stack pointer (bpf_copy_from_user_task, which may
 * fault pages in: hence sleepable) and its kernel stack. The daemon unwinds
 * the copy. No signal, no ptrace: the threads never notice.
 * A thread running when iterated has saved registers older than its stack;
 * the daemon then opens a task-clock perf event on it, and thread_sample
 * takes its registers and stack at once, at the next tick of its own CPU
 * time. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "threads.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qp_thread_rec);
} scratch SEC(".maps");

/* the sampler's own scratch: a sleepable iterator may be preempted on its
 * CPU, by this program too */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qp_thread_rec);
} sample_scratch SEC(".maps");

/* tid -> its record, taken once; the daemon reads and deletes it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QP_THREAD_SAMPLED_MAX);
	__type(key, __u32);
	__type(value, struct qp_thread_rec);
} sampled SEC(".maps");

SEC("iter.s/task")
int thread_dump(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct qp_thread_rec *r;
	struct pt_regs *regs;
	__u32 zero = 0, i;

	if (!task)
		return 0;
	r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	r->magic = QP_THREAD_MAGIC;
	r->tid = task->pid;
	r->state = task->__state;
	r->flags = task->on_cpu ? QP_THREAD_F_ON_CPU : 0;
	r->ip = r->sp = r->bp = 0;
	r->ustack_len = 0;
	r->pad = 0;
	r->kstack_bytes = bpf_get_task_stack(task, r->kstack, sizeof(r->kstack), 0);
	if (!task->mm || (task->flags & 0x00200000 /* PF_KTHREAD */)) {
		r->flags |= QP_THREAD_F_KTHREAD;
		bpf_seq_write(seq, r, sizeof(*r));
		return 0;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (regs) {
		r->ip = BPF_CORE_READ(regs, ip);
		r->sp = BPF_CORE_READ(regs, sp);
		r->bp = BPF_CORE_READ(regs, bp);
		r->flags |= QP_THREAD_F_USER;
	}
	/* the stack from sp upwards, a chunk at a time: a copy that would
	 * cross the end of the stack's mapping fails whole */
	for (i = 0; r->sp && i < QP_THREAD_USTACK_CHUNKS; i++) {
		__u32 off = i * QP_THREAD_USTACK_CHUNK;

		if (bpf_copy_from_user_task(&r->ustack[off], QP_THREAD_USTACK_CHUNK,
					    (void *)(r->sp + off), task, 0))
			break;
		r->ustack_len = off + QP_THREAD_USTACK_CHUNK;
	}
	bpf_seq_write(seq, r, sizeof(*r));
	return 0;
}

/* A tick of a running thread's own CPU time (a perf event on that thread
 * only): its registers and stack at this instant, both. In user mode the
 * interrupted registers are the user's; in the kernel, those saved at its
 * entry, and its user stack does not move meanwhile. */
SEC("perf_event")
int thread_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, tid = (__u32)bpf_get_current_pid_tgid(), i;
	struct qp_thread_rec *r;
	struct pt_regs *regs;

	if (bpf_map_lookup_elem(&sampled, &tid))
		return 0;	/* one sample is enough */
	r = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!r)
		return 0;
	r->magic = QP_THREAD_MAGIC;
	r->tid = tid;
	r->state = task->__state;
	r->flags = QP_THREAD_F_SAMPLED | QP_THREAD_F_USER;
	r->ustack_len = 0;
	r->pad = 0;
	r->kstack_bytes = bpf_get_stack(ctx, r->kstack, sizeof(r->kstack), 0);
	if (!(ctx->regs.ip >> 63)) {	/* a user address: interrupted in user mode */
		r->ip = ctx->regs.ip;
		r->sp = ctx->regs.sp;
		r->bp = ctx->regs.bp;
		r->kstack_bytes = 0;	/* in user mode: no kernel frames */
	} else {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		r->ip = BPF_CORE_READ(regs, ip);
		r->sp = BPF_CORE_READ(regs, sp);
		r->bp = BPF_CORE_READ(regs, bp);
	}
	for (i = 0; r->sp && i < QP_THREAD_USTACK_CHUNKS; i++) {
		__u32 off = i * QP_THREAD_USTACK_CHUNK;

		if (bpf_probe_read_user(&r->ustack[off], QP_THREAD_USTACK_CHUNK, (void *)(r->sp + off)))
			break;
		r->ustack_len = off + QP_THREAD_USTACK_CHUNK;
	}
	bpf_map_update_elem(&sampled, &tid, r, BPF_NOEXIST);
	return 0;
}

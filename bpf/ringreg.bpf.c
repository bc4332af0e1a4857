// SPDX-License-Identifier: GPL-2.0
/* ringreg.bpf.c - the ring collector's only BPF program: a uprobe on the
 * qprof:ring_register probe of marker ABI 2, attached with the probe's
 * semaphore as the uprobe's reference counter (so the kernel raises
 * qprof_ring_semaphore while it is attached). Each hit passes (pid, tid,
 * ring address, size) to qprofd through a ring buffer; the daemon checks
 * all of it. The arguments are in rdi and rsi (ring.h's announce asm). It
 * also notes which ring the thread writes (ring_tids) for the CPU
 * sampler, which reads only that thread's own ring, only while its owner.
 * A second program, at the entry of the kernel's do_exit (fentry) (the exiting
 * thread's memory still mapped), sends the head of the ring that thread
 * announced last: what a process wrote before it ended is known even when
 * its memory is gone before the drain reads it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "ringreg.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} announces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QPROF_RING_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} ring_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, QPROF_RING_TIDS);
	__type(key, __u32);
	__type(value, struct ring_tid);
} ring_tids SEC(".maps");

SEC("uprobe")
int ring_register(struct pt_regs *ctx)
{
	struct ring_announce a;
	struct ring_tid rt;
	__u64 pt = bpf_get_current_pid_tgid();

	a.pid = pt >> 32;
	a.tid = (__u32)pt;
	a.addr = PT_REGS_PARM1(ctx);
	a.size = PT_REGS_PARM2(ctx);
	a.kind = QPROF_RING_ANN_RING;
	a.head_ok = !bpf_probe_read_user(&a.head, sizeof(a.head),
					 (void *)(a.addr + __builtin_offsetof(struct ring_hdr, head)));
	if (!a.head_ok)
		a.head = 0;
	/* for the sampler: this thread's ring, while this generation owns it */
	rt.addr = a.addr;
	if (!bpf_probe_read_user(&rt.generation, sizeof(rt.generation),
				 (void *)(a.addr + __builtin_offsetof(struct ring_hdr, generation))))
		bpf_map_update_elem(&ring_tids, &a.tid, &rt, BPF_ANY);
	if (bpf_ringbuf_output(&announces, &a, sizeof(a), 0)) {
		__u32 k = QPROF_RING_CNT_LOST;
		__u64 *c = bpf_map_lookup_elem(&ring_counters, &k);

		if (c)
			__sync_fetch_and_add(c, 1);
	}
	return 0;
}

static void count(__u32 k)
{
	__u64 *c = bpf_map_lookup_elem(&ring_counters, &k);

	if (c)
		__sync_fetch_and_add(c, 1);
}

/* A thread exits (any thread of the system: the lookup filters), at the
 * entry of do_exit (fentry: kernels without kprobe events have it). Its
 * memory is still there at do_exit's entry; the ring it announced last
 * has a head that the drain may never read if the whole process ends. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ring_thread_exit, struct task_struct *p)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt;
	struct ring_announce a = {};
	struct ring_tid *rt;

	rt = bpf_map_lookup_elem(&ring_tids, &tid);
	if (!rt)
		return 0;
	a.pid = pt >> 32;
	a.tid = tid;
	a.addr = rt->addr;
	a.kind = QPROF_RING_ANN_EXIT;
	a.head_ok = !bpf_probe_read_user(&a.head, sizeof(a.head),
					 (void *)(a.addr + __builtin_offsetof(struct ring_hdr, head)));
	if (!a.head_ok)
		a.head = 0;
	bpf_map_delete_elem(&ring_tids, &tid);
	count(QPROF_RING_CNT_EXITS);
	if (bpf_ringbuf_output(&announces, &a, sizeof(a), 0))
		count(QPROF_RING_CNT_EXITS_LOST);
	return 0;
}

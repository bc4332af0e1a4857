// SPDX-License-Identifier: GPL-2.0
/* heap.bpf.c - heap profiling of target processes (qprofd --heap, POST
 * "heap": true). Uprobes on the allocator's entry points and uretprobes on
 * their returns (heap_fn of heap.h): an allocation is sampled by bytes
 * (heap_threshold), its user stack walked from the allocator's entry by
 * the CPU sampler's compiled CFI tables (cfiwalk.bpf.h, maps shared by
 * qprofd), else by frame pointers, and kept once in heap_stacks with
 * cumulative figures,
 * and the live allocation in heap_live until its free. Syscall tracepoints
 * (through tracefs, else the raw ones, BTF) of brk and anonymous mmap
 * record the heap's growth under the stack of the allocator call that made it (or of
 * the syscall when no allocator call is open on the thread). Only processes in heap_targets are seen. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "heap.h"
#include "ringreg.h"
#include "scopes.h"
#include "open_scope_maps.bpf.h"	/* thread_stacks, ring_tids: the labels' open scopes */
#include "cfiwalk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define MAP_ANONYMOUS_ 0x20
#define MAP_STACK_ 0x20000
#define MAX_ERRNO_ 4095

const volatile __u64 interval = 512 * 1024;	/* bytes, 1 .. 1 << 30 */
/* cfi_rows, cfi_files, cfi_procs and cfi_counts are the CPU sampler's
 * (reused by qprofd): stacks are walked by its tables */
const volatile bool walk_cfi = false;

/* tgid -> attach generation (> 0) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} heap_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);	/* --heap-live */
	__type(key, struct heap_live_key);
	__type(value, struct heap_live);
} heap_live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);	/* --heap-stacks */
	__type(key, __u64);
	__type(value, struct heap_stack);
} heap_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct heap_stack);
} heap_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEAP_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} heap_counters SEC(".maps");

/* The allocator call open on a thread (the outermost one), and the
 * arguments of a brk/mmap in flight. */
struct heap_thread {
	__u32 gen;		/* heap_targets' generation it was made under */
	__u32 depth;		/* allocator calls open (nested ones included) */
	__u32 fn;		/* enum heap_fn of the outermost */
	__u32 sampled;
	__u64 size;
	__u64 arg_ptr;		/* realloc: the old block; posix_memalign: where the result goes */
	__u64 stack;
	__u64 entry_ip, entry_sp, entry_bp;
	__u64 entry_ret;	/* the return address at entry: the uretprobe replaces it on the stack */
	__u64 sys_arg;		/* brk: the break before; mmap: the length */
	__u64 sys_flags;	/* mmap: flags | prot << 32 */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct heap_thread);
} heap_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ring_hdr);
} heap_ring_hdr SEC(".maps");

#define RING_MAGIC 0x474e5251u	/* QPROF_RING_MAGIC */

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&heap_counters, &which);

	if (c)
		*c += 1;
}

/* The thread's state when its process is a heap target, else NULL. */
static __always_inline struct heap_thread *thread_of(__u32 tgid, bool create)
{
	__u32 *gen = bpf_map_lookup_elem(&heap_targets, &tgid);
	struct heap_thread *t;

	if (!gen)
		return NULL;
	t = bpf_task_storage_get(&heap_threads, bpf_get_current_task_btf(), 0,
				 create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!t) {
		if (create)
			count(HEAP_CNT_NO_THREAD);
		return NULL;
	}
	if (t->gen != *gen) {	/* made under an earlier attach: nothing of it holds */
		t->gen = *gen;
		t->depth = 0;
	}
	return t;
}

/* S's labels: the current thread, its name, its innermost open scopes and
 * its open span (a ring thread's from its ring's header, as the CPU
 * sampler reads them; else the BPF collector's stack: block scopes, then
 * begun spans, and its span). */
static __always_inline void fill_labels(struct heap_stack *s)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0, i = 0, d, b;
	struct thread_stack *st;
	struct ring_tid *rt;
	struct ring_hdr *h;

	s->tid = tid;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	for (d = 0; d < QPROF_HEAP_SCOPES; d++)
		s->scopes[d] = 0;
	s->nscopes = 0;
	s->span_site = 0;
	rt = bpf_map_lookup_elem(&ring_tids, &tid);
	h = bpf_map_lookup_elem(&heap_ring_hdr, &zero);
	if (rt && h && !bpf_probe_read_user(h, sizeof(*h), (void *)rt->addr) && h->magic == RING_MAGIC &&
	    h->version >= 2 && h->generation == rt->generation) {
		d = h->depth;
		if (d > QPROF_SAMPLE_OPEN)
			d = QPROF_SAMPLE_OPEN;
		for (i = 0; i < QPROF_HEAP_SCOPES; i++) {
			if (i >= d)
				break;
			s->scopes[i] = h->open[(d - 1 - i) & (QPROF_SAMPLE_OPEN - 1)];
		}
		s->nscopes = i;
		s->span_site = h->span_site;
		return;
	}
	st = bpf_task_storage_get(&thread_stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st)
		return;
	s->span_site = st->span_site;
	d = st->depth;
	if (d > QPROF_MAX_DEPTH)
		d = QPROF_MAX_DEPTH;
	for (i = 0; i < QPROF_HEAP_SCOPES; i++) {
		if (i >= d)
			break;
		s->scopes[i] = st->f[(d - 1 - i) & (QPROF_MAX_DEPTH - 1)].site;
	}
	for (b = 0; b < QPROF_MAX_BEGINS; b++) {
		if (i >= QPROF_HEAP_SCOPES)
			break;
		if (st->b[b].key)
			s->scopes[i++] = st->b[b].site;
	}
	s->nscopes = i;
}

/* Keep the stack in S (nips frames, tgid set) once, with the current
 * thread's labels: its key; when the table is full, the process's stack of
 * no frames (made at attach), or 0. */
static __always_inline __u64 intern(struct heap_stack *s)
{
	__u64 h;
	__u32 i;
	long err;

	fill_labels(s);
	h = heap_mix(heap_hash_start(s->tgid), s->tid);
	for (i = 0; i < QPROF_HEAP_SCOPES; i++)
		h = heap_mix(h, s->scopes[i]);
	h = heap_mix(h, s->span_site);
	for (i = 0; i < QPROF_HEAP_DEPTH; i++) {
		if (i >= s->nips)
			break;
		h = heap_mix(h, s->ips[i]);
	}
	if (!h)
		h = 1;
	if (bpf_map_lookup_elem(&heap_stacks, &h))
		return h;
	s->samples = s->est_objects_x16 = s->est_bytes = 0;
	s->growth_bytes = s->growth_calls = 0;
	err = bpf_map_update_elem(&heap_stacks, &h, s, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: made meanwhile on another CPU */) {
		count(HEAP_CNT_STACK_FULL);
		h = heap_lost_key(s->tgid);
		return bpf_map_lookup_elem(&heap_stacks, &h) ? h : 0;
	}
	return h;
}

/* The registers a walk of an allocator call's stack starts from: the
 * caller's, at its call (see walk_call) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pt_regs);
} heap_regs SEC(".maps");

/* S's frames after IP and RET (the allocator's entry and its caller's
 * return address) walked by the CFI tables from the caller: its pc is the
 * call (RET - 1, looked up as is), its sp the one above the return address
 * (SP at the entry + 8), its rbp the one at the entry (the allocator has
 * not run yet, or its own pushes are below SP). The walk never reads the
 * return address slot itself, which the uretprobe rewrites after the entry
 * handlers: a growth inside the call walks the same frames. true: kept. */
static __always_inline bool walk_call(struct heap_stack *s, __u32 tgid, __u64 ret, __u64 sp, __u64 bp)
{
	struct cfi_walk_out *w;
	struct pt_regs *r;
	__u32 zero = 0, n, i;
	__u8 end;

	if (!walk_cfi || !ret || !(r = bpf_map_lookup_elem(&heap_regs, &zero)))
		return false;
	r->ip = ret - 1;
	r->sp = sp + 8;
	r->bp = bp;
	end = cfi_walk(bpf_get_current_task_btf(), tgid, r, QPROF_CFI_USER_HEAP, &w, &n);
	if (!QPROF_WALK_KEPT(end) || !w || !n)
		return false;
	/* the walk's first frame is the call: the return address is kept */
	for (i = 1; i < QPROF_HEAP_DEPTH - 1; i++) {
		if (i >= n)
			break;
		s->ips[(i + 1) & (QPROF_HEAP_DEPTH - 1)] = w->ips[i & QPROF_STACK_DEPTH];
	}
	s->nips = i + 1;
	return true;
}

/* The stack of an allocator call at its entry: IP, the caller (RET, the
 * return address that was at the stack pointer: the caller's frame is not
 * linked yet), then the caller's frames by the CFI tables (walk_call), or
 * else the frame pointer chain from BP, which still is the caller's. */
static __always_inline __u64 stack_at_entry(__u32 tgid, __u64 ip, __u64 ret, __u64 sp, __u64 bp)
{
	__u32 zero = 0, i, n = 0;
	struct heap_stack *s = bpf_map_lookup_elem(&heap_scratch, &zero);
	struct { __u64 next, ret; } fr;

	if (!s)
		return 0;
	s->tgid = tgid;
	s->ips[n++] = ip;
	if (ret)
		s->ips[n++] = ret;
	if (walk_call(s, tgid, ret, sp, bp))
		return intern(s);
	for (i = 0; i < QPROF_HEAP_DEPTH - 2; i++) {
		if (!bp || bpf_probe_read_user(&fr, sizeof(fr), (void *)bp) || !fr.ret)
			break;
		s->ips[n & (QPROF_HEAP_DEPTH - 1)] = fr.ret;
		n++;
		if (fr.next <= bp)	/* frames go up the stack: anything else is no chain */
			break;
		bp = fr.next;
	}
	s->nips = n;
	return intern(s);
}

/* The stack of a syscall made outside any allocator call: walked by the
 * CFI tables from the user registers, else the kernel's frame-pointer walk. */
static __always_inline __u64 stack_of_syscall(void *ctx, __u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct cfi_walk_out *w;
	__u32 zero = 0, nw, i;
	struct heap_stack *s = bpf_map_lookup_elem(&heap_scratch, &zero);
	long n;

	if (!s)
		return 0;
	s->tgid = tgid;
	if (walk_cfi && QPROF_WALK_KEPT(cfi_walk(task, tgid, (struct pt_regs *)bpf_task_pt_regs(task),
						 QPROF_CFI_USER_HEAP, &w, &nw)) && w && nw) {
		for (i = 0; i < QPROF_HEAP_DEPTH; i++) {
			if (i >= nw)
				break;
			s->ips[i & (QPROF_HEAP_DEPTH - 1)] = w->ips[i & QPROF_STACK_DEPTH];
		}
		s->nips = i;
		return intern(s);
	}
	n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), BPF_F_USER_STACK);
	if (n <= 0)
		return 0;
	s->nips = (__u32)n / 8;
	return intern(s);
}

static __always_inline int on_entry(struct pt_regs *ctx, __u32 fn, __u64 size, __u64 arg_ptr)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct heap_thread *t = thread_of(tgid, true);
	__u64 sp = PT_REGS_SP(ctx), thresh;

	if (!t)
		return 0;
	if (t->depth) {
		/* deeper on the stack than the open call: called from inside it;
		 * as deep: tail-called by it (realloc(NULL, n) jumps to malloc,
		 * and both returns come) */
		if (sp <= t->entry_sp) {
			t->depth++;
			count(HEAP_CNT_NESTED);
			return 0;
		}
		/* from a shallower frame: the open call never returned */
		count(HEAP_CNT_MISSED_RETURN);
	}
	t->depth = 1;
	t->fn = fn;
	t->size = size;
	t->arg_ptr = arg_ptr;
	t->entry_ip = PT_REGS_IP(ctx);
	t->entry_sp = sp;
	t->entry_bp = PT_REGS_FP(ctx);
	/* read before the kernel puts its uretprobe trampoline there (after
	 * the entry handlers): a growth inside the call needs the real one */
	if (bpf_probe_read_user(&t->entry_ret, sizeof(t->entry_ret), (void *)sp))
		t->entry_ret = 0;
	t->sampled = 0;
	t->stack = 0;
	count(HEAP_CNT_CALLS);
	thresh = heap_threshold(size, interval);
	if (thresh && (__u64)bpf_get_prandom_u32() < thresh) {
		t->sampled = 1;
		t->stack = stack_at_entry(tgid, t->entry_ip, t->entry_ret, t->entry_sp, t->entry_bp);
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(heap_malloc, __u64 size)
{
	return on_entry(ctx, HEAP_MALLOC, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(heap_calloc, __u64 n, __u64 size)
{
	/* n * size without 128-bit arithmetic (BPF has none): both factors
	 * under 2^32, or one of them 1; anything else is not counted (it
	 * overflows and fails, or asks for more than 4 GiB in that shape) */
	__u64 total = 0;

	if (!(n >> 32) && !(size >> 32))
		total = n * size;
	else if (n == 1)
		total = size;
	else if (size == 1)
		total = n;

	return on_entry(ctx, HEAP_CALLOC, total, 0);
}

SEC("uprobe")
int BPF_KPROBE(heap_realloc, __u64 ptr, __u64 size)
{
	return on_entry(ctx, HEAP_REALLOC, size, ptr);
}

SEC("uprobe")
int BPF_KPROBE(heap_memalign, __u64 align, __u64 size)
{
	return on_entry(ctx, HEAP_MEMALIGN, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(heap_posix_memalign, __u64 out, __u64 align, __u64 size)
{
	return on_entry(ctx, HEAP_POSIX_MEMALIGN, size, out);
}

static __always_inline void forget_block(__u32 tgid, __u64 addr)
{
	struct heap_live_key k = { .tgid = tgid, .addr = addr };

	if (!bpf_map_delete_elem(&heap_live, &k))
		count(HEAP_CNT_FREES);
}

SEC("uprobe")
int BPF_KPROBE(heap_free, __u64 ptr)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (ptr && bpf_map_lookup_elem(&heap_targets, &tgid))
		forget_block(tgid, ptr);
	return 0;
}

/* The return of every allocating entry point: the thread's state says which. */
SEC("uretprobe")
int BPF_KRETPROBE(heap_ret, __u64 rc)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct heap_thread *t = thread_of(tgid, false);
	struct heap_live_key k = { .tgid = tgid };
	struct heap_live v = { 0 };
	struct heap_stack *s;
	__u64 addr = rc, thresh;

	if (!t || !t->depth)
		return 0;
	if (--t->depth)
		return 0;	/* a nested call returned */
	if (t->fn == HEAP_POSIX_MEMALIGN) {
		addr = 0;
		if (!rc && t->arg_ptr)
			bpf_probe_read_user(&addr, sizeof(addr), (void *)t->arg_ptr);
	}
	/* realloc: the old block is gone when a new one came back, or when
	 * size 0 freed it; a failed realloc leaves it live */
	if (t->fn == HEAP_REALLOC && t->arg_ptr && (addr || !t->size))
		forget_block(tgid, t->arg_ptr);
	if (!t->sampled || !addr)
		return 0;
	count(HEAP_CNT_SAMPLED);
	/* what was allocated, whether or not it can be kept live */
	thresh = heap_threshold(t->size, interval);
	if (t->stack && thresh && (s = bpf_map_lookup_elem(&heap_stacks, &t->stack))) {
		__sync_fetch_and_add(&s->samples, 1);
		__sync_fetch_and_add(&s->est_objects_x16, heap_weight_objects_x16(thresh));
		__sync_fetch_and_add(&s->est_bytes, heap_weight_bytes(t->size, thresh));
	}
	k.addr = addr;
	v.size = t->size;
	v.stack = t->stack;
	v.ts_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&heap_live, &k, &v, BPF_ANY))
		count(HEAP_CNT_LIVE_FULL);
	return 0;
}

/* ---- growth: brk and anonymous mmap ------------------------------------ */

static __always_inline void growth(void *ctx, __u32 tgid, struct heap_thread *t, __u64 bytes)
{
	struct heap_stack *s;
	__u64 key;

	if (!bytes)
		return;
	if (t->depth)	/* inside malloc: the stack of the call that grew the heap */
		key = stack_at_entry(tgid, t->entry_ip, t->entry_ret, t->entry_sp, t->entry_bp);
	else
		key = stack_of_syscall(ctx, tgid);
	if (!key || !(s = bpf_map_lookup_elem(&heap_stacks, &key))) {
		count(HEAP_CNT_GROWTH_LOST);
		return;
	}
	__sync_fetch_and_add(&s->growth_bytes, bytes);
	__sync_fetch_and_add(&s->growth_calls, 1);
	count(HEAP_CNT_GROWTH);
}

/* The syscalls are seen through the syscalls/ tracepoints where tracefs is
 * mounted (libbpf finds their ids there), else through the raw syscall
 * tracepoints as BTF tracepoints, which need no tracefs (a container, a
 * hardened service). The first run a program for brk and mmap only; the
 * second for every syscall of the system while a heap target exists (a
 * compare of the syscall number for all but brk and mmap, yet each call
 * into BPF costs: about 0.45 us a syscall for two empty programs on the
 * development VM). fentry on the syscall functions would cost less but is
 * refused by kernels in lockdown. x86-64 numbers. */
#define NR_MMAP_ 9
#define NR_BRK_ 12

static __always_inline void brk_enter(__u32 tgid)
{
	struct heap_thread *t = thread_of(tgid, true);
	struct task_struct *task;

	if (!t)
		return;
	task = bpf_get_current_task_btf();
	t->sys_arg = BPF_CORE_READ(task, mm, brk);
}

/* mmap(addr, len, prot, flags, fd, off) */
static __always_inline void mmap_enter(__u32 tgid, __u64 len, __u64 prot, __u64 flags)
{
	struct heap_thread *t = thread_of(tgid, true);

	if (!t)
		return;
	t->sys_arg = len;
	t->sys_flags = (flags & 0xffffffffULL) | (prot << 32);
}

static __always_inline void sys_exit(void *ctx, long id, __u64 r)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct heap_thread *t = thread_of(tgid, false);
	__u64 len;

	if (!t || !t->sys_arg)
		return;
	if (id == NR_BRK_) {
		if (r > t->sys_arg)
			growth(ctx, tgid, t, r - t->sys_arg);
	} else {
		len = (t->sys_arg + 4095) & ~4095ULL;
		/* anonymous and accessible: PROT_NONE reservations (arenas,
		 * guard pages) are not memory yet, and thread stacks are no heap */
		if (r < (__u64)-MAX_ERRNO_ && (t->sys_flags & MAP_ANONYMOUS_) && !(t->sys_flags & MAP_STACK_) &&
		    (t->sys_flags >> 32))
			growth(ctx, tgid, t, len);
	}
	t->sys_arg = 0;
}

SEC("tracepoint/syscalls/sys_enter_brk")
int heap_brk_enter(struct trace_event_raw_sys_enter *ctx)
{
	brk_enter(bpf_get_current_pid_tgid() >> 32);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_brk")
int heap_brk_exit(struct trace_event_raw_sys_exit *ctx)
{
	sys_exit(ctx, NR_BRK_, (__u64)ctx->ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int heap_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	mmap_enter(bpf_get_current_pid_tgid() >> 32, ctx->args[1], ctx->args[2], ctx->args[3]);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int heap_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	sys_exit(ctx, NR_MMAP_, (__u64)ctx->ret);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(heap_sys_enter, struct pt_regs *regs, long id)
{
	__u32 tgid;

	if (id != NR_BRK_ && id != NR_MMAP_)
		return 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	if (id == NR_BRK_)
		brk_enter(tgid);
	else
		mmap_enter(tgid, BPF_CORE_READ(regs, si), BPF_CORE_READ(regs, dx), BPF_CORE_READ(regs, r10));
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(heap_sys_exit, struct pt_regs *regs, long ret)
{
	long id = BPF_CORE_READ(regs, orig_ax);

	if (id == NR_BRK_ || id == NR_MMAP_)
		sys_exit(ctx, id, (__u64)ret);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/* profile.bpf.c - CPU sampler. A software cpu-clock perf event per CPU runs
 * this at --frequency; each sample of a target process (or of any with --all)
 * goes to a ring buffer as one record: process, kernel and user stacks (the
 * instruction pointers themselves, not ids in a stack map, so nothing fills
 * up or collides over a long run), and the innermost qprof scopes. The
 * daemon aggregates the records (collect_cpu.c). The scopes come from the
 * thread stacks of scopes.bpf.c, whose map the daemon shares with this
 * object, so a profile can be limited to the time spent inside one scope;
 * for a thread of a ring target, from the open scopes its ring's header
 * lists (ring_tids, shared with ringreg.bpf.c), at any depth. The off-CPU
 * side (offcpu.bpf.h) shares the same target set and stacks (sampler.bpf.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"
#include "ringreg.h"
#include "scopes.h"
#include "sampler.bpf.h"
#include "cfiwalk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool sample_all = false;
const volatile bool copy_all = false;	/* with sample_all: copy every process's stack too */
const volatile bool verify_walk = false;	/* a walk kept still sends the copy (the daemon checks it) */

/* 8 MiB: at 999 Hz on two CPUs, about 1.2 MB/s of records against a drain
 * every 50 ms: several seconds of slack. With stack copies (16 KiB a
 * sample) the daemon sets 64 MiB before load: about 2 s at 999 Hz on two
 * CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} cpu_ring SEC(".maps");

/* the record is built here (too big for the BPF stack), then copied out */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_sample);
} scratch SEC(".maps");

/* a thread ring's header, read from the sampled thread's memory */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ring_hdr);
} ring_hdr_scratch SEC(".maps");

/* The user registers (those saved at the entry to the kernel, so a sample
 * taken in a system call has them too), in DWARF order, and the stack from
 * sp up into DST: 16 KiB, or less when the stack ends nearer (a read
 * that would cross its end fails as a whole, so smaller sizes are tried).
 * Returns the bytes copied, 0 when none. */
static __always_inline __u32 copy_user_stack(struct cpu_sample *s, __u8 *dst)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	struct mm_struct *mm;
	const void *sp;
	__u64 top;

	if (!r)
		return 0;
	s->regs[0] = r->ax;
	s->regs[1] = r->dx;
	s->regs[2] = r->cx;
	s->regs[3] = r->bx;
	s->regs[4] = r->si;
	s->regs[5] = r->di;
	s->regs[6] = r->bp;
	s->regs[7] = r->sp;
	s->regs[8] = r->r8;
	s->regs[9] = r->r9;
	s->regs[10] = r->r10;
	s->regs[11] = r->r11;
	s->regs[12] = r->r12;
	s->regs[13] = r->r13;
	s->regs[14] = r->r14;
	s->regs[15] = r->r15;
	s->regs[16] = r->ip;
	sp = (const void *)r->sp;
	/* the main thread's stack ends a little above mm->start_stack (argv,
	 * the environment): a read past its end fails as a whole and costs a
	 * fault, so a sample near the top copies only what is there */
	mm = task->mm;
	top = mm ? mm->start_stack : 0;
	if (top > r->sp && top - r->sp < QPROF_USTACK_BYTES - 256) {
		/* under 16 KiB by the test above; the mask (not a comparison
		 * clang would drop as redundant) is what the verifier sees */
		__u32 n = (__u32)(top - r->sp + 256) & (QPROF_USTACK_BYTES - 8);

		if (n && !bpf_probe_read_user(dst, n, sp))
			return n;
	}
	/* constant sizes, each checked by the verifier against the room left */
#define TRY_COPY(n) if (!bpf_probe_read_user(dst, n, sp)) return n
	TRY_COPY(QPROF_USTACK_BYTES);
	TRY_COPY(12288);
	TRY_COPY(8192);
	TRY_COPY(6144);
	TRY_COPY(4096);
	TRY_COPY(3072);
	TRY_COPY(2048);
	TRY_COPY(1024);
	TRY_COPY(512);
#undef TRY_COPY
	return 0;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0, klen, ulen, clen = 0;
	__u64 size;	/* 64 bits: no zero extension between the bound and its use */
	struct thread_stack *st;
	struct cpu_sample *s;
	struct ring_tid *rt;
	struct ring_hdr *h;
	__u8 *mode, copy, walk = QPROF_WALK_NONE;
	__u32 d, tid, olen, off, nw;
	struct cfi_walk_out *wo;

	if (!tgid)
		return 0;	/* idle */
	mode = bpf_map_lookup_elem(&cpu_targets, &tgid);
	if (!sample_all && !mode)
		return 0;
	copy = mode ? (*mode & QPROF_CPU_COPY) : copy_all;
	PH_T0();
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	s->tgid = tgid;
	s->open_len = 0;
	s->tid = (__u32)id;
	s->copy_fail = 0;
	s->ts = bpf_ktime_get_ns();
	/* a sample taken in user mode has no kernel stack: bpf_get_stack
	 * would say so too, after a microsecond of looking */
	klen = (*(volatile __u64 *)&ctx->regs.csx & 3) == 3 ? 0 : stack_len(bpf_get_stack(ctx, s->ips, STACK_BYTES, 0));
	s->kern_len = klen;
	PH(5);
	/* the user stack right after the kernel one: only used bytes are
	 * sent. Walked by the CFI tables when the target's are loaded: a walk
	 * that ends well is the user stack, and no copy is made; else (a rule
	 * or a file the tables lack) frame pointers and the copy, as before */
	ulen = 0;
	if (mode && (*mode & QPROF_CPU_WALK)) {
		struct task_struct *task = bpf_get_current_task_btf();

		walk = cfi_walk(task, tgid, (struct pt_regs *)bpf_task_pt_regs(task), QPROF_CFI_USER_CPU, &wo, &nw);
		if (QPROF_WALK_KEPT(walk) && wo && nw) {
			ulen = (nw * 8) & (STACK_BYTES | (STACK_BYTES - 1));
			if (ulen > STACK_BYTES)
				ulen = STACK_BYTES;
			if (bpf_probe_read_kernel((char *)s->ips + (klen & (STACK_BYTES | (STACK_BYTES - 1))), ulen,
						  wo->ips))
				ulen = 0;
			if (ulen && !verify_walk)
				copy = 0;
		}
		if (QPROF_WALK_KEPT(walk) && !ulen)
			walk = QPROF_WALK_BAD;
	}
	PH(6);
	if (!ulen)
		ulen = stack_len(bpf_get_stack(ctx, (char *)s->ips + klen, STACK_BYTES, BPF_F_USER_STACK));
	s->user_len = ulen;
	s->walk = walk;
	st = bpf_task_storage_get(&thread_stacks, bpf_get_current_task_btf(), 0, 0);
	fill_scopes(s->scopes, st);
	/* the span open on the thread (QPROF_SPAN_BEGIN, not yet ended on it) */
	s->span_site = st ? st->span_site : 0;
	s->span_id = st && st->span_site ? st->span_id : 0;
	PH(9);
	/* a ring target's thread: its open scopes at any depth, from the
	 * header of its own ring (only while it still owns that ring) */
	olen = 0;
	tid = (__u32)id;
	rt = bpf_map_lookup_elem(&ring_tids, &tid);
	h = bpf_map_lookup_elem(&ring_hdr_scratch, &zero);
	if (rt && h && !bpf_probe_read_user(h, sizeof(*h), (void *)rt->addr) && h->magic == RING_MAGIC &&
	    h->version >= 2 && h->generation == rt->generation) {
		d = h->depth;
		if (d > QPROF_SAMPLE_OPEN)
			d = QPROF_SAMPLE_OPEN;
		olen = (d * 8) & (QPROF_SAMPLE_OPEN * 8 * 2 - 1);
		if (olen > QPROF_SAMPLE_OPEN * 8)
			olen = QPROF_SAMPLE_OPEN * 8;
		off = (klen + ulen) & 2047;
		if (olen && bpf_probe_read_kernel((char *)s->ips + off, olen, h->open))
			olen = 0;
		/* the ring thread's open span, from the same header: this
		 * sample interrupted the thread itself, which writes the id
		 * before the site and clears the site first */
		if (h->span_site) {
			s->span_site = h->span_site;
			s->span_id = h->span_id;
		}
	}
	s->open_len = olen;
	PH(10);
	/* the stack copy after the used ips and the open scopes: each length
	 * is at most STACK_BYTES, the scopes at most QPROF_SAMPLE_OPEN * 8 */
	if (copy) {
		__u32 coff = klen + ulen + olen;

		if (coff > 2 * STACK_BYTES + QPROF_SAMPLE_OPEN * 8)
			coff = 2 * STACK_BYTES + QPROF_SAMPLE_OPEN * 8;
		clen = copy_user_stack(s, (__u8 *)s->ips + coff);
		if (!clen) {
			s->copy_fail = 1;
			pcount(QPROF_PCNT_COPY_FAIL);
		} else if (clen < QPROF_USTACK_BYTES) {
			pcount(QPROF_PCNT_COPY_SHORT);
		}
	}
	s->copy_len = clen;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	PH(11);
	size = __builtin_offsetof(struct cpu_sample, ips) + klen + ulen + olen + clen;
	if (size > sizeof(*s))
		size = sizeof(*s);
	if (bpf_ringbuf_output(&cpu_ring, s, size, BPF_RB_NO_WAKEUP)) {
		pcount(QPROF_PCNT_LOST_RING);
		return 0;
	}
	pcount(QPROF_PCNT_SAMPLES);
	PH(7);
	PH_COUNT(8);
	return 0;
}

#include "offcpu.bpf.h"

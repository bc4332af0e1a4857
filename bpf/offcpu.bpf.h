/* offcpu.bpf.h - kernel events of target threads, part of profile.bpf.c
 * (it shares cpu_targets and the scopes object's thread_stacks:
 * sampler.bpf.h). At a
 * switch-out of a target thread: the reason, both stacks and the innermost
 * open scopes go into the thread's off_state; at its switch-in the interval
 * goes to off_ring as one record (offcpu.h) and its length to the kernel
 * figures of the innermost open block scope (scope_kstats), as do the
 * switch itself, migrations, user page faults and irq/softirq time run on
 * the thread's time. The innermost open scope is the BPF collector's
 * (thread_stacks) or, for a ring target's thread, the one its ring header
 * lists (ring_innermost). A ring target's thread also sends each user page
 * fault and irq run inside its open scopes to kev_ring, and an interval
 * carries the migrations made while it lasted: the daemon counts them in
 * the ring collector's slow instances. Threads of other processes pay one
 * hash lookup per switch-out, page fault, migration and irq, and one
 * task-storage lookup per switch-in. */
#ifndef QPROF_OFFCPU_BPF_H
#define QPROF_OFFCPU_BPF_H
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "offcpu.h"
#include "ringreg.h"
#include "scopes.h"
#include "sampler.bpf.h"
#include "cfiwalk.bpf.h"

struct off_thread {
	struct offcpu_record rec;	/* rec.ts_out != 0 while off the CPU */
	__u64 site, parent;		/* innermost block scope at the switch-out, 0: none */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_thread);
} off_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, QPROF_OFF_RING_BYTES);
} off_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QPROF_KSTATS_MAX);
	__type(key, struct scope_key);
	__type(value, struct scope_kstats);
} scope_kstats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, QPROF_KEV_RING_BYTES);
} kev_ring SEC(".maps");

/* An irq (slot 0) or softirq (slot 1) running on a target thread's time. */
struct irq_mark {
	__u64 ts;		/* 0: none */
	__u64 site, parent;
	__u32 tgid;
	__u32 ring_tid;		/* a ring target's thread: its run goes to kev_ring; 0: not */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct irq_mark);
} irq_marks SEC(".maps");

static __always_inline bool is_target(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&cpu_targets, &tgid);
}

/* The scope stack of T with its innermost open block scope (site and
 * parent); NULL when no block scope is open. */
static __always_inline struct thread_stack *innermost(struct task_struct *t, __u64 *site, __u64 *parent)
{
	struct thread_stack *st = bpf_task_storage_get(&thread_stacks, t, 0, 0);
	__u32 d;

	if (!st || !st->depth)
		return NULL;
	d = st->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : st->depth;
	*site = st->f[(d - 1) & (QPROF_MAX_DEPTH - 1)].site;
	*parent = d > 1 ? st->f[(d - 2) & (QPROF_MAX_DEPTH - 1)].site : 0;
	return st;
}

/* The first 40 bytes of a ring header (struct ring_hdr), up to depth. */
struct ring_top {
	__u32 magic;
	__u16 version, rec_size;
	__u32 nrec, flags;
	__u64 head, generation;
	__u32 tid, depth;
};

/* The innermost open scope (site and parent) of TID, the current thread,
 * when it is a ring target's thread: from the header of the ring it
 * announced (ring_tids), while it still owns that ring, as the CPU sampler
 * reads it. false: no ring, no open scope, or deeper than the header keeps
 * (QPROF_SAMPLE_OPEN). The site and parent are those of the ring
 * collector's row key (ring_pair.c): open[depth - 1] and open[depth - 2].
 * With REC, every open scope also goes into REC's ips at byte OFF (after
 * its stacks) and REC->open_len says how many bytes. Returns the depth, 0:
 * none. */
static __always_inline __u32 ring_open(__u32 tid, __u64 *site, __u64 *parent, struct offcpu_record *rec,
					__u32 off)
{
	struct ring_tid *rt = bpf_map_lookup_elem(&ring_tids, &tid);
	struct ring_top h;
	__u64 two[2], at;
	__u32 d, olen;

	if (!rt || bpf_probe_read_user(&h, sizeof(h), (void *)rt->addr) || h.magic != RING_MAGIC ||
	    h.version < 2 || h.generation != rt->generation)
		return 0;
	d = h.depth;
	if (!d || d > QPROF_SAMPLE_OPEN)
		return 0;
	at = rt->addr + __builtin_offsetof(struct ring_hdr, open);
	if (d == 1) {
		if (bpf_probe_read_user(&two[1], 8, (void *)at))
			return 0;
		two[0] = 0;
	} else if (bpf_probe_read_user(two, 16, (void *)(at + (__u64)(d - 2) * 8))) {
		return 0;
	}
	if (!two[1])
		return 0;
	*site = two[1];
	*parent = two[0];
	if (rec) {
		/* every open scope after the stacks, as the CPU sampler does */
		olen = (d * 8) & (QPROF_SAMPLE_OPEN * 8 * 2 - 1);
		if (olen > QPROF_SAMPLE_OPEN * 8)
			olen = QPROF_SAMPLE_OPEN * 8;
		off &= 2047;
		if (olen && !bpf_probe_read_user((char *)rec->ips + off, olen, (void *)at))
			rec->open_len = olen;
	}
	return d;
}

/* The span open on ring thread TID, the current thread (its ring header's
 * span_site and span_id, while it still owns that ring, as the CPU sampler
 * reads them): the site, 0 when none; *ID its id. */
static __always_inline __u64 ring_span(__u32 tid, __u64 *id)
{
	struct ring_tid *rt = bpf_map_lookup_elem(&ring_tids, &tid);
	struct ring_top h;
	__u64 two[2];

	if (!rt || bpf_probe_read_user(&h, sizeof(h), (void *)rt->addr) || h.magic != RING_MAGIC ||
	    h.version < 2 || h.generation != rt->generation)
		return 0;
	if (bpf_probe_read_user(two, sizeof(two), (void *)(rt->addr + __builtin_offsetof(struct ring_hdr, span_site))))
		return 0;
	*id = two[0] ? two[1] : 0;
	return two[0];
}

static __always_inline bool ring_innermost(__u32 tid, __u64 *site, __u64 *parent)
{
	return ring_open(tid, site, parent, NULL, 0) != 0;
}

/* One fault or irq run of ring thread TID into kev_ring. */
static __always_inline void kev_send(__u32 tgid, __u32 tid, __u32 kind, __u64 ts, __u64 ns)
{
	struct kev_record r = {
		.ts = ts, .tgid = tgid, .tid = tid, .kind = kind, .ns = ns > 0xffffffffull ? 0xffffffffu : (__u32)ns,
	};

	if (bpf_ringbuf_output(&kev_ring, &r, sizeof(r), BPF_RB_NO_WAKEUP))
		pcount(QPROF_PCNT_KEV_LOST);
}

/* The kernel figures of (TGID, SITE, PARENT), made at first use. */
static __always_inline struct scope_kstats *kstats_of(__u32 tgid, __u64 site, __u64 parent)
{
	struct scope_key k = { .tgid = tgid, .site = site, .parent = parent };
	struct scope_kstats zero = { 0 }, *s;

	s = bpf_map_lookup_elem(&scope_kstats, &k);
	if (s)
		return s;
	bpf_map_update_elem(&scope_kstats, &k, &zero, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&scope_kstats, &k);
	if (!s)
		pcount(QPROF_PCNT_KSTATS_FULL);
	return s;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt,
				       unsigned int prev_state, __u64 now)
{
	struct thread_stack *st;
	struct scope_kstats *k;
	struct off_thread *o;
	struct cfi_walk_out *wo;
	__u32 klen, ulen = 0, nw, tgid = prev->tgid;
	__u8 *mode, walk = QPROF_WALK_NONE;
	bool voluntary;

	o = bpf_task_storage_get(&off_state, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!o) {
		pcount(QPROF_PCNT_OFF_NO_STATE);
		return;
	}
	/* what /proc counts in voluntary_ctxt_switches: asleep and not preempted */
	voluntary = !preempt && prev_state;
	o->rec.tgid = prev->tgid;
	o->rec.tid = prev->pid;
	o->rec.reason = voluntary ? QPROF_OFF_BLOCKED : QPROF_OFF_PREEMPTED;
	o->rec.open_len = 0;
	o->rec.migrations = 0;
	o->rec.ts_wake = 0;
	o->rec.ts_in = 0;
	klen = stack_len(bpf_get_stack(ctx, o->rec.ips, STACK_BYTES, 0));
	o->rec.kern_len = klen;
	/* prev is the current task: its user registers are those saved at
	 * its entry to the kernel, its memory the one bpf_probe_read_user
	 * reads. Walked by the CFI tables when its are loaded; else (a rule
	 * or a file the tables lack) by frame pointers, as before */
	mode = bpf_map_lookup_elem(&cpu_targets, &tgid);
	if (mode && (*mode & QPROF_CPU_WALK)) {
		walk = cfi_walk(prev, tgid, (struct pt_regs *)bpf_task_pt_regs(prev), QPROF_CFI_USER_OFF, &wo, &nw);
		if (QPROF_WALK_KEPT(walk) && wo && nw) {
			ulen = (nw * 8) & (STACK_BYTES | (STACK_BYTES - 1));
			if (ulen > STACK_BYTES)
				ulen = STACK_BYTES;
			if (bpf_probe_read_kernel((char *)o->rec.ips + (klen & (STACK_BYTES | (STACK_BYTES - 1))),
						  ulen, wo->ips))
				ulen = 0;
		}
		if (QPROF_WALK_KEPT(walk) && !ulen)
			walk = QPROF_WALK_BAD;
	}
	if (!ulen)
		ulen = stack_len(bpf_get_stack(ctx, (char *)o->rec.ips + klen, STACK_BYTES, BPF_F_USER_STACK));
	o->rec.user_len = ulen;
	o->rec.walk = walk;
	st = bpf_task_storage_get(&thread_stacks, prev, 0, 0);
	fill_scopes(o->rec.scopes, st);
	bpf_get_current_comm(o->rec.comm, sizeof(o->rec.comm));
	/* the span open on the thread: the BPF collector's, else its ring's */
	o->rec.span_site = st ? st->span_site : 0;
	o->rec.span_id = st && st->span_site ? st->span_id : 0;
	if (!o->rec.span_site)
		o->rec.span_site = ring_span(prev->pid, &o->rec.span_id);
	o->site = o->parent = 0;
	/* prev is still the current task here: its ring header is readable */
	if (innermost(prev, &o->site, &o->parent) ||
	    ring_open(prev->pid, &o->site, &o->parent, &o->rec, klen + o->rec.user_len)) {
		k = kstats_of(o->rec.tgid, o->site, o->parent);
		if (k) {
			if (voluntary)
				__sync_fetch_and_add(&k->voluntary, 1);
			else
				__sync_fetch_and_add(&k->involuntary, 1);
		}
	}
	o->rec.ts_out = now;
}

static __always_inline void switch_in(struct task_struct *next, struct off_thread *o, __u64 now)
{
	struct scope_kstats *k;
	__u64 size;

	if (!is_target(next->tgid)) {	/* detached meanwhile */
		o->rec.ts_out = 0;
		return;
	}
	o->rec.ts_in = now;
	if (o->site) {
		k = kstats_of(o->rec.tgid, o->site, o->parent);
		if (k)
			__sync_fetch_and_add(&k->off_cpu_ns, now - o->rec.ts_out);
	}
	/* lengths read back from the map: bounded again for the verifier, in
	 * 64 bits (a 32-bit compare loses the bound at the zero extension) */
	size = (__u64)o->rec.kern_len + o->rec.user_len;
	if (size > 2 * STACK_BYTES)
		size = 2 * STACK_BYTES;
	size += o->rec.open_len > QPROF_SAMPLE_OPEN * 8 ? QPROF_SAMPLE_OPEN * 8 : o->rec.open_len;
	size += __builtin_offsetof(struct offcpu_record, ips);
	if (bpf_ringbuf_output(&off_ring, &o->rec, size, BPF_RB_NO_WAKEUP))
		pcount(QPROF_PCNT_OFF_LOST_RING);
	else
		pcount(QPROF_PCNT_OFF_RECORDS);
	o->rec.ts_out = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(off_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct off_thread *o;

	if (is_target(prev->tgid))
		switch_out(ctx, prev, preempt, prev_state, now);
	o = bpf_task_storage_get(&off_state, next, 0, 0);
	if (o && o->rec.ts_out)
		switch_in(next, o, now);
	return 0;
}

/* A blocked thread made runnable: from here it waits for a CPU. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(off_wakeup, struct task_struct *p)
{
	struct off_thread *o = bpf_task_storage_get(&off_state, p, 0, 0);

	if (o && o->rec.ts_out && o->rec.reason == QPROF_OFF_BLOCKED && !o->rec.ts_wake)
		o->rec.ts_wake = bpf_ktime_get_ns();
	return 0;
}

/* Fires for every set_task_cpu(); the kernel counts a migration (perf's
 * cpu-migrations, se.nr_migrations) only when the CPU changes. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(off_migrate, struct task_struct *p, int dest_cpu)
{
	struct thread_stack *st;
	struct scope_kstats *k;
	struct off_thread *o;
	__u64 site, parent;

	if (p->thread_info.cpu == (__u32)dest_cpu || !is_target(p->tgid))
		return 0;
	/* on the interval it happens in: a slow instance of the ring counts it */
	o = bpf_task_storage_get(&off_state, p, 0, 0);
	if (o && o->rec.ts_out)
		o->rec.migrations++;	/* not running: its switch-in cannot race */
	st = innermost(p, &site, &parent);
	if (st) {
		st->migrations++;	/* the thread is not running: no other writer */
	} else {
		/* a ring target's thread, whose memory cannot be read from
		 * here: a task is migrated only while off the CPU, so the
		 * scope it was switched out in is still its innermost */
		if (!o || !o->rec.ts_out || !o->site)
			return 0;
		site = o->site;
		parent = o->parent;
	}
	k = kstats_of(p->tgid, site, parent);
	if (k)
		__sync_fetch_and_add(&k->migrations, 1);
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(off_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct thread_stack *st;
	struct scope_kstats *k;
	__u64 site, parent;

	if (!is_target(tgid))
		return 0;
	st = innermost(bpf_get_current_task_btf(), &site, &parent);
	if (st)
		st->page_faults++;
	else if (ring_innermost((__u32)id, &site, &parent))
		kev_send(tgid, (__u32)id, QPROF_KEV_FAULT, bpf_ktime_get_ns(), 0);
	else
		return 0;
	k = kstats_of(tgid, site, parent);
	if (k)
		__sync_fetch_and_add(&k->page_faults, 1);
	return 0;
}

static __always_inline void irq_enter(__u32 slot)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct irq_mark *m = bpf_map_lookup_elem(&irq_marks, &slot);

	if (!m)
		return;
	m->ts = 0;
	if (!is_target(tgid))
		return;
	m->ring_tid = 0;
	if (!innermost(bpf_get_current_task_btf(), &m->site, &m->parent)) {
		if (!ring_innermost((__u32)id, &m->site, &m->parent))
			return;
		m->ring_tid = (__u32)id;
	}
	m->tgid = tgid;
	m->ts = bpf_ktime_get_ns();
}

static __always_inline void irq_leave(__u32 slot)
{
	struct irq_mark *m = bpf_map_lookup_elem(&irq_marks, &slot), *soft;
	struct thread_stack *st;
	struct scope_kstats *k;
	__u32 one = 1;
	__u64 d, now;

	if (!m || !m->ts)
		return;
	now = bpf_ktime_get_ns();
	d = now - m->ts;
	m->ts = 0;
	if (m->ring_tid)
		kev_send(m->tgid, m->ring_tid, QPROF_KEV_IRQ, now, d);
	st = bpf_task_storage_get(&thread_stacks, bpf_get_current_task_btf(), 0, 0);
	if (st)
		st->irq_ns += d;
	k = kstats_of(m->tgid, m->site, m->parent);
	if (k)
		__sync_fetch_and_add(&k->irq_ns, d);
	/* a hardirq inside a softirq: not counted twice */
	if (!slot) {
		soft = bpf_map_lookup_elem(&irq_marks, &one);
		if (soft && soft->ts)
			soft->ts += d;
	}
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(off_irq_entry, int irq, struct irqaction *action)
{
	irq_enter(0);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(off_irq_exit, int irq, struct irqaction *action, int ret)
{
	irq_leave(0);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(off_softirq_entry, unsigned int vec)
{
	irq_enter(1);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(off_softirq_exit, unsigned int vec)
{
	irq_leave(1);
	return 0;
}
#endif

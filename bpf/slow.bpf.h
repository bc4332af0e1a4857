/* slow.bpf.h - the slow instances of the scope programs (scopes.h, struct
 * slow_record): a scope exit that reaches its scope's threshold sends one
 * record to slow_rb while the daemon reads them (slow_active). */
#ifndef QPROF_SLOW_BPF_H
#define QPROF_SLOW_BPF_H

#include "scope_maps.bpf.h"

/* Slow instances (scopes.h): set by the daemon once it reads slow_rb. */
volatile __u32 slow_active = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, QPROF_SLOW_RB_BYTES);
} slow_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QPROF_SLOW_KEYS);
	__type(key, struct mark_key);
	__type(value, __u64);
} slow_min SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, QPROF_SLOW_FLOOR_SLOTS);
	__type(key, __u32);
	__type(value, struct slow_floor);
} slow_floor SEC(".maps");

/* 1 when KEY owns its slot: *MIN is then its threshold. The loads in
 * order (volatile) between two reads of seq: x86 keeps loads in order, as
 * it keeps the daemon's stores (collect_slow.c). Elsewhere: 0, the hash. */
static __always_inline int slow_floor_of(__u32 tgid, __u64 site, __u64 *min)
{
#if defined(__TARGET_ARCH_x86)
	__u32 slot = qprof_slow_slot(tgid, site), s1, s2;
	struct slow_floor *f = bpf_map_lookup_elem(&slow_floor, &slot);
	__u64 fsite, m;
	__u32 ftgid;

	if (!f)
		return 0;
	s1 = *(volatile __u32 *)&f->seq;
	ftgid = *(volatile __u32 *)&f->tgid;
	fsite = *(volatile __u64 *)&f->site;
	m = *(volatile __u64 *)&f->min_ns;
	s2 = *(volatile __u32 *)&f->seq;
	if ((s1 & 1) || s1 != s2 || ftgid != tgid || fsite != site)
		return 0;
	*min = m;
	return 1;
#else
	return 0;
#endif
}

/* Frame J of ST just ended at NOW, DUR long: a record when it reaches its
 * scope's threshold. */
static __always_inline void slow_emit(struct thread_stack *st, __u32 j, __u32 tgid, __u64 now, __u64 dur)
{
	struct mark_key k = { .tgid = tgid };
	struct scope_frame *f = &st->f[j & (QPROF_MAX_DEPTH - 1)];
	struct slow_record *r;
	__u64 *min, fl;

	k.site = f->site;
	if (slow_floor_of(tgid, k.site, &fl)) {
		if (dur < fl)
			return;
	} else {
		min = bpf_map_lookup_elem(&slow_min, &k);
		if (min && dur < *min)
			return;
	}
	r = bpf_ringbuf_reserve(&slow_rb, sizeof(*r), 0);
	if (!r) {
		count(QPROF_CNT_SLOW_LOST, 1);
		return;
	}
	r->tgid = tgid;
	r->tid = (__u32)bpf_get_current_pid_tgid();
	r->site = f->site;
	r->parent = j ? st->f[(j - 1) & (QPROF_MAX_DEPTH - 1)].site : 0;
	r->begin_ns = f->ts;
	r->end_ns = now;
	r->dur_ns = dur;
	r->migrations = st->migrations - f->migrations;
	r->page_faults = st->page_faults - f->page_faults;
	r->irq_ns = st->irq_ns - f->irq_ns;
	r->flags = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}
#endif

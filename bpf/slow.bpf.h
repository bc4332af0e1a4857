/* slow.bpf.h - the slow-instance side of scopes.bpf.c (scopes.h, struct
 * slow_record): a scope exit that reaches its scope's threshold sends one
 * record to slow_rb while the daemon reads them (slow_active). */
#ifndef QPROF_SLOW_BPF_H
#define QPROF_SLOW_BPF_H

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

/* Frame J of ST just ended at NOW, DUR long: a record when it reaches its
 * scope's threshold. */
static __always_inline void slow_emit(struct thread_stack *st, __u32 j, __u32 tgid, __u64 now, __u64 dur)
{
	struct mark_key k = { .tgid = tgid };
	struct scope_frame *f = &st->f[j & (QPROF_MAX_DEPTH - 1)];
	struct slow_record *r;
	__u64 *min;

	k.site = f->site;
	min = bpf_map_lookup_elem(&slow_min, &k);
	if (min && dur < *min)
		return;
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

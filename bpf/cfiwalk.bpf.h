/* cfiwalk.bpf.h - the in-kernel CFI walker: a user stack walked from a
 * task's user registers by the compiled CFI tables qprofd loads (cfiwalk.h,
 * daemon/collect/cfi_bpf.c), emitting return addresses only. It is the
 * port of daemon/collect/cfi_walk.c (checked there against libdwfl) to the
 * verifier's terms: one frame per bpf_loop iteration (QPROF_STACK_DEPTH at
 * most), the mapping search and the row search bounded loops of constant
 * length over map lookups (every index checked by the map itself, so a
 * table loaded wrong gives a wrong stack, never a bad access), every stack
 * word read with bpf_probe_read_user. A walk that meets a rule the tables
 * do not hold, or a pc in no table, says so (cfi_walk_end) and the caller
 * keeps its other path (the stack copy for libdwfl). Included by the
 * programs that walk (profile.bpf.c, heap.bpf.c); qprofd shares the maps
 * between them (cfi_out, the walk's state, is each object's own). */
#ifndef QPROF_UNWIND_BPF_IMPL_H
#define QPROF_UNWIND_BPF_IMPL_H
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "cfiwalk.h"
#include "profile.h"	/* QPROF_STACK_DEPTH */

/* every table's rows; sized by qprofd before load, mapped by it (rows are
 * written in place, then the file entry that points at them) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, QPROF_CFI_ROWS_DEFAULT);
	__type(key, __u32);
	__type(value, struct cfi_krow);
} cfi_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QPROF_CFI_FILES);
	__type(key, __u32);
	__type(value, struct cfi_kfile);
} cfi_files SEC(".maps");

/* a process's mappings, replaced whole by qprofd (a reader sees the old
 * value or the new one) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, QPROF_CFI_PROCS);
	__type(key, __u32);
	__type(value, struct cfi_kproc);
} cfi_procs SEC(".maps");

#define QPROF_CFI_USERS 4	/* who walked: 0 CPU samples, 1 off-CPU, 2 heap, 3 threads */
#define QPROF_CFI_USER_CPU 0
#define QPROF_CFI_USER_OFF 1
#define QPROF_CFI_USER_HEAP 2

/* walks by who walked and how they ended (user * 16 + end), and the
 * frames they gave: read by qprofd for status */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QPROF_CFI_USERS * 16 + QPROF_CFI_USERS);
	__type(key, __u32);
	__type(value, __u64);
} cfi_counts SEC(".maps");

/* The walk's state and its frames: kept in a map value, not on the stack,
 * so that the verifier sees the same unknown values at every iteration of
 * the frame loop (the loop's states converge at once instead of once per
 * frame). */
struct cfi_walk_out {
	__u64 pc, sp, bp, last_sp;
	__u32 n;
	__u8 bp_set, exact, end, pad;
	__u32 zero;	/* always 0: a start the verifier cannot tell (see the searches) */
	__u32 pad2;
	__u64 ips[QPROF_STACK_DEPTH + 1];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfi_walk_out);
} cfi_out SEC(".maps");

struct cfi_walk_ctx {
	struct cfi_kproc *proc;
};

static __always_inline int cfi_stop(struct cfi_walk_out *w, __u8 end)
{
	w->end = end;
	return 1;
}

/* One frame: emit pc, find its rule, step to the caller. 0: go on. */
static long cfi_step(__u32 i, void *arg)
{
	struct cfi_kproc *p = ((struct cfi_walk_ctx *)arg)->proc;
	struct cfi_walk_out *w;
	struct cfi_kfile *f;
	struct cfi_krow *r;
	struct cfi_kmap *m;
	__u64 addr, vaddr, cfa, ra = 0, bp = 0;
	__u32 lo, hi, mid, k, np, key = 0, rel;
	__u8 kind;

	(void)i;
	w = bpf_map_lookup_elem(&cfi_out, &key);
	if (!w)
		return 1;
	if (!p)
		return cfi_stop(w, QPROF_WALK_BAD);
	if (!w->pc)
		return cfi_stop(w, w->n ? QPROF_WALK_COMPLETE : QPROF_WALK_BAD);
	if (w->n && w->sp <= w->last_sp)
		return cfi_stop(w, QPROF_WALK_LOOP);
	w->last_sp = w->sp;
	if (w->n >= QPROF_STACK_DEPTH)
		return cfi_stop(w, QPROF_WALK_DEPTH);
	w->ips[w->n & QPROF_STACK_DEPTH] = w->pc;
	w->n++;

	/* a return address is after its call: look up the call */
	addr = w->exact ? w->pc : w->pc - 1;
	np = p->n;
	if (np > QPROF_CFI_MAPS)
		np = QPROF_CFI_MAPS;
	if (!np || addr < p->map[0].start)
		return cfi_stop(w, QPROF_WALK_NOMAP);
	/* lo starts at 0 read from the map value: an unknown value to the
	 * verifier, so that the halvings' indexes stay ranges and its states
	 * merge (from a constant 0 it would follow every index apart) */
	lo = w->zero;
	hi = np;	/* map[lo].start <= addr < map[hi].start */
	for (k = 0; k < QPROF_CFI_MAP_STEPS; k++) {
		if (hi - lo <= 1)
			break;
		mid = lo + (hi - lo) / 2;
		if (p->map[mid & (QPROF_CFI_MAPS - 1)].start <= addr)
			lo = mid;
		else
			hi = mid;
	}
	m = &p->map[lo & (QPROF_CFI_MAPS - 1)];
	if (hi - lo != 1 || addr >= m->end)
		return cfi_stop(w, QPROF_WALK_NOMAP);
	key = m->file;
	f = bpf_map_lookup_elem(&cfi_files, &key);
	if (!f || !f->nrows)
		return cfi_stop(w, QPROF_WALK_NOTABLE);
	vaddr = addr - m->bias;
	if (vaddr < f->base || vaddr - f->base >= f->span)
		return cfi_stop(w, QPROF_WALK_NOCFI);
	rel = (__u32)(vaddr - f->base);
	lo = w->zero;
	hi = f->nrows;	/* rows[lo].addr <= rel < rows[hi].addr */
	for (k = 0; k < QPROF_CFI_ROW_STEPS; k++) {
		if (hi - lo <= 1)
			break;
		mid = lo + (hi - lo) / 2;
		key = f->first + mid;
		r = bpf_map_lookup_elem(&cfi_rows, &key);
		if (!r)
			return cfi_stop(w, QPROF_WALK_NOTABLE);
		if (r->addr <= rel)
			lo = mid;
		else
			hi = mid;
	}
	if (hi - lo != 1)
		return cfi_stop(w, QPROF_WALK_NOCFI);
	key = f->first + lo;
	r = bpf_map_lookup_elem(&cfi_rows, &key);
	if (!r)
		return cfi_stop(w, QPROF_WALK_NOTABLE);
	kind = r->kind & 0x0f;
	switch (kind) {
	case QPROF_CFI_K_OUTERMOST:
		return cfi_stop(w, QPROF_WALK_COMPLETE);
	case QPROF_CFI_K_SIGNAL:
		/* the ucontext at rsp: every register from its sigcontext */
		if (bpf_probe_read_user(&cfa, 8, (void *)(w->sp + QPROF_CFI_SIG_RSP)) ||
		    bpf_probe_read_user(&ra, 8, (void *)(w->sp + QPROF_CFI_SIG_RIP)) || !ra)
			return cfi_stop(w, QPROF_WALK_COMPLETE);
		w->bp_set = !bpf_probe_read_user(&bp, 8, (void *)(w->sp + QPROF_CFI_SIG_RBP));
		w->bp = bp;
		w->sp = cfa;
		w->pc = ra;
		w->exact = 1;	/* the interrupted pc itself, not a return address */
		return 0;
	case QPROF_CFI_K_CFA_SP:
		cfa = w->sp + r->cfa_off;
		break;
	case QPROF_CFI_K_CFA_BP:
		if (!w->bp_set)
			return cfi_stop(w, QPROF_WALK_COMPLETE);
		cfa = w->bp + r->cfa_off;
		break;
	case QPROF_CFI_K_PLT:
		/* past the push of the entry's index, 8 more bytes */
		cfa = w->sp + 8 + ((__s64)(w->pc & 15) >= r->bp_off ? 8 : 0);
		break;
	case QPROF_CFI_K_TRAMP:
		/* the return address is the highest of the four words at sp
		 * that returns right after a call (e8 rel32) to this page's
		 * entry: what the trampoline pushed lies below it */
		cfa = 0;
		for (k = 4; k > 0; k--) {
			__u64 at = w->sp + (__u64)(k - 1) * 8, call = 0;

			if (!bpf_probe_read_user(&ra, 8, (void *)at) && ra > 5 &&
			    !bpf_probe_read_user(&call, 8, (void *)(ra - 5)) && (call & 0xff) == 0xe8 &&
			    ra + (__s64)(__s32)(call >> 8) == m->start) {
				cfa = at + 8;
				break;
			}
		}
		if (!cfa)
			return cfi_stop(w, QPROF_WALK_FALLBACK);
		break;
	case QPROF_CFI_K_NONE:
		return cfi_stop(w, QPROF_WALK_NOCFI);
	default:
		return cfi_stop(w, QPROF_WALK_FALLBACK);
	}
	if (bpf_probe_read_user(&ra, 8, (void *)(cfa - 8)) || !ra)
		return cfi_stop(w, QPROF_WALK_COMPLETE);
	switch ((r->kind >> 4) & 3) {
	case QPROF_CFI_BP_AT:
		w->bp_set = !bpf_probe_read_user(&bp, 8, (void *)(cfa + (__s64)r->bp_off * 8));
		w->bp = bp;
		break;
	case QPROF_CFI_BP_SAME:
		break;
	default:
		w->bp_set = 0;
	}
	w->sp = cfa;
	w->pc = ra;
	w->exact = 0;
	return 0;
}

static __always_inline void cfi_count(__u32 k)
{
	__u64 *c = bpf_map_lookup_elem(&cfi_counts, &k);

	if (c)
		*c += 1;
}

/* Walks TGID's user stack from R (its user registers) into cfi_out; the
 * frames in *N, the end returned (counted under USER). */
static __always_inline __u8 cfi_walk(struct task_struct *task, __u32 tgid, struct pt_regs *r, __u32 user,
				     struct cfi_walk_out **out, __u32 *n)
{
	struct cfi_walk_ctx c = {};
	struct cfi_walk_out *w;
	struct mm_struct *mm;
	__u32 zero = 0;
	__u8 end;

	*n = 0;
	*out = w = bpf_map_lookup_elem(&cfi_out, &zero);
	if (!w)
		return QPROF_WALK_BAD;
	w->n = 0;
	w->zero = 0;
	w->end = QPROF_WALK_DEPTH;
	c.proc = bpf_map_lookup_elem(&cfi_procs, &tgid);
	if (!r) {
		w->end = QPROF_WALK_BAD;
	} else if (!c.proc) {
		w->end = QPROF_WALK_NOPROC;
	} else {
		mm = task->mm;
		if (!mm || mm->start_stack != c.proc->start_stack || mm->end_code != c.proc->end_code) {
			w->end = QPROF_WALK_STALE;
		} else {
			w->pc = r->ip;
			w->sp = r->sp;
			w->bp = r->bp;
			w->last_sp = 0;
			w->bp_set = 1;
			w->exact = 1;
			bpf_loop(QPROF_STACK_DEPTH + 1, cfi_step, &c, 0);
		}
	}
	end = w->end;
	cfi_count((user & (QPROF_CFI_USERS - 1)) * 16 + (end & 15));
	*n = w->n > QPROF_STACK_DEPTH ? QPROF_STACK_DEPTH : w->n;
	if (QPROF_WALK_KEPT(end)) {
		__u32 k = QPROF_CFI_USERS * 16 + (user & (QPROF_CFI_USERS - 1));
		__u64 *cnt = bpf_map_lookup_elem(&cfi_counts, &k);

		if (cnt)
			*cnt += *n;
	}
	return end;
}
#endif

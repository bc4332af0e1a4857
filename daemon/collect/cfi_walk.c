/* cfi_walk.c - the bounded walk over compiled CFI tables (cfi_walk.h).
 * Each loop has a constant bound and each memory access is either a table
 * row found by a bounded search or a stack word through the callback, so
 * that a BPF port keeps the same shape: the frame loop (bpf_loop or an
 * unrolled bound), the two searches (bounded halvings), bpf_probe_read_user
 * for READ. */
#include "cfi_walk.h"

const struct qp_cfi_map *qp_cfi_space_find(const struct qp_cfi_space *s, uint64_t addr)
{
	uint32_t lo = 0, hi = s->n < QP_CFI_MAPS_MAX ? s->n : QP_CFI_MAPS_MAX;
	int k;

	if (!hi || addr < s->map[0].start)
		return NULL;
	/* map[lo].start <= addr < map[hi].start */
	for (k = 0; k < QP_CFI_MAP_STEPS && hi - lo > 1; k++) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->map[mid].start <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (hi - lo != 1 || addr >= s->map[lo].end)
		return NULL;
	return &s->map[lo];
}

enum qp_cfi_end qp_cfi_walk(const struct qp_cfi_space *s, const struct qp_cfi_regs *regs, qp_cfi_read_fn read,
			    void *ctx, uint64_t *ips, size_t max, size_t *n, uint8_t *why)
{
	uint64_t pc = regs->pc, sp = regs->sp, bp = regs->bp, last_sp = 0;
	bool sp_set = regs->sp_known, bp_set = regs->bp_known, exact = true;
	int frame;

	*n = 0;
	if (max > QP_CFI_WALK_FRAMES)
		max = QP_CFI_WALK_FRAMES;
	for (frame = 0; frame <= QP_CFI_WALK_FRAMES; frame++) {
		const struct qp_cfi_map *m;
		const struct qp_cfi_row *r;
		uint64_t addr, cfa = 0, ra;
		bool cfa_ok;
		uint8_t kind;

		if (!pc)
			return QP_CFI_END_BAD;
		if (sp_set) {
			if (*n && sp <= last_sp)
				return QP_CFI_END_LOOP;
			last_sp = sp;
		}
		if (*n >= max)
			return QP_CFI_END_DEPTH;
		ips[(*n)++] = pc;

		/* a return address is after its call: look up the call */
		addr = exact ? pc : pc - 1;
		m = qp_cfi_space_find(s, addr);
		if (!m)
			return QP_CFI_END_NOMAP;
		r = m->t ? qp_cfi_lookup(m->t, addr - m->bias) : NULL;
		kind = r ? QP_CFI_KIND(r->kind) : QP_CFI_NONE;
		switch (kind) {
		case QP_CFI_OUTERMOST:
			return QP_CFI_END_COMPLETE;
		case QP_CFI_SIGNAL:
			/* the ucontext at rsp: every register from its sigcontext */
			if (!sp_set || !read(ctx, sp + QP_CFI_SIG_RSP, &cfa))
				return QP_CFI_END_COMPLETE;
			if (!read(ctx, sp + QP_CFI_SIG_RIP, &ra) || !ra)
				return QP_CFI_END_COMPLETE;
			bp_set = read(ctx, sp + QP_CFI_SIG_RBP, &bp);
			sp = cfa;
			pc = ra;
			exact = true;	/* the interrupted pc itself, not a return address */
			continue;
		case QP_CFI_CFA_SP:
			cfa_ok = sp_set;
			cfa = sp + r->cfa_off;
			break;
		case QP_CFI_CFA_BP:
			cfa_ok = bp_set;
			cfa = bp + r->cfa_off;
			break;
		case QP_CFI_PLT:
			/* past the push of the entry's index, 8 more bytes */
			cfa_ok = sp_set;
			cfa = sp + 8 + ((int64_t)(pc & 15) >= r->bp_off ? 8 : 0);
			break;
		default:
			if (why)
				*why = kind;
			return QP_CFI_END_FALLBACK;
		}
		if (!cfa_ok || !read(ctx, cfa - 8, &ra) || !ra)
			return QP_CFI_END_COMPLETE;
		switch (QP_CFI_BPRULE(r->kind)) {
		case QP_CFI_BP_AT:
			bp_set = read(ctx, cfa + (uint64_t)((int64_t)r->bp_off * 8), &bp);
			break;
		case QP_CFI_BP_SAME:
			break;
		default:
			bp_set = false;
		}
		sp = cfa;
		sp_set = true;
		pc = ra;
		exact = false;
	}
	return QP_CFI_END_DEPTH;
}

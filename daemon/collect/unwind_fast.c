/* unwind_fast.c - walks a stack copy by cached CFI rules (see unwind_fast.h).
 * A rule is asked of libdw once per address looked up (the sample's pc, a
 * caller's return address - 1) and kept in an open-addressing table. It is
 * kept by exact address, not for the whole row dwarf_frame_info gives: on
 * hostile CFI (a DW_CFA_set_loc that goes back, FDEs that overlap) a row's
 * range holds addresses libdw answers otherwise, and the results must stay
 * libdwfl's. Each step below names the libdwfl code it mirrors. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include "unwind_fast.h"

#define REG_BP 6
#define REG_SP 7
#define REG_IP 16
#define SLOTS_MIN 1024

/* a rule's kind, bits */
#define K_SLOW 0x01		/* libdwfl must do a sample that needs this address */
#define K_CFA_BP 0x02		/* CFA = rbp + cfa_off (else rsp + cfa_off) */
#define K_RA_UNDEF 0x04		/* return address undefined: the outermost frame */
#define K_BP_SAME 0x08		/* rbp: the callee's (else undefined, unless K_BP_AT) */
#define K_BP_AT 0x10		/* rbp saved at CFA + bp_off */

struct rule {
	uint64_t key;		/* the address + 1; 0: an empty slot */
	int32_t cfa_off, ra_off, bp_off;
	uint8_t kind;
};

struct qp_ufast {
	struct rule *slot;
	uint32_t nslots, used;
	unsigned int shift;	/* 64 - log2(nslots) */
};

void qp_ufast_free(struct qp_ufast *c)
{
	if (!c)
		return;
	free(c->slot);
	free(c);
}

static struct qp_ufast *cache_new(void)
{
	struct qp_ufast *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->slot = calloc(SLOTS_MIN, sizeof(*c->slot));
	if (!c->slot) {
		free(c);
		return NULL;
	}
	c->nslots = SLOTS_MIN;
	c->shift = 64 - 10;
	return c;
}

static inline uint32_t slot_of(const struct qp_ufast *c, uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> c->shift);
}

static struct rule *cache_find(struct qp_ufast *c, uint64_t key)
{
	uint32_t i = slot_of(c, key), mask = c->nslots - 1;

	while (c->slot[i].key) {
		if (c->slot[i].key == key)
			return &c->slot[i];
		i = (i + 1) & mask;
	}
	return NULL;
}

static void cache_put(struct qp_ufast *c, const struct rule *r, uint64_t *resets)
{
	uint32_t i, mask;

	if (c->used + 1 > c->nslots / 4 * 3) {
		struct rule *bigger = NULL, *old = c->slot;
		uint32_t n = c->nslots * 2, k;

		if (n <= QP_UFAST_SLOTS_MAX)
			bigger = calloc(n, sizeof(*bigger));
		if (!bigger) {
			/* full (or no memory to grow): start again, counted */
			memset(c->slot, 0, c->nslots * sizeof(*c->slot));
			c->used = 0;
			(*resets)++;
		} else {
			c->slot = bigger;
			c->nslots = n;
			c->shift--;
			c->used = 0;
			for (k = 0; k < n / 2; k++)
				if (old[k].key)
					cache_put(c, &old[k], resets);
			free(old);
		}
	}
	mask = c->nslots - 1;
	for (i = slot_of(c, r->key); c->slot[i].key; i = (i + 1) & mask)
		;
	c->slot[i] = *r;
	c->used++;
}

/* ---- reading a rule from libdw ----------------------------------------- */

static bool fits32(Dwarf_Word w, int32_t *out)
{
	int64_t v = (int64_t)w;

	if (v < INT32_MIN || v > INT32_MAX)
		return false;
	*out = (int32_t)v;
	return true;
}

/* dwarf_frame_register's ops for "at CFA + off" (a location: expr_eval
 * reads the word there), as reg_offset or an expression interned the same */
static bool cfa_location(const Dwarf_Op *ops, size_t nops, int32_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	return nops == 2 && ops[1].atom == DW_OP_plus_uconst && fits32(ops[1].number, off);
}

/* ... and "= CFA" (reg_val_offset 0: the ABI's rule for rsp) */
static bool cfa_value(const Dwarf_Op *ops, size_t nops)
{
	return nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_stack_value;
}

/* The rule at ADDR, as libdwfl's __libdwfl_frame_unwind finds it: the
 * module of ADDR, its .eh_frame CFI, the row for ADDR - bias. Where
 * libdwfl would go on to .debug_frame or its frame-pointer fallback, or
 * the rule is not one of the simple forms: K_SLOW. */
static void rule_read(Dwfl *dwfl, uint64_t addr, struct rule *r)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Op mem[3], *ops;
	Dwarf_Frame *fr = NULL;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias;
	size_t nops;
	bool signal = false;

	r->kind = K_SLOW;
	if (!mod)
		return;
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &fr) != 0)
		return;
	/* handle_cfi: the CIE's return address register must be rip */
	if (dwarf_frame_info(fr, NULL, NULL, &signal) != REG_IP || signal)
		goto out;
	/* the CFA: DW_OP_bregx REG OFF (execute_cfi's cfa_offset rule) */
	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != REG_SP && ops[0].number != REG_BP) || !fits32(ops[0].number2, &r->cfa_off))
		goto out;
	r->kind = ops[0].number == REG_BP ? K_CFA_BP : 0;
	/* rsp = CFA */
	if (dwarf_frame_register(fr, REG_SP, mem, &ops, &nops) || !cfa_value(ops, nops))
		goto slow;
	/* rip: undefined (the outermost frame) or at CFA + off */
	if (dwarf_frame_register(fr, REG_IP, mem, &ops, &nops))
		goto slow;
	if (nops == 0 && ops == mem)
		r->kind |= K_RA_UNDEF;
	else if (!cfa_location(ops, nops, &r->ra_off))
		goto slow;
	/* rbp: undefined, same value, or at CFA + off */
	if (dwarf_frame_register(fr, REG_BP, mem, &ops, &nops))
		goto slow;
	if (nops == 0 && !ops)
		r->kind |= K_BP_SAME;
	else if (nops == 0 && ops == mem)
		;	/* undefined */
	else if (cfa_location(ops, nops, &r->bp_off))
		r->kind |= K_BP_AT;
	else
		goto slow;
	goto out;
slow:
	r->kind = K_SLOW;
out:
	free(fr);
}

/* ---- the walk ------------------------------------------------------------ */

struct frame {
	uint64_t pc, sp, bp;
	bool sp_set, bp_set;	/* libdwfl's regs_set bits for rsp and rbp */
};

enum qp_ufast_end qp_ufast_walk(struct qp_ufast **cache, Dwfl *dwfl, const struct qp_unwind_in *in,
				uint64_t *ips, size_t max, size_t *n, uint64_t *resets)
{
	struct qp_ufast *c = *cache;
	struct frame f = {
		.pc = in->regs[REG_IP],
		.sp = in->regs[REG_SP],
		.bp = in->regs[REG_BP],
		/* unwind.c's set_initial_registers: all, or the known ones */
		.sp_set = !in->known || (in->known >> REG_SP & 1),
		.bp_set = !in->known || (in->known >> REG_BP & 1),
	};
	uint64_t last_sp = 0;
	bool initial = true;

	*n = 0;
	if (!c) {
		c = cache_new();
		if (!c)
			return QP_UFAST_SLOW;
		*cache = c;
	}
	for (;;) {
		const struct rule *r;
		struct rule fresh;
		uint64_t addr, cfa = 0, ra;
		bool cfa_ok;

		/* unwind.c's on_frame, in its order */
		if (!f.pc)
			return QP_UFAST_BAD;
		if (f.sp_set) {
			if (*n && f.sp <= last_sp)
				return QP_UFAST_LOOP;
			last_sp = f.sp;
		}
		if (*n == max)
			return QP_UFAST_DEPTH;
		ips[(*n)++] = f.pc;

		/* __libdwfl_frame_unwind: a caller's pc is a return address,
		 * its call is the byte before (no signal frames here) */
		addr = initial ? f.pc : f.pc - 1;
		r = cache_find(c, addr + 1);
		if (!r) {
			memset(&fresh, 0, sizeof(fresh));
			fresh.key = addr + 1;
			rule_read(dwfl, addr, &fresh);
			cache_put(c, &fresh, resets);
			r = &fresh;
		}
		if (r->kind & K_SLOW)
			return QP_UFAST_SLOW;

		/* handle_cfi: the CFA from the callee's register (unset: every
		 * rule through the CFA fails, the register stays unset) */
		if (r->kind & K_CFA_BP) {
			cfa_ok = f.bp_set;
			cfa = f.bp + (uint64_t)(int64_t)r->cfa_off;
		} else {
			cfa_ok = f.sp_set;
			cfa = f.sp + (uint64_t)(int64_t)r->cfa_off;
		}
		/* rip undefined, unreadable or 0: DWFL_FRAME_STATE_PC_UNDEFINED,
		 * the walk ends as complete */
		if ((r->kind & K_RA_UNDEF) || !cfa_ok ||
		    !qp_unwind_copy_read(in, cfa + (uint64_t)(int64_t)r->ra_off, &ra) || !ra)
			return QP_UFAST_COMPLETE;
		if (r->kind & K_BP_AT)
			f.bp_set = cfa_ok && qp_unwind_copy_read(in, cfa + (uint64_t)(int64_t)r->bp_off, &f.bp);
		else if (!(r->kind & K_BP_SAME))
			f.bp_set = false;
		f.sp = cfa;
		f.sp_set = cfa_ok;
		f.pc = ra;
		initial = false;
	}
}

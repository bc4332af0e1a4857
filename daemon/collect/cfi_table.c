/* cfi_table.c - compiles an ELF file's .eh_frame into a sorted table of
 * address ranges -> rule (see cfi_table.h), and the cache that shares
 * tables by file. FDEs are listed with dwarf_next_cfi (their initial
 * location decoded by the CIE's pointer encoding), sorted, and each is
 * asked of libdw row by row (dwarf_cfi_addrframe at the row's first byte,
 * dwarf_frame_info for where the row ends), the rule read the way
 * unwind_fast.c reads it, so a row means what libdwfl would do there. The
 * gaps between FDEs become NONE rows. Hostile input (an FDE whose range
 * wraps or leaves the span, rows that do not advance, a table too big) is
 * refused and counted, and every loop is bounded by the bytes or rows it
 * walks. The cache that shares tables by file is cfi_cache.c. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cfi_table.h"

#define REG_BP 6
#define REG_SP 7
#define REG_IP 16
#define ROWS_PER_FDE_MAX 65536	/* a hostile FDE of endless advance_loc 1 */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- listing the FDEs ---------------------------------------------------- */

struct fde_span {
	uint64_t lo, hi;
};

struct cie_enc {
	uint64_t off;
	uint8_t enc;		/* the 'R' pointer encoding; 0xff: not understood or refused */
	bool z;			/* augmentation data has a length ('z') */
	size_t insn_len;	/* its initial instructions' bytes */
};

#define REG_MAX 127		/* a higher register: libdw sizes every frame to it */
#define REMEMBER_MAX 64		/* DW_CFA_remember_state nesting */
#define FDE_WORK_MAX (1ull << 26)	/* rows x instruction bytes: libdw runs them all per row */

static bool read_ptr(uint8_t enc, const uint8_t *p, const uint8_t *end, uint64_t paddr, uint64_t *out,
		     size_t *len);

static bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

static bool uleb_reg(const uint8_t **p, const uint8_t *end)
{
	uint64_t r;

	return uleb(p, end, &r) && r <= REG_MAX;
}

static bool skip(const uint8_t **p, const uint8_t *end, uint64_t n)
{
	if ((uint64_t)(end - *p) < n)
		return false;
	*p += n;
	return true;
}

/* A DW_CFA program checked before libdw runs it: every op known, every
 * operand inside the program, registers <= REG_MAX, remember_state nested
 * at most REMEMBER_MAX deep. *ROWS: the ops that start a new row. */
static bool cfa_program_ok(const uint8_t *p, const uint8_t *end, uint8_t enc, uint64_t *rows)
{
	unsigned int depth = 0;
	uint64_t v;
	size_t len;

	while (p < end) {
		uint8_t op = *p++;

		switch (op & 0xc0) {
		case 0x40:	/* advance_loc */
			++*rows;
			continue;
		case 0x80:	/* offset: register in the low bits */
			if (!uleb(&p, end, &v))
				return false;
			continue;
		case 0xc0:	/* restore */
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
		case DW_CFA_restore_state:
			if (op == DW_CFA_restore_state && depth)
				depth--;
			break;
		case DW_CFA_remember_state:
			if (++depth > REMEMBER_MAX)
				return false;
			break;
		case DW_CFA_set_loc:
			if (!read_ptr(enc, p, end, 0, &v, &len))
				return false;
			p += len;
			++*rows;
			break;
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
			if (!skip(&p, end, op == DW_CFA_advance_loc1 ? 1 : op == DW_CFA_advance_loc2 ? 2 : 4))
				return false;
			++*rows;
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
		case DW_CFA_GNU_negative_offset_extended:
		case DW_CFA_register:
			if (!uleb_reg(&p, end) || !uleb(&p, end, &v))
				return false;
			if (op == DW_CFA_register && v > REG_MAX)
				return false;
			break;
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_def_cfa_register:
			if (!uleb_reg(&p, end))
				return false;
			break;
		case DW_CFA_def_cfa_offset:
		case DW_CFA_def_cfa_offset_sf:
		case DW_CFA_GNU_args_size:
			if (!uleb(&p, end, &v))
				return false;
			break;
		case DW_CFA_def_cfa_expression:
			if (!uleb(&p, end, &v) || !skip(&p, end, v))
				return false;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (!uleb_reg(&p, end) || !uleb(&p, end, &v) || !skip(&p, end, v))
				return false;
			break;
		default:
			return false;
		}
	}
	return true;
}

/* a pointer of encoding ENC at P (inside [P, END)), at vaddr PADDR */
static bool read_ptr(uint8_t enc, const uint8_t *p, const uint8_t *end, uint64_t paddr, uint64_t *out,
		     size_t *len)
{
	uint64_t v;
	int64_t s;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (end - p < 8)
			return false;
		memcpy(&v, p, 8);
		*len = 8;
		break;
	case DW_EH_PE_udata4: {
		uint32_t u;

		if (end - p < 4)
			return false;
		memcpy(&u, p, 4);
		v = u;
		*len = 4;
		break;
	}
	case DW_EH_PE_sdata4: {
		int32_t i;

		if (end - p < 4)
			return false;
		memcpy(&i, p, 4);
		s = i;
		v = (uint64_t)s;
		*len = 4;
		break;
	}
	case DW_EH_PE_udata2: {
		uint16_t u;

		if (end - p < 2)
			return false;
		memcpy(&u, p, 2);
		v = u;
		*len = 2;
		break;
	}
	case DW_EH_PE_sdata2: {
		int16_t i;

		if (end - p < 2)
			return false;
		memcpy(&i, p, 2);
		s = i;
		v = (uint64_t)s;
		*len = 2;
		break;
	}
	default:
		return false;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		v += paddr;
		break;
	default:
		return false;
	}
	*out = v;
	return true;
}

/* the 'R' encoding from a CIE's augmentation ("zR", "zPLR", ...) */
static uint8_t cie_fde_enc(const Dwarf_CIE *cie)
{
	const char *a = cie->augmentation;
	const uint8_t *d = cie->augmentation_data, *end;
	size_t len;
	uint64_t dummy;

	if (!a || a[0] != 'z')
		return a && a[0] == '\0' ? DW_EH_PE_absptr : 0xff;
	if (!d)
		return 0xff;
	end = d + cie->augmentation_data_size;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			return d < end ? *d : 0xff;
		case 'L':
			d++;
			break;
		case 'P':
			if (d >= end || !read_ptr(*d & 0x7f, d + 1, end, 0, &dummy, &len))
				return 0xff;
			d += 1 + len;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return 0xff;
		}
		if (d > end)
			return 0xff;
	}
	return DW_EH_PE_absptr;
}

static int span_cmp(const void *a, const void *b)
{
	const struct fde_span *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The FDEs of .eh_frame (DATA at vaddr SADDR), sorted; *N set. NULL with
 * errno on ENOMEM or no FDE. */
static struct fde_span *list_fdes(Elf *elf, Elf_Data *data, uint64_t saddr, size_t *n,
				  struct qp_cfi_stats *st)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct cie_enc *cies = NULL;
	struct fde_span *fdes = NULL;
	size_t ncie = 0, capcie = 0, nfde = 0, capfde = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	int pass;

	*n = 0;
	if (!ident)
		goto inval;
	/* two passes: a CIE may follow the FDEs that use it */
	for (pass = 0; pass < 2; pass++) {
		for (off = 0; off < data->d_size; off = next) {
			int r = dwarf_next_cfi(ident, data, true, off, &next, &e);

			if (r != 0 || next <= off)
				break;	/* the end, or garbage: what was read stands */
			if (e.CIE_id == LIBDW_CIE_ID) {
				if (pass)
					continue;
				if (ncie == capcie) {
					struct cie_enc *m;

					capcie = capcie ? capcie * 2 : 16;
					m = realloc(cies, capcie * sizeof(*cies));
					if (!m)
						goto nomem;
					cies = m;
				}
				cies[ncie].off = off;
				cies[ncie].enc = cie_fde_enc(&e.cie);
				cies[ncie].z = e.cie.augmentation && e.cie.augmentation[0] == 'z';
				cies[ncie].insn_len = 0;
				if (cies[ncie].enc != 0xff) {
					uint64_t rows = 0;

					if (e.cie.initial_instructions > e.cie.initial_instructions_end ||
					    !cfa_program_ok(e.cie.initial_instructions, e.cie.initial_instructions_end,
							    cies[ncie].enc, &rows))
						cies[ncie].enc = 0xff;	/* every FDE of it refused */
					else
						cies[ncie].insn_len = (size_t)(e.cie.initial_instructions_end -
									       e.cie.initial_instructions);
				}
				ncie++;
				continue;
			}
			if (!pass)
				continue;
			{
				const uint8_t *p = e.fde.start, *end = e.fde.end;
				uint8_t enc = 0xff;
				uint64_t lo, range, rows = 0, alen;
				size_t i, len, len2, cie_insns = 0;
				bool z = false;

				st->fdes++;
				for (i = 0; i < ncie; i++)
					if (cies[i].off == e.fde.CIE_pointer) {
						enc = cies[i].enc;
						z = cies[i].z;
						cie_insns = cies[i].insn_len;
						break;
					}
				if (enc == 0xff || p < (const uint8_t *)data->d_buf || end > (const uint8_t *)data->d_buf + data->d_size ||
				    !read_ptr(enc, p, end, saddr + (uint64_t)(p - (const uint8_t *)data->d_buf), &lo, &len) ||
				    !read_ptr(enc & 0x0f, p + len, end, 0, &range, &len2)) {
					st->fdes_bad++;
					continue;
				}
				/* its instructions, checked: what libdw will run */
				p += len + len2;
				if ((z && (!uleb(&p, end, &alen) || !skip(&p, end, alen))) ||
				    !cfa_program_ok(p, end, enc, &rows) ||
				    (rows + 1) * (uint64_t)(cie_insns + (size_t)(end - p) + 1) > FDE_WORK_MAX) {
					st->fdes_bad++;
					continue;
				}
				if (range == 0)
					continue;	/* an empty FDE (a placeholder) */
				if (lo + range < lo || range > (1ull << 32)) {
					st->fdes_bad++;
					continue;
				}
				if (nfde == capfde) {
					struct fde_span *m;

					capfde = capfde ? capfde * 2 : 256;
					m = realloc(fdes, capfde * sizeof(*fdes));
					if (!m)
						goto nomem;
					fdes = m;
				}
				fdes[nfde].lo = lo;
				fdes[nfde++].hi = lo + range;
			}
		}
	}
	free(cies);
	if (!nfde) {
		free(fdes);
		goto inval;
	}
	qsort(fdes, nfde, sizeof(*fdes), span_cmp);
	*n = nfde;
	return fdes;
nomem:
	free(cies);
	free(fdes);
	errno = ENOMEM;
	return NULL;
inval:
	errno = EINVAL;
	return NULL;
}

/* ---- reading a rule ------------------------------------------------------ */

/* "at CFA + off" as dwarf_frame_register gives it */
static bool cfa_location(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	/* libdw writes a negative offset as plus_uconst of its two's complement */
	if (nops != 2 || ops[1].atom != DW_OP_plus_uconst || (int64_t)ops[1].number < INT32_MIN ||
	    (int64_t)ops[1].number > INT32_MAX)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

static bool cfa_value(const Dwarf_Op *ops, size_t nops)
{
	return nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_stack_value;
}

/* a register saved at rsp + OFF: DW_CFA_expression "DW_OP_breg7 OFF"
 * (libdw puts the CFA first, as the expression's initial stack) */
static bool at_rsp(const Dwarf_Op *ops, size_t nops, uint64_t off)
{
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa)
		ops++, nops--;
	return nops == 1 && ops[0].atom == DW_OP_breg7 && ops[0].number == off;
}

/* binutils' lazy PLT: rsp + 8 + (((rip & 15) >= T) << 3); T in *THR */
static bool plt_expr(const Dwarf_Op *ops, size_t nops, int8_t *thr)
{
	static const uint8_t want[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
					DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };
	size_t i;

	if (nops != sizeof(want))
		return false;
	for (i = 0; i < nops; i++)
		if (i != 4 && ops[i].atom != want[i])
			return false;
	if (ops[0].number != 8 || ops[1].number != 0 || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15)
		return false;
	*thr = (int8_t)(ops[4].atom - DW_OP_lit0);
	return true;
}

/* The rule of FR into R (addr left alone); counts unencodable ones. */
static void rule_of(Dwarf_Frame *fr, struct qp_cfi_row *r, struct qp_cfi_stats *st)
{
	Dwarf_Op mem[3], *ops, *cops;
	size_t nops, ncops;
	bool signal = false;
	int64_t cfa_off = 0, ra_off = 0, bp_off = 0;
	uint8_t kind, bp = QP_CFI_BP_UNDEF;
	int8_t thr = 0;

	r->kind = QP_CFI_FALLBACK;
	r->cfa_off = 0;
	r->bp_off = 0;
	if (dwarf_frame_info(fr, NULL, NULL, &signal) != REG_IP || dwarf_frame_cfa(fr, &cops, &ncops))
		return;
	if (signal) {
		/* glibc's restorer: CFA = *(rsp + 160), rip at rsp + 168, rbp at
		 * rsp + 120, rsp = *(rsp + 160): the kernel's struct sigcontext */
		if (ncops != 2 || cops[0].atom != DW_OP_breg7 || cops[0].number != QP_CFI_SIG_RSP ||
		    cops[1].atom != DW_OP_deref)
			return;
		if (dwarf_frame_register(fr, REG_IP, mem, &ops, &nops) || !at_rsp(ops, nops, QP_CFI_SIG_RIP) ||
		    dwarf_frame_register(fr, REG_BP, mem, &ops, &nops) || !at_rsp(ops, nops, QP_CFI_SIG_RBP) ||
		    dwarf_frame_register(fr, REG_SP, mem, &ops, &nops) || !at_rsp(ops, nops, QP_CFI_SIG_RSP))
			return;
		r->kind = QP_CFI_SIGNAL;
		return;
	}
	if (ncops == 1 && cops[0].atom == DW_OP_bregx && (cops[0].number == REG_SP || cops[0].number == REG_BP)) {
		kind = cops[0].number == REG_BP ? QP_CFI_CFA_BP : QP_CFI_CFA_SP;
		cfa_off = (int64_t)cops[0].number2;
	} else if (plt_expr(cops, ncops, &thr)) {
		kind = QP_CFI_PLT;
		cfa_off = 8;
	} else {
		return;
	}
	if (dwarf_frame_register(fr, REG_SP, mem, &ops, &nops) || !cfa_value(ops, nops))
		return;
	if (dwarf_frame_register(fr, REG_IP, mem, &ops, &nops))
		return;
	if (nops == 0 && ops == mem) {
		r->kind = QP_CFI_OUTERMOST;
		return;
	}
	if (!cfa_location(ops, nops, &ra_off) || ra_off != -8)
		return;
	if (dwarf_frame_register(fr, REG_BP, mem, &ops, &nops))
		return;
	if (nops == 0 && !ops)
		bp = QP_CFI_BP_SAME;
	else if (nops == 0 && ops == mem)
		bp = QP_CFI_BP_UNDEF;
	else if (cfa_location(ops, nops, &bp_off))
		bp = QP_CFI_BP_AT;
	else
		return;
	if (cfa_off < 0 || cfa_off > UINT16_MAX ||
	    (bp == QP_CFI_BP_AT && (bp_off % 8 || bp_off / 8 < INT8_MIN || bp_off / 8 > INT8_MAX))) {
		st->unencodable++;
		return;
	}
	r->cfa_off = (uint16_t)cfa_off;
	r->bp_off = kind == QP_CFI_PLT ? thr : (int8_t)(bp_off / 8);
	r->kind = (uint8_t)(kind | bp << 4);
}

/* ---- the table ----------------------------------------------------------- */

struct builder {
	struct qp_cfi_row *rows;
	uint64_t *addrs;	/* full vaddrs while building */
	size_t n, cap;
	struct qp_cfi_stats *st;
};

static bool same_rule(const struct qp_cfi_row *a, const struct qp_cfi_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->bp_off == b->bp_off;
}

/* a row from ADDR on; merged into the last when the rule is the same */
static int push(struct builder *b, uint64_t addr, const struct qp_cfi_row *r)
{
	b->st->rows_pushed++;
	if (b->n && same_rule(&b->rows[b->n - 1], r))
		return 0;
	if (b->n && b->addrs[b->n - 1] == addr) {
		b->rows[b->n - 1] = *r;	/* an empty row: replaced */
		if (b->n > 1 && same_rule(&b->rows[b->n - 2], r))
			b->n--;
		return 0;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		struct qp_cfi_row *rows;
		uint64_t *addrs;

		if (cap > QP_CFI_ROWS_MAX + 1)
			cap = QP_CFI_ROWS_MAX + 1;
		if (b->n == cap)
			return -E2BIG;
		rows = realloc(b->rows, cap * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		b->rows = rows;
		addrs = realloc(b->addrs, cap * sizeof(*addrs));
		if (!addrs)
			return -ENOMEM;
		b->addrs = addrs;
		b->cap = cap;
	}
	b->rows[b->n] = *r;
	b->addrs[b->n++] = addr;
	return 0;
}

/* The rows of [LO, HI) (one FDE), asked of libdw. */
static int compile_fde(Dwarf_CFI *cfi, struct builder *b, uint64_t lo, uint64_t hi)
{
	uint64_t a = lo;
	unsigned int k;
	int ret;

	for (k = 0; a < hi && k < ROWS_PER_FDE_MAX; k++) {
		Dwarf_Frame *fr = NULL;
		struct qp_cfi_row r = { 0 };
		Dwarf_Addr start, end;

		if (dwarf_cfi_addrframe(cfi, a, &fr) != 0) {
			/* libdw would not answer for this FDE: fall back here */
			r.kind = QP_CFI_FALLBACK;
			b->st->fdes_bad++;
			return push(b, a, &r);
		}
		dwarf_frame_info(fr, &start, &end, NULL);
		if (end <= a) {
			free(fr);
			b->st->fdes_bad++;
			r.kind = QP_CFI_FALLBACK;
			return push(b, a, &r);
		}
		rule_of(fr, &r, b->st);
		free(fr);
		b->st->rows_read++;
		ret = push(b, a, &r);
		if (ret)
			return ret;
		a = end < hi ? end : hi;
	}
	if (a < hi) {
		struct qp_cfi_row r = { .kind = QP_CFI_FALLBACK };

		b->st->fdes_bad++;
		return push(b, a, &r);
	}
	return 0;
}

struct qp_cfi_table *qp_cfi_compile(Elf *elf, struct qp_cfi_stats *stp)
{
	struct qp_cfi_stats st0 = { 0 }, *st = stp ? stp : &st0;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), saddr = 0, cursor = 0;
	struct builder b = { .st = st };
	struct fde_span *fdes = NULL;
	struct qp_cfi_table *t = NULL;
	Elf_Data *data = NULL;
	Elf_Scn *scn = NULL;
	Dwarf_CFI *cfi = NULL;
	size_t shstrndx, nfde = 0, i;
	int err = EINVAL;

	memset(st, 0, sizeof(*st));
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		/* lld types it SHT_X86_64_UNWIND */
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame")) {
			data = elf_getdata(scn, NULL);
			saddr = sh.sh_addr;
			break;
		}
	}
	if (!data || !data->d_buf || !data->d_size)
		goto out;
	fdes = list_fdes(elf, data, saddr, &nfde, st);
	if (!fdes) {
		err = errno;
		goto out;
	}
	if (fdes[nfde - 1].hi - fdes[0].lo > UINT32_MAX) {
		/* a hostile FDE far away, or a file of more than 4 GiB */
		err = E2BIG;
		goto out;
	}
	cfi = dwarf_getcfi_elf(elf);
	if (!cfi)
		goto out;
	cursor = fdes[0].lo;
	for (i = 0; i < nfde; i++) {
		uint64_t lo = fdes[i].lo > cursor ? fdes[i].lo : cursor;
		int ret;

		if (fdes[i].hi <= lo)
			continue;	/* inside the one before: overlapping FDEs */
		if (lo > cursor) {
			struct qp_cfi_row gap = { .kind = QP_CFI_NONE };

			ret = push(&b, cursor, &gap);
			if (ret) {
				err = -ret;
				goto out;
			}
		}
		ret = compile_fde(cfi, &b, lo, fdes[i].hi);
		if (ret) {
			err = -ret;
			goto out;
		}
		cursor = fdes[i].hi;
	}
	{
		struct qp_cfi_row end = { .kind = QP_CFI_NONE };
		int ret = push(&b, cursor, &end);	/* past the last FDE: none */

		if (ret) {
			err = -ret;
			goto out;
		}
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		err = ENOMEM;
		goto out;
	}
	t->base = fdes[0].lo;
	t->end = cursor;
	t->nrows = (uint32_t)b.n;
	t->rows = realloc(b.rows, b.n * sizeof(*b.rows));
	if (!t->rows)
		t->rows = b.rows;
	b.rows = NULL;
	for (i = 0; i < t->nrows; i++) {
		t->rows[i].addr = (uint32_t)(b.addrs[i] - t->base);
		st->by_kind[QP_CFI_KIND(t->rows[i].kind) < QP_CFI_KINDS ? QP_CFI_KIND(t->rows[i].kind) : 0]++;
	}
	st->rows = t->nrows;
	err = 0;
out:
	if (cfi)
		dwarf_cfi_end(cfi);
	free(fdes);
	free(b.rows);
	free(b.addrs);
	st->build_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	st->build_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	if (t)
		t->st = *st;
	errno = err;
	return t;
}

void qp_cfi_table_free(struct qp_cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

size_t qp_cfi_table_bytes(const struct qp_cfi_table *t)
{
	return sizeof(*t) + (size_t)t->nrows * sizeof(*t->rows);
}

const struct qp_cfi_row *qp_cfi_lookup(const struct qp_cfi_table *t, uint64_t vaddr)
{
	uint32_t lo = 0, hi, rel;
	int k;

	if (!t->nrows || vaddr < t->base || vaddr >= t->end)
		return NULL;
	rel = (uint32_t)(vaddr - t->base);
	hi = t->nrows;	/* rows[lo].addr <= rel < rows[hi].addr (hi: past the end) */
	for (k = 0; k < QP_CFI_SEARCH_STEPS && hi - lo > 1; k++) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].addr <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return hi - lo == 1 ? &t->rows[lo] : NULL;
}

bool qp_cfi_bias(Elf *elf, uint64_t start, uint64_t offset, uint64_t *bias)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* the segment this mapping starts in (page-aligned offsets) */
		if ((ph.p_offset & ~0xfffull) <= offset && offset < ph.p_offset + ph.p_filesz) {
			*bias = start - ((ph.p_vaddr & ~0xfffull) + (offset - (ph.p_offset & ~0xfffull)));
			return true;
		}
	}
	return false;
}

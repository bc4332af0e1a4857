/* cfi_table.c - compiles an ELF file's .eh_frame (and .debug_frame where
 * .eh_frame has no FDE) into a sorted table of
 * address ranges -> rule (see cfi_table.h), and the cache that shares
 * tables by file. FDEs are listed with dwarf_next_cfi (their initial
 * location decoded by the CIE's pointer encoding), sorted, and each is
 * asked of libdw row by row (dwarf_cfi_addrframe at the row's first byte,
 * dwarf_frame_info for where the row ends), the rule read the way
 * unwind_fast.c reads it, so a row means what libdwfl would do there. The
 * gaps between FDEs become NONE rows. Hostile input (an FDE whose range
 * wraps or leaves the span, rows that do not advance, a table too big) is
 * refused and counted, and every loop is bounded by the bytes or rows it
 * walks. The FDEs are listed and their programs checked by cfi_fdes.c;
 * the cache that shares tables by file is cfi_cache.c. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cfi_fdes.h"
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

/* The first of BAD (N, sorted, disjoint) that ends after A, or NULL. */
static const struct hdr_bad *bad_after(const struct hdr_bad *bad, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (bad[m].hi <= a)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < n ? &bad[lo] : NULL;
}

/* The rows of [LO, HI) (one FDE), asked of libdw; the addresses of BAD
 * (the search table's entries that name no checked FDE) are not. */
static int compile_fde(Dwarf_CFI *cfi, struct builder *b, uint64_t lo, uint64_t hi, const struct hdr_bad *bad,
		       size_t nbad)
{
	uint64_t a = lo;
	unsigned int k;
	int ret;

	for (k = 0; a < hi && k < ROWS_PER_FDE_MAX; k++) {
		const struct hdr_bad *x = bad_after(bad, nbad, a);
		Dwarf_Frame *fr = NULL;
		struct qp_cfi_row r = { 0 };
		Dwarf_Addr start, end;

		if (x && x->lo <= a) {
			/* libdw would run an FDE of its search table not checked */
			r.kind = QP_CFI_FALLBACK;
			b->st->fdes_bad++;
			return push(b, a, &r);
		}
		if (!cfi || dwarf_cfi_addrframe(cfi, a, &fr) != 0) {
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

/* the data of section NAME (PROGBITS, or lld's SHT_X86_64_UNWIND for
 * .eh_frame) and its vaddr; NULL when none or empty */
static Elf_Data *section(Elf *elf, size_t shstrndx, const char *name, uint64_t *addr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name))
			continue;
		d = elf_getdata(scn, NULL);
		*addr = sh.sh_addr;
		return d && d->d_buf && d->d_size ? d : NULL;
	}
	return NULL;
}

struct qp_cfi_table *qp_cfi_compile(Elf *elf, struct qp_cfi_stats *stp)
{
	struct qp_cfi_stats st0 = { 0 }, *st = stp ? stp : &st0;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), saddr = 0, daddr = 0,
		 cursor = 0;
	struct builder b = { .st = st };
	struct fde_span *fdes = NULL, *dfdes = NULL;
	struct hdr_bad *bad = NULL;
	size_t nbad = 0;
	struct qp_cfi_table *t = NULL;
	Elf_Data *data, *ddata;
	Dwarf_CFI *cfi = NULL, *dcfi = NULL;
	Dwarf *dw = NULL;
	size_t shstrndx, nfde = 0, ndfde = 0, i;
	int err = EINVAL;

	memset(st, 0, sizeof(*st));
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	/* .eh_frame, and .debug_frame for what .eh_frame does not cover
	 * (-fno-asynchronous-unwind-tables -g puts a program's own CFI there) */
	data = section(elf, shstrndx, ".eh_frame", &saddr);
	ddata = section(elf, shstrndx, ".debug_frame", &daddr);
	if (!data && !ddata)
		goto out;
	if (data && !(fdes = qp_cfi_list_fdes(elf, data, saddr, true, &nfde, st)) && errno != EINVAL) {
		err = errno;
		goto out;
	}
	if (ddata && !(dfdes = qp_cfi_list_fdes(elf, ddata, daddr, false, &ndfde, st)) && errno != EINVAL) {
		err = errno;
		goto out;
	}
	fdes = qp_cfi_merge_fdes(fdes, nfde, dfdes, ndfde, &nfde);
	dfdes = NULL;
	if (!fdes || !nfde) {
		err = fdes ? EINVAL : errno;
		goto out;
	}
	if (fdes[nfde - 1].hi - fdes[0].lo > UINT32_MAX) {
		/* a hostile FDE far away, or a file of more than 4 GiB */
		err = E2BIG;
		goto out;
	}
	if (data) {
		uint64_t haddr = 0;
		Elf_Data *hdata = section(elf, shstrndx, ".eh_frame_hdr", &haddr);

		/* libdw finds an address's FDE through this table: where it names
		 * one not checked here, libdw is not asked */
		if (hdata && qp_cfi_hdr_bad(hdata, haddr, saddr, fdes, nfde, &bad, &nbad)) {
			err = ENOMEM;
			goto out;
		}
		cfi = dwarf_getcfi_elf(elf);
	}
	if (ndfde && (dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL)))
		dcfi = dwarf_getcfi(dw);	/* owned by dw */
	if (!cfi && !dcfi)
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
		ret = fdes[i].debug ? compile_fde(dcfi, &b, lo, fdes[i].hi, NULL, 0)
				    : compile_fde(cfi, &b, lo, fdes[i].hi, bad, nbad);
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
	free(bad);
	if (cfi)
		dwarf_cfi_end(cfi);
	if (dw)
		dwarf_end(dw);
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

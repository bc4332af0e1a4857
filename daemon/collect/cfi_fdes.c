/* cfi_fdes.c - the FDEs of an .eh_frame or .debug_frame for the CFI table compiler
 * (cfi_table.c): listed with dwarf_next_cfi, their initial locations
 * decoded by their CIE's pointer encoding, sorted; and each CIE's and FDE's
 * DW_CFA program read here before libdw runs it, so that a hostile program
 * (an unknown op, an operand past its end, a register libdw would size
 * every frame to, endless remember_state, rows x bytes beyond a budget) is
 * refused and counted instead of costing seconds and gigabytes. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cfi_fdes.h"

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

struct fde_span *qp_cfi_list_fdes(Elf *elf, Elf_Data *data, uint64_t saddr, bool eh, size_t *n,
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
			int r = dwarf_next_cfi(ident, data, eh, off, &next, &e);

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
				fdes[nfde].off = off;
				fdes[nfde].debug = !eh;
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


struct fde_span *qp_cfi_merge_fdes(struct fde_span *eh, size_t ne, struct fde_span *dbg, size_t nd, size_t *n)
{
	struct fde_span *out;
	uint64_t *reach;
	size_t i, k = ne;

	*n = 0;
	if (!dbg || !nd) {
		free(dbg);
		*n = ne;
		if (!eh)
			errno = EINVAL;
		return eh;
	}
	out = realloc(eh, (ne + nd) * sizeof(*out));
	reach = malloc((ne ? ne : 1) * sizeof(*reach));
	if (!out || !reach) {
		free(out ? out : eh);
		free(dbg);
		free(reach);
		errno = ENOMEM;
		return NULL;
	}
	/* reach[j]: the highest hi of .eh_frame FDEs 0..j; a .debug_frame FDE
	 * overlaps one iff, of those starting before its end, one reaches
	 * past its start */
	for (i = 0; i < ne; i++)
		reach[i] = i && reach[i - 1] > out[i].hi ? reach[i - 1] : out[i].hi;
	for (i = 0; i < nd; i++) {
		size_t lo = 0, hi = ne;

		while (lo < hi) {	/* the eh FDEs with lo < dbg[i].hi: [0, lo) */
			size_t mid = lo + (hi - lo) / 2;

			if (out[mid].lo < dbg[i].hi)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo || reach[lo - 1] <= dbg[i].lo)
			out[k++] = dbg[i];
	}
	free(reach);
	free(dbg);
	qsort(out, k, sizeof(*out), span_cmp);
	*n = k;
	return out;
}

/* Is there an accepted .eh_frame FDE at OFF whose first address is LO? */
static bool accepted_at(const struct fde_span *fdes, size_t n, uint64_t lo, uint64_t off)
{
	size_t a = 0, b = n;

	while (a < b) {	/* the first span with lo >= LO */
		size_t m = a + (b - a) / 2;

		if (fdes[m].lo < lo)
			a = m + 1;
		else
			b = m;
	}
	for (; a < n && fdes[a].lo == lo; a++)
		if (!fdes[a].debug && fdes[a].off == off)
			return true;
	return false;
}

static int hdr_push(struct hdr_bad **bad, size_t *nbad, size_t *cap, uint64_t lo, uint64_t hi)
{
	if (*nbad && (*bad)[*nbad - 1].hi == lo) {
		(*bad)[*nbad - 1].hi = hi;	/* merged with the one before */
		return 0;
	}
	if (*nbad == *cap) {
		struct hdr_bad *m = realloc(*bad, (*cap ? *cap * 2 : 16) * sizeof(*m));

		if (!m)
			return -ENOMEM;
		*bad = m;
		*cap = *cap ? *cap * 2 : 16;
	}
	(*bad)[(*nbad)++] = (struct hdr_bad){ lo, hi };
	return 0;
}

int qp_cfi_hdr_bad(const Elf_Data *hdr, uint64_t haddr, uint64_t saddr, const struct fde_span *fdes, size_t n,
		   struct hdr_bad **bad, size_t *nbad)
{
	const uint8_t *h = hdr ? hdr->d_buf : NULL, *end = h ? h + hdr->d_size : NULL, *p;
	size_t cap = 0, len, i;
	uint64_t count, prev = 0, ptr;

	*bad = NULL;
	*nbad = 0;
	/* libdw searches only version 1 with a datarel sdata4 table */
	if (!h || hdr->d_size < 4 || h[0] != 1 || h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || h[1] == 0xff ||
	    h[2] == 0xff)
		return 0;
	/* eh_frame_ptr (encoding h[1]), then fde_count (h[2]), then the table */
	if (!read_ptr(h[1], h + 4, end, haddr + 4, &ptr, &len))
		return hdr_push(bad, nbad, &cap, 0, UINT64_MAX);
	p = h + 4 + len;
	if (!read_ptr(h[2], p, end, haddr + (uint64_t)(p - h), &count, &len))
		return hdr_push(bad, nbad, &cap, 0, UINT64_MAX);
	p += len;
	if (count > (uint64_t)(end - p) / 8)
		return hdr_push(bad, nbad, &cap, 0, UINT64_MAX);	/* cut short */
	for (i = 0; i < count; i++) {
		int32_t loc32, fde32;
		uint64_t loc, fde, next;
		int ret = 0;

		memcpy(&loc32, p + 8 * i, 4);
		memcpy(&fde32, p + 8 * i + 4, 4);
		loc = haddr + (uint64_t)(int64_t)loc32;
		fde = haddr + (uint64_t)(int64_t)fde32;
		if (i && loc < prev) {	/* unsorted: the search may land anywhere */
			free(*bad);
			*bad = NULL;
			*nbad = cap = 0;
			return hdr_push(bad, nbad, &cap, 0, UINT64_MAX);
		}
		prev = loc;
		if (i + 1 < count) {
			int32_t n32;

			memcpy(&n32, p + 8 * (i + 1), 4);
			next = haddr + (uint64_t)(int64_t)n32;
		} else {
			next = UINT64_MAX;
		}
		if (fde < saddr || !accepted_at(fdes, n, loc, fde - saddr))
			ret = hdr_push(bad, nbad, &cap, loc, next > loc ? next : loc + 1);
		if (ret)
			return ret;
	}
	return 0;
}

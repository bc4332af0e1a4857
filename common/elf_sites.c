/* elf_sites.c - the qprof site descriptors of an ELF file: the addresses
 * listed in the unallocated section .qprof_refs (or, in a file linked so,
 * only in its relocations), each struct qprof_site read from the section
 * that holds its link-time address, and its name, file and function strings
 * read the same way. Every address and length is checked against the file;
 * a bad record is skipped and counted, a bad string becomes "?". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_probes_priv.h"

/* A NUL-terminated string inside [s, s + max), or NULL. */
static char *dup_bounded(const char *s, size_t max)
{
	const char *nul = memchr(s, '\0', max);

	return nul ? strndup(s, (size_t)(nul - s)) : NULL;
}

static uint32_t relative_type(const struct qp_ctx *c)
{
	switch (c->ehdr.e_machine) {
	case EM_X86_64:
		return R_X86_64_RELATIVE;
	case EM_AARCH64:
		return R_AARCH64_RELATIVE;
	case EM_RISCV:
		return R_RISCV_RELATIVE;
	case EM_PPC64:
		return R_PPC64_RELATIVE;
	default:
		return UINT32_MAX;
	}
}

static int cmp_rel(const void *a, const void *b)
{
	const struct qp_rel *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Read the RELATIVE relocations of the allocated RELA sections, once. Their
 * number is bounded by the section sizes, which libelf checked. */
static int load_relas(struct qp_ctx *c)
{
	uint32_t type = relative_type(c);
	size_t i, j, cap = 0;

	c->rels_loaded = true;
	for (i = 0; i < c->nrelas; i++) {
		Elf_Data *d = elf_getdata(c->relas[i], NULL);
		GElf_Rela r;
		size_t n;

		if (!d || !d->d_buf)
			continue;
		n = d->d_size / (c->is64 ? sizeof(Elf64_Rela) : sizeof(Elf32_Rela));
		for (j = 0; j < n; j++) {
			if (!gelf_getrela(d, (int)j, &r))
				break;
			if (GELF_R_TYPE(r.r_info) != type)
				continue;
			if (qp_elf_grow((void **)&c->rels, &cap, c->nrels, sizeof(*c->rels)))
				return qp_elf_fail(c, -ENOMEM, "out of memory");
			c->rels[c->nrels++] = (struct qp_rel){ r.r_offset, (uint64_t)r.r_addend };
		}
	}
	if (c->nrels > 1)
		qsort(c->rels, c->nrels, sizeof(*c->rels), cmp_rel);
	return 0;
}

static uint64_t reloc_at(struct qp_ctx *c, uint64_t where)
{
	size_t lo = 0, hi = c->nrels;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->rels[mid].offset == where)
			return c->rels[mid].addend;
		if (c->rels[mid].offset < where)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static struct qp_asec *sec_at(struct qp_ctx *c, uint64_t vaddr)
{
	size_t lo = 0, hi = c->nsecs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->secs[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && vaddr - c->secs[lo - 1].addr < c->secs[lo - 1].size)
		return &c->secs[lo - 1];
	return NULL;
}

/* Fallback when no section holds VADDR (section headers stripped of that
 * part): read through the PT_LOAD segment from the file. */
static char *string_from_segment(struct qp_ctx *c, uint64_t vaddr)
{
	char buf[QP_STR_MAX];
	size_t i;

	for (i = 0; i < c->p->nsegs; i++) {
		const struct qp_elf_segment *s = &c->p->segs[i];
		uint64_t rel = vaddr - s->vaddr, foff, max;
		ssize_t n;

		if (vaddr < s->vaddr || rel >= s->filesz)
			continue;
		foff = s->offset + rel;
		if (foff < s->offset || foff >= c->fsize)
			return NULL;
		max = s->filesz - rel;
		if (max > c->fsize - foff)
			max = c->fsize - foff;
		if (max > sizeof(buf))
			max = sizeof(buf);
		n = pread(c->fd, buf, (size_t)max, (off_t)foff);
		if (n <= 0)
			return NULL;
		return dup_bounded(buf, (size_t)n);
	}
	return NULL;
}

static char *string_at(struct qp_ctx *c, uint64_t vaddr)
{
	struct qp_asec *s;
	uint64_t off, max;

	if (!vaddr)
		return NULL;
	s = sec_at(c, vaddr);
	if (!s)
		return string_from_segment(c, vaddr);
	if (!s->data) {
		s->data = elf_getdata(s->scn, NULL);
		if (!s->data || !s->data->d_buf)
			return NULL;
	}
	off = vaddr - s->addr;
	if (off >= s->data->d_size)
		return NULL;
	max = s->data->d_size - off;
	if (max > QP_STR_MAX)
		max = QP_STR_MAX;
	/* No NUL before the section end (or within the limit): "?". */
	return dup_bounded((const char *)s->data->d_buf + off, (size_t)max);
}

/* The string a pointer field at link-time address WHERE points to. */
static int site_string(struct qp_ctx *c, uint64_t where, uint64_t val, char **out)
{
	int err;

	/* A linker that leaves RELA addends out of the section (lld without
	 * --apply-dynamic-relocs) stores 0 in place; the target is then the
	 * addend of the RELATIVE relocation at that field. */
	if (!val && c->ehdr.e_type == ET_DYN) {
		if (!c->rels_loaded) {
			err = load_relas(c);
			if (err)
				return err;
		}
		val = reloc_at(c, where);
	}
	*out = string_at(c, val);
	if (!*out)
		*out = strdup("?");
	return *out ? 0 : qp_elf_fail(c, -ENOMEM, "out of memory");
}


static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The 40-byte (20 on 32-bit) descriptor at link-time address VADDR, copied
 * out of the allocated section that holds it. false when none holds it whole. */
static bool site_record(struct qp_ctx *c, uint64_t vaddr, size_t recsz, unsigned char *out)
{
	struct qp_asec *s = sec_at(c, vaddr);
	uint64_t off;

	if (!s)
		return false;
	if (!s->data) {
		s->data = elf_getdata(s->scn, NULL);
		if (!s->data || !s->data->d_buf)
			return false;
	}
	off = vaddr - s->addr;
	if (off > s->data->d_size || s->data->d_size - off < recsz)
		return false;
	memcpy(out, (const unsigned char *)s->data->d_buf + off, recsz);
	return true;
}

/* Sites: the marker's asm lists the link-time address of every descriptor
 * it uses in the non-allocated section .qprof_refs; the descriptors
 * themselves are ordinary static data (.data / .data.rel.local). */
int qp_elf_parse_sites(struct qp_ctx *c)
{
	struct qp_elf_probes *p = c->p;
	size_t recsz = c->is64 ? QP_SITE_SIZE64 : QP_SITE_SIZE32;
	size_t asz = c->is64 ? 8 : 4, i, n;
	unsigned char r[QP_SITE_SIZE64];
	uint64_t *addrs;
	Elf_Data *d;
	int err;

	if (!c->sites_scn)
		return 0;
	d = elf_getdata(c->sites_scn, NULL);
	if (!d)
		return elf_errno() ? qp_elf_fail_libelf(c, ".qprof_refs") : 0;
	if (!d->d_buf || d->d_size < asz)
		return 0;
	/* sized by the section, which lies inside the file */
	n = d->d_size / asz;
	addrs = calloc(n, sizeof(*addrs));
	if (!addrs)
		return qp_elf_fail(c, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		addrs[i] = qp_elf_rd(c, (const unsigned char *)d->d_buf + i * asz, asz);
	qsort(addrs, n, sizeof(*addrs), cmp_u64);
	p->sites = calloc(n, sizeof(*p->sites));
	if (!p->sites) {
		free(addrs);
		return qp_elf_fail(c, -ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++) {
		uint64_t vaddr = addrs[i];
		struct qp_site_info *s;

		if (i && addrs[i - 1] == vaddr)
			continue; /* one site used by several probes (inlined copies) */
		if (!site_record(c, vaddr, recsz, r) || qp_elf_rd(c, r, 4) != QPROF_SITE_MAGIC ||
		    (qp_elf_rd(c, r + 4, 2) != 1 && qp_elf_rd(c, r + 4, 2) != QPROF_SITE_VERSION)) {
			p->nbad_sites++;
			continue;
		}
		s = &p->sites[p->nsites++];
		s->vaddr = vaddr;
		s->kind = (uint32_t)qp_elf_rd(c, r + 6, 2);
		s->line = (uint32_t)qp_elf_rd(c, r + 8, 4);
		err = site_string(c, vaddr + 16, qp_elf_rd(c, r + 16, asz), &s->name);
		if (!err)
			err = site_string(c, vaddr + 16 + asz, qp_elf_rd(c, r + 16 + asz, asz), &s->file);
		if (!err)
			err = site_string(c, vaddr + 16 + 2 * asz, qp_elf_rd(c, r + 16 + 2 * asz, asz),
					  &s->function);
		if (!err && s->kind == QPROF_KIND_ASYNC_STEP) {
			/* struct qprof_step_site: the span's name follows the descriptor */
			unsigned char sp[8];

			if (site_record(c, vaddr + recsz, asz, sp))
				err = site_string(c, vaddr + recsz, qp_elf_rd(c, sp, asz), &s->span);
			else
				s->span = strdup("?");
			if (!err && !s->span)
				err = qp_elf_fail(c, -ENOMEM, "out of memory");
		}
		if (err) {
			free(addrs);
			return err;
		}
	}
	free(addrs);
	return 0;
}

/* elf_probes.c - read what an ELF file says about its probes, with libelf:
 * the USDT notes of .note.stapsdt (any provider), the qprof site descriptors
 * listed in section ".qprof_refs" with their name/file/function strings, the PT_LOAD
 * segments and the GNU build-id. The file is untrusted input (qprof-cli
 * probes runs on whatever it is given, qprofd on whatever a target maps), so
 * every count, offset and size taken from it is checked against the file or
 * section it claims to describe before use: a truncated or hostile file gives
 * an error or a "?" string, never a crash or an allocation out of
 * proportion to the file. Strings are read through the section that holds their link-time
 * address, so no runtime relocation or running process is needed. */
#include "elf_probes.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Only the descriptor layout is wanted, not the markers or their weak
 * semaphores: QPROF_DISABLE leaves just the types and constants. */
#ifndef QPROF_DISABLE
#define QPROF_DISABLE
#endif
#include "qprof/qprof.h"

#define QP_STR_MAX 4096		/* longest site string read, NUL included */
#define QP_SITE_SIZE64 40	/* struct qprof_site on LP64 */
#define QP_SITE_SIZE32 28	/* ... on ILP32 ... */
#define QP_SITE_STRIDE32 32	/* unused: descriptors are found through .qprof_refs */

/* An allocated section with file contents, for vaddr -> bytes lookups. */
struct qp_asec {
	uint64_t addr, size;
	Elf_Scn *scn;
	Elf_Data *data;	/* loaded on first use */
};

struct qp_rel {
	uint64_t offset, addend;
};

/* Everything one parse needs; lives on the stack of qp_elf_probes_open. */
struct qp_ctx {
	struct qp_elf_probes *p;
	char *err;
	size_t errlen;
	int fd;
	uint64_t fsize;
	Elf *elf;
	GElf_Ehdr ehdr;
	bool is64, msb;
	size_t shstrndx;
	struct qp_asec *secs;
	size_t nsecs, cap_secs;
	Elf_Scn **relas;	/* SHT_RELA sections, read only when needed */
	size_t nrelas, cap_relas;
	struct qp_rel *rels;
	size_t nrels;
	bool rels_loaded;
	Elf_Scn *sites_scn;
	bool have_base;
	uint64_t base_addr;	/* address of .stapsdt.base */
	size_t cap_notes;
};

__attribute__((format(printf, 3, 4))) static int fail(struct qp_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int fail_elf(struct qp_ctx *c, const char *what)
{
	return fail(c, -EINVAL, "corrupt ELF file: %s: %s", what, elf_errmsg(-1));
}

/* Grow *v (of *cap elements of SZ bytes) to hold at least N+1 elements. */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / sz)
		return -ENOMEM;
	nv = realloc(*v, ncap * sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* Raw fields of the file (note descriptors, qprof_sites records) are in the
 * file's byte order; libelf only converts the ELF structures themselves. */
static uint64_t rd(const struct qp_ctx *c, const unsigned char *b, size_t n)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		size_t k = c->msb ? i : n - 1 - i;

		v = (v << 8) | b[k];
	}
	return v;
}

/* Before handing the file to libelf: is it ELF at all, and do the header
 * tables fit in it? libelf would reject a truncated file too, but only with
 * a generic message; "truncated" is what the user needs to hear. */
static int check_header(struct qp_ctx *c)
{
	unsigned char h[64];
	uint64_t phoff, shoff, phend, shend, ehsize;
	uint32_t phentsize, phnum, shentsize, shnum;
	ssize_t n;

	n = pread(c->fd, h, sizeof(h), 0);
	if (n < 0)
		return fail(c, -errno, "read: %s", strerror(errno));
	if (n < SELFMAG || memcmp(h, ELFMAG, SELFMAG) != 0)
		return fail(c, -ENOEXEC, "not an ELF file");
	if (n < EI_NIDENT)
		return fail(c, -EINVAL, "truncated ELF file: %zd bytes", n);
	if (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64)
		return fail(c, -ENOEXEC, "unsupported ELF class %u", h[EI_CLASS]);
	if (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB)
		return fail(c, -ENOEXEC, "unsupported ELF byte order %u", h[EI_DATA]);
	c->is64 = h[EI_CLASS] == ELFCLASS64;
	c->msb = h[EI_DATA] == ELFDATA2MSB;
	ehsize = c->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if ((uint64_t)n < ehsize)
		return fail(c, -EINVAL, "truncated ELF file: %zd bytes, header needs %zu",
			    n, (size_t)ehsize);
	if (c->is64) {
		phoff = rd(c, h + 32, 8);
		shoff = rd(c, h + 40, 8);
		phentsize = rd(c, h + 54, 2);
		phnum = rd(c, h + 56, 2);
		shentsize = rd(c, h + 58, 2);
		shnum = rd(c, h + 60, 2);
	} else {
		phoff = rd(c, h + 28, 4);
		shoff = rd(c, h + 32, 4);
		phentsize = rd(c, h + 42, 2);
		phnum = rd(c, h + 44, 2);
		shentsize = rd(c, h + 46, 2);
		shnum = rd(c, h + 48, 2);
	}
	/* Extended numbering (count in section 0) still needs section 0. */
	if (shnum == 0 && shoff != 0)
		shnum = 1;
	if (phnum == PN_XNUM)
		phnum = 1;
	/* All products fit in 64 bits: 16-bit times 16-bit. */
	phend = phoff + (uint64_t)phentsize * phnum;
	shend = shoff + (uint64_t)shentsize * shnum;
	if (phnum && (phoff > c->fsize || phend < phoff || phend > c->fsize))
		return fail(c, -EINVAL,
			    "truncated ELF file: program headers end at %llu, file has %llu bytes",
			    (unsigned long long)phend, (unsigned long long)c->fsize);
	if (shnum && (shoff > c->fsize || shend < shoff || shend > c->fsize))
		return fail(c, -EINVAL,
			    "truncated ELF file: section headers end at %llu, file has %llu bytes",
			    (unsigned long long)shend, (unsigned long long)c->fsize);
	return 0;
}

static int read_segments(struct qp_ctx *c)
{
	struct qp_elf_probes *p = c->p;
	size_t phnum, i, cap = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(c->elf, &phnum))
		return fail_elf(c, "program headers");
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(c->elf, (int)i, &ph))
			return fail_elf(c, "program header");
		if (ph.p_type != PT_LOAD)
			continue;
		if (grow((void **)&p->segs, &cap, p->nsegs, sizeof(*p->segs)))
			return fail(c, -ENOMEM, "out of memory");
		p->segs[p->nsegs++] = (struct qp_elf_segment){
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.flags = ph.p_flags,
		};
	}
	return 0;
}

/* A NUL-terminated string inside [s, s + max), or NULL. */
static char *dup_bounded(const char *s, size_t max)
{
	const char *nul = memchr(s, '\0', max);

	return nul ? strndup(s, (size_t)(nul - s)) : NULL;
}

/* Desc: pc, base, sema (address size of the class), then provider, name and
 * args, each NUL-terminated inside the descriptor. Malformed notes are
 * skipped: one bad note should not hide the others. */
static int add_stapsdt(struct qp_ctx *c, const unsigned char *desc, size_t descsz)
{
	struct qp_elf_probes *p = c->p;
	size_t asz = c->is64 ? 8 : 4, off = 3 * asz, len[3];
	const char *str[3];
	struct qp_usdt_note *n;
	int i;

	if (descsz < off + 3)
		return 0;
	for (i = 0; i < 3; i++) {
		const char *s = (const char *)desc + off;
		const char *nul = memchr(s, '\0', descsz - off);

		if (!nul)
			return 0;
		str[i] = s;
		len[i] = (size_t)(nul - s);
		off += len[i] + 1;
	}
	if (grow((void **)&p->notes, &c->cap_notes, p->nnotes, sizeof(*p->notes)))
		return fail(c, -ENOMEM, "out of memory");
	n = &p->notes[p->nnotes];
	memset(n, 0, sizeof(*n));
	n->pc = rd(c, desc, asz);
	n->base = rd(c, desc + asz, asz);
	n->sema = rd(c, desc + 2 * asz, asz);
	n->provider = strndup(str[0], len[0]);
	n->name = strndup(str[1], len[1]);
	n->args = strndup(str[2], len[2]);
	p->nnotes++;	/* counted first so that free() releases partial copies */
	if (!n->provider || !n->name || !n->args)
		return fail(c, -ENOMEM, "out of memory");
	return 0;
}

static void set_build_id(struct qp_ctx *c, const unsigned char *desc, size_t descsz)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	/* build_id holds 20 bytes (SHA-1, the GNU ld default); a longer custom
	 * id is cut, which still identifies the file in practice. */
	if (descsz > (sizeof(c->p->build_id) - 1) / 2)
		descsz = (sizeof(c->p->build_id) - 1) / 2;
	for (i = 0; i < descsz; i++) {
		c->p->build_id[2 * i] = hex[desc[i] >> 4];
		c->p->build_id[2 * i + 1] = hex[desc[i] & 15];
	}
	c->p->build_id[2 * descsz] = '\0';
}

static int parse_notes(struct qp_ctx *c, Elf_Scn *scn, uint64_t sh_offset)
{
	size_t off = 0, next, name_off, desc_off;
	Elf_Data *d;
	GElf_Nhdr nh;
	int err;

	d = elf_getdata(scn, NULL);
	if (!d)
		return elf_errno() ? fail_elf(c, "note section") : 0;
	if (!d->d_buf)
		return 0;
	/* gelf_getnote checks each header, name and descriptor against
	 * d_size and returns 0 at the end or on the first broken note. */
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)d->d_buf + name_off;
		const unsigned char *desc = (const unsigned char *)d->d_buf + desc_off;

		off = next;
		if (name_off + nh.n_namesz > d->d_size || desc_off + nh.n_descsz > d->d_size)
			break;
		if (nh.n_type == 3 && nh.n_namesz == sizeof("stapsdt") &&
		    memcmp(name, "stapsdt", sizeof("stapsdt")) == 0) {
			err = add_stapsdt(c, desc, nh.n_descsz);
			if (err)
				return err;
		} else if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(ELF_NOTE_GNU) &&
			   memcmp(name, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) == 0 && nh.n_descsz) {
			set_build_id(c, desc, nh.n_descsz);
			c->p->build_id_off = sh_offset + desc_off;
			c->p->build_id_len = (uint32_t)(strlen(c->p->build_id) / 2);
		}
	}
	return 0;
}

static int cmp_asec(const void *a, const void *b)
{
	const struct qp_asec *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int scan_sections(struct qp_ctx *c)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;
	int err;

	if (elf_getshdrstrndx(c->elf, &c->shstrndx))
		return fail_elf(c, "section names");
	while ((scn = elf_nextscn(c->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return fail_elf(c, "section header");
		name = elf_strptr(c->elf, c->shstrndx, sh.sh_name);
		if (!name)
			name = "";
		if ((sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS && sh.sh_size) {
			if (grow((void **)&c->secs, &c->cap_secs, c->nsecs, sizeof(*c->secs)))
				return fail(c, -ENOMEM, "out of memory");
			c->secs[c->nsecs++] = (struct qp_asec){
				.addr = sh.sh_addr, .size = sh.sh_size, .scn = scn };
		}
		if (sh.sh_type == SHT_NOTE) {
			err = parse_notes(c, scn, sh.sh_offset);
			if (err)
				return err;
		} else if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC)) {
			if (grow((void **)&c->relas, &c->cap_relas, c->nrelas, sizeof(*c->relas)))
				return fail(c, -ENOMEM, "out of memory");
			c->relas[c->nrelas++] = scn;
		}
		if (strcmp(name, ".qprof_refs") == 0 && sh.sh_type != SHT_NOBITS)
			c->sites_scn = scn;
		else if (strcmp(name, ".probes") == 0 && (sh.sh_flags & SHF_ALLOC)) {
			c->p->probes_addr = sh.sh_addr;
			c->p->probes_size = sh.sh_size;
		} else if (strcmp(name, ".stapsdt.base") == 0) {
			c->have_base = true;
			c->base_addr = sh.sh_addr;
		}
	}
	if (c->nsecs > 1)
		qsort(c->secs, c->nsecs, sizeof(*c->secs), cmp_asec);
	return 0;
}

/* A prelinked file moved its sections but not the note addresses; the
 * distance between .stapsdt.base and the note's base is the move (the rule
 * of systemtap and libbpf). */
static void adjust_notes(struct qp_ctx *c)
{
	size_t i;

	if (!c->have_base)
		return;
	for (i = 0; i < c->p->nnotes; i++) {
		struct qp_usdt_note *n = &c->p->notes[i];

		if (n->base && n->base != c->base_addr)
			n->pc += c->base_addr - n->base;
	}
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
			if (grow((void **)&c->rels, &cap, c->nrels, sizeof(*c->rels)))
				return fail(c, -ENOMEM, "out of memory");
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
	return *out ? 0 : fail(c, -ENOMEM, "out of memory");
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
static int parse_sites(struct qp_ctx *c)
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
		return elf_errno() ? fail_elf(c, ".qprof_refs") : 0;
	if (!d->d_buf || d->d_size < asz)
		return 0;
	/* sized by the section, which lies inside the file */
	n = d->d_size / asz;
	addrs = calloc(n, sizeof(*addrs));
	if (!addrs)
		return fail(c, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		addrs[i] = rd(c, (const unsigned char *)d->d_buf + i * asz, asz);
	qsort(addrs, n, sizeof(*addrs), cmp_u64);
	p->sites = calloc(n, sizeof(*p->sites));
	if (!p->sites) {
		free(addrs);
		return fail(c, -ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++) {
		uint64_t vaddr = addrs[i];
		struct qp_site_info *s;

		if (i && addrs[i - 1] == vaddr)
			continue; /* one site used by several probes (inlined copies) */
		if (!site_record(c, vaddr, recsz, r) || rd(c, r, 4) != QPROF_SITE_MAGIC ||
		    rd(c, r + 4, 2) != QPROF_SITE_VERSION) {
			p->nbad_sites++;
			continue;
		}
		s = &p->sites[p->nsites++];
		s->vaddr = vaddr;
		s->kind = (uint32_t)rd(c, r + 6, 2);
		s->line = (uint32_t)rd(c, r + 8, 4);
		err = site_string(c, vaddr + 16, rd(c, r + 16, asz), &s->name);
		if (!err)
			err = site_string(c, vaddr + 16 + asz, rd(c, r + 16 + asz, asz), &s->file);
		if (!err)
			err = site_string(c, vaddr + 16 + 2 * asz, rd(c, r + 16 + 2 * asz, asz),
					  &s->function);
		if (err) {
			free(addrs);
			return err;
		}
	}
	free(addrs);
	return 0;
}

int qp_elf_probes_open(const char *path, struct qp_elf_probes **out, char *err, size_t errlen)
{
	int fd = -1, ret;

	if (err && errlen)
		err[0] = '\0';
	if (out)
		*out = NULL;
	if (!out || !path || !*path) {
		if (err && errlen)
			snprintf(err, errlen, "empty path");
		return -EINVAL;
	}
	ret = qp_open_regular(path, &fd, err, errlen);
	if (ret)
		return ret;
	ret = qp_elf_probes_fdopen(fd, path, out, err, errlen);
	close(fd);
	return ret;
}

int qp_elf_probes_fdopen(int fd, const char *path, struct qp_elf_probes **out, char *err,
			 size_t errlen)
{
	struct qp_ctx c = { .err = err, .errlen = errlen, .fd = fd };
	struct qp_file_id after;
	struct stat st;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return fail(&c, -EINVAL, "no output");
	*out = NULL;
	if (!path)
		return fail(&c, -EINVAL, "empty path");
	c.p = calloc(1, sizeof(*c.p));
	if (!c.p || !(c.p->path = strdup(path))) {
		ret = fail(&c, -ENOMEM, "out of memory");
		goto out;
	}
	if (fstat(fd, &st)) {
		ret = fail(&c, -errno, "cannot stat: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = fail(&c, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			   S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		goto out;
	}
	if ((uint64_t)st.st_size > QP_ELF_MAX_SIZE) {
		ret = fail(&c, -EFBIG, "larger than %llu bytes", (unsigned long long)QP_ELF_MAX_SIZE);
		goto out;
	}
	qp_file_id_of(&st, &c.p->id);
	c.fsize = (uint64_t)st.st_size;
	ret = check_header(&c);
	if (ret)
		goto out;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		ret = fail(&c, -EINVAL, "libelf: %s", elf_errmsg(-1));
		goto out;
	}
	/* ELF_C_READ, not mmap: a file truncated while we read it must give
	 * a read error, not SIGBUS. */
	c.elf = elf_begin(c.fd, ELF_C_READ, NULL);
	if (!c.elf) {
		ret = fail_elf(&c, "elf_begin");
		goto out;
	}
	if (elf_kind(c.elf) != ELF_K_ELF) {
		ret = fail(&c, -ENOEXEC, "not an ELF file");
		goto out;
	}
	if (!gelf_getehdr(c.elf, &c.ehdr)) {
		ret = fail_elf(&c, "ELF header");
		goto out;
	}
	if (c.ehdr.e_type != ET_EXEC && c.ehdr.e_type != ET_DYN) {
		ret = fail(&c, -ENOEXEC, "ELF type %u is not an executable or shared object",
			   (unsigned)c.ehdr.e_type);
		goto out;
	}
	c.p->e_type = c.ehdr.e_type;
	ret = read_segments(&c);
	if (!ret)
		ret = scan_sections(&c);
	if (!ret)
		ret = parse_sites(&c);
	if (!ret)
		adjust_notes(&c);
	if (!ret)
		qp_elf_check_sites(c.p, fd);
	/* a file written while we read it: what we read is no version of it */
	if (!ret && (fstat(fd, &st) || (qp_file_id_of(&st, &after), !qp_file_id_eq(&after, &c.p->id))))
		ret = fail(&c, -EAGAIN, "the file changed while it was being read");
out:
	free(c.secs);
	free(c.relas);
	free(c.rels);
	if (c.elf)
		elf_end(c.elf);
	if (ret) {
		qp_elf_probes_free(c.p);
		return ret;
	}
	*out = c.p;
	return 0;
}

void qp_elf_probes_free(struct qp_elf_probes *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nnotes; i++) {
		free(p->notes[i].provider);
		free(p->notes[i].name);
		free(p->notes[i].args);
	}
	for (i = 0; i < p->nsites; i++) {
		free(p->sites[i].name);
		free(p->sites[i].file);
		free(p->sites[i].function);
	}
	free(p->notes);
	free(p->sites);
	free(p->segs);
	free(p->path);
	free(p);
}

const struct qp_site_info *qp_elf_site_at(const struct qp_elf_probes *p, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!p)
		return NULL;
	hi = p->nsites;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->sites[mid].vaddr == vaddr)
			return &p->sites[mid];
		if (p->sites[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int qp_elf_offset_to_vaddr(const struct qp_elf_probes *p, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	if (!p || !vaddr)
		return -EINVAL;
	for (i = 0; i < p->nsegs; i++) {
		const struct qp_elf_segment *s = &p->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	return -ENOENT;
}

size_t qp_elf_count_notes(const struct qp_elf_probes *p, const char *provider)
{
	size_t i, n = 0;

	if (!p)
		return 0;
	for (i = 0; i < p->nnotes; i++)
		if (!provider || strcmp(p->notes[i].provider, provider) == 0)
			n++;
	return n;
}

const char *qp_site_kind_name(uint32_t kind)
{
	switch (kind) {
	case QPROF_KIND_FUNC:
		return "func";
	case QPROF_KIND_SCOPE:
		return "scope";
	case QPROF_KIND_SPAN_BEGIN:
		return "span_begin";
	case QPROF_KIND_SPAN_END:
		return "span_end";
	case QPROF_KIND_VALUE:
		return "value";
	case QPROF_KIND_LOG:
		return "log";
	case QPROF_KIND_MARK:
		return "mark";
	default:
		return "unknown";
	}
}

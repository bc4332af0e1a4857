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
#include "elf_probes_priv.h"
#include "elf_build_id.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
		return qp_elf_fail(c, -errno, "read: %s", strerror(errno));
	if (n < SELFMAG || memcmp(h, ELFMAG, SELFMAG) != 0)
		return qp_elf_fail(c, -ENOEXEC, "not an ELF file");
	if (n < EI_NIDENT)
		return qp_elf_fail(c, -EINVAL, "truncated ELF file: %zd bytes", n);
	if (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64)
		return qp_elf_fail(c, -ENOEXEC, "unsupported ELF class %u", h[EI_CLASS]);
	if (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB)
		return qp_elf_fail(c, -ENOEXEC, "unsupported ELF byte order %u", h[EI_DATA]);
	c->is64 = h[EI_CLASS] == ELFCLASS64;
	c->msb = h[EI_DATA] == ELFDATA2MSB;
	ehsize = c->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if ((uint64_t)n < ehsize)
		return qp_elf_fail(c, -EINVAL, "truncated ELF file: %zd bytes, header needs %zu",
			    n, (size_t)ehsize);
	if (c->is64) {
		phoff = qp_elf_rd(c, h + 32, 8);
		shoff = qp_elf_rd(c, h + 40, 8);
		phentsize = qp_elf_rd(c, h + 54, 2);
		phnum = qp_elf_rd(c, h + 56, 2);
		shentsize = qp_elf_rd(c, h + 58, 2);
		shnum = qp_elf_rd(c, h + 60, 2);
	} else {
		phoff = qp_elf_rd(c, h + 28, 4);
		shoff = qp_elf_rd(c, h + 32, 4);
		phentsize = qp_elf_rd(c, h + 42, 2);
		phnum = qp_elf_rd(c, h + 44, 2);
		shentsize = qp_elf_rd(c, h + 46, 2);
		shnum = qp_elf_rd(c, h + 48, 2);
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
		return qp_elf_fail(c, -EINVAL,
			    "truncated ELF file: program headers end at %llu, file has %llu bytes",
			    (unsigned long long)phend, (unsigned long long)c->fsize);
	if (shnum && (shoff > c->fsize || shend < shoff || shend > c->fsize))
		return qp_elf_fail(c, -EINVAL,
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
		return qp_elf_fail_libelf(c, "program headers");
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(c->elf, (int)i, &ph))
			return qp_elf_fail_libelf(c, "program header");
		if (ph.p_type != PT_LOAD)
			continue;
		if (qp_elf_grow((void **)&p->segs, &cap, p->nsegs, sizeof(*p->segs)))
			return qp_elf_fail(c, -ENOMEM, "out of memory");
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

	if (descsz < off + 3) {
		p->nbroken_notes++;
		return 0;
	}
	for (i = 0; i < 3; i++) {
		const char *s = (const char *)desc + off;
		const char *nul = memchr(s, '\0', descsz - off);

		if (!nul) {
			p->nbroken_notes++;
			return 0;
		}
		str[i] = s;
		len[i] = (size_t)(nul - s);
		off += len[i] + 1;
	}
	if (qp_elf_grow((void **)&p->notes, &c->cap_notes, p->nnotes, sizeof(*p->notes)))
		return qp_elf_fail(c, -ENOMEM, "out of memory");
	n = &p->notes[p->nnotes];
	memset(n, 0, sizeof(*n));
	n->pc = qp_elf_rd(c, desc, asz);
	n->base = qp_elf_rd(c, desc + asz, asz);
	n->sema = qp_elf_rd(c, desc + 2 * asz, asz);
	n->provider = strndup(str[0], len[0]);
	n->name = strndup(str[1], len[1]);
	n->args = strndup(str[2], len[2]);
	p->nnotes++;	/* counted first so that free() releases partial copies */
	if (!n->provider || !n->name || !n->args)
		return qp_elf_fail(c, -ENOMEM, "out of memory");
	return 0;
}

static int parse_notes(struct qp_ctx *c, Elf_Scn *scn, uint64_t sh_offset, bool stapsdt)
{
	size_t off = 0, next, name_off, desc_off;
	Elf_Data *d;
	GElf_Nhdr nh;
	int err;

	d = elf_getdata(scn, NULL);
	if (!d)
		return elf_errno() ? qp_elf_fail_libelf(c, "note section") : 0;
	if (!d->d_buf)
		return 0;
	/* gelf_getnote checks each header, name and descriptor against
	 * d_size and returns 0 at the end or on the first broken note. */
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)d->d_buf + name_off;
		const unsigned char *desc = (const unsigned char *)d->d_buf + desc_off;

		off = next;
		if (name_off + nh.n_namesz > d->d_size || desc_off + nh.n_descsz > d->d_size) {
			c->p->nbroken_notes += stapsdt;
			return 0;
		}
		if (nh.n_type == 3 && nh.n_namesz == sizeof("stapsdt") &&
		    memcmp(name, "stapsdt", sizeof("stapsdt")) == 0) {
			err = add_stapsdt(c, desc, nh.n_descsz);
			if (err)
				return err;
		} else if (qp_note_is_build_id(&nh, name)) {
			/* build_id holds 20 bytes (SHA-1, the GNU ld default); a
			 * longer custom id is cut, which still identifies the file */
			qp_build_id_hex(desc, nh.n_descsz, c->p->build_id, sizeof(c->p->build_id));
			c->p->build_id_off = sh_offset + desc_off;
			c->p->build_id_len = (uint32_t)(strlen(c->p->build_id) / 2);
		}
	}
	if (stapsdt && off < d->d_size)	/* a header that does not fit: the rest is unreadable */
		c->p->nbroken_notes++;
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
		return qp_elf_fail_libelf(c, "section names");
	while ((scn = elf_nextscn(c->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return qp_elf_fail_libelf(c, "section header");
		name = elf_strptr(c->elf, c->shstrndx, sh.sh_name);
		if (!name)
			name = "";
		if ((sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS && sh.sh_size) {
			if (qp_elf_grow((void **)&c->secs, &c->cap_secs, c->nsecs, sizeof(*c->secs)))
				return qp_elf_fail(c, -ENOMEM, "out of memory");
			c->secs[c->nsecs++] = (struct qp_asec){
				.addr = sh.sh_addr, .size = sh.sh_size, .scn = scn };
		}
		if (sh.sh_type == SHT_NOTE) {
			err = parse_notes(c, scn, sh.sh_offset, !strcmp(name, ".note.stapsdt"));
			if (err)
				return err;
		} else if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC)) {
			if (qp_elf_grow((void **)&c->relas, &c->cap_relas, c->nrelas, sizeof(*c->relas)))
				return qp_elf_fail(c, -ENOMEM, "out of memory");
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
		return qp_elf_fail(&c, -EINVAL, "no output");
	*out = NULL;
	if (!path)
		return qp_elf_fail(&c, -EINVAL, "empty path");
	c.p = calloc(1, sizeof(*c.p));
	if (!c.p || !(c.p->path = strdup(path))) {
		ret = qp_elf_fail(&c, -ENOMEM, "out of memory");
		goto out;
	}
	if (fstat(fd, &st)) {
		ret = qp_elf_fail(&c, -errno, "cannot stat: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = qp_elf_fail(&c, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			   S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		goto out;
	}
	if ((uint64_t)st.st_size > QP_ELF_MAX_SIZE) {
		ret = qp_elf_fail(&c, -EFBIG, "larger than %llu bytes", (unsigned long long)QP_ELF_MAX_SIZE);
		goto out;
	}
	qp_file_id_of(&st, &c.p->id);
	c.fsize = (uint64_t)st.st_size;
	ret = check_header(&c);
	if (ret)
		goto out;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		ret = qp_elf_fail(&c, -EINVAL, "libelf: %s", elf_errmsg(-1));
		goto out;
	}
	/* ELF_C_READ, not mmap: a file truncated while we read it must give
	 * a read error, not SIGBUS. */
	c.elf = elf_begin(c.fd, ELF_C_READ, NULL);
	if (!c.elf) {
		ret = qp_elf_fail_libelf(&c, "elf_begin");
		goto out;
	}
	if (elf_kind(c.elf) != ELF_K_ELF) {
		ret = qp_elf_fail(&c, -ENOEXEC, "not an ELF file");
		goto out;
	}
	if (!gelf_getehdr(c.elf, &c.ehdr)) {
		ret = qp_elf_fail_libelf(&c, "ELF header");
		goto out;
	}
	if (c.ehdr.e_type != ET_EXEC && c.ehdr.e_type != ET_DYN) {
		ret = qp_elf_fail(&c, -ENOEXEC, "ELF type %u is not an executable or shared object",
			   (unsigned)c.ehdr.e_type);
		goto out;
	}
	c.p->e_type = c.ehdr.e_type;
	ret = read_segments(&c);
	if (!ret)
		ret = scan_sections(&c);
	if (!ret)
		ret = qp_elf_parse_sites(&c);
	if (!ret)
		adjust_notes(&c);
	if (!ret)
		qp_elf_check_sites(c.p, fd);
	/* a file written while we read it: what we read is no version of it */
	if (!ret && (fstat(fd, &st) || (qp_file_id_of(&st, &after), !qp_file_id_eq(&after, &c.p->id))))
		ret = qp_elf_fail(&c, -EAGAIN, "the file changed while it was being read");
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
		free(p->sites[i].span);
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
	case QPROF_KIND_ASYNC_BEGIN:
		return "async_begin";
	case QPROF_KIND_ASYNC_STEP:
		return "async_step";
	case QPROF_KIND_ASYNC_END:
		return "async_end";
	default:
		return "unknown";
	}
}

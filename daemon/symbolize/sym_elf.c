/* sym_elf.c - the symbolizer's ELF files: a file's PT_LOAD segments and its
 * FUNC/IFUNC symbols, from .symtab, else from a separate debug file
 * (DEBUG_ROOT/.build-id/xx/rest.debug, then .gnu_debuglink next to the
 * file, in its .debug/ and under DEBUG_ROOT, CRC-checked), else from
 * .dynsym; its DWARF (sym_dwarf.c), from the file or else its debug file,
 * kept open for line lookups; the vDSO; and the cache of parsed files, found again by
 * build-id (common/elf_build_id.c) or by dev+inode+mtime+size. A file is
 * read and parsed without the symbolizer's lock and put in the cache under
 * it. ELF contents are untrusted: libelf checks section bounds, counts are
 * capped and a file that cannot be read gives "module+0xoff" names. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "common/elf_build_id.h"
#include "common/elf_probes.h"
#include "sym_internal.h"

static int elf_segments(Elf *elf, struct symfile *f)
{
	size_t i, nph;

	if (elf_getphdrnum(elf, &nph))
		return -EINVAL;
	if (nph > 65535)
		return -EINVAL;
	f->segs = calloc(nph ? nph : 1, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset + ph.p_filesz < ph.p_offset || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		f->segs[f->nsegs++] = (struct sym_fseg){ ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz };
	}
	return 0;
}

static int cmp_fsym(const void *a, const void *b)
{
	const struct sym_fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address: the sized one, then global before weak before
	 * local, then by name so that the choice is stable. */
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->bind != y->bind) {
		int rx = x->bind == STB_GLOBAL ? 0 : x->bind == STB_WEAK ? 1 : 2;
		int ry = y->bind == STB_GLOBAL ? 0 : y->bind == STB_WEAK ? 1 : 2;

		if (rx != ry)
			return rx - ry;
	}
	return strcmp(x->name, y->name);
}

/* Load the FUNC/IFUNC symbols of every section of type TYPE into f. */
static int elf_symbols(Elf *elf, Elf64_Word type, struct symfile *f)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0, i, j;
	int err = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t esz, cnt;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		d = elf_getdata(scn, NULL);
		esz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
		if (!d || !d->d_buf || !esz)
			continue;
		cnt = d->d_size / esz;
		for (i = 0; i < cnt; i++) {
			GElf_Sym sym;
			const char *name;
			int t;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			t = GELF_ST_TYPE(sym.st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
			    sym.st_value == 0 || !sym.st_name)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (f->nsyms == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct sym_fsym *nv;

				if (ncap > SYM_MAX_SYMS) {
					if (cap >= SYM_MAX_SYMS)
						goto done;
					ncap = SYM_MAX_SYMS;
				}
				nv = realloc(f->syms, ncap * sizeof(*nv));
				if (!nv) {
					err = -ENOMEM;
					goto done;
				}
				f->syms = nv;
				cap = ncap;
			}
			name = qp_arena_strndup(f->names, name, strnlen(name, SYM_MAX_NAME));
			if (!name) {
				err = -ENOMEM;
				goto done;
			}
			f->syms[f->nsyms++] = (struct sym_fsym){ .addr = sym.st_value, .size = sym.st_size,
								 .name = name,
								 .bind = (uint8_t)GELF_ST_BIND(sym.st_info) };
		}
	}
done:
	if (f->nsyms)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_fsym);
	for (i = j = 0; i < f->nsyms; i++)
		if (!j || f->syms[j - 1].addr != f->syms[i].addr)
			f->syms[j++] = f->syms[i];
	f->nsyms = j;
	return err;
}

static bool elf_has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size)
			return true;
	}
	return false;
}

static Elf *elf_open_fd(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;

	if (!elf)
		return NULL;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}

static int crc_file(int fd, uint32_t *out)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	ssize_t r;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		r = read(fd, buf, sizeof(buf));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		crc = crc32(crc, buf, (uInt)r);
	}
	*out = (uint32_t)crc;
	return 0;
}

/* F's DWARF from the open file FD, within the cap on files held open. */
static void dwarf_attach(struct qp_symbolizer *s, struct symfile *f, int fd)
{
	if (s->no_lines)
		return;
	if (__atomic_add_fetch(&s->dwarf_files, 1, __ATOMIC_RELAXED) > SYM_MAX_DWARF_FILES) {
		__atomic_sub_fetch(&s->dwarf_files, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&s->dwarf_refused, 1, __ATOMIC_RELAXED);
		return;
	}
	f->dw = sym_dwarf_open(fd, s->debug_root);
	if (!f->dw)
		__atomic_sub_fetch(&s->dwarf_files, 1, __ATOMIC_RELAXED);
}

/* sym_internal.h: the same build-id when both have one, the same CRC when
 * HAVE_CRC. */
bool sym_try_debug_file(struct qp_symbolizer *s, struct symfile *f, const struct stat *orig,
			   const char *path, bool have_crc, uint32_t crc, bool want_syms)
{
	char bid[2 * SYM_BUILD_ID_MAX + 1];
	struct stat st;
	bool ok = false;
	uint32_t c;
	Elf *elf;
	int fd;

	/* only a regular file is opened: a FIFO or a device put where a debug
	 * file is looked for (the debuglink's name comes from the target's
	 * file) must neither hold the thread nor be opened */
	fd = qp_open_regular_st(path, &st);
	if (fd < 0)
		return false;
	if (st.st_dev == orig->st_dev && st.st_ino == orig->st_ino)
		goto out;
	if (have_crc && (crc_file(fd, &c) || c != crc))
		goto out;
	elf = elf_open_fd(fd);
	if (!elf)
		goto out;
	qp_elf_build_id(elf, bid, sizeof(bid));
	if (!(f->build_id[0] && bid[0] && strcmp(f->build_id, bid))) {
		if (want_syms) {
			elf_symbols(elf, SHT_SYMTAB, f);
			f->full_syms = f->nsyms > 0;
		}
		if (!f->dw && !s->no_lines && sym_elf_has_dwarf(elf))
			dwarf_attach(s, f, fd);
		if ((want_syms && f->nsyms) || f->dw) {
			f->debug_path = qp_arena_strndup(f->names, path, strlen(path));
			ok = true;
		}
	}
	elf_end(elf);
out:
	close(fd);
	return ok;
}

static bool find_debug_file(struct qp_symbolizer *s, struct symfile *f, Elf *elf,
			    const struct stat *orig, const char *dirpath, bool want_syms)
{
	char path[PATH_MAX], dir[PATH_MAX];
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	const char *slash;

	if (f->build_id[0] && f->build_id[1] && f->build_id[2]) {
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", s->debug_root,
			 f->build_id, f->build_id + 2);
		if (sym_try_debug_file(s, f, orig, path, false, 0, want_syms))
			return true;
		/* where fetched ones are put (debuginfod.c) */
		if (s->fetched_root &&
		    snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", s->fetched_root,
			     f->build_id, f->build_id + 2) < (int)sizeof(path) &&
		    sym_try_debug_file(s, f, orig, path, false, 0, want_syms))
			return true;
	}
	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	slash = dirpath ? strrchr(dirpath, '/') : NULL;
	if (!slash || (size_t)(slash - dirpath) >= sizeof(dir))
		return false;
	memcpy(dir, dirpath, (size_t)(slash - dirpath));
	dir[slash - dirpath] = '\0';
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname, *name;
		Elf_Data *d;
		size_t len, coff;
		const unsigned char *cb;
		uint32_t crc;
		GElf_Ehdr eh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".gnu_debuglink"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			return false;
		name = d->d_buf;
		len = strnlen(name, d->d_size);
		coff = (len + 4) & ~(size_t)3;
		if (len == 0 || len == d->d_size || coff + 4 > d->d_size || strchr(name, '/') ||
		    !strcmp(name, ".") || !strcmp(name, ".."))
			return false;
		cb = (const unsigned char *)d->d_buf + coff;
		if (!gelf_getehdr(elf, &eh))
			return false;
		if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
			crc = (uint32_t)cb[0] << 24 | (uint32_t)cb[1] << 16 | (uint32_t)cb[2] << 8 | cb[3];
		else
			crc = (uint32_t)cb[3] << 24 | (uint32_t)cb[2] << 16 | (uint32_t)cb[1] << 8 | cb[0];
		{
			const char *fmts[] = { "%s/%s", "%s/.debug/%s" };
			size_t i;
			char nm[NAME_MAX + 1];

			if (len > NAME_MAX)
				return false;
			memcpy(nm, name, len + 1);
			for (i = 0; i < QP_ARRAY_SIZE(fmts); i++) {
				if (snprintf(path, sizeof(path), fmts[i], dir, nm) < (int)sizeof(path) &&
				    sym_try_debug_file(s, f, orig, path, true, crc, want_syms))
					return true;
			}
			if (snprintf(path, sizeof(path), "%s%s%s/%s", s->debug_root,
				     dir[0] == '/' ? "" : "/", dir, nm) < (int)sizeof(path) &&
			    sym_try_debug_file(s, f, orig, path, true, crc, want_syms))
				return true;
		}
		return false;
	}
	return false;
}

struct symfile *sym_file_by_build_id_locked(struct qp_symbolizer *s, const char *bid)
{
	struct symfile *f;

	if (!bid[0])
		return NULL;
	/* A broken copy that claims the id must not stand for the real file. */
	for (f = s->files; f; f = f->next)
		if (!f->err && !f->newer && !strcmp(f->build_id, bid))
			return f;
	return NULL;
}

static void remember_id(struct qp_symbolizer *s, const struct stat *st, struct symfile *f)
{
	struct sym_fileid *id = calloc(1, sizeof(*id));

	if (!id)
		return;
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->mtime = st->st_mtim;
	id->size = st->st_size;
	id->f = f;
	id->next = s->ids;
	s->ids = id;
}

static struct symfile *file_by_id(struct qp_symbolizer *s, const struct stat *st)
{
	struct sym_fileid *id;

	for (id = s->ids; id; id = id->next)
		if (id->dev == st->st_dev && id->ino == st->st_ino && id->size == st->st_size &&
		    id->mtime.tv_sec == st->st_mtim.tv_sec && id->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return id->f;
	return NULL;
}

/* Parse ELF (the open file of stat ST; NULL: not ELF) into a new symfile, without the lock:
 * nothing shared is touched. NULL only when out of memory. */
static struct symfile *file_load(struct qp_symbolizer *s, int fd, const struct stat *st, Elf *elf,
				 const char *bid, const char *path, const char *dirpath)
{
	struct symfile *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	snprintf(f->build_id, sizeof(f->build_id), "%s", bid);
	f->names = qp_arena_new();
	f->path = f->names ? qp_arena_strndup(f->names, path, strlen(path)) : NULL;
	if (!f->path) {
		qp_arena_free(f->names);
		free(f);
		return NULL;
	}
	if (!elf) {
		f->err = -ENOEXEC;
		return f;
	}
	f->err = elf_segments(elf, f);
	if (!f->err) {
		if (elf_has_symtab(elf)) {
			f->err = elf_symbols(elf, SHT_SYMTAB, f);
			f->full_syms = f->nsyms > 0;
		}
		if (!f->err && sym_elf_has_dwarf(elf))
			dwarf_attach(s, f, fd);
		if (!f->err && (!f->nsyms || (!f->dw && !s->no_lines)))
			find_debug_file(s, f, elf, st, dirpath, !f->nsyms);
		/* nothing on this host names it fully: ask a server (not waited for) */
		if (!f->err && bid[0] && s->want_debug && (!f->full_syms || (!f->dw && !s->no_lines)))
			s->want_debug(s->want_ctx, bid, path);
		if (!f->nsyms && !f->err)
			f->err = elf_symbols(elf, SHT_DYNSYM, f);
	}
	return f;
}

struct symfile *sym_file_get(struct qp_symbolizer *s, int fd, const struct stat *st,
			     const char *path, const char *dirpath)
{
	char bid[2 * SYM_BUILD_ID_MAX + 1] = "";
	struct symfile *f, *had;
	Elf *elf;

	pthread_mutex_lock(&s->lock);
	f = sym_file_current(file_by_id(s, st));
	pthread_mutex_unlock(&s->lock);
	if (f)
		return f;
	elf = elf_open_fd(fd);
	if (elf) {
		qp_elf_build_id(elf, bid, sizeof(bid));
		pthread_mutex_lock(&s->lock);
		f = sym_file_by_build_id_locked(s, bid);
		if (f)
			remember_id(s, st, f);
		pthread_mutex_unlock(&s->lock);
		if (f) {
			elf_end(elf);
			return f;
		}
	}
	/* the slow part (symbol tables, debug files), with no lock held */
	f = file_load(s, fd, st, elf, bid, path, dirpath);
	if (elf)
		elf_end(elf);
	if (!f)
		return NULL;
	pthread_mutex_lock(&s->lock);
	/* another thread may have put the same file in meanwhile: first wins */
	had = sym_file_current(file_by_id(s, st));
	if (!had && !f->err)
		had = sym_file_by_build_id_locked(s, bid);
	if (had) {
		remember_id(s, st, had);
	} else {
		f->next = s->files;
		s->files = f;
		remember_id(s, st, f);
	}
	pthread_mutex_unlock(&s->lock);
	if (had) {
		sym_file_free(f);
		return had;
	}
	return f;
}

void sym_file_free(struct symfile *f)
{
	if (!f->dw_borrowed)
		sym_dwarf_free(f->dw);
	free(f->segs);
	free(f->syms);
	qp_arena_free(f->names);
	free(f);
}

static const struct sym_fseg *file_seg(const struct symfile *f, uint64_t off)
{
	size_t i;

	for (i = 0; i < f->nsegs; i++)
		if (off >= f->segs[i].offset && off - f->segs[i].offset < f->segs[i].filesz)
			return &f->segs[i];
	return NULL;
}

bool sym_file_vaddr(const struct symfile *f, uint64_t off, uint64_t *vaddr)
{
	const struct sym_fseg *seg = file_seg(f, off);

	if (seg)
		*vaddr = seg->vaddr + (off - seg->offset);
	return seg != NULL;
}

/* File offset -> link-time address -> symbol. */
struct sym_fsym *sym_file_lookup(const struct symfile *f, uint64_t off, uint64_t *vaddr_out)
{
	const struct sym_fseg *seg = file_seg(f, off);
	uint64_t va;
	size_t i, lo = 0, hi;

	if (!seg || !f->nsyms)
		return NULL;
	va = seg->vaddr + (off - seg->offset);
	*vaddr_out = va;
	hi = f->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	i = lo - 1;
	if (f->syms[i].size)
		return va - f->syms[i].addr < f->syms[i].size ? &f->syms[i] : NULL;
	/* No size: up to the next symbol, inside the same load segment. */
	if (i + 1 < f->nsyms && f->syms[i + 1].addr <= va)
		return NULL;
	if (f->syms[i].addr < seg->vaddr || va - seg->vaddr >= seg->memsz)
		return NULL;
	return &f->syms[i];
}


/* The vDSO image of this process, as a symfile (.dynsym names such as
 * __vdso_clock_gettime). NULL when there is none or it does not parse.
 * Parsed from memory, once, under the lock (no file is read). */
struct symfile *sym_vdso_locked(struct qp_symbolizer *s)
{
	const unsigned char *base;
	const Elf64_Ehdr *eh;
	struct symfile *f;
	size_t size = 0;
	Elf *elf;
	int i;

	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = true;
	base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return NULL;
	eh = (const Elf64_Ehdr *)base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum > 64)
		return NULL;
	/* the image ends with its section headers, after the loaded part */
	for (i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && ph->p_offset + ph->p_filesz > size)
			size = ph->p_offset + ph->p_filesz;
	}
	if (eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize > size)
		size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (!size || size > (1u << 20))
		return NULL;
	elf = elf_memory((char *)base, size);
	if (!elf)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (f && !(f->names = qp_arena_new())) {
		free(f);
		f = NULL;
	}
	if (f) {
		qp_elf_build_id(elf, f->build_id, sizeof(f->build_id));
		f->path = "[vdso]";
		f->err = elf_segments(elf, f);
		if (!f->err)
			f->err = elf_symbols(elf, SHT_DYNSYM, f);
		f->next = s->files;
		s->files = f;
		s->vdso = f;
	}
	elf_end(elf);
	return s->vdso;
}

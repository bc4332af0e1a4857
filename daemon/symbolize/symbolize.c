/* symbolize.c - addresses to names. A user address goes through the cached
 * mappings of its process (read from PROC_ROOT/PID/maps while it lived) to a
 * file offset, through the file's PT_LOAD segments to a link-time address,
 * and by binary search to the FUNC/IFUNC symbol that covers it. Symbols come
 * from .symtab, else from a separate debug file (DEBUG_ROOT/.build-id/xx/
 * rest.debug, then .gnu_debuglink next to the file, in its .debug/ and under
 * DEBUG_ROOT, CRC-checked), else from .dynsym. Each file is parsed once and
 * kept for the life of the symbolizer, found again by build-id (or by
 * dev+inode+mtime+size when it has none), so a process that exits keeps its
 * names. A mapped file is opened by its path, then through PROC_ROOT/PID/root,
 * then PROC_ROOT/PID/map_files, and only when its inode matches the mapping:
 * a binary replaced or deleted on disk is never read as the wrong file. ELF
 * contents are untrusted: libelf checks section bounds, counts are capped and
 * a file that cannot be read gives "module+0xoff" names, never a crash. A
 * symbol with a size covers [start, start + size); one without a size (hand
 * written assembly) covers up to the next symbol within its load segment;
 * past the end of a sized symbol is "module+0xoff". Kernel addresses go to
 * the nearest lower text symbol of kallsyms ("[kernel]+0xaddr" when
 * kptr_restrict hides the addresses). C++ names are demangled with
 * libstdc++'s __cxa_demangle. Every returned string is interned here. */
#define _GNU_SOURCE
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "procfs.h"
#include "util.h"

/* libstdc++ (abi::__cxa_demangle has C linkage). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define SYM_MAX_SYMS (1u << 24)		/* symbols kept from one table */
#define SYM_MAX_TEXT (256u << 20)	/* maps / kallsyms text read */
#define SYM_MAX_NAME 4096		/* longest symbol name kept */
#define SYM_BUILD_ID_MAX 64		/* bytes of a build-id kept */
#define SYM_MISS_REFRESH_NS 100000000ull /* re-read maps on a miss at most 10/s */
#define SYM_ARENA_CHUNK 65536

/* ---- strings ---------------------------------------------------------- */

struct arena {
	struct arena *next;
	size_t used, cap;
	char data[];
};

static char *arena_strndup(struct arena **head, const char *s, size_t len)
{
	struct arena *a = *head;
	char *r;

	if (len >= SIZE_MAX / 2)
		return NULL;
	if (!a || a->cap - a->used < len + 1) {
		size_t cap = len + 1 > SYM_ARENA_CHUNK / 4 ? len + 1 : SYM_ARENA_CHUNK;

		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->used = 0;
		a->cap = cap;
		/* A big one-off string goes behind the current chunk so that
		 * the chunk keeps being filled. */
		if (*head && cap != SYM_ARENA_CHUNK) {
			a->next = (*head)->next;
			(*head)->next = a;
		} else {
			a->next = *head;
			*head = a;
		}
	}
	r = a->data + a->used;
	memcpy(r, s, len);
	r[len] = '\0';
	a->used += len + 1;
	return r;
}

static void arena_free(struct arena *a)
{
	while (a) {
		struct arena *n = a->next;

		free(a);
		a = n;
	}
}

struct istr {
	const char *s;
	const char *dem;	/* demangled form, set on first demangle */
	uint64_t h;
};

struct intern {
	struct istr *v;
	size_t n, cap;	/* cap is a power of two */
	struct arena *arena;
};

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

static int intern_grow(struct intern *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024, i;
	struct istr *nv = calloc(ncap, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->v[i].s)
			continue;
		j = t->v[i].h & (ncap - 1);
		while (nv[j].s)
			j = (j + 1) & (ncap - 1);
		nv[j] = t->v[i];
	}
	free(t->v);
	t->v = nv;
	t->cap = ncap;
	return 0;
}

static struct istr *intern_entry(struct intern *t, const char *s, size_t len)
{
	uint64_t h = hash_str(s, len);
	size_t j;

	if ((t->n + 1) * 2 > t->cap && intern_grow(t))
		return NULL;
	j = h & (t->cap - 1);
	while (t->v[j].s) {
		if (t->v[j].h == h && strncmp(t->v[j].s, s, len) == 0 && t->v[j].s[len] == '\0')
			return &t->v[j];
		j = (j + 1) & (t->cap - 1);
	}
	t->v[j].s = arena_strndup(&t->arena, s, len);
	if (!t->v[j].s)
		return NULL;
	t->v[j].h = h;
	t->v[j].dem = NULL;
	t->n++;
	return &t->v[j];
}

/* ---- types ------------------------------------------------------------ */

struct fsym {
	uint64_t addr, size;
	const char *name;	/* mangled, in the file's arena */
	uint8_t bind;
};

struct fseg {
	uint64_t vaddr, memsz, offset, filesz;
};

/* One parsed ELF file (or one that could not be parsed: err != 0). */
struct symfile {
	struct symfile *next;
	char build_id[2 * SYM_BUILD_ID_MAX + 1];
	const char *path;	/* interned, as first seen */
	const char *bid;	/* interned build_id */
	const char *debug_path;	/* interned; where .symtab came from, NULL if here */
	int err;
	size_t nsegs, nsyms;
	struct fseg *segs;
	struct fsym *syms;	/* sorted by addr, one per address */
	struct arena *names;
};

/* dev+inode+mtime+size of a file already seen -> its parse. */
struct fileid {
	struct fileid *next;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	struct symfile *f;
};

enum { MAP_FILE, MAP_ANON, MAP_SPECIAL };

struct symmap {
	uint64_t start, end, offset, inode;
	const char *path;	/* interned, " (deleted)" removed; NULL for anon */
	const char *module;	/* interned */
	struct symfile *file;	/* NULL: not executable or unreadable */
	int kind;
};

struct qp_sym_process {
	struct qp_sym_process *next;
	int pid;
	bool gone;
	uint64_t last_refresh_ns;
	size_t n;
	struct symmap *v;	/* sorted by start, not overlapping */
};

struct ksym {
	uint64_t addr;
	const char *name;
};

struct qp_symbolizer {
	char *kallsyms, *debug_root, *proc_root;
	/* the vDSO: the same image in every process of this kernel, parsed
	 * from qprofd's own copy (getauxval(AT_SYSINFO_EHDR)) on first use */
	bool vdso_tried;
	struct symfile *vdso;
	struct intern in;
	struct symfile *files;
	struct fileid *ids;
	struct qp_sym_process *procs;
	/* kernel, read on first use */
	bool k_loaded, k_restricted;
	size_t k_n;
	struct ksym *k_v;
	struct arena *k_names;
};

static const char *intern(struct qp_symbolizer *s, const char *str)
{
	struct istr *e = intern_entry(&s->in, str, strlen(str));

	return e ? e->s : "?";
}

static const char *internf(struct qp_symbolizer *s, const char *fmt, ...) __printf(2, 3);
static const char *internf(struct qp_symbolizer *s, const char *fmt, ...)
{
	char buf[PATH_MAX + 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return intern(s, buf);
}

/* ---- demangling ------------------------------------------------------- */

const char *qp_sym_demangle(struct qp_symbolizer *s, const char *name)
{
	struct istr *e;

	if (!s || !name)
		return name;
	e = intern_entry(&s->in, name, strnlen(name, SYM_MAX_NAME));
	if (!e)
		return name;
	if (!e->dem) {
		e->dem = e->s;
		if (strncmp(name, "_Z", 2) == 0) {
			int status = -1;
			char *d = __cxa_demangle(e->s, NULL, NULL, &status);

			if (d && status == 0) {
				const char *v = intern(s, d);

				/* intern() may have moved the table. */
				e = intern_entry(&s->in, name, strnlen(name, SYM_MAX_NAME));
				if (e && strcmp(v, "?"))
					e->dem = v;
			}
			free(d);
			if (!e)
				return name;
		}
	}
	return e->dem;
}

/* ---- ELF -------------------------------------------------------------- */

static void hex_id(char *out, const unsigned char *b, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (n > SYM_BUILD_ID_MAX)
		n = SYM_BUILD_ID_MAX;
	for (i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool notes_build_id(Elf_Data *d, char *out)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf)
		return false;
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz > 0) {
			hex_id(out, (const unsigned char *)d->d_buf + desc_off, nh.n_descsz);
			return true;
		}
		off = next;
	}
	return false;
}

/* From the note sections, else the PT_NOTE segments. */
static void elf_build_id(Elf *elf, char *out)
{
	Elf_Scn *scn = NULL;
	size_t i, nph;

	out[0] = '\0';
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    notes_build_id(elf_getdata(scn, NULL), out))
			return;
	}
	if (elf_getphdrnum(elf, &nph))
		return;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (notes_build_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
							 ELF_T_NHDR), out))
			return;
	}
}

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
		f->segs[f->nsegs++] = (struct fseg){ ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz };
	}
	return 0;
}

static int cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

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
				struct fsym *nv;

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
			name = arena_strndup(&f->names, name, strnlen(name, SYM_MAX_NAME));
			if (!name) {
				err = -ENOMEM;
				goto done;
			}
			f->syms[f->nsyms++] = (struct fsym){ sym.st_value, sym.st_size, name,
							     (uint8_t)GELF_ST_BIND(sym.st_info) };
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

/* Try PATH as the debug file of F (whose own file is ORIG): same build-id
 * when both have one, same CRC when HAVE_CRC. Loads its .symtab into F. */
static bool try_debug_file(struct qp_symbolizer *s, struct symfile *f, const struct stat *orig,
			   const char *path, bool have_crc, uint32_t crc)
{
	char bid[2 * SYM_BUILD_ID_MAX + 1];
	struct stat st;
	bool ok = false;
	uint32_t c;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (st.st_dev == orig->st_dev && st.st_ino == orig->st_ino))
		goto out;
	if (have_crc && (crc_file(fd, &c) || c != crc))
		goto out;
	elf = elf_open_fd(fd);
	if (!elf)
		goto out;
	elf_build_id(elf, bid);
	if (!(f->build_id[0] && bid[0] && strcmp(f->build_id, bid))) {
		elf_symbols(elf, SHT_SYMTAB, f);
		if (f->nsyms) {
			f->debug_path = intern(s, path);
			ok = true;
		}
	}
	elf_end(elf);
out:
	close(fd);
	return ok;
}

static bool find_debug_file(struct qp_symbolizer *s, struct symfile *f, Elf *elf,
			    const struct stat *orig, const char *dirpath)
{
	char path[PATH_MAX], dir[PATH_MAX];
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	const char *slash;

	if (f->build_id[0] && f->build_id[1] && f->build_id[2]) {
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", s->debug_root,
			 f->build_id, f->build_id + 2);
		if (try_debug_file(s, f, orig, path, false, 0))
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
				    try_debug_file(s, f, orig, path, true, crc))
					return true;
			}
			if (snprintf(path, sizeof(path), "%s%s%s/%s", s->debug_root,
				     dir[0] == '/' ? "" : "/", dir, nm) < (int)sizeof(path) &&
			    try_debug_file(s, f, orig, path, true, crc))
				return true;
		}
		return false;
	}
	return false;
}

static struct symfile *file_by_build_id(struct qp_symbolizer *s, const char *bid)
{
	struct symfile *f;

	if (!bid[0])
		return NULL;
	/* A broken copy that claims the id must not stand for the real file. */
	for (f = s->files; f; f = f->next)
		if (!f->err && !strcmp(f->build_id, bid))
			return f;
	return NULL;
}

static void remember_id(struct qp_symbolizer *s, const struct stat *st, struct symfile *f)
{
	struct fileid *id = calloc(1, sizeof(*id));

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
	struct fileid *id;

	for (id = s->ids; id; id = id->next)
		if (id->dev == st->st_dev && id->ino == st->st_ino && id->size == st->st_size &&
		    id->mtime.tv_sec == st->st_mtim.tv_sec && id->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return id->f;
	return NULL;
}

/* The parse of the open file FD (a regular file, ST), from the cache when
 * the same file or the same build-id was seen. DIRPATH: where to look for a
 * .gnu_debuglink file (NULL: nowhere). Never NULL unless out of memory. */
static struct symfile *file_get(struct qp_symbolizer *s, int fd, const struct stat *st,
				const char *path, const char *dirpath)
{
	char bid[2 * SYM_BUILD_ID_MAX + 1] = "";
	struct symfile *f;
	Elf *elf;

	f = file_by_id(s, st);
	if (f)
		return f;
	elf = elf_open_fd(fd);
	if (elf) {
		elf_build_id(elf, bid);
		f = file_by_build_id(s, bid);
		if (f) {
			elf_end(elf);
			remember_id(s, st, f);
			return f;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		if (elf)
			elf_end(elf);
		return NULL;
	}
	memcpy(f->build_id, bid, sizeof(bid));
	f->bid = intern(s, bid);
	f->path = intern(s, path);
	if (!elf) {
		f->err = -ENOEXEC;
	} else {
		f->err = elf_segments(elf, f);
		if (!f->err) {
			if (elf_has_symtab(elf))
				f->err = elf_symbols(elf, SHT_SYMTAB, f);
			if (!f->nsyms && !f->err && !find_debug_file(s, f, elf, st, dirpath))
				f->err = elf_symbols(elf, SHT_DYNSYM, f);
		}
		elf_end(elf);
	}
	f->next = s->files;
	s->files = f;
	remember_id(s, st, f);
	return f;
}

static void file_free(struct symfile *f)
{
	free(f->segs);
	free(f->syms);
	arena_free(f->names);
	free(f);
}

/* File offset -> link-time address -> symbol. */
static const struct fsym *file_lookup(const struct symfile *f, uint64_t off, uint64_t *vaddr_out)
{
	const struct fseg *seg = NULL;
	uint64_t va;
	size_t i, lo = 0, hi;

	for (i = 0; i < f->nsegs; i++) {
		if (off >= f->segs[i].offset && off - f->segs[i].offset < f->segs[i].filesz) {
			seg = &f->segs[i];
			break;
		}
	}
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

/* ---- the vDSO ----------------------------------------------------------- */

/* The vDSO image of this process, as a symfile (.dynsym names such as
 * __vdso_clock_gettime). NULL when there is none or it does not parse. */
static struct symfile *vdso_file(struct qp_symbolizer *s)
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
	if (f) {
		elf_build_id(elf, f->build_id);
		f->bid = intern(s, f->build_id);
		f->path = intern(s, "[vdso]");
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

/* ---- processes -------------------------------------------------------- */

static int read_text(const char *path, char **out, size_t *len)
{
	return qp_read_file(path, SYM_MAX_TEXT, out, len);
}

static struct qp_sym_process *proc_find(struct qp_symbolizer *s, int pid)
{
	struct qp_sym_process *p;

	for (p = s->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b && b[1] ? b + 1 : p;
}

/* Open the file behind mapping M of PID: by its path, through the process
 * root, through map_files; only a regular file with the mapping's inode. */
static struct symfile *map_file(struct qp_symbolizer *s, int pid, const struct qp_map *m,
				const char *path, bool deleted)
{
	char cand[3][PATH_MAX];
	bool dirok[3] = { true, true, false };
	int ncand = 0, i;

	if (!deleted && path[0] == '/') {
		snprintf(cand[ncand++], PATH_MAX, "%s", path);
		if (snprintf(cand[ncand], PATH_MAX, "%s/%d/root%s", s->proc_root, pid, path) < PATH_MAX)
			ncand++;
	}
	snprintf(cand[ncand], PATH_MAX, "%s/%d/map_files/%" PRIx64 "-%" PRIx64, s->proc_root,
		 pid, m->start, m->end);
	dirok[ncand++] = false;
	for (i = 0; i < ncand; i++) {
		struct symfile *f;
		struct stat st;
		int fd = open(cand[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    (m->inode && (uint64_t)st.st_ino != m->inode)) {
			close(fd);
			continue;
		}
		/* A debuglink is looked for next to the file as the
		 * process sees it (map_files has no directory of its own). */
		f = file_get(s, fd, &st, path, dirok[i] ? cand[i] : (deleted ? NULL : path));
		close(fd);
		if (f)
			return f;
	}
	return NULL;
}

static const struct symmap *proc_map_find(const struct qp_sym_process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->v[lo - 1].end)
		return &p->v[lo - 1];
	return NULL;
}

static struct symfile *reuse_file(const struct qp_sym_process *p, const struct qp_map *m,
				  const char *path)
{
	const struct symmap *o;

	if (!p)
		return NULL;
	o = proc_map_find(p, m->start);
	if (o && o->start == m->start && o->end == m->end && o->offset == m->offset &&
	    o->inode == m->inode && o->path == path)
		return o->file;
	return NULL;
}

int qp_sym_process_refresh(struct qp_symbolizer *s, int pid)
{
	static const char deleted_sfx[] = " (deleted)";
	struct qp_sym_process *p;
	struct qp_maps maps = { 0 };
	struct symmap *v;
	char path[PATH_MAX];
	char *text;
	size_t len, i;
	int err;

	if (!s || pid <= 0)
		return -EINVAL;
	p = proc_find(s, pid);
	snprintf(path, sizeof(path), "%s/%d/maps", s->proc_root, pid);
	err = read_text(path, &text, &len);
	if (!err) {
		err = qp_maps_parse(text, len, &maps);
		free(text);
	} else if (err == -ENOENT) {
		err = -ESRCH;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			qp_maps_free(&maps);
			return -ENOMEM;
		}
		p->pid = pid;
		p->next = s->procs;
		s->procs = p;
	}
	p->last_refresh_ns = qp_now_ns();
	if (err) {
		/* Keep what was read while it lived. */
		if (err == -ESRCH)
			p->gone = true;
		return err;
	}
	v = calloc(maps.n ? maps.n : 1, sizeof(*v));
	if (!v) {
		qp_maps_free(&maps);
		return -ENOMEM;
	}
	for (i = 0; i < maps.n; i++) {
		const struct qp_map *m = &maps.v[i];
		struct symmap *sm = &v[i];
		size_t plen = strlen(m->path);
		bool deleted = false;

		sm->start = m->start;
		sm->end = m->end;
		sm->offset = m->offset;
		sm->inode = m->inode;
		if (!plen) {
			sm->kind = MAP_ANON;
			sm->module = intern(s, "[anon]");
			continue;
		}
		if (m->path[0] == '[') {
			sm->kind = MAP_SPECIAL;
			sm->module = intern(s, m->path);
			if (!strcmp(m->path, "[vdso]"))
				sm->file = vdso_file(s);
			continue;
		}
		if (plen > sizeof(deleted_sfx) - 1 &&
		    !strcmp(m->path + plen - (sizeof(deleted_sfx) - 1), deleted_sfx)) {
			deleted = true;
			m->path[plen - (sizeof(deleted_sfx) - 1)] = '\0';
		}
		sm->kind = MAP_FILE;
		sm->path = intern(s, m->path);
		sm->module = intern(s, base_name(m->path));
		if (m->perms[2] != 'x')
			continue;
		sm->file = reuse_file(p, m, sm->path);
		if (!sm->file)
			sm->file = map_file(s, pid, m, sm->path, deleted);
	}
	free(p->v);
	p->v = v;
	p->n = maps.n;
	p->gone = false;
	qp_maps_free(&maps);
	return 0;
}

void qp_sym_forget(struct qp_symbolizer *s, int pid)
{
	struct qp_sym_process **pp;

	if (!s)
		return;
	for (pp = &s->procs; *pp; pp = &(*pp)->next) {
		if ((*pp)->pid == pid) {
			struct qp_sym_process *p = *pp;

			*pp = p->next;
			free(p->v);
			free(p);
			return;
		}
	}
}

static void sym_init(struct qp_sym *out)
{
	memset(out, 0, sizeof(*out));
	out->build_id = "";
}

/* Fill OUT for ADDR in mapping M. */
static void resolve_map(struct qp_symbolizer *s, const struct symmap *m, uint64_t addr,
			struct qp_sym *out)
{
	const struct fsym *fs = NULL;
	uint64_t va = 0;

	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	out->module = m->module;
	out->path = m->path;
	if (m->kind == MAP_ANON) {
		out->file_off = addr - m->start;
		out->name = internf(s, "[anon]+0x%" PRIx64, out->file_off);
		return;
	}
	out->file_off = addr - m->start + m->offset;
	if (m->file) {
		out->build_id = m->file->bid;
		fs = file_lookup(m->file, out->file_off, &va);
	}
	if (!fs) {
		out->name = internf(s, "%s+0x%" PRIx64, m->module, out->file_off);
		return;
	}
	out->name = qp_sym_demangle(s, fs->name);
	out->offset = va - fs->addr;
	out->found = true;
}

int qp_sym_user(struct qp_symbolizer *s, int pid, uint64_t addr, struct qp_sym *out)
{
	struct qp_sym_process *p;
	const struct symmap *m = NULL;

	sym_init(out);
	if (!s) {
		out->name = out->module = "[unknown]";
		return 0;
	}
	p = proc_find(s, pid);
	if (!p && pid > 0) {
		qp_sym_process_refresh(s, pid);
		p = proc_find(s, pid);
	} else if (p) {
		m = proc_map_find(p, addr);
		if (!m && !p->gone && qp_now_ns() - p->last_refresh_ns >= SYM_MISS_REFRESH_NS)
			qp_sym_process_refresh(s, pid);
	}
	if (p && !m)
		m = proc_map_find(p, addr);
	if (!m) {
		out->module = intern(s, "[unknown]");
		out->file_off = addr;
		out->name = internf(s, "[unknown]+0x%" PRIx64, addr);
		return 0;
	}
	resolve_map(s, m, addr, out);
	return 0;
}

/* ---- kernel ----------------------------------------------------------- */

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);	/* aliases: a stable choice */
}

/* "ffffffff81000000 T _stext" or "... t name\t[module]". Text symbols only. */
static void kernel_load(struct qp_symbolizer *s)
{
	size_t len, cap = 0, n = 0, nzero = 0, i, j;
	char *text, *p, *end;

	s->k_loaded = true;
	if (read_text(s->kallsyms, &text, &len))
		return;
	p = text;
	end = text + len;
	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p)), *q, *name;
		unsigned long long a;
		size_t nlen;
		char type;

		if (!eol)
			eol = end;
		*eol = '\0';
		q = p;
		p = eol + 1;
		for (nlen = 0; q + nlen < eol && ((q[nlen] >= '0' && q[nlen] <= '9') ||
						  (q[nlen] >= 'a' && q[nlen] <= 'f') ||
						  (q[nlen] >= 'A' && q[nlen] <= 'F'));
		     nlen++)
			;
		if (nlen == 0 || nlen > 16 || eol - q < (ptrdiff_t)nlen + 4 || q[nlen] != ' ' ||
		    q[nlen + 2] != ' ')
			continue;
		type = q[nlen + 1];
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		a = strtoull(q, NULL, 16);
		name = q + nlen + 3;
		nlen = strcspn(name, " \t");
		if (!nlen || nlen >= SYM_MAX_NAME)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			struct ksym *nv;

			if (ncap > SYM_MAX_SYMS)
				break;
			nv = realloc(s->k_v, ncap * sizeof(*nv));
			if (!nv)
				break;
			s->k_v = nv;
			cap = ncap;
		}
		s->k_v[n].addr = a;
		s->k_v[n].name = arena_strndup(&s->k_names, name, nlen);
		if (!s->k_v[n].name)
			break;
		if (!a)
			nzero++;
		n++;
	}
	free(text);
	if (n && nzero == n)
		s->k_restricted = true;
	if (n)
		qsort(s->k_v, n, sizeof(*s->k_v), cmp_ksym);
	for (i = j = 0; i < n; i++)
		if (s->k_v[i].addr && (!j || s->k_v[j - 1].addr != s->k_v[i].addr))
			s->k_v[j++] = s->k_v[i];
	s->k_n = j;
}

int qp_sym_kernel(struct qp_symbolizer *s, uint64_t addr, struct qp_sym *out)
{
	size_t lo = 0, hi;

	sym_init(out);
	if (!s) {
		out->name = out->module = "[kernel]";
		return 0;
	}
	if (!s->k_loaded)
		kernel_load(s);
	out->module = intern(s, "[kernel]");
	out->file_off = addr;
	hi = s->k_n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->k_v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || s->k_restricted) {
		out->name = internf(s, "[kernel]+0x%" PRIx64, addr);
		return 0;
	}
	out->name = qp_sym_demangle(s, s->k_v[lo - 1].name);
	out->offset = addr - s->k_v[lo - 1].addr;
	out->found = true;
	return 0;
}

const char *qp_sym_any(struct qp_symbolizer *s, uint64_t addr)
{
	struct qp_sym_process *p;
	struct qp_sym out;

	if (!s)
		return NULL;
	for (p = s->procs; p; p = p->next) {
		const struct symmap *m = proc_map_find(p, addr);

		if (!m || !m->file)
			continue;
		sym_init(&out);
		resolve_map(s, m, addr, &out);
		if (out.found)
			return out.name;
	}
	qp_sym_kernel(s, addr, &out);
	return out.found ? out.name : NULL;
}

/* ---- life ------------------------------------------------------------- */

static char *dup_opt(const char *v, const char *def)
{
	const char *src = v && *v ? v : def;
	size_t n = strlen(src);
	char *r;

	/* "/a/b/" and "/a/b" are the same root. */
	while (n > 1 && src[n - 1] == '/')
		n--;
	r = malloc(n + 1);
	if (r) {
		memcpy(r, src, n);
		r[n] = '\0';
	}
	return r;
}

struct qp_symbolizer *qp_symbolizer_new(const struct qp_sym_opts *opts)
{
	struct qp_symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->kallsyms = dup_opt(opts ? opts->kallsyms : NULL, "/proc/kallsyms");
	s->debug_root = dup_opt(opts ? opts->debug_root : NULL, "/usr/lib/debug");
	s->proc_root = dup_opt(opts ? opts->proc_root : NULL, "/proc");
	if (!s->kallsyms || !s->debug_root || !s->proc_root || intern_grow(&s->in)) {
		qp_symbolizer_free(s);
		return NULL;
	}
	return s;
}

void qp_symbolizer_free(struct qp_symbolizer *s)
{
	if (!s)
		return;
	while (s->procs)
		qp_sym_forget(s, s->procs->pid);
	while (s->files) {
		struct symfile *f = s->files;

		s->files = f->next;
		file_free(f);
	}
	while (s->ids) {
		struct fileid *id = s->ids;

		s->ids = id->next;
		free(id);
	}
	free(s->k_v);
	arena_free(s->k_names);
	free(s->in.v);
	arena_free(s->in.arena);
	free(s->kallsyms);
	free(s->debug_root);
	free(s->proc_root);
	free(s);
}

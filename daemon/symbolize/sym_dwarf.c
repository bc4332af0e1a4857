/* sym_dwarf.c - source lines and inlined frames from a file's DWARF, with
 * libdw (elfutils): for a link-time address, the file:line in the function
 * that holds it and, innermost first, the functions inlined there with
 * their own file:line (the line table gives the innermost one; each
 * DW_TAG_inlined_subroutine's DW_AT_call_file/call_line gives the line of
 * the level around it). The compile units' address ranges are read once
 * into a sorted table (libdw 0.188's dwarf_addrdie needs .debug_aranges,
 * which clang does not write); each address's answer is cached. libdw is
 * not thread-safe: one mutex per file. The DWARF is untrusted: no other
 * file is opened because of what it says (split units and alt files are
 * refused, but for an alt file found by its build-id under the debug
 * root), compressed sections that claim absurd sizes are refused, counts
 * and string lengths are capped. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/elf_probes.h"
#include "sym_internal.h"

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define DW_MAX_CUS (1u << 20)		/* compile units read */
#define DW_MAX_RANGES (1u << 22)	/* address ranges kept, all units */
#define DW_MAX_CU_RANGES 65536		/* ranges of one unit */
#define DW_MAX_CACHE (1u << 19)		/* addresses remembered */
#define DW_MAX_SECTION (1ull << 30)	/* a decompressed section */
#define DW_MAX_DEPTH 64			/* nested scopes (and namespaces) walked into */
#define DW_MAX_VISITS (1u << 20)	/* DIEs looked at for one address */

struct dw_range {
	uint64_t lo, hi;
	uint32_t cu;
};

struct dw_res {		/* the cache's value for one address */
	const char *file, *func;
	uint32_t line, ninl, inl_at;
	bool found, inl_truncated;
};

struct sym_dwarf {
	pthread_mutex_t lock;
	int fd, alt_fd;		/* -1: none (owned) */
	const char *debug_root;	/* the symbolizer's (outlives this) */
	bool tried;		/* libdw was opened on FD, or that failed */
	Elf *elf, *alt_elf;
	Dwarf *dw, *alt;
	bool built;
	size_t ncus, nranges;
	Dwarf_Die *cus;
	struct dw_range *ranges;	/* sorted by lo */
	struct qp_htab cache;		/* va -> struct dw_res */
	struct qp_sym_inline *inl;	/* the cached answers' inline frames */
	size_t ninl, capinl;
	struct qp_htab str;		/* interned names and paths (a set) */
};

/* ---- opening ---------------------------------------------------------- */

/* libdw 0.188 hands out a DW_FORM_strp / DW_FORM_line_strp name as a
 * pointer into .debug_str / .debug_line_str after checking the offset only,
 * and its callers (the line table's file names, dwarf_diename) run strlen
 * on it: a string section whose last byte is not NUL lets them read past
 * the section's buffer (found by fuzz_symbolize). Such a section is no
 * valid DWARF, so the file's DWARF is refused. A compressed one is
 * decompressed here, as libdw would do at dwarf_begin_elf anyway. */
static bool strings_terminated(Elf_Scn *scn, const GElf_Shdr *sh, const char *name)
{
	Elf_Data *data;

	if ((strcmp(name, ".debug_str") && strcmp(name, ".debug_line_str")) ||
	    sh->sh_type == SHT_NOBITS || !sh->sh_size)
		return true;
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return false;
	data = elf_getdata(scn, NULL);
	return data && data->d_buf && data->d_size &&
	       ((const char *)data->d_buf)[data->d_size - 1] == '\0';
}

/* Refuse what would make libdw read beyond this file or allocate without
 * bound: .zdebug_* (old GNU compression), a SHF_COMPRESSED .debug_*
 * section claiming more than 1 GiB or a ratio no deflate stream reaches;
 * with STRINGS (when libdw is about to read the file, not at the quick
 * check of an attach), a string section not ended by a NUL; split-DWARF
 * (.dwo) files. *altlink: the .gnu_debugaltlink section's data. */
static bool sections_ok(Elf *elf, Elf_Data **altlink, bool strings)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	bool info = false;

	*altlink = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return false;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strncmp(name, ".zdebug", 7) || strstr(name, ".dwo"))
			return false;
		if (!strcmp(name, ".gnu_debugaltlink"))
			*altlink = elf_getdata(scn, NULL);
		if (strncmp(name, ".debug_", 7))
			continue;
		if (!strcmp(name, ".debug_info") && sh.sh_type != SHT_NOBITS && sh.sh_size)
			info = true;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch) || ch.ch_size > DW_MAX_SECTION ||
			    ch.ch_size / 1100 > sh.sh_size)
				return false;
		}
		if (strings && !strings_terminated(scn, &sh, name))
			return false;
	}
	return info;
}

/* The alt file (dwz) named by ALTLINK, looked for only by its build-id
 * under DEBUG_ROOT; libdw would otherwise open the path the file names. */
static int open_alt(struct sym_dwarf *d, Elf_Data *altlink, const char *debug_root)
{
	const unsigned char *p = altlink ? altlink->d_buf : NULL;
	size_t len, idlen, i;
	char path[PATH_MAX], hex[2 * SYM_BUILD_ID_MAX + 1];
	struct stat st;
	int n;

	if (!p || !debug_root)
		return -ENOENT;
	len = strnlen((const char *)p, altlink->d_size);
	if (len == altlink->d_size)
		return -EINVAL;
	idlen = altlink->d_size - len - 1;
	if (idlen < 2 || idlen > SYM_BUILD_ID_MAX)
		return -EINVAL;
	for (i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", p[len + 1 + i]);
	n = snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", debug_root, hex, hex + 2);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	d->alt_fd = qp_open_regular_st(path, &st);	/* never a device or a FIFO */
	if (d->alt_fd < 0)
		return d->alt_fd;
	d->alt_elf = elf_begin(d->alt_fd, ELF_C_READ, NULL);
	if (!d->alt_elf || !sections_ok(d->alt_elf, &altlink, true) || altlink)
		return -EINVAL;
	d->alt = dwarf_begin_elf(d->alt_elf, DWARF_C_READ, NULL);
	if (!d->alt)
		return -EINVAL;
	dwarf_setalt(d->dw, d->alt);
	return 0;
}

static struct sym_dwarf *dw_new(void)
{
	struct sym_dwarf *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	pthread_mutex_init(&d->lock, NULL);
	d->fd = d->alt_fd = -1;
	qp_htab_init(&d->cache, sizeof(struct dw_res));
	qp_htab_init(&d->str, 0);
	return d;
}

void sym_dwarf_free(struct sym_dwarf *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->alt)
		dwarf_end(d->alt);
	if (d->elf)
		elf_end(d->elf);
	if (d->alt_elf)
		elf_end(d->alt_elf);
	if (d->fd >= 0)
		close(d->fd);
	if (d->alt_fd >= 0)
		close(d->alt_fd);
	free(d->cus);
	free(d->ranges);
	free(d->inl);
	qp_htab_free(&d->cache);
	qp_htab_free(&d->str);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

struct sym_dwarf *sym_dwarf_from_elf(Elf *elf, int fd, const char *debug_root)
{
	struct sym_dwarf *d;
	Elf_Data *altlink;

	if (!elf || !sections_ok(elf, &altlink, true))
		return NULL;
	d = dw_new();
	if (!d)
		return NULL;
	d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!d->dw || (altlink && open_alt(d, altlink, debug_root))) {
		sym_dwarf_free(d);	/* ELF and FD stay the caller's */
		return NULL;
	}
	d->elf = elf;
	d->fd = fd;
	d->tried = true;
	return d;
}

/* The first lookup opens libdw on d->fd (the lock held): not at attach,
 * where reading the .debug_* sections would slow the attach (or hold an
 * exec'd target stopped longer) for a file that may never be sampled. */
static bool dw_lazy_open(struct sym_dwarf *d)
{
	Elf_Data *altlink;
	Elf *elf;

	d->tried = true;
	/* ELF_C_READ, not a mapping: a file truncated under us gives read
	 * errors, where a mapping would give SIGBUS */
	elf = elf_begin(d->fd, ELF_C_READ, NULL);
	if (!elf)
		return false;
	d->elf = elf;
	if (!sections_ok(elf, &altlink, true) || !(d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL)))
		return false;
	if (altlink && open_alt(d, altlink, d->debug_root)) {
		dwarf_end(d->dw);
		d->dw = NULL;
		return false;
	}
	return true;
}

bool sym_elf_has_dwarf(Elf *elf)
{
	Elf_Data *altlink;

	return sections_ok(elf, &altlink, false);
}

struct sym_dwarf *sym_dwarf_open(int fd, const char *debug_root)
{
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	struct sym_dwarf *d;

	if (own < 0)
		return NULL;
	d = dw_new();
	if (!d) {
		close(own);
		return NULL;
	}
	d->fd = own;
	d->debug_root = debug_root;
	return d;
}

/* ---- the compile units' ranges ------------------------------------------ */

static int cmp_range(const void *a, const void *b)
{
	const struct dw_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static bool add_range(struct sym_dwarf *d, size_t *cap, uint64_t lo, uint64_t hi, uint32_t cu)
{
	if (d->nranges == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct dw_range *v;

		if (ncap > DW_MAX_RANGES)
			ncap = DW_MAX_RANGES;
		if (ncap <= *cap)
			return false;
		v = realloc(d->ranges, ncap * sizeof(*v));
		if (!v)
			return false;
		d->ranges = v;
		*cap = ncap;
	}
	d->ranges[d->nranges++] = (struct dw_range){ lo, hi, cu };
	return true;
}

/* Every compile unit with code, once. A unit that names a .dwo file is
 * left out: libdw would open that path. */
static void build_ranges(struct sym_dwarf *d)
{
	Dwarf_CU *cu = NULL, *next;
	size_t capcu = 0, caprange = 0;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie;

	d->built = true;
	while (d->ncus < DW_MAX_CUS &&
	       dwarf_get_units(d->dw, cu, &next, &version, &type, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		unsigned n = 0;
		uint32_t idx;

		cu = next;
		/* the unit type first: a DIE libdw cleared must not be read */
		if (type != DW_UT_compile || dwarf_tag(&cudie) != DW_TAG_compile_unit ||
		    dwarf_hasattr(&cudie, DW_AT_dwo_name) || dwarf_hasattr(&cudie, DW_AT_GNU_dwo_name))
			continue;
		if (d->ncus == capcu) {
			size_t ncap = capcu ? capcu * 2 : 64;
			Dwarf_Die *v = realloc(d->cus, ncap * sizeof(*v));

			if (!v)
				break;
			d->cus = v;
			capcu = ncap;
		}
		idx = (uint32_t)d->ncus;
		d->cus[d->ncus++] = cudie;
		while (n++ < DW_MAX_CU_RANGES && (off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi > lo && !add_range(d, &caprange, lo, hi, idx))
				goto done;
		}
	}
done:
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), cmp_range);
}

/* The unit holding VA: the last range starting at or below it that holds
 * it (looking back a little, for nested or overlapping ranges). */
static Dwarf_Die *cu_of(struct sym_dwarf *d, uint64_t va, Dwarf_Die *mem)
{
	size_t lo = 0, hi = d->nranges, i, back;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->ranges[mid].lo <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, back = 0; i-- > 0 && back < 64; back++)
		if (va < d->ranges[i].hi)
			return &d->cus[d->ranges[i].cu];
	if (!d->nranges)	/* no unit said its ranges: .debug_aranges, if any */
		return dwarf_addrdie(d->dw, va, mem);
	return NULL;
}

/* ---- one address ------------------------------------------------------- */

static const char *intern(struct sym_dwarf *d, const char *s, size_t max)
{
	int64_t i;

	if (!s || !*s)
		return NULL;
	i = qp_htab_add(&d->str, s, strnlen(s, max), NULL);
	return i < 0 ? NULL : qp_htab_key(&d->str, (size_t)i, NULL);
}

/* S interned as a path: a relative name (a compiler run on a relative path,
 * or ccache's base_dir) is joined to the CU's absolute DW_AT_comp_dir, and
 * "." and ".." are taken out by their text, so a file reads the same
 * however it was compiled. */
static const char *intern_path(struct sym_dwarf *d, Dwarf_Die *cudie, const char *s)
{
	char buf[PATH_MAX], *seg[256], *p, *save = NULL;
	const char *dir;
	Dwarf_Attribute a;
	size_t n = 0, i, len = 0;

	if (!s || !*s || s[0] == '/' || !dwarf_attr(cudie, DW_AT_comp_dir, &a) ||
	    !(dir = dwarf_formstring(&a)) || dir[0] != '/' ||
	    (size_t)snprintf(buf, sizeof(buf), "%s/%s", dir, s) >= sizeof(buf))
		return intern(d, s, PATH_MAX);
	for (p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (!strcmp(p, "."))
			continue;
		if (!strcmp(p, "..")) {
			if (n)
				n--;
			continue;
		}
		if (n == sizeof(seg) / sizeof(seg[0]))
			return intern(d, s, PATH_MAX);
		seg[n++] = p;
	}
	{
		char out[PATH_MAX];

		for (i = 0; i < n; i++) {
			size_t k = strlen(seg[i]);

			if (len + 1 + k >= sizeof(out))
				return intern(d, s, PATH_MAX);
			out[len++] = '/';
			memcpy(out + len, seg[i], k);
			len += k;
		}
		out[len] = '\0';
		return intern(d, len ? out : "/", PATH_MAX);
	}
}

/* A function's name: its linkage name demangled, else DW_AT_name (both
 * through abstract_origin/specification). */
static const char *die_name(struct sym_dwarf *d, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		n = dwarf_formstring(&a);
	if (n && !strncmp(n, "_Z", 2) && strnlen(n, SYM_MAX_NAME) < SYM_MAX_NAME) {
		int st = -1;
		char *dem = __cxa_demangle(n, NULL, NULL, &st);
		const char *r = dem && st == 0 ? intern(d, dem, SYM_MAX_NAME) : NULL;

		free(dem);
		if (r)
			return r;
	}
	if (!n && dwarf_attr_integrate(die, DW_AT_name, &a))
		n = dwarf_formstring(&a);
	return intern(d, n, SYM_MAX_NAME);
}

/* Attribute NAME of DIE as a number; -1 when absent or not one. */
static int64_t attr_u32(Dwarf_Die *die, int name)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!dwarf_attr(die, (unsigned)name, &a) || dwarf_formudata(&a, &w) || w > UINT32_MAX)
		return -1;
	return (int64_t)w;
}

static bool is_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_entry_point ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

/* The subprogram holding PC and the inlined instances in it down to the
 * innermost, outermost first, into CHAIN (lexical blocks are walked
 * through, not kept). Walks the unit's tree itself rather than with
 * dwarf_getscopes: libdw 0.188 leaks its array when a later step fails
 * on bad DWARF (fuzz_dwarf found it), and recurses once per level. Here
 * the depth and the DIEs visited are bounded, so a DW_AT_sibling loop or
 * a tree a million levels deep ends. Namespaces and modules (which have no
 * ranges) are entered and left again. Returns how many were kept. */
static int scope_chain(Dwarf_Die *cudie, uint64_t pc, Dwarf_Die *chain, int max)
{
	Dwarf_Die die, up[DW_MAX_DEPTH];	/* up: the namespaces entered */
	unsigned visits = 0;
	int n = 0, nup = 0;

	if (dwarf_child(cudie, &die) != 0)
		return 0;
	for (;;) {
		int tag = dwarf_tag(&die);
		Dwarf_Die child;

		if (++visits > DW_MAX_VISITS)
			return n;
		if (is_scope(tag) && dwarf_haspc(&die, pc) == 1) {
			if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
				if (n == max)
					return n;
				chain[n++] = die;
			}
			/* the scope holding PC: the answer is in it, or is it */
			if (dwarf_child(&die, &child) != 0)
				return n;
			nup = 0;	/* no way back up from here */
			die = child;
			continue;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_module) && nup < DW_MAX_DEPTH &&
		    dwarf_child(&die, &child) == 0) {
			up[nup++] = die;
			die = child;
			continue;
		}
		while (dwarf_siblingof(&die, &die) != 0) {	/* this level is done */
			if (!nup)
				return n;
			die = up[--nup];
		}
	}
}

/* Work out VA into R and d->inl (the lock held). */
static void resolve(struct sym_dwarf *d, uint64_t va, struct dw_res *r)
{
	Dwarf_Die mem, *cudie, chain[DW_MAX_DEPTH];
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	Dwarf_Line *ln;
	const char *file = NULL;
	uint32_t line = 0;
	int n, i, lno;

	memset(r, 0, sizeof(*r));
	r->inl_at = (uint32_t)d->ninl;
	cudie = cu_of(d, va, &mem);
	if (!cudie)
		return;
	ln = dwarf_getsrc_die(cudie, va);
	if (ln) {
		file = intern_path(d, cudie, dwarf_linesrc(ln, NULL, NULL));
		if (!dwarf_lineno(ln, &lno) && lno > 0)
			line = (uint32_t)lno;
	}
	n = scope_chain(cudie, va, chain, DW_MAX_DEPTH);
	for (i = n; i-- > 0;) {	/* innermost first */
		Dwarf_Die *sc = &chain[i];
		int64_t cf, cl;

		if (dwarf_tag(sc) == DW_TAG_subprogram) {
			r->func = die_name(d, sc);
			break;
		}
		if (r->ninl < QP_SYM_MAX_INLINE) {
			if (d->ninl == d->capinl) {
				size_t ncap = d->capinl ? d->capinl * 2 : 256;
				struct qp_sym_inline *v = realloc(d->inl, ncap * sizeof(*v));

				if (!v)
					break;
				d->inl = v;
				d->capinl = ncap;
			}
			d->inl[d->ninl++] = (struct qp_sym_inline){
				.name = die_name(d, sc), .file = file, .line = line,
			};
			r->ninl++;
		} else {
			r->inl_truncated = true;
		}
		/* the level around this one is at the call's line */
		cf = attr_u32(sc, DW_AT_call_file);
		cl = attr_u32(sc, DW_AT_call_line);
		file = NULL;
		if (cf >= 0 && (files || dwarf_getsrcfiles(cudie, &files, &nfiles) == 0) &&
		    (uint64_t)cf < nfiles)
			file = intern_path(d, cudie, dwarf_filesrc(files, (size_t)cf, NULL, NULL));
		line = cl > 0 ? (uint32_t)cl : 0;
	}
	r->file = file;
	r->line = line;
	r->found = file || line || r->func || r->ninl;
}

static void fill(const struct sym_dwarf *d, const struct dw_res *r, struct sym_src *out)
{
	uint32_t k;

	out->file = r->file;
	out->line = r->line;
	out->func = r->func;
	out->ninl = r->ninl;
	out->inl_truncated = r->inl_truncated;
	for (k = 0; k < r->ninl; k++)
		out->inl[k] = d->inl[r->inl_at + k];
}

bool sym_dwarf_lookup(struct sym_dwarf *d, uint64_t va, struct sym_src *out)
{
	struct dw_res r;
	int64_t i;

	memset(out, 0, sizeof(*out));
	if (!d)
		return false;
	pthread_mutex_lock(&d->lock);
	if (!d->dw && (d->tried || !dw_lazy_open(d))) {
		pthread_mutex_unlock(&d->lock);
		return false;
	}
	if (!d->built)
		build_ranges(d);
	i = qp_htab_find_u64(&d->cache, va);
	if (i >= 0) {
		r = *(struct dw_res *)qp_htab_value(&d->cache, (size_t)i);
	} else {
		size_t mark = d->ninl;

		resolve(d, va, &r);
		if (d->cache.n < DW_MAX_CACHE && (i = qp_htab_add_u64(&d->cache, va, NULL)) >= 0) {
			*(struct dw_res *)qp_htab_value(&d->cache, (size_t)i) = r;
		} else {
			fill(d, &r, out);
			d->ninl = mark;	/* not kept: its inline frames go too */
			pthread_mutex_unlock(&d->lock);
			return r.found;
		}
	}
	fill(d, &r, out);
	pthread_mutex_unlock(&d->lock);
	return r.found;
}

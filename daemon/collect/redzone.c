/* redzone.c - may a uprobe on this nop5 site overwrite the program's data?
 *
 * On x86-64 Linux >= 6.18 the kernel optimises a uprobe whose instruction is
 * the 5-byte nop 0f 1f 44 00 00: after the first hit (an int3 trap, as every
 * uprobe) it rewrites the nop into a call to a page it maps near the code,
 * [uprobes-trampoline], whose code pushes rcx, r11 and rax and makes the
 * uprobe system call. The call and the pushes write 32 bytes below the
 * probed function's %rsp. The x86-64 ABI gives a function the 128 bytes
 * below %rsp (the red zone) for its own data, and compilers keep a leaf
 * function's spills there: a probe in such a function corrupts it (a loop
 * bound overwritten by a return address). The kernel offers a tracer no way
 * to keep a nop5 probe on the int3 path (on later kernels a BPF program may
 * move the ip past the nop, which also stops the optimisation; this one
 * refuses that write), so qprofd looks before it probes: it disassembles
 * the function that holds each nop5 site (its symbol; a .cold part with its
 * parent) and refuses the probe when any instruction reads or writes memory
 * below %rsp (or, in a function that made %rbp its frame pointer and then
 * only pushed, deeper below %rbp than its pushes), or when no symbol says
 * where the function is.
 *
 * Markers of the current qprof.h (ABI 2) never use the red zone
 * (tests/unit/test_redzone.sh); ABI-1 builds and other providers' nop5
 * probes may. */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "common/elf_probes.h"
#include "redzone.h"

static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

bool qp_redzone_kernel_optimises(void)
{
	static int cached = -1;
	struct utsname u;
	int major = 0, minor = 0;

	if (cached >= 0)
		return cached;
	if (uname(&u) || strcmp(u.machine, "x86_64") || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		cached = strcmp(u.machine, "x86_64") ? 0 : 1; /* unreadable: assume it does */
	else
		cached = major > 6 || (major == 6 && minor >= 18);
	return cached;
}

struct rz_sym {
	uint64_t lo, hi;
	char name[128];
	bool checked;	/* verdict is rz_function_uses' answer for it */
	int verdict;
};

struct rz_file {
	int fd;
	Elf *e;
	const struct qp_elf_probes *elf;
	struct rz_sym *syms;
	size_t nsyms;
	csh cs;
	bool cs_ok;
};

static void rz_close(struct rz_file *f)
{
	if (f->cs_ok)
		cs_close(&f->cs);
	free(f->syms);
	if (f->e)
		elf_end(f->e);
	if (f->fd >= 0)
		close(f->fd);
}

/* FUNC symbols with a size, from .symtab, else .dynsym. */
static int rz_load_syms(struct rz_file *f)
{
	Elf_Scn *scn = NULL;
	int pass;

	for (pass = 0; pass < 2 && !f->nsyms; pass++) {
		while ((scn = elf_nextscn(f->e, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			size_t i, n;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) ||
			    !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			if (!d)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (i = 0; i < n; i++) {
				GElf_Sym s;
				const char *nm;
				struct rz_sym *v;

				if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    !s.st_size || s.st_shndx == SHN_UNDEF)
					continue;
				v = realloc(f->syms, (f->nsyms + 1) * sizeof(*v));
				if (!v)
					return -ENOMEM;
				f->syms = v;
				v += f->nsyms++;
				v->lo = s.st_value;
				v->hi = s.st_value + s.st_size;
				v->checked = false;
				nm = elf_strptr(f->e, sh.sh_link, s.st_name);
				snprintf(v->name, sizeof(v->name), "%s", nm ? nm : "?");
			}
		}
		scn = NULL;
	}
	return 0;
}

static const struct rz_sym *rz_find(const struct rz_file *f, uint64_t pc)
{
	size_t i;

	for (i = 0; i < f->nsyms; i++)
		if (pc >= f->syms[i].lo && pc < f->syms[i].hi)
			return &f->syms[i];
	return NULL;
}

static const struct rz_sym *rz_find_name(const struct rz_file *f, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < f->nsyms; i++)
		if (!strncmp(f->syms[i].name, name, len) && !f->syms[i].name[len])
			return &f->syms[i];
	return NULL;
}

static int rz_read(const struct rz_file *f, uint64_t addr, size_t len, unsigned char *buf)
{
	size_t i;

	for (i = 0; i < f->elf->nsegs; i++) {
		const struct qp_elf_segment *g = &f->elf->segs[i];

		if (addr >= g->vaddr && addr - g->vaddr <= g->filesz && len <= g->filesz - (addr - g->vaddr))
			return pread(f->fd, buf, len, (off_t)(addr - g->vaddr + g->offset)) == (ssize_t)len ?
				       0 : -EIO;
	}
	return -ENOENT;
}

/* 1 when the function [LO, HI) addresses memory below its stack pointer,
 * 0 when not, -errno when it cannot be read. */
static int rz_function_uses(struct rz_file *f, uint64_t lo, uint64_t hi)
{
	unsigned char *code;
	const uint8_t *p;
	size_t size, n;
	uint64_t addr;
	bool fp = false, moved = false;
	int64_t deepest_fp = 0; /* the lowest %rbp offset read or written, once %rbp is %rsp */
	unsigned int pushes = 0; /* after %rbp became %rsp */
	cs_insn *insn;
	int ret = 0;

	if (hi <= lo || hi - lo > (1u << 24))
		return -EINVAL;
	size = hi - lo;
	code = malloc(size);
	if (!code)
		return -ENOMEM;
	ret = rz_read(f, lo, size, code);
	if (ret) {
		free(code);
		return ret;
	}
	insn = cs_malloc(f->cs);
	if (!insn) {
		free(code);
		return -ENOMEM;
	}
	p = code;
	n = size;
	addr = lo;
	while (n && ret == 0) {
		cs_x86 *x;
		uint8_t i;

		if (!cs_disasm_iter(f->cs, &p, &n, &addr, insn)) {
			/* data in the text, or an instruction capstone does not know: skip a byte */
			p++;
			n--;
			addr++;
			continue;
		}
		x = &insn->detail->x86;
		if (insn->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg == X86_REG_RBP && x->operands[1].type == X86_OP_REG &&
		    x->operands[1].reg == X86_REG_RSP)
			fp = true;
		if (fp && (insn->id == X86_INS_PUSH || insn->id == X86_INS_PUSHFQ))
			pushes++;
		if ((insn->id == X86_INS_SUB || insn->id == X86_INS_AND || insn->id == X86_INS_LEA) &&
		    x->op_count == 2 && x->operands[0].type == X86_OP_REG && x->operands[0].reg == X86_REG_RSP)
			moved = true;
		if (insn->id == X86_INS_LEA || insn->id == X86_INS_NOP)
			continue; /* no access: an address computed, or a multi-byte nop */
		for (i = 0; i < x->op_count; i++) {
			const cs_x86_op *o = &x->operands[i];

			if (o->type != X86_OP_MEM || o->mem.disp >= 0 || o->mem.index != X86_REG_INVALID)
				continue;
			if (o->mem.base == X86_REG_RSP)
				ret = 1;
			else if (o->mem.base == X86_REG_RBP && fp && o->mem.disp < deepest_fp)
				deepest_fp = o->mem.disp;
		}
	}
	/* %rbp = %rsp, then only pushes: what lies deeper than the pushes is
	 * below %rsp */
	if (!ret && fp && !moved && -deepest_fp > (int64_t)pushes * 8)
		ret = 1;
	cs_free(insn, 1);
	free(code);
	return ret;
}

/* rz_function_uses of S, once per function: a function with thousands of
 * sites is disassembled once, not once a site. */
static int rz_sym_uses(struct rz_file *f, const struct rz_sym *cs)
{
	struct rz_sym *s = (struct rz_sym *)cs;	/* one of f->syms */

	if (!s->checked) {
		s->verdict = rz_function_uses(f, s->lo, s->hi);
		s->checked = true;
	}
	return s->verdict;
}

/* 1 unsafe (WHY says where), 0 safe, -errno unreadable (WHY says why). */
static int rz_site(struct rz_file *f, uint64_t pc, char *why, size_t whylen)
{
	const struct rz_sym *s = rz_find(f, pc), *parent = NULL;
	const char *cold;
	int ret;

	if (!s) {
		snprintf(why, whylen, "no function symbol covers the site at 0x%llx (cannot tell whether "
			 "its function keeps data in the red zone)", (unsigned long long)pc);
		return 1;
	}
	ret = rz_sym_uses(f, s);
	cold = strstr(s->name, ".cold");
	if (ret == 0 && cold) {
		parent = rz_find_name(f, s->name, (size_t)(cold - s->name));
		if (parent)
			ret = rz_sym_uses(f, parent);
	}
	if (ret < 0) {
		snprintf(why, whylen, "%s (site at 0x%llx) unreadable: %s", s->name, (unsigned long long)pc,
			 strerror(-ret));
		return 1;
	}
	if (ret)
		snprintf(why, whylen, "%s (site at 0x%llx) keeps data below %%rsp (the red zone)",
			 parent ? parent->name : s->name, (unsigned long long)pc);
	return ret;
}

int qp_redzone_check(const char *path, const struct qp_elf_probes *elf, const char *provider,
		     const char *const *names, size_t nnames, char *why, size_t whylen)
{
	struct rz_file f = { .fd = -1, .elf = elf };
	size_t k, j;
	int ret = 0, opened = 0;

	if (!qp_redzone_kernel_optimises())
		return 0;
	for (k = 0; k < elf->nnotes && ret == 0; k++) {
		const struct qp_usdt_note *n = &elf->notes[k];
		unsigned char b[5];
		bool want = false;

		if (n->bad || strcmp(n->provider, provider))
			continue;
		for (j = 0; j < nnames && !want; j++)
			want = !names || !strcmp(n->name, names[j]);
		if (!want)
			continue;
		if (!opened) {
			opened = 1;
			if (elf_version(EV_CURRENT) == EV_NONE)
				return -EINVAL;
			f.fd = open(path, O_RDONLY | O_CLOEXEC);
			if (f.fd < 0) {
				ret = -errno;
				snprintf(why, whylen, "%s: %s", path, strerror(-ret));
				return ret;
			}
			f.e = elf_begin(f.fd, ELF_C_READ, NULL); /* read, not mapped: a file rewritten under us must not SIGBUS qprofd */
			if (!f.e || rz_load_syms(&f) ||
			    cs_open(CS_ARCH_X86, CS_MODE_64, &f.cs) != CS_ERR_OK) {
				snprintf(why, whylen, "%s: cannot read its functions", path);
				rz_close(&f);
				return -EINVAL;
			}
			f.cs_ok = true;
			cs_option(f.cs, CS_OPT_DETAIL, CS_OPT_ON);
		}
		if (rz_read(&f, n->pc, 5, b) || memcmp(b, nop5, 5))
			continue; /* a 1-byte nop stays an int3 probe: never a call */
		ret = rz_site(&f, n->pc, why, whylen);
	}
	rz_close(&f);
	return ret;
}

/* sym_cost.c - what source lines and inlined frames cost the symbolizer.
 * Maps FILE executable into this process and names one address in the
 * middle of each of its functions (FUNC symbols with a size, at most N)
 * through qp_sym_user, twice: the first pass opens and parses the file and
 * fills the caches, the second only hits them. Once with symbols only
 * (qp_sym_opts.no_lines: the symbolizer as it was before DWARF) and once
 * with lines, each in a child process of its own so that each RSS growth
 * is its own. Prints both and their ratios. Not a test: no figure gates.
 * usage: sym_cost FILE [N]   (N default 20000) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "symbolize/symbolize.h"

struct result {
	double first_ms, cached_ns;
	long rss_kb;
	size_t n, lines, inl;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long rss_kb(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* File offsets of the middle of up to MAX functions of FILE. */
static size_t func_offsets(const char *file, uint64_t *out, size_t max)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t n = 0, nph, i;

	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!elf || elf_getphdrnum(elf, &nph))
		return 0;
	while ((scn = elf_nextscn(elf, scn)) && n < max) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t k, cnt;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		cnt = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (k = 0; k < cnt && n < max; k++) {
			GElf_Sym sym;
			uint64_t va;

			if (!gelf_getsym(d, (int)k, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_size || sym.st_shndx == SHN_UNDEF)
				continue;
			va = sym.st_value + sym.st_size / 2;
			for (i = 0; i < nph; i++) {
				GElf_Phdr ph;

				if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
				    va >= ph.p_vaddr && va - ph.p_vaddr < ph.p_filesz) {
					out[n++] = va - ph.p_vaddr + ph.p_offset;
					break;
				}
			}
		}
	}
	elf_end(elf);
	close(fd);
	return n;
}

static void run(const char *file, const uint64_t *offs, size_t n, bool lines, int out_fd)
{
	struct qp_sym_opts o = { .kallsyms = "/nonexistent", .no_lines = !lines };
	struct result r = { .n = n };
	struct qp_symbolizer *s;
	struct qp_sym q;
	struct stat st;
	long rss0;
	double t0;
	char *base;
	size_t i;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		_exit(1);
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (base == MAP_FAILED)
		_exit(1);
	rss0 = rss_kb();
	s = qp_symbolizer_new(&o);
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		qp_sym_user(s, getpid(), (uint64_t)(uintptr_t)base + offs[i], &q);
		r.lines += q.src_line != 0;
		r.inl += q.ninl != 0;
	}
	r.first_ms = now_ms() - t0;
	t0 = now_ms();
	for (i = 0; i < n; i++)
		qp_sym_user(s, getpid(), (uint64_t)(uintptr_t)base + offs[i], &q);
	r.cached_ns = (now_ms() - t0) * 1e6 / (double)(n ? n : 1);
	r.rss_kb = rss_kb() - rss0;
	if (write(out_fd, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	qp_symbolizer_free(s);
	_exit(0);
}

static int measure(const char *file, const uint64_t *offs, size_t n, bool lines, struct result *r)
{
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		run(file, offs, n, lines, p[1]);
	}
	close(p[1]);
	st = read(p[0], r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
	close(p[0]);
	waitpid(pid, NULL, 0);
	return st;
}

int main(int argc, char **argv)
{
	size_t max = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000, n;
	struct result a, b;
	uint64_t *offs;

	if (argc < 2 || !max) {
		fprintf(stderr, "usage: sym_cost FILE [N]\n");
		return 2;
	}
	offs = calloc(max, sizeof(*offs));
	n = offs ? func_offsets(argv[1], offs, max) : 0;
	if (!n) {
		fprintf(stderr, "sym_cost: no sized FUNC symbol in %s's .symtab\n", argv[1]);
		return 1;
	}
	if (measure(argv[1], offs, n, false, &a) || measure(argv[1], offs, n, true, &b)) {
		fprintf(stderr, "sym_cost: a child failed\n");
		return 1;
	}
	printf("%s: %zu functions, one address in each\n", argv[1], n);
	printf("  symbols only: first pass %8.1f ms, cached %6.0f ns/address, RSS +%6ld kB, %zu with a line\n",
	       a.first_ms, a.cached_ns, a.rss_kb, a.lines);
	printf("  with lines:   first pass %8.1f ms, cached %6.0f ns/address, RSS +%6ld kB, %zu with a line, "
	       "%zu with inlined frames\n", b.first_ms, b.cached_ns, b.rss_kb, b.lines, b.inl);
	printf("  ratio (lines / symbols only): first pass %.1fx, cached %.2fx, RSS %.1fx\n",
	       b.first_ms / a.first_ms, b.cached_ns / a.cached_ns,
	       a.rss_kb > 0 ? (double)b.rss_kb / (double)a.rss_kb : 0.0);
	free(offs);
	return 0;
}

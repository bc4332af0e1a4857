/* test_symbolize.c - the symbolizer on fixture programs built by the suite
 * (tests/symfix): each one prints its pid and the runtime addresses of known
 * functions and waits on stdin; the test reads its maps, asserts the names
 * (PIE, non-PIE, shared library, debug file by build-id, by
 * .gnu_debuglink, .dynsym only, C++ demangled), lets it exit and asserts
 * them again from the cache. Then: a binary replaced or deleted on disk
 * while it runs, a fake /proc with maps pointing at missing, non-ELF,
 * truncated and corrupted files (best effort, no crash), and kallsyms
 * fixtures (normal, kptr_restrict zeros, missing). No root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/elf_syms.h"
#include "common/procfs.h"
#include "symbolize/symbolize.h"
#include "testlib.h"
#include "symfix_child.h"

#define QP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *arg_pie, *arg_nopie, *arg_bid, *arg_link, *arg_dyn, *arg_cxx;
static const char *arg_debugroot, *arg_kallsyms, *arg_tmp;

static const char *base(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

static bool starts(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static void check_fn(struct qp_symbolizer *s, int pid, uint64_t addr, const char *name,
		     const char *module)
{
	struct qp_sym q;

	CHECK_INT(qp_sym_user(s, pid, addr, &q), 0);
	CHECK_STR(q.name, name);
	CHECK(q.found);
	CHECK_INT(q.offset, 0);
	if (module)
		CHECK_STR(q.module, module);
	CHECK(q.map_start <= addr && addr < q.map_limit);
	CHECK(q.build_id != NULL);
	CHECK_INT(qp_sym_user(s, pid, addr + 4, &q), 0);
	CHECK_STR(q.name, name);
	CHECK_INT(q.offset, 4);
}

/* A C fixture: alpha, beta, anon and (PIE) the library function, before and
 * after the process exits. */
static void test_c_prog(const char *path, const char *debug_root, bool lib)
{
	struct qp_sym_opts o = { .debug_root = debug_root, .kallsyms = arg_kallsyms };
	struct qp_symbolizer *s = qp_symbolizer_new(&o);
	struct child c;
	struct qp_sym q;
	int pass;

	CHECK(s != NULL);
	if (!s || spawn(path, &c)) {
		CHECK(!"spawn");
		qp_symbolizer_free(s);
		return;
	}
	CHECK_INT(c.nv, 6);
	CHECK_INT(qp_sym_process_refresh(s, c.pid), 0);
	for (pass = 0; pass < 2; pass++) {
		check_fn(s, c.pid, c.v[1], "sf_alpha", base(path));
		check_fn(s, c.pid, c.v[2], "sf_beta", base(path));
		if (lib)
			check_fn(s, c.pid, c.v[4], "sf_lib_gamma", "libsf_lib.so");
		qp_sym_user(s, c.pid, c.v[1], &q);
		CHECK(q.path && !strcmp(base(q.path), base(path)));
		if (strstr(path, "link"))
			CHECK_STR(q.build_id, "");
		else
			CHECK_INT(strlen(q.build_id), 40);
		CHECK_INT(qp_sym_user(s, c.pid, c.v[3] + 0x10, &q), 0);
		CHECK_STR(q.name, "[anon]+0x10");
		CHECK_STR(q.module, "[anon]");
		CHECK(!q.found);
		CHECK_INT(qp_sym_user(s, c.pid, 0x10, &q), 0);
		CHECK_STR(q.name, "[unknown]+0x10");
		CHECK(!q.found);
		CHECK_STR(qp_sym_any(s, c.v[2]), "sf_beta");
		if (pass == 0) {
			CHECK_INT(finish(&c), 0);
			/* Gone now: the cached mappings still answer. */
			CHECK_INT(qp_sym_process_refresh(s, c.pid), -ESRCH);
		}
	}
	qp_sym_forget(s, c.pid);
	qp_sym_user(s, c.pid, c.v[1], &q);
	CHECK(!q.found);
	CHECK(starts(q.name, "[unknown]+0x"));
	CHECK(qp_sym_any(s, c.v[2]) == NULL);
	qp_symbolizer_free(s);
}

/* The stripped fixture without its debug file: no name, module+0xoff. */
static void test_stripped_alone(const char *path)
{
	struct qp_sym_opts o = { .debug_root = "/nonexistent-debug-root" };
	struct qp_symbolizer *s = qp_symbolizer_new(&o);
	char prefix[256];
	struct child c;
	struct qp_sym q;

	if (!s || spawn(path, &c)) {
		CHECK(!"spawn");
		qp_symbolizer_free(s);
		return;
	}
	CHECK_INT(qp_sym_process_refresh(s, c.pid), 0);
	qp_sym_user(s, c.pid, c.v[1], &q);
	snprintf(prefix, sizeof(prefix), "%s+0x", base(path));
	CHECK(!q.found);
	CHECK(starts(q.name, prefix));
	CHECK_STR(q.module, base(path));
	CHECK(q.file_off == c.v[1] - q.map_start + q.map_offset);
	finish(&c);
	qp_symbolizer_free(s);
}

static void test_cxx(void)
{
	struct qp_symbolizer *s = qp_symbolizer_new(NULL);
	struct child c;

	if (!s || spawn(arg_cxx, &c)) {
		CHECK(!"spawn");
		qp_symbolizer_free(s);
		return;
	}
	CHECK_INT(c.nv, 4);
	CHECK_INT(qp_sym_process_refresh(s, c.pid), 0);
	check_fn(s, c.pid, c.v[1], "int sfx::inner::twice<int>(int)", "sf_cxx");
	check_fn(s, c.pid, c.v[2], "sfx::inner::add(long, long)", "sf_cxx");
	check_fn(s, c.pid, c.v[3], "sfx::inner::Widget::poke(int)", "sf_cxx");
	finish(&c);
	check_fn(s, c.pid, c.v[2], "sfx::inner::add(long, long)", "sf_cxx");
	qp_symbolizer_free(s);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t r;
	int in, out, err = 0;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	unlink(to);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((r = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)r) != r)
			err = -1;
	close(in);
	close(out);
	return err;
}

/* Run a copy of the non-PIE fixture, then replace (REPLACE) or delete the
 * file while it runs; REFRESH_FIRST: maps were read before the change. */
static void test_replaced(bool replace, bool refresh_first)
{
	struct qp_symbolizer *s = qp_symbolizer_new(NULL);
	char path[4096];
	struct child c;
	struct qp_sym q;

	snprintf(path, sizeof(path), "%s/sf_copy", arg_tmp);
	if (!s || copy_file(arg_nopie, path) || spawn(path, &c)) {
		CHECK(!"copy/spawn");
		qp_symbolizer_free(s);
		return;
	}
	if (refresh_first)
		CHECK_INT(qp_sym_process_refresh(s, c.pid), 0);
	CHECK_INT(unlink(path), 0);
	if (replace)
		CHECK_INT(copy_file(arg_pie, path), 0);
	CHECK_INT(qp_sym_process_refresh(s, c.pid), 0);
	CHECK_INT(qp_sym_user(s, c.pid, c.v[1], &q), 0);
	CHECK(q.name != NULL);
	/* map_files needs privileges; without them the frame is unnamed,
	 * never named from the wrong file. */
	CHECK((q.found && !strcmp(q.name, "sf_alpha")) || (!q.found && starts(q.name, "sf_copy+0x")));
	if (refresh_first)
		CHECK_STR(q.name, "sf_alpha");
	printf("replaced=%d refresh_first=%d: %s\n", replace, refresh_first, q.name);
	CHECK_STR(q.module, "sf_copy");
	finish(&c);
	qp_sym_user(s, c.pid, c.v[2], &q);
	CHECK(q.name != NULL);
	unlink(path);
	qp_symbolizer_free(s);
}

static int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok;

	if (fd < 0)
		return -1;
	ok = write(fd, data, len) == (ssize_t)len;
	close(fd);
	return ok ? 0 : -1;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *b;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	b = malloc((size_t)st.st_size);
	if (b && read(fd, b, (size_t)st.st_size) != st.st_size) {
		free(b);
		b = NULL;
	}
	close(fd);
	*len = b ? (size_t)st.st_size : 0;
	return b;
}

/* A fake /proc whose maps point at missing, non-ELF, truncated and corrupted
 * files: every frame gets a name, nothing crashes. */
static void test_hostile(void)
{
	enum { NFILES = 160 };
	char root[4096], dir[4200], path[4400];
	size_t len, i, mlen = 0, mcap = 1 << 20;
	unsigned char *elf = slurp(arg_pie, &len), *mut;
	char *maps = malloc(mcap);
	struct qp_sym_opts o = { .kallsyms = arg_kallsyms };
	struct qp_symbolizer *s;
	struct qp_sym q;
	uint64_t base_addr = 0x10000000;
	uint32_t rnd = 12345;
	struct stat st;

	CHECK(elf != NULL && maps != NULL);
	if (!elf || !maps) {
		free(elf);
		free(maps);
		return;
	}
	snprintf(root, sizeof(root), "%s/proc", arg_tmp);
	snprintf(dir, sizeof(dir), "%s/4242", root);
	mkdir(root, 0755);
	mkdir(dir, 0755);
	mut = malloc(len);
	for (i = 0; i < NFILES; i++) {
		size_t n = len, k;

		memcpy(mut, elf, len);
		if (i < 16) {
			/* Truncations, from the ELF header to one byte short. */
			static const size_t cut[] = { 0, 1, 16, 52, 63, 64, 100, 200, 500, 1000,
						      4096, 5000, 8192, 12000 };

			n = i < QP_ARRAY_SIZE(cut) ? cut[i] : len - (i - 13) * (len / 3);
			if (n > len)
				n = len - 1;
		} else {
			/* Byte flips in the headers, then anywhere. */
			for (k = 0; k < 12; k++) {
				size_t pos;

				rnd = rnd * 1103515245u + 12345u;
				pos = (i & 1) ? (rnd >> 8) % len : (rnd >> 8) % (len < 4096 ? len : 4096);
				rnd = rnd * 1103515245u + 12345u;
				mut[pos] = (unsigned char)(rnd >> 16);
			}
		}
		snprintf(path, sizeof(path), "%s/bad%zu.so", arg_tmp, i);
		CHECK_INT(write_file(path, mut, n), 0);
		if (stat(path, &st))
			continue;
		mlen += (size_t)snprintf(maps + mlen, mcap - mlen,
					 "%" PRIx64 "-%" PRIx64 " r-xp 00001000 08:01 %llu   %s\n",
					 base_addr + i * 0x100000, base_addr + i * 0x100000 + 0x80000,
					 (unsigned long long)st.st_ino, path);
	}
	/* Missing file, non-ELF file, wrong inode, anon, special, garbage. */
	stat(arg_kallsyms, &st);
	mlen += (size_t)snprintf(maps + mlen, mcap - mlen,
				 "70000000-70010000 r-xp 00000000 08:01 77 /nonexistent/libgone.so\n"
				 "70010000-70020000 r-xp 00000000 08:01 %llu %s\n"
				 "70020000-70030000 r-xp 00000000 08:01 1 %s (deleted)\n"
				 "70030000-70040000 rw-p 00000000 00:00 0 \n"
				 "70040000-70050000 r-xp 00000000 00:00 0   [vdso]\n"
				 "this is not a maps line\n"
				 "70060000-70050000 r-xp 00000000 00:00 0\n",
				 (unsigned long long)st.st_ino, arg_kallsyms, arg_pie);
	snprintf(path, sizeof(path), "%s/maps", dir);
	CHECK_INT(write_file(path, maps, mlen), 0);

	o.proc_root = root;
	s = qp_symbolizer_new(&o);
	CHECK(s != NULL);
	CHECK_INT(qp_sym_process_refresh(s, 4242), 0);
	for (i = 0; i < NFILES; i++) {
		uint64_t a = base_addr + i * 0x100000;
		uint64_t offs[] = { 0, 0x10, 0x123, 0x7fff0 };
		size_t k;

		for (k = 0; k < QP_ARRAY_SIZE(offs); k++) {
			CHECK_INT(qp_sym_user(s, 4242, a + offs[k], &q), 0);
			CHECK(q.name && q.name[0] && q.module);
		}
	}
	qp_sym_user(s, 4242, 0x70000010, &q);
	CHECK_STR(q.name, "libgone.so+0x10");
	CHECK_STR(q.path, "/nonexistent/libgone.so");
	qp_sym_user(s, 4242, 0x70010020, &q);
	CHECK_STR(q.name, "kallsyms.txt+0x20");
	qp_sym_user(s, 4242, 0x70020030, &q);	/* the path now holds another inode */
	CHECK(starts(q.name, "sf_pie+0x30"));
	CHECK(!q.found);
	qp_sym_user(s, 4242, 0x70030040, &q);
	CHECK_STR(q.name, "[anon]+0x40");
	qp_sym_user(s, 4242, 0x70040050, &q);
	CHECK_STR(q.name, "[vdso]+0x50");
	CHECK_STR(q.module, "[vdso]");
	qp_sym_user(s, 4242, 0x70050000, &q);
	CHECK_STR(q.name, "[unknown]+0x70050000");
	/* A pid with no maps at all. */
	CHECK_INT(qp_sym_process_refresh(s, 4243), -ESRCH);
	qp_sym_user(s, 4243, 0x1234, &q);
	CHECK_STR(q.name, "[unknown]+0x1234");
	qp_symbolizer_free(s);
	for (i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/bad%zu.so", arg_tmp, i);
		unlink(path);
	}
	free(mut);
	free(elf);
	free(maps);
}

/* A library unloaded (dlclose) keeps naming the samples taken in it: a
 * re-read of /proc (the refresh on a miss) keeps a range nothing maps now,
 * a new mapping over it replaces it, and a list the caller gives (the
 * registry's, which keeps its own unloaded ranges) replaces all. Before,
 * the first miss after a dlclose dropped the plugin's range and its frames
 * turned [unknown] (integration_dlopen's CPU check, 2 runs in 20). */
/* A path of qprofd's own mount namespace is the mapped file only when its
 * device and inode both match the maps line: the same inode number on
 * another file system (a container's tmpfs) is another file. */
static void test_other_device(void)
{
	char root[4096], dir[4200], path[4400], maps[1024];
	struct qp_sym_opts o = { .kallsyms = arg_kallsyms };
	struct qp_symbolizer *s = NULL;
	struct stat pie;
	struct qp_sym q;
	unsigned int other;
	uint64_t off = 0;
	int n;

	snprintf(root, sizeof(root), "%s/proc-otherdev", arg_tmp);
	snprintf(dir, sizeof(dir), "%s/4260", root);
	snprintf(path, sizeof(path), "%s/maps", dir);
	mkdir(root, 0755);
	mkdir(dir, 0755);
	o.proc_root = root;
	if (stat(arg_pie, &pie) || !(s = qp_symbolizer_new(&o))) {
		CHECK(!"stat/new");
		return;
	}
	{
		struct qp_elf_func f = { .name = "sf_alpha" };
		char err[128];
		int fd = open(arg_pie, O_RDONLY | O_CLOEXEC);

		CHECK_INT(fd >= 0 ? qp_elf_find_funcs(fd, &f, 1, err, sizeof(err)) : -1, 1);
		if (fd >= 0)
			close(fd);
		off = f.offset;
	}
	CHECK(off > 0 && off < 0x80000);
	other = minor(pie.st_dev) ^ 0x5a;
	n = snprintf(maps, sizeof(maps),
		     "10000000-10080000 r-xp 00000000 %02x:%02x %llu %s\n"
		     "20000000-20080000 r-xp 00000000 %02x:%02x %llu %s\n",
		     major(pie.st_dev), other, (unsigned long long)pie.st_ino, arg_pie,
		     major(pie.st_dev), minor(pie.st_dev), (unsigned long long)pie.st_ino, arg_pie);
	CHECK_INT(write_file(path, maps, (size_t)n), 0);
	CHECK_INT(qp_sym_process_refresh(s, 4260), 0);
	qp_sym_user(s, 4260, 0x10000000 + off, &q);
	CHECK(!q.found);
	CHECK(starts(q.name, "sf_pie+0x"));
	qp_sym_user(s, 4260, 0x20000000 + off, &q);	/* the same file on its own device: read */
	CHECK(q.found);
	CHECK_STR(q.name, "sf_alpha");
	qp_symbolizer_free(s);
}

static void test_unloaded(void)
{
	char root[4096], dir[4200], path[4400], maps[1024];
	struct qp_sym_opts o = { .kallsyms = arg_kallsyms };
	struct qp_symbolizer *s = NULL;
	struct stat pie, nopie;
	struct qp_maps m = { 0 };
	struct qp_sym q;
	int n;

	snprintf(root, sizeof(root), "%s/proc-unloaded", arg_tmp);
	snprintf(dir, sizeof(dir), "%s/4250", root);
	snprintf(path, sizeof(path), "%s/maps", dir);
	mkdir(root, 0755);
	mkdir(dir, 0755);
	o.proc_root = root;
	if (stat(arg_pie, &pie) || stat(arg_nopie, &nopie) || !(s = qp_symbolizer_new(&o))) {
		CHECK(!"stat/new");
		return;
	}
	/* the host (sf_pie) and its plugin (sf_nopie), on their real device: a
	 * fixture has no PID/root, and a path of qprofd's own namespace must
	 * match device and inode */
	n = snprintf(maps, sizeof(maps),
		     "10000000-10080000 r-xp 00000000 %02x:%02x %llu %s\n"
		     "20000000-20080000 r-xp 00000000 %02x:%02x %llu %s\n",
		     major(pie.st_dev), minor(pie.st_dev), (unsigned long long)pie.st_ino, arg_pie,
		     major(nopie.st_dev), minor(nopie.st_dev), (unsigned long long)nopie.st_ino, arg_nopie);
	CHECK_INT(write_file(path, maps, (size_t)n), 0);
	CHECK_INT(qp_sym_process_refresh(s, 4250), 0);
	qp_sym_user(s, 4250, 0x20000100, &q);
	CHECK_STR(q.module, "sf_nopie");
	/* dlclose: the plugin's range is gone from /proc */
	n = snprintf(maps, sizeof(maps), "10000000-10080000 r-xp 00000000 %02x:%02x %llu %s\n",
		     major(pie.st_dev), minor(pie.st_dev), (unsigned long long)pie.st_ino, arg_pie);
	CHECK_INT(write_file(path, maps, (size_t)n), 0);
	CHECK_INT(qp_sym_process_refresh(s, 4250), 0);
	qp_sym_user(s, 4250, 0x20000100, &q);
	CHECK_STR(q.module, "sf_nopie");
	CHECK(q.path && !strcmp(q.path, arg_nopie));
	CHECK_INT(q.map_start, 0x20000000);
	qp_sym_user(s, 4250, 0x10000100, &q);
	CHECK_STR(q.module, "sf_pie");
	qp_sym_user(s, 4250, 0x30000000, &q);
	CHECK_STR(q.name, "[unknown]+0x30000000");
	/* another file mapped over part of it: the new one names its range,
	 * the old range is dropped whole (never half of each) */
	n = snprintf(maps, sizeof(maps),
		     "10000000-10080000 r-xp 00000000 %02x:%02x %llu %s\n"
		     "20040000-20050000 r-xp 00000000 %02x:%02x %llu %s\n",
		     major(pie.st_dev), minor(pie.st_dev), (unsigned long long)pie.st_ino, arg_pie,
		     major(pie.st_dev), minor(pie.st_dev), (unsigned long long)pie.st_ino, arg_pie);
	CHECK_INT(write_file(path, maps, (size_t)n), 0);
	CHECK_INT(qp_sym_process_refresh(s, 4250), 0);
	qp_sym_user(s, 4250, 0x20040100, &q);
	CHECK_STR(q.module, "sf_pie");
	qp_sym_user(s, 4250, 0x20000100, &q);
	CHECK_STR(q.name, "[unknown]+0x20000100");
	/* the caller's list replaces all (the registry keeps its own) */
	CHECK_INT(write_file(path, maps, (size_t)n), 0);
	CHECK_INT(qp_maps_read_at(root, 4250, &m), 0);
	CHECK_INT(m.n, 2);
	m.n = 1;	/* the host alone */
	CHECK_INT(qp_sym_process_set_maps(s, 4250, &m), 0);
	m.n = 2;
	qp_maps_free(&m);
	unlink(path);	/* a refresh on the miss below reads nothing: the list stays */
	qp_sym_user(s, 4250, 0x20040100, &q);
	CHECK_STR(q.name, "[unknown]+0x20040100");
	rmdir(dir);
	rmdir(root);
	qp_symbolizer_free(s);
}

static void test_kernel(void)
{
	struct qp_sym_opts o = { .kallsyms = arg_kallsyms };
	struct qp_symbolizer *s = qp_symbolizer_new(&o);
	static const char zero[] = "0000000000000000 T _stext\n"
				   "0000000000000000 T schedule\n"
				   "0000000000000000 t nf_hook_fn\t[nf_tables]\n";
	char path[4096];
	struct qp_sym q;

	CHECK(s != NULL);
	qp_sym_kernel(s, 0xffffffff81002010ull, &q);
	CHECK_STR(q.name, "schedule");
	CHECK_INT(q.offset, 0x10);
	CHECK(q.found);
	CHECK_STR(q.module, "[kernel]");
	CHECK(q.path == NULL);
	qp_sym_kernel(s, 0xffffffff81002500ull, &q);
	CHECK_STR(q.name, "weak_fn");
	CHECK_INT(q.offset, 0x100);
	qp_sym_kernel(s, 0xffffffff81000008ull, &q);
	CHECK_STR(q.name, "_stext");
	qp_sym_kernel(s, 0xffffffff81001fffull, &q);
	CHECK_STR(q.name, "do_one_initcall");
	qp_sym_kernel(s, 0xffffffffc0001004ull, &q);
	CHECK_STR(q.name, "nf_hook_fn");
	qp_sym_kernel(s, 0xffffffffc0001900ull, &q);
	CHECK_STR(q.name, "nft_do_chain");
	qp_sym_kernel(s, 0xffffffff80000000ull, &q);
	CHECK_STR(q.name, "[kernel]+0xffffffff80000000");
	CHECK(!q.found);
	CHECK_STR(qp_sym_any(s, 0xffffffff81003001ull), "__x64_sys_read");
	qp_symbolizer_free(s);

	snprintf(path, sizeof(path), "%s/kallsyms_zero", arg_tmp);
	CHECK_INT(write_file(path, zero, sizeof(zero) - 1), 0);
	o.kallsyms = path;
	s = qp_symbolizer_new(&o);
	qp_sym_kernel(s, 0xffffffff81002010ull, &q);
	CHECK_STR(q.name, "[kernel]+0xffffffff81002010");
	CHECK(!q.found);
	CHECK(qp_sym_any(s, 0xffffffff81002010ull) == NULL);
	qp_symbolizer_free(s);
	unlink(path);

	o.kallsyms = "/nonexistent/kallsyms";
	s = qp_symbolizer_new(&o);
	qp_sym_kernel(s, 0xffffffff81002010ull, &q);
	CHECK_STR(q.name, "[kernel]+0xffffffff81002010");
	qp_symbolizer_free(s);
}

static void test_demangle(void)
{
	struct qp_symbolizer *s = qp_symbolizer_new(NULL);
	const char *a, *b;
	char buf[32];

	CHECK_STR(qp_sym_demangle(s, "_ZN3foo3barEv"), "foo::bar()");
	CHECK_STR(qp_sym_demangle(s, "_ZN2ns5twiceIiEET_S1_"), "int ns::twice<int>(int)");
	CHECK_STR(qp_sym_demangle(s, "main"), "main");
	CHECK_STR(qp_sym_demangle(s, "_Zgarbage"), "_Zgarbage");
	a = qp_sym_demangle(s, "_ZN3foo3barEv");
	b = qp_sym_demangle(s, "_ZN3foo3barEv");
	CHECK(a == b);
	snprintf(buf, sizeof(buf), "plain_name");
	a = qp_sym_demangle(s, buf);
	buf[0] = 'X';
	CHECK_STR(a, "plain_name");	/* owned by the symbolizer */
	qp_symbolizer_free(s);
	qp_symbolizer_free(NULL);
}

int main(int argc, char **argv)
{
	int i;

	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		const char **dst = NULL;

		if (!eq)
			continue;
#define ARG(k) if (!strncmp(argv[i], #k "=", strlen(#k) + 1)) dst = &arg_##k
		ARG(pie); ARG(nopie); ARG(bid); ARG(link); ARG(dyn); ARG(cxx);
		ARG(debugroot); ARG(kallsyms); ARG(tmp);
#undef ARG
		if (dst)
			*dst = eq + 1;
	}
	if (!arg_pie || !arg_nopie || !arg_bid || !arg_link || !arg_dyn || !arg_cxx ||
	    !arg_debugroot || !arg_kallsyms || !arg_tmp) {
		fprintf(stderr, "usage: test_symbolize pie= nopie= bid= link= dyn= cxx= "
				"debugroot= kallsyms= tmp=\n");
		return 2;
	}
	mkdir(arg_tmp, 0755);

	test_demangle();
	test_kernel();
	test_c_prog(arg_pie, NULL, true);
	test_c_prog(arg_nopie, NULL, false);
	test_c_prog(arg_bid, arg_debugroot, false);
	test_stripped_alone(arg_bid);
	test_c_prog(arg_link, "/nonexistent-debug-root", false);
	test_c_prog(arg_dyn, NULL, false);
	test_cxx();
	test_replaced(true, false);
	test_replaced(false, false);
	test_replaced(true, true);
	test_hostile();
	test_unloaded();
	test_other_device();
	return test_done("test_symbolize");
}

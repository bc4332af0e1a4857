/* fuzz_symbolize.c - libFuzzer target for the symbolizer's ELF parsing
 * (daemon/symbolize.c through libelf): program headers, .symtab/.dynsym,
 * the build-id note, .gnu_debuglink and the separate debug file. The bytes
 * become the file that a fake /proc/PID/maps maps executable (PIE-style and
 * at a fixed address); a part after the separator line QPFUZZ-DEBUG becomes
 * its debug file, put where the symbolizer looks for it: under the debug
 * root by the build-id found in the first part, and as .debug/sf_link.debug
 * next to it (the name of the .gnu_debuglink of the seeds). Then a few
 * addresses are named through qp_sym_user and qp_sym_any. A new symbolizer
 * per input, so that a leak or a stale cache entry shows. The DWARF such a
 * file carries is read too (lines); fuzz_dwarf.c fuzzes that reading
 * directly, on DWARF sections in a well-formed ELF. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

#define FAKE_PID 4242

static const char sep[] = "\nQPFUZZ-DEBUG\n";
static char root[64];
static char proc_dir[128], bin_dir[128], dbg_dir[128], droot[128];
static char bin_path[192], link_path[192], maps_path[192];

static void must_mkdir(const char *p)
{
	if (mkdir(p, 0700) && errno != EEXIST) {
		perror(p);
		abort();
	}
}

static void write_all(const char *path, const uint8_t *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0) {
		perror(path);
		abort();
	}
	while (n) {
		ssize_t w = write(fd, d, n);

		if (w <= 0) {
			perror(path);
			abort();
		}
		d += w;
		n -= (size_t)w;
	}
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char p[192];
	static const char maps_fmt[] =
		"555555554000-555555560000 r-xp 00000000 00:00 0 %s\n"
		"555555560000-555555570000 r-xp 00001000 00:00 0 %s\n"
		"00400000-00500000 r-xp 00000000 00:00 0 %s\n"
		"7ffff7fc0000-7ffff7fc1000 rw-p 00000000 00:00 0 \n"
		"7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n";
	FILE *f;

	snprintf(root, sizeof(root), "/dev/shm/qprof-fuzz-sym.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		abort();
	}
	snprintf(proc_dir, sizeof(proc_dir), "%s/proc", root);
	must_mkdir(proc_dir);
	snprintf(p, sizeof(p), "%s/%d", proc_dir, FAKE_PID);
	must_mkdir(p);
	snprintf(bin_dir, sizeof(bin_dir), "%s/bin", root);
	must_mkdir(bin_dir);
	snprintf(dbg_dir, sizeof(dbg_dir), "%s/.debug", bin_dir);
	must_mkdir(dbg_dir);
	snprintf(droot, sizeof(droot), "%s/debugroot", root);
	must_mkdir(droot);
	snprintf(p, sizeof(p), "%s/.build-id", droot);
	must_mkdir(p);
	snprintf(bin_path, sizeof(bin_path), "%s/sf_link", bin_dir);
	snprintf(link_path, sizeof(link_path), "%s/sf_link.debug", dbg_dir);
	snprintf(maps_path, sizeof(maps_path), "%s/%d/maps", proc_dir, FAKE_PID);
	f = fopen(maps_path, "w");
	if (!f || fprintf(f, maps_fmt, bin_path, bin_path, bin_path) < 0 || fclose(f)) {
		perror(maps_path);
		abort();
	}
	return 0;
}

/* The GNU build-id note as the linker writes it: namesz 4, descsz 20,
 * type NT_GNU_BUILD_ID, "GNU". A mutated id is simply not found. */
static bool find_build_id(const uint8_t *d, size_t n, char *hex)
{
	static const uint8_t pat[16] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0 };
	const uint8_t *p = memmem(d, n, pat, sizeof(pat));
	size_t i;

	if (!p || (size_t)(d + n - p) < sizeof(pat) + 20)
		return false;
	for (i = 0; i < 20; i++)
		sprintf(hex + 2 * i, "%02x", p[sizeof(pat) + i]);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qp_sym_opts o = { .kallsyms = "/nonexistent", .debug_root = droot, .proc_root = proc_dir };
	const uint8_t *dbg = memmem(data, size, sep, sizeof(sep) - 1);
	size_t main_len = dbg ? (size_t)(dbg - data) : size;
	char bid[41], bid_dir[192], bid_path[256] = "";
	struct qp_symbolizer *s;
	struct qp_sym out;
	uint64_t extra = 0;
	size_t i;

	write_all(bin_path, data, main_len);
	unlink(link_path);
	if (dbg) {
		dbg += sizeof(sep) - 1;
		write_all(link_path, dbg, (size_t)(data + size - dbg));
		if (find_build_id(data, main_len, bid)) {
			snprintf(bid_dir, sizeof(bid_dir), "%s/.build-id/%.2s", droot, bid);
			must_mkdir(bid_dir);
			snprintf(bid_path, sizeof(bid_path), "%s/%s.debug", bid_dir, bid + 2);
			if (link(link_path, bid_path))
				bid_path[0] = '\0';
		}
	}
	s = qp_symbolizer_new(&o);
	if (!s)
		return 0;
	if (size >= 8)
		memcpy(&extra, data + size - 8, 8);
	qp_sym_process_refresh(s, FAKE_PID);
	{
		const uint64_t addrs[] = {
			0x555555554000, 0x555555555000, 0x555555555123, 0x555555556000, 0x55555555f000,
			0x555555560010, 0x555555564321, 0x401000, 0x401130, 0x4011f0, 0x4fffff,
			0x555555554000 + (extra & 0xffff), 0x400000 + (extra >> 48), extra,
		};

		for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
			qp_sym_user(s, FAKE_PID, addrs[i], &out);
			if (!out.name || !out.module)
				abort();	/* a frame always gets a name */
		}
		qp_sym_any(s, addrs[2]);
	}
	qp_sym_forget(s, FAKE_PID);
	qp_symbolizer_free(s);
	if (bid_path[0]) {
		unlink(bid_path);
		rmdir(bid_dir);
	}
	return 0;
}

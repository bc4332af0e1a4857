/* test_elf_syms.c - the allocator entry points found in ELF files
 * (common/elf_syms.c): in the libc this test runs with, malloc, free and
 * calloc are found, and the bytes at each file offset are the bytes of the
 * function this process calls; the test's own executable (which only
 * references malloc), a name nobody defines and a file that is no ELF give
 * nothing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testlib.h"
#include "common/elf_syms.h"

static void same_bytes(int fd, uint64_t off, const void *fn)
{
	unsigned char file[16];

	CHECK(pread(fd, file, sizeof(file), (off_t)off) == (ssize_t)sizeof(file));
	CHECK(!memcmp(file, fn, sizeof(file)));
}

int main(void)
{
	struct qp_elf_func f[] = { { "malloc", 0 }, { "free", 0 }, { "calloc", 0 },
				   { "qprof_no_such_function", 0 } };
	Dl_info info;
	char err[128];
	int fd, n;

	CHECK(dladdr((void *)malloc, &info) && info.dli_fname);
	printf("libc: %s\n", info.dli_fname);
	fd = open(info.dli_fname, O_RDONLY);
	CHECK(fd >= 0);
	n = qp_elf_find_funcs(fd, f, 4, err, sizeof(err));
	CHECK_INT(n, 3);
	CHECK(f[0].offset && f[1].offset && f[2].offset);
	CHECK_INT(f[3].offset, 0);
	same_bytes(fd, f[0].offset, (const void *)malloc);
	same_bytes(fd, f[1].offset, (const void *)free);
	same_bytes(fd, f[2].offset, (const void *)calloc);
	close(fd);

	/* our own executable only references malloc (its PLT entry) */
	fd = open("/proc/self/exe", O_RDONLY);
	CHECK(fd >= 0);
	CHECK_INT(qp_elf_find_funcs(fd, f, 4, err, sizeof(err)), 0);
	CHECK_INT(f[0].offset, 0);
	close(fd);

	/* not an ELF file */
	fd = open("/proc/self/cmdline", O_RDONLY);
	CHECK(fd >= 0);
	CHECK(qp_elf_find_funcs(fd, f, 4, err, sizeof(err)) < 0);
	CHECK(strstr(err, "not an ELF") != NULL);
	close(fd);
	return test_done("elf_syms");
}

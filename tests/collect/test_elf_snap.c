/* test_elf_snap.c - the copy of a mapped file's unwinding parts that libdwfl
 * maps instead of the file (daemon/collect/elf_snap.c), made of this test's
 * own executable: the file's size, .eh_frame and the headers byte for byte,
 * .text left zero, sealed (it cannot be cut or written), CFI readable from
 * it; a file that is not ELF and a file cut short are refused or copied as
 * they are, never read past their end. */
#define _GNU_SOURCE
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/elf_snap.h"
#include "testlib.h"

static int section(int fd, const char *want, GElf_Shdr *out)
{
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int found = 0;

	if (!e || elf_getshdrstrndx(e, &shstrndx)) {
		elf_end(e);
		return 0;
	}
	while (!found && (scn = elf_nextscn(e, scn))) {
		const char *name;

		if (gelf_getshdr(scn, out) && (name = elf_strptr(e, shstrndx, out->sh_name)) &&
		    !strcmp(name, want))
			found = 1;
	}
	elf_end(e);
	return found;
}

static char *range(int fd, uint64_t off, uint64_t len)
{
	char *b = malloc(len ? len : 1);

	if (b && pread(fd, b, len, (off_t)off) != (ssize_t)len) {
		free(b);
		b = NULL;
	}
	return b;
}

static void own_file(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), m, zero = 1;
	struct stat a, b;
	uint64_t copied = 0, i;
	GElf_Shdr eh, text;
	char *x, *y;
	Elf *e;

	CHECK(fd >= 0);
	m = qp_elf_snapshot(fd, &copied);
	CHECK(m >= 0);
	if (m < 0)
		return;
	CHECK(!fstat(fd, &a) && !fstat(m, &b));
	CHECK_INT(b.st_size, a.st_size);
	CHECK(copied > 0 && copied < (uint64_t)a.st_size);
	CHECK(section(fd, ".eh_frame", &eh) && eh.sh_size > 0);
	x = range(fd, eh.sh_offset, eh.sh_size);
	y = range(m, eh.sh_offset, eh.sh_size);
	CHECK(x && y && !memcmp(x, y, eh.sh_size));
	free(x);
	free(y);
	CHECK(section(fd, ".text", &text) && text.sh_size > 0);
	y = range(m, text.sh_offset, text.sh_size);
	for (i = 0; y && i < text.sh_size; i++)
		zero &= y[i] == 0;
	CHECK(y && zero);	/* not copied: no memory for it */
	free(y);
	/* sealed: nobody shrinks, grows or writes it */
	CHECK(ftruncate(m, 0) && errno == EPERM);
	CHECK(pwrite(m, "x", 1, 0) < 0 && errno == EPERM);
	/* the CFI reads from the copy */
	e = elf_begin(m, ELF_C_READ_MMAP, NULL);
	CHECK(e && dwarf_getcfi_elf(e) != NULL);
	elf_end(e);
	close(m);
	close(fd);
}

static void not_elf_and_cut(void)
{
	char path[] = "/tmp/qprof-elf-snap-XXXXXX";
	int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), fd = mkstemp(path), m;
	struct stat st;
	char *all;

	CHECK(fd >= 0 && src >= 0 && !fstat(src, &st));
	CHECK(write(fd, "not an ELF file\n", 16) == 16);
	CHECK_INT(qp_elf_snapshot(fd, NULL), -ENOEXEC);
	/* the first half of this program: section headers past the end */
	all = range(src, 0, (uint64_t)st.st_size / 2);
	CHECK(all && !ftruncate(fd, 0) && pwrite(fd, all, (size_t)st.st_size / 2, 0) == st.st_size / 2);
	free(all);
	m = qp_elf_snapshot(fd, NULL);
	if (m >= 0) {
		struct stat ms;

		CHECK(!fstat(m, &ms) && ms.st_size == st.st_size / 2);
		close(m);
	} else {
		CHECK(m == -ENOEXEC || m == -EIO);
	}
	close(fd);
	close(src);
	unlink(path);
}

int main(void)
{
	elf_version(EV_CURRENT);
	own_file();
	not_elf_and_cut();
	return test_done("unit_elf_snap");
}

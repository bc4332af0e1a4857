/* fuzz_elf_probes.c - libFuzzer target: any bytes as an ELF file for
 * qp_elf_probes_open (the parser qprofd and qprof-cli run on whatever a
 * process maps or a user names). It must return a clean error or a clean
 * result, never crash, hang or leak. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common/elf_probes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qp_elf_probes *p = NULL;
	char path[64], err[256];
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!qp_elf_probes_open(path, &p, err, sizeof(err)))
			qp_elf_probes_free(p);
	}
	close(fd);
	return 0;
}

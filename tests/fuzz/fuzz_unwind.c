/* fuzz_unwind.c - libFuzzer target for the CFI unwinder (daemon/collect/
 * unwind.c over libdwfl): hostile .eh_frame / .debug_frame and program
 * headers, hostile registers and stack copies. The input is an ELF file
 * (the seeds are real programs); a fake /proc/PID/maps maps it at a PIE-style
 * address. The stack copy is made of the input's own bytes, with every word
 * whose low bit is set turned into an address inside the mapping (when bit
 * 1 is set too, within 8 KiB after the ELF's entry point: code with CFI in
 * the seeds), so that walks go on through the file's CFI. The last 8 bytes
 * pick the pc (an offset into the mapping) and sp's alignment. Four walks
 * per input: at that pc, at the ELF's entry point (twice: the second from
 * the rules cached), and near it where the tail says. A new unwinder per input, so
 * that a leak or a stale cache shows. Nothing may crash, read outside the
 * copy, or pass the frame limit. Differential: each walk is made by the
 * default unwinder (the cached rules of unwind_fast.c where they serve)
 * and by one held to libdwfl alone; any difference in the frames, the
 * result or how the walk was counted aborts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/unwind.h"

#define FAKE_PID 4243
#define BASE 0x555555554000ull
#define SPAN 0x100000ull	/* the mapping's size */
#define MAX_FRAMES 127

static char root[64], bin_path[160];
static uint64_t walks_fast, walks_slow;	/* printed at exit: how much the fast path was tried */
static uint8_t stack[8192];

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

static void print_walks(void)
{
	fprintf(stderr, "fuzz_unwind: walks by the cached rules %llu, by libdwfl %llu\n",
		(unsigned long long)walks_fast, (unsigned long long)walks_slow);
}

static void setup(void)
{
	char dir[128], maps[192], text[512];
	int len;

	snprintf(root, sizeof(root), "/tmp/qpfuzz-unwind-%d", (int)getpid());
	snprintf(dir, sizeof(dir), "%s/%d", root, FAKE_PID);
	if ((mkdir(root, 0700) && errno != EEXIST) || (mkdir(dir, 0700) && errno != EEXIST)) {
		perror(dir);
		abort();
	}
	snprintf(bin_path, sizeof(bin_path), "%s/bin", root);
	snprintf(maps, sizeof(maps), "%s/maps", dir);
	len = snprintf(text, sizeof(text),
		       "%llx-%llx r--p 00000000 00:00 1 %s\n"
		       "%llx-%llx r-xp 00001000 00:00 1 %s\n"
		       "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n",
		       BASE, BASE + 0x1000, bin_path, BASE + 0x1000, BASE + SPAN, bin_path);
	write_all(maps, (const uint8_t *)text, (size_t)len);
	atexit(print_walks);
}

/* what a walk was counted as: 0 unwound, 1 partial, 2 truncated, 3 loops, -1 none */
static int counted(const struct qp_unwind_stats *a, const struct qp_unwind_stats *b)
{
	if (b->unwound != a->unwound)
		return 0;
	if (b->partial != a->partial)
		return 1;
	if (b->truncated != a->truncated)
		return 2;
	return b->loops != a->loops ? 3 : -1;
}

static void unwind_at(struct qp_unwind *u, struct qp_unwind *ref, uint64_t pc, uint64_t sp, size_t len,
		      uint32_t known)
{
	uint64_t regs[QP_UNWIND_REGS], ips[MAX_FRAMES], rips[MAX_FRAMES];
	struct qp_unwind_in in = { .pid = FAKE_PID, .tid = FAKE_PID, .regs = regs, .stack = stack, .len = len,
				   .known = known };
	struct qp_unwind_stats a0, a1, b0, b1;
	size_t n = 0, rn = 0;
	int i, ret, rret;

	for (i = 0; i < QP_UNWIND_REGS; i++)
		regs[i] = sp + (uint64_t)i * 8;	/* rbp and the rest point into the copy */
	regs[7] = sp;
	regs[16] = pc;
	qp_unwind_stats(u, &a0);
	ret = qp_unwind_stack(u, &in, ips, MAX_FRAMES, &n);
	qp_unwind_stats(u, &a1);
	qp_unwind_stats(ref, &b0);
	rret = qp_unwind_stack(ref, &in, rips, MAX_FRAMES, &rn);
	qp_unwind_stats(ref, &b1);
	if (n > MAX_FRAMES || rn > MAX_FRAMES)
		abort();
	if (ret != rret || n != rn || memcmp(ips, rips, n * sizeof(*ips)) || counted(&a0, &a1) != counted(&b0, &b1)) {
		fprintf(stderr, "fast path (%llu) and libdwfl differ: ret %d/%d, n %zu/%zu\n",
			(unsigned long long)(a1.fast - a0.fast), ret, rret, n, rn);
		for (i = 0; i < (int)(n > rn ? n : rn) && i < MAX_FRAMES; i++)
			fprintf(stderr, "  %2d %llx %llx\n", i, (unsigned long long)(i < (int)n ? ips[i] : 0),
				(unsigned long long)(i < (int)rn ? rips[i] : 0));
		abort();
	}
	if (b1.fast != b0.fast || a1.fast + a1.slow - a0.fast - a0.slow != (counted(&a0, &a1) >= 0))
		abort();
	walks_fast += a1.fast - a0.fast;
	walks_slow += a1.slow - a0.slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qp_unwind_opts o = { .proc_root = root, .max_procs = 4 };
	struct qp_unwind_opts ro = { .proc_root = root, .max_procs = 4, .dwfl_only = true };
	struct qp_unwind *u, *ref;
	uint64_t tail = 0, entry = 0, text;
	size_t i, len;

	if (!root[0])
		setup();
	if (size < 8)
		return 0;
	memcpy(&tail, data + size - 8, 8);
	if (size >= 32)
		memcpy(&entry, data + 24, 8);	/* e_entry of an ELF64 header */
	text = BASE + entry % SPAN;
	write_all(bin_path, data, size);
	len = size < sizeof(stack) ? size & ~(size_t)7 : sizeof(stack);
	memset(stack, 0, sizeof(stack));
	memcpy(stack, data, len);
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, stack + i, 8);
		if (w & 1) {
			w = (w & 2) ? text + (w >> 2) % 8192 : BASE + (w >> 2) % SPAN;
			memcpy(stack + i, &w, 8);
		}
	}
	u = qp_unwind_new(&o);
	ref = qp_unwind_new(&ro);
	if (!u || !ref) {
		qp_unwind_free(u);
		qp_unwind_free(ref);
		return 0;
	}
	/* the tail's bit 35 drops rbp from the known registers (the thread
	 * iterator's case: rules through rbp find it unset) */
	unwind_at(u, ref, BASE + (tail & 0xffffffff) % SPAN, 0x7ffd00010000ull + ((tail >> 32) & 7), len,
		  (tail >> 35 & 1) ? (1u << 7 | 1u << 16) : 0);
	unwind_at(u, ref, text, 0x7ffd00010000ull, len, 0);
	/* the same pc again: now from the rules cached */
	unwind_at(u, ref, text, 0x7ffd00010000ull, len, 0);
	unwind_at(u, ref, text + (tail >> 40) % 8192, 0x7ffd00010000ull + ((tail >> 36) & 8), len, 0);
	qp_unwind_free(u);
	qp_unwind_free(ref);
	return 0;
}

/* test_scope_sizing.c - the scope collector's map sizes and kernel memory
 * (daemon/collect/scope_sizing.c) on simulated hosts of 2, 64 and 256
 * possible CPUs: the scope aggregates take the same memory on each (chunks
 * are shared, not per CPU), against 8.3 KiB per pair per CPU before. */
#include <errno.h>
#include <stdint.h>
#include <linux/types.h>
#include "collect/scope_sizing.h"
#include "bpf/scopes.h"
#include "testlib.h"

int main(void)
{
	const unsigned int cpus[] = { 2, 64, 256 };
	struct qp_scope_sizing sz, first;
	unsigned int i;

	CHECK_INT(sizeof(struct scope_chunk_key), 24);
	CHECK_INT(sizeof(struct scope_chunk), 288);
	CHECK_INT(qp_scope_sizing(0, 4096, 0, &sz), -EINVAL);
	CHECK_INT(qp_scope_sizing(2, 0, 0, &sz), -EINVAL);
	for (i = 0; i < 3; i++) {
		CHECK_INT(qp_scope_sizing(cpus[i], 4096, 0, &sz), 0);
		if (!i)
			first = sz;
		CHECK_INT(sz.ncpus, cpus[i]);
		/* a chunk: 48-byte element header, 24-byte key, 288-byte value */
		CHECK_INT(sz.chunk_bytes, 360);
		CHECK_INT(sz.chunks_pre, 4096);
		CHECK_INT(sz.chunks_more, 4096 * 3);
		/* 2048 keys of 24 bytes + 8 of header: 64 KiB */
		CHECK_INT(sz.dirty_bytes, 64 << 10);
		/* 4096 chunks + buckets of 4096 and 16384 + the ring: 1.81 MiB */
		CHECK_INT(sz.reserved_bytes, 4096ULL * 360 + 4096 * 16 + 16384 * 16 + (64 << 10));
		/* reserved for 4096 pairs, divided among 1000 hit: <= 1 KiB per
		 * pair per possible CPU from 2 CPUs up */
		CHECK(sz.reserved_bytes / 1000 / cpus[i] <= 1024);
		CHECK_INT(sz.reserved_bytes, first.reserved_bytes);
		/* 1000 pairs of 2 chunks each: 720,000 bytes on any host */
		CHECK_INT(qp_scope_pairs_bytes(&sz, 1000, 2), 720000);
		/* ... the per-CPU layout: 8480 bytes a CPU, 80 a pair */
		CHECK_INT(qp_scope_pairs_bytes_percpu(&sz, 1000), 1000ULL * (80 + 8480ULL * cpus[i]));
		/* per pair per possible CPU <= 1 KiB from 2 CPUs up */
		CHECK(qp_scope_pairs_bytes(&sz, 1000, 2) / 1000 / cpus[i] <= 1024);
	}
	CHECK_INT(qp_scope_pairs_bytes_percpu(&first, 1000) / 1000 / 2, 8520);
	/* marks, values and probes are shared; only the counters grow with
	 * the CPUs (they were 0.56 MiB a CPU per-CPU: 4096 x (16 + 64 + 8) B) */
	for (i = 0; i < 3; i++) {
		CHECK_INT(qp_scope_sizing(cpus[i], 4096, 0, &sz), 0);
		CHECK_INT(sz.other_bytes, 4096ULL * (48 + 16 + 16) + 4096ULL * (48 + 16 + 64) +
						  65536ULL * (48 + 24 + 16) + (256 << 10) + 4096ULL * (48 + 8 + 8) +
						  QPROF_CNT__MAX * 8ULL * cpus[i]);
	}
	/* QPROF_PREALLOC_SITES=61: 61 chunks preallocated, the rest allocated */
	CHECK_INT(qp_scope_sizing(2, 4096, 61, &sz), 0);
	CHECK_INT(sz.chunks_pre, 61);
	CHECK_INT(sz.chunks_more, 4096 * 4 - 61);
	CHECK_INT(sz.dirty_bytes, 64 << 10);
	CHECK_INT(qp_scope_sizing(2, 16, 0, &sz), 0);
	CHECK_INT(sz.chunks_pre, 16);
	CHECK_INT(sz.chunks_more, 48);
	/* --max-sites 262144 (its limit): 2^18 keys of 32 bytes / 2 = 4 MiB of ring */
	CHECK_INT(qp_scope_sizing(256, 1u << 18, 0, &sz), 0);
	CHECK_INT(sz.dirty_bytes, 4 << 20);
	return test_done("unit_scope_sizing");
}

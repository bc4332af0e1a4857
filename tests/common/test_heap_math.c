/* test_heap_math.c - the heap sampler's rule and estimator (bpf/heap.h),
 * which BPF and the daemon both compute: thresholds and weights at known
 * sizes, then the estimates of many simulated runs of the heap test's workload
 * (with a 32-bit uniform draw as bpf_get_prandom_u32 gives) against the
 * truth: unbiased, and the spread docs/guide/heap.md states. */
#include <math.h>
#include <stdint.h>
#include <linux/types.h>
#include "testlib.h"
#include "bpf/heap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint32_t rand32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 32);
}

/* One run: N allocations of SIZE with interval I: the estimated bytes. */
static double run(unsigned int n, uint64_t size, uint64_t interval, uint64_t *objects_x16)
{
	uint64_t th = heap_threshold(size, interval), bytes = 0, obj = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if ((uint64_t)rand32() < th) {
			bytes += heap_weight_bytes(size, th);
			obj += heap_weight_objects_x16(th);
		}
	}
	*objects_x16 = obj;
	return (double)bytes;
}

int main(void)
{
	uint64_t obj;
	double sum = 0, sum2 = 0, mean, sd;
	unsigned int r, runs = 2000;

	/* the rule at known points */
	CHECK_INT(heap_threshold(0, 8192), 0);			/* never sampled */
	CHECK_INT(heap_threshold(4096, 8192), 1ULL << 31);	/* p = 1/2 */
	CHECK_INT(heap_threshold(8192, 8192), 1ULL << 32);	/* always */
	CHECK_INT(heap_threshold(1 << 20, 8192), 1ULL << 32);
	CHECK_INT(heap_weight_bytes(4096, 1ULL << 31), 8192);	/* a sample of 4096 stands for 8192 bytes */
	CHECK_INT(heap_weight_objects_x16(1ULL << 31), 2 << 16);	/* and 2 objects */
	CHECK_INT(heap_weight_bytes(1 << 20, 1ULL << 32), 1 << 20);	/* sampled always: as such */
	CHECK_INT(heap_weight_objects_x16(1ULL << 32), 1 << 16);
	CHECK_INT(heap_threshold(1, 1 << 30), 4);		/* tiny: p = 2^-30, still > 0 */
	CHECK_INT(heap_weight_bytes(1, 4), 1 << 30);
	/* unbiased: 8 MiB in 4 KiB blocks, one sample per 16 KiB, 2000 runs */
	for (r = 0; r < runs; r++) {
		double e = run(2048, 4096, 16384, &obj);

		sum += e;
		sum2 += e * e;
	}
	mean = sum / runs;
	sd = sqrt(sum2 / runs - mean * mean);
	printf("8 MiB in 4 KiB, interval 16 KiB: mean %.0f (%.3f%% off), sd %.2f%%\n", mean,
	       100 * (mean / 8388608.0 - 1), 100 * sd / 8388608.0);
	CHECK(fabs(mean / 8388608.0 - 1) < 0.005);	/* 4 standard errors of the mean */
	CHECK(fabs(sd / 8388608.0 - sqrt(0.75 / 512)) < 0.005);	/* sqrt((1-p)/(n p)) = 3.8 % */
	/* the object count too (fixed point): 2048 objects */
	run(2048, 4096, 8192, &obj);
	CHECK(obj % (2 << 16) == 0 && obj / (1 << 16) > 1800 && obj / (1 << 16) < 2300);
	return test_done("heap_math");
}

/* test_ring_thunk.c - the ring's cold calls (a thread's first ring: mmap,
 * pthread_once, pthread_setspecific; the announcement) go through
 * qprof__ring_thunk from an asm the compiler does not take for a call, so
 * the compiler keeps values in caller-saved registers across the marker:
 * they must come back as they were. Each round runs on a new thread (its
 * first record takes the cold path) with the ring semaphore raised by hand:
 * sixteen doubles (vector registers) and twelve integers live across the
 * marker, compared with the same computation while the semaphore is down;
 * then 5,000 records more on one thread (the announcement's call, every
 * 4,096). Built also with -mavx2 (the upper halves of the ymm registers,
 * which glibc's string functions use). A thunk that lost a general
 * register crashes it or changes the result; whether glibc's cold path
 * touches the vector registers depends on the glibc (this one's does not
 * here), which is why the thunk saves them all the same. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <qprof/qprof.h>

static volatile double din[16];
static volatile uint64_t uin[12];

__attribute__((noinline)) static double work(int marks)
{
	double d0 = din[0], d1 = din[1], d2 = din[2], d3 = din[3], d4 = din[4], d5 = din[5],
	       d6 = din[6], d7 = din[7], d8 = din[8], d9 = din[9], d10 = din[10], d11 = din[11],
	       d12 = din[12], d13 = din[13], d14 = din[14], d15 = din[15];
	uint64_t u0 = uin[0], u1 = uin[1], u2 = uin[2], u3 = uin[3], u4 = uin[4], u5 = uin[5],
		 u6 = uin[6], u7 = uin[7], u8 = uin[8], u9 = uin[9], u10 = uin[10], u11 = uin[11];
	int i;

	for (i = 0; i < marks; i++) {
		QPROF_MARK("thunk_mark");
		d0 = d0 * 1.0001 + d1; d1 = d1 * 0.9999 + d2; d2 += d3 * 0.5; d3 -= d4 * 0.25;
		d4 += d5; d5 *= 1.000001; d6 += d7 * 0.125; d7 -= d8 * 0.0625; d8 += d9;
		d9 *= 0.99999; d10 += d11 * 0.5; d11 -= d12 * 0.5; d12 += d13; d13 *= 1.00001;
		d14 += d15 * 0.25; d15 -= d0 * 1e-9;
		u0 += u1; u1 ^= u2; u2 += u3 * 3; u3 ^= u4; u4 += u5; u5 ^= u6; u6 += u7; u7 ^= u8;
		u8 += u9; u9 ^= u10; u10 += u11; u11 ^= u0;
	}
	return d0 + d1 + d2 + d3 + d4 + d5 + d6 + d7 + d8 + d9 + d10 + d11 + d12 + d13 + d14 + d15 +
	       (double)(u0 + u1 + u2 + u3 + u4 + u5 + u6 + u7 + u8 + u9 + u10 + u11);
}

struct job {
	int marks;
	double got;
	uint64_t head;
};

static void *run(void *arg)
{
	struct job *j = arg;

	j->got = work(j->marks);
	j->head = qprof__ring_tls && qprof__ring_tls != QPROF__RING_NONE ? qprof__ring_tls->head : 0;
	return NULL;
}

static double on_thread(int marks, uint64_t *head)
{
	struct job j = { marks, 0, 0 };
	pthread_t t;

	pthread_create(&t, NULL, run, &j);
	pthread_join(t, NULL);
	*head = j.head;
	return j.got;
}

int main(void)
{
	int fail = 0, i, round;

#ifdef __AVX2__
	if (!__builtin_cpu_supports("avx2")) {
		printf("no AVX2 here: skipped\n");
		return 77;
	}
#endif
	uint64_t head, prev = 0;

	/* keys enough that the ring's own comes past glibc's first 32: a new
	 * thread's pthread_setspecific then callocs its second-level block
	 * (memset, in vector registers) inside the cold path */
	for (i = 0; i < 64; i++) {
		pthread_key_t k;

		pthread_key_create(&k, NULL);
	}
	for (i = 0; i < 16; i++)
		din[i] = 1.0 + i * 0.37;
	for (i = 0; i < 12; i++)
		uin[i] = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
	for (round = 0; round < 3; round++) {
		int marks = round == 2 ? 5000 : 3;
		double want, got;

		qprof_ring_semaphore = 0;
		want = on_thread(marks, &head);
		qprof_ring_semaphore = 1;
		got = on_thread(marks, &head);
		qprof_ring_semaphore = 0;
		/* records: THREAD + the marks (the ring is the previous round's,
		 * back from the free list) */
		if (memcmp(&want, &got, sizeof(want)) || head != prev + (uint64_t)marks + 1) {
			printf("FAIL: round %d (%d marks): %.17g with the ring, %.17g without; head %llu\n",
			       round, marks, got, want, (unsigned long long)head);
			fail = 1;
		} else {
			printf("ok: round %d (%d marks): registers kept across the cold calls, head %llu\n",
			       round, marks, (unsigned long long)head);
		}
		prev = head;
	}
	return fail;
}

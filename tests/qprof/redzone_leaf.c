/* redzone_leaf.c - leaf-shaped functions, each holding one kind of qprof
 * marker, with more live values than registers, for tests/qprof/
 * test_redzone.sh: it disassembles them (gcc and clang, -O2 -O3 -Os, as C
 * and as C++) and fails if any of them keeps data below %rsp, the red zone
 * that a uprobe optimised into a call overwrites. Built against the ABI-1
 * header (tests/fixtures/abi1: a bare nop5) the same functions do use the
 * red zone: the test's self-check, that it can fail. Never run. */
#include <qprof/qprof.h>

#ifdef __cplusplus
#define RZ_EXTERN extern "C"
#else
#define RZ_EXTERN
#endif

/* Twenty values that live across the whole loop, and a marker in it. */
#define RZ_DECL                                                                    \
	uint64_t v0 = a[0], v1 = a[1], v2 = a[2], v3 = a[3], v4 = a[4], v5 = a[5],  \
		 v6 = a[6], v7 = a[7], v8 = a[8], v9 = a[9], v10 = a[10], v11 = a[11], \
		 v12 = a[12], v13 = a[13], v14 = a[14], v15 = a[15], v16 = a[16],     \
		 v17 = a[17], v18 = a[18], v19 = a[19]
#define RZ_STEP(i)                                                                 \
	do {                                                                       \
		v0 += v1 * (i); v1 ^= v2 + (i); v2 += v3; v3 ^= v4; v4 += v5 * 3;  \
		v5 ^= v6; v6 += v7; v7 ^= v8; v8 += v9; v9 ^= v10; v10 += v11;     \
		v11 ^= v12; v12 += v13; v13 ^= v14; v14 += v15; v15 ^= v16;        \
		v16 += v17; v17 ^= v18; v18 += v19; v19 ^= v0;                     \
	} while (0)
#define RZ_SUM                                                                     \
	(v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7 + v8 + v9 + v10 + v11 + v12 + v13 + \
	 v14 + v15 + v16 + v17 + v18 + v19)

static const char rz_span[] = "rz_span";

RZ_EXTERN uint64_t rz_scope(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		QPROF_SCOPE("rz_scope");
		RZ_STEP(i);
	}
	return RZ_SUM;
}

RZ_EXTERN uint64_t rz_func(uint64_t n, const uint64_t *a)
{
	QPROF_FUNC();
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++)
		RZ_STEP(i);
	return RZ_SUM;
}

RZ_EXTERN uint64_t rz_begin_end(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		QPROF_SCOPE_BEGIN(rz_span);
		RZ_STEP(i);
		QPROF_SCOPE_END(rz_span);
	}
	return RZ_SUM;
}

RZ_EXTERN uint64_t rz_mark(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		RZ_STEP(i);
		QPROF_MARK("rz_mark");
	}
	return RZ_SUM;
}

RZ_EXTERN uint64_t rz_value(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		RZ_STEP(i);
		QPROF_VALUE("rz_value", (double)v7);
	}
	return RZ_SUM;
}

RZ_EXTERN uint64_t rz_log(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		RZ_STEP(i);
		QPROF_LOG("v3=%llu", (unsigned long long)v3);
	}
	return RZ_SUM;
}

#ifdef QPROF_SPAN_BEGIN
RZ_EXTERN uint64_t rz_span_begin(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		RZ_STEP(i);
		QPROF_SPAN_BEGIN(rz_span, i);
	}
	return RZ_SUM;
}

RZ_EXTERN uint64_t rz_span_step(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		RZ_STEP(i);
		QPROF_SPAN_STEP(rz_span, i, "rz_step");
	}
	return RZ_SUM;
}

RZ_EXTERN uint64_t rz_span_end(uint64_t n, const uint64_t *a)
{
	RZ_DECL;
	for (uint64_t i = 0; i < n; i++) {
		RZ_STEP(i);
		QPROF_SPAN_END(rz_span, i);
	}
	return RZ_SUM;
}
#endif

/* Small ones: a scope around one addition to a global. */
volatile uint64_t rz_global;

RZ_EXTERN void rz_small_scope(void)
{
	QPROF_SCOPE("rz_small");
	rz_global += 1;
}

RZ_EXTERN void rz_small_mark(uint64_t x)
{
	rz_global += x;
	QPROF_MARK("rz_small_mark");
}

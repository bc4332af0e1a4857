/* SPDX-License-Identifier: MIT */
/* qprof.h - markers for the qprof profiler.
 *
 * Every marker is a USDT probe site (provider "qprof"): on x86-64 a 5-byte nop
 * (0f 1f 44 00 00) plus a .note.stapsdt entry, the format perf, bpftrace, bcc
 * and libbpf read. Nothing runs while no profiler listens. Argument 1 of every
 * probe is the address of a static per-site descriptor (struct qprof_site).
 * Each marker's asm also records that address (as a link-time address) in the
 * non-allocated section ".qprof_refs", so that the names can be read from the
 * ELF file alone, with no cost at run time. -DQPROF_DISABLE removes every
 * marker.
 *
 * Marker ABI 2 (QPROF_SITE_VERSION 2): every marker also tests the module's
 * USDT semaphore qprof_ring_semaphore and, while qprofd's ring collector
 * raises it, writes a record into a per-thread ring instead of relying on
 * the uprobe (ring.h). The nop5 sites and their notes are those of ABI 1.
 *
 *   QPROF_FUNC();                      time the enclosing function
 *   QPROF_SCOPE("name");               time until the end of the block
 *   QPROF_SCOPE_BEGIN("name");         open a span that does not follow a block
 *   QPROF_SCOPE_END("name");           close it (same string literal)
 *   QPROF_VALUE("name", double_expr);  record a value (only evaluated while traced)
 *   QPROF_LOG("fmt", ...);             a log line (only formatted while traced)
 *   QPROF_MARK("name");                an instant event
 *   QPROF_SPAN_BEGIN("name", id);      open a span keyed by (name, 64-bit id) ...
 *   QPROF_SPAN_STEP("name", id, "step"); ... a milestone of it (time since begin) ...
 *   QPROF_SPAN_END("name", id);        ... and close it, on any thread of the process
 *
 * C11 and C++11; GCC and clang. No library, no allocation, no thread.
 */
#ifndef QPROF_QPROF_H
#define QPROF_QPROF_H

#ifdef __cplusplus
#include <cstdint>
#include <cstdio>
#include <cstring>
#else
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#endif

/* Layout of a site descriptor: 40 bytes, read by the daemon from the ELF file
 * and from the process. Fixed by QPROF_SITE_MAGIC/QPROF_SITE_VERSION. */
#define QPROF_SITE_MAGIC 0x46525051u /* "QPRF" little-endian */
#define QPROF_SITE_VERSION 2 /* 2: the markers also write the ring (ring.h) */

enum qprof_site_kind {
	QPROF_KIND_FUNC = 1,	 /* QPROF_FUNC */
	QPROF_KIND_SCOPE = 2,	 /* QPROF_SCOPE */
	QPROF_KIND_SPAN_BEGIN = 3, /* QPROF_SCOPE_BEGIN */
	QPROF_KIND_SPAN_END = 4, /* QPROF_SCOPE_END */
	QPROF_KIND_VALUE = 5,
	QPROF_KIND_LOG = 6,
	QPROF_KIND_MARK = 7,
	QPROF_KIND_ASYNC_BEGIN = 8, /* QPROF_SPAN_BEGIN */
	QPROF_KIND_ASYNC_STEP = 9, /* QPROF_SPAN_STEP: a struct qprof_step_site */
	QPROF_KIND_ASYNC_END = 10, /* QPROF_SPAN_END */
};

struct qprof_site {
	uint32_t magic;
	uint16_t version;
	uint16_t kind;
	uint32_t line;
	uint32_t reserved;
	const char *name;
	const char *file;
	const char *function;
};

/* A QPROF_SPAN_STEP site: the descriptor (name: the step's) followed by the
 * span's name, so both are readable from the ELF file. */
struct qprof_step_site {
	struct qprof_site site;
	const char *span;
};

#if defined(__x86_64__) && !defined(__cplusplus)
_Static_assert(__builtin_offsetof(struct qprof_site, name) == 16, "QPROF__NAME_OFF");
_Static_assert(__builtin_offsetof(struct qprof_step_site, span) == 40, "QPROF__SPAN_OFF");
#endif

/* Longest QPROF_LOG message, terminating NUL included; longer ones are cut. */
#ifndef QPROF_LOG_MAX
#define QPROF_LOG_MAX 256
#endif

#if defined(QPROF_DISABLE)

#define QPROF_FUNC() ((void)0)
#define QPROF_SCOPE(name) ((void)0)
#define QPROF_SCOPE_BEGIN(name) ((void)0)
#define QPROF_SCOPE_END(name) ((void)0)
#define QPROF_VALUE(name, v) ((void)0)
#define QPROF_LOG(...) ((void)0)
#define QPROF_MARK(name) ((void)0)
/* A name array or id kept only for the markers is not an unused variable;
 * the id is not evaluated (give it no side effects). */
#define QPROF_SPAN_BEGIN(name, id) ((void)(name), (void)sizeof(id))
#define QPROF_SPAN_STEP(name, id, step) ((void)(name), (void)sizeof(id), (void)(step))
#define QPROF_SPAN_END(name, id) ((void)(name), (void)sizeof(id))

#else /* !QPROF_DISABLE */

#define QPROF__CAT_(a, b) a##b
#define QPROF__CAT(a, b) QPROF__CAT_(a, b)
#define QPROF__STR_(x) #x
#define QPROF__STR(x) QPROF__STR_(x)

#if defined(__x86_64__) || defined(__i386__)
#define QPROF__NOP ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00"
#else
#define QPROF__NOP "nop"
#endif
#if defined(__LP64__)
#define QPROF__ASM_ADDR ".8byte"
#else
#define QPROF__ASM_ADDR ".4byte"
#endif

/* USDT semaphores, one per module (weak + hidden): the kernel's uprobe
 * reference counter raises them while a tracer is attached. */
#ifdef __cplusplus
extern "C" {
#endif
__attribute__((weak, visibility("hidden"), section(".probes"))) volatile unsigned short qprof_log_semaphore;
__attribute__((weak, visibility("hidden"), section(".probes"))) volatile unsigned short qprof_value_semaphore;
#ifdef __cplusplus
}
#endif

/* The note, as <sys/sdt.h> writes it (same fields, same .stapsdt.base), but
 * after a 5-byte nop: on Linux >= 6.18 a uprobe on nop5 becomes a call to a
 * trampoline instead of an int3 trap. */
#define QPROF__NOTE(probe, sem, args)                                              \
	"990: " QPROF__NOP "\n"                                                    \
	".pushsection .note.stapsdt,\"?\",\"note\"\n"                              \
	".balign 4\n"                                                              \
	".4byte 992f-991f, 994f-993f, 3\n"                                         \
	"991: .asciz \"stapsdt\"\n"                                                \
	"992: .balign 4\n"                                                         \
	"993: " QPROF__ASM_ADDR " 990b\n"                                          \
	QPROF__ASM_ADDR " _.stapsdt.base\n"                                        \
	QPROF__ASM_ADDR " " sem "\n"                                               \
	".asciz \"qprof\"\n"                                                       \
	".asciz \"" probe "\"\n"                                                   \
	".asciz \"" args "\"\n"                                                    \
	"994: .balign 4\n"                                                         \
	".popsection\n"                                                            \
	".ifndef _.stapsdt.base\n"                                                 \
	".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"    \
	".weak _.stapsdt.base\n"                                                   \
	".hidden _.stapsdt.base\n"                                                 \
	"_.stapsdt.base: .space 1\n"                                               \
	".size _.stapsdt.base, 1\n"                                                \
	".popsection\n"                                                            \
	".endif\n"

/* The descriptor's link-time address, for readers of the ELF file. A
 * non-allocated section: nothing is loaded, nothing is relocated at run time. */
#define QPROF__REF                                                                 \
	".pushsection .qprof_refs,\"\",\"progbits\"\n"                             \
	".balign 8\n"                                                              \
	QPROF__ASM_ADDR " %c[qref]\n"                                              \
	".popsection\n"

/* Operands: the descriptor "r" (a lea), the others "nr": a register or an
 * immediate (a constant 0 costs nothing: $0). Not "nor" as <sys/sdt.h>:
 * clang takes the memory alternative whenever it may, which stores the
 * argument on the stack and gives the function a frame (in a small
 * function that doubled a detached marker's cost). The _R forms
 * also list the descriptor (operand "i": its address as a link-time constant)
 * and are used once per site; exits of a block scope reuse the enter's. */
#define QPROF__PROBE2(probe, sem, a1, a2)                                          \
	__asm__ __volatile__(QPROF__NOTE(probe, sem, "8@%[qa1] 8@%[qa2]")          \
			     : : [qa1] "r"(a1), [qa2] "nr"(a2))
#define QPROF__PROBE2R(probe, sem, site, a2)                                       \
	__asm__ __volatile__(QPROF__NOTE(probe, sem, "8@%[qa1] 8@%[qa2]") QPROF__REF \
			     : : [qa1] "r"(site), [qa2] "nr"(a2), [qref] "i"(site))
#define QPROF__PROBE3R(probe, sem, site, a2, a3)                                   \
	__asm__ __volatile__(QPROF__NOTE(probe, sem, "8@%[qa1] 8@%[qa2] -4@%[qa3]") QPROF__REF \
			     : : [qa1] "r"(site), [qa2] "nr"(a2), [qa3] "nr"(a3),  \
			       [qref] "i"(site))
#define QPROF__PROBE3R8(probe, sem, site, a2, a3)                                  \
	__asm__ __volatile__(QPROF__NOTE(probe, sem, "8@%[qa1] 8@%[qa2] 8@%[qa3]") QPROF__REF \
			     : : [qa1] "r"(site), [qa2] "nr"(a2), [qa3] "nr"(a3),  \
			       [qref] "i"(site))

/* Spans across threads: arg 3 (the span's name address) is read by the
 * tracer from the descriptor, at OFF bytes from arg 1 (its register): no
 * instruction of the program computes it. Elsewhere than x86-64: an
 * operand of its own. */
#if defined(__x86_64__)
#define QPROF__PROBE_ASPAN(probe, site, a2, name, off)                             \
	__asm__ __volatile__(QPROF__NOTE(probe, "0", "8@%[qa1] 8@%[qa2] 8@" off "(%[qa1])") QPROF__REF \
			     : : [qa1] "r"(site), [qa2] "nr"(a2), [qref] "i"(site))
#else
#define QPROF__PROBE_ASPAN(probe, site, a2, name, off) QPROF__PROBE3R8(probe, "0", site, a2, name)
#endif
#define QPROF__NAME_OFF "16"	/* offsetof(struct qprof_site, name) */
#define QPROF__SPAN_OFF "40"	/* offsetof(struct qprof_step_site, span) */

#ifdef __cplusplus
#define QPROF__SITE_INIT(k_, n_) \
	{ QPROF_SITE_MAGIC, QPROF_SITE_VERSION, (k_), __LINE__, 0, (n_), __FILE__, __func__ }
#else
#define QPROF__SITE_INIT(k_, n_)                                                   \
	{ .magic = QPROF_SITE_MAGIC, .version = QPROF_SITE_VERSION, .kind = (k_),   \
	  .line = __LINE__, .name = (n_), .file = __FILE__, .function = __func__ }
#endif

/* A plain static: no named section, so that sites inside C++ inline
 * functions (COMDAT) and ordinary ones can share a translation unit. */
#define QPROF__SITE(var, kind, name)                                               \
	static struct qprof_site var __attribute__((used, aligned(8))) =            \
		QPROF__SITE_INIT(kind, name)

#include "ring.h"
#include "log_fmt.h"

/* Enter: the nop5, then the ring record (its time stamp as late as it can
 * be); exit: the ring record first. */
#define QPROF__ENTER_R(site)                                                       \
	do {                                                                       \
		QPROF__PROBE2R("scope_enter", "0", (const void *)(site), 0);       \
		if (QPROF__RING_ON())                                              \
			qprof__ring_put((site), QPROF_REC_ENTER, 1);               \
	} while (0)
#define QPROF__EXIT(site)                                                          \
	do {                                                                       \
		if (QPROF__RING_ON())                                              \
			qprof__ring_put((site), QPROF_REC_EXIT, -1);               \
		QPROF__PROBE2("scope_exit", "0", (const void *)(site), 0);         \
	} while (0)

#ifdef __cplusplus
/* RAII: the destructor fires scope_exit on every way out of the block. */
struct qprof__scope_guard {
	const struct qprof_site *site;
	__attribute__((always_inline)) explicit qprof__scope_guard(const struct qprof_site *s) : site(s) {}
	__attribute__((always_inline)) ~qprof__scope_guard() { QPROF__EXIT(site); }
	qprof__scope_guard(const qprof__scope_guard &) = delete;
	qprof__scope_guard &operator=(const qprof__scope_guard &) = delete;
};
#define QPROF__SCOPE_N(kind, name, n)                                              \
	QPROF__SITE(QPROF__CAT(qprof__site_, n), kind, name);                      \
	QPROF__ENTER_R(&QPROF__CAT(qprof__site_, n));                              \
	qprof__scope_guard QPROF__CAT(qprof__guard_, n)(&QPROF__CAT(qprof__site_, n))
#else
static inline __attribute__((always_inline, unused)) void
qprof__scope_cleanup(const struct qprof_site *const *site)
{
	QPROF__EXIT(*site);
}
#define QPROF__SCOPE_N(kind, name, n)                                              \
	QPROF__SITE(QPROF__CAT(qprof__site_, n), kind, name);                      \
	const struct qprof_site *const QPROF__CAT(qprof__guard_, n)                \
		__attribute__((cleanup(qprof__scope_cleanup), unused)) =           \
			&QPROF__CAT(qprof__site_, n);                              \
	QPROF__ENTER_R(&QPROF__CAT(qprof__site_, n))
#endif

#define QPROF__SCOPE(kind, name, n) QPROF__SCOPE_N(kind, name, n)
#define QPROF_FUNC() QPROF__SCOPE(QPROF_KIND_FUNC, __func__, __COUNTER__)
#define QPROF_SCOPE(name) QPROF__SCOPE(QPROF_KIND_SCOPE, name, __COUNTER__)

/* A span is keyed by the address of its name literal: BEGIN and END must use
 * the same literal (the compiler and linker merge equal literals; a shared
 * `static const char NAME[]` works everywhere). */
#define QPROF__SPAN(probe, kind, rec, depth, name, n)                              \
	do {                                                                       \
		QPROF__SITE(QPROF__CAT(qprof__site_, n), kind, name);              \
		if ((rec) == QPROF_REC_END && QPROF__RING_ON())                    \
			qprof__ring_put2(&QPROF__CAT(qprof__site_, n), (rec),      \
					 (uintptr_t)(const void *)(name), (depth)); \
		QPROF__PROBE2R(probe, "0", (const void *)&QPROF__CAT(qprof__site_, n), \
			       (uintptr_t)(const void *)(name));                   \
		if ((rec) == QPROF_REC_BEGIN && QPROF__RING_ON())                  \
			qprof__ring_put2(&QPROF__CAT(qprof__site_, n), (rec),      \
					 (uintptr_t)(const void *)(name), (depth)); \
	} while (0)
/* On the ring a SCOPE_BEGIN span changes no open-scope depth: it is no block
 * scope (the drain pairs it in slots of its own, as the BPF collector does),
 * so one never ended leaves the thread's open scopes, which tag its CPU
 * samples, as they were. */
#define QPROF_SCOPE_BEGIN(name)                                                    \
	QPROF__SPAN("scope_enter", QPROF_KIND_SPAN_BEGIN, QPROF_REC_BEGIN, 0, name, __COUNTER__)
#define QPROF_SCOPE_END(name)                                                      \
	QPROF__SPAN("scope_exit", QPROF_KIND_SPAN_END, QPROF_REC_END, 0, name, __COUNTER__)

/* Spans across threads: probes span_begin/span_step/span_end with arg 1 the
 * descriptor, arg 2 the id, arg 3 the name literal's address. The collector
 * pairs them by (process, name address, id), so as for QPROF_SCOPE_BEGIN the
 * three markers of one span use the same literal (or one static array). */
#define QPROF__ASPAN_N(probe, kind, name, id, n) QPROF__ASPAN_NN(probe, kind, name, id, n)
#define QPROF__ASPAN_NN(probe, kind, name, id, n)                                  \
	do {                                                                       \
		const uint64_t QPROF__CAT(qprof__id_, n) = (uint64_t)(id);         \
		QPROF__SITE(QPROF__CAT(qprof__site_, n), kind, name);              \
		if ((kind) != QPROF_KIND_ASYNC_BEGIN && QPROF__RING_ON())          \
			qprof__ring_put3(&QPROF__CAT(qprof__site_, n), QPROF_REC_END, \
					 (uintptr_t)(const void *)(name), QPROF__CAT(qprof__id_, n)); \
		QPROF__PROBE_ASPAN(probe, (const void *)&QPROF__CAT(qprof__site_, n), \
				   QPROF__CAT(qprof__id_, n), (uintptr_t)(const void *)(name), \
				   QPROF__NAME_OFF);                               \
		if ((kind) == QPROF_KIND_ASYNC_BEGIN && QPROF__RING_ON())          \
			qprof__ring_put3(&QPROF__CAT(qprof__site_, n), QPROF_REC_BEGIN, \
					 (uintptr_t)(const void *)(name), QPROF__CAT(qprof__id_, n)); \
	} while (0)
#ifdef __cplusplus
#define QPROF__STEP_INIT(name, step)                                               \
	{ QPROF__SITE_INIT(QPROF_KIND_ASYNC_STEP, step), (name) }
#else
#define QPROF__STEP_INIT(name, step)                                               \
	{ .site = QPROF__SITE_INIT(QPROF_KIND_ASYNC_STEP, step), .span = (name) }
#endif
#define QPROF__ASTEP_N(name, id, step, n) QPROF__ASTEP_NN(name, id, step, n)
#define QPROF__ASTEP_NN(name, id, step, n)                                         \
	do {                                                                       \
		static struct qprof_step_site QPROF__CAT(qprof__site_, n)          \
			__attribute__((used, aligned(8))) = QPROF__STEP_INIT(name, step); \
		const uint64_t QPROF__CAT(qprof__id_, n) = (uint64_t)(id);         \
		if (QPROF__RING_ON())                                              \
			qprof__ring_put3(&QPROF__CAT(qprof__site_, n), QPROF_REC_MARK, \
					 (uintptr_t)(const void *)(name), QPROF__CAT(qprof__id_, n)); \
		QPROF__PROBE_ASPAN("span_step", (const void *)&QPROF__CAT(qprof__site_, n), \
				   QPROF__CAT(qprof__id_, n), (uintptr_t)(const void *)(name), \
				   QPROF__SPAN_OFF);                               \
	} while (0)
#define QPROF_SPAN_BEGIN(name, id)                                                 \
	QPROF__ASPAN_N("span_begin", QPROF_KIND_ASYNC_BEGIN, name, id, __COUNTER__)
#define QPROF_SPAN_END(name, id)                                                   \
	QPROF__ASPAN_N("span_end", QPROF_KIND_ASYNC_END, name, id, __COUNTER__)
#define QPROF_SPAN_STEP(name, id, step) QPROF__ASTEP_N(name, id, step, __COUNTER__)

#define QPROF_MARK(name) QPROF__MARK_N(name, __COUNTER__)
#define QPROF__MARK_N(name, n) QPROF__MARK_NN(name, n)
#define QPROF__MARK_NN(name, n)                                                    \
	do {                                                                       \
		QPROF__SITE(QPROF__CAT(qprof__site_, n), QPROF_KIND_MARK, name);   \
		QPROF__PROBE2R("mark", "0", (const void *)&QPROF__CAT(qprof__site_, n), 0); \
		if (QPROF__RING_ON())                                              \
			qprof__ring_put(&QPROF__CAT(qprof__site_, n), QPROF_REC_MARK, 0); \
	} while (0)

/* Values: arg 2 is the IEEE-754 bits of the double. The expression is only
 * evaluated while a tracer listens (either semaphore). */
#define QPROF_VALUE(name, v) QPROF__VALUE_N(name, v, __COUNTER__)
#define QPROF__VALUE_N(name, v, n) QPROF__VALUE_NN(name, v, n)
#define QPROF__VALUE_NN(name, v, n)                                                \
	do {                                                                       \
		QPROF__SITE(QPROF__CAT(qprof__site_, n), QPROF_KIND_VALUE, name);  \
		if (QPROF__VALUE_ON()) {                                           \
			double qprof__d = (double)(v);                              \
			uint64_t qprof__bits;                                      \
			memcpy(&qprof__bits, &qprof__d, sizeof(qprof__bits));      \
			if (QPROF__RING_ON())                                      \
				qprof__ring_put2(&QPROF__CAT(qprof__site_, n),     \
						 QPROF_REC_VALUE, qprof__bits, 0); \
			if (qprof_value_semaphore != 0)                            \
				QPROF__PROBE2R("value", "qprof_value_semaphore",   \
					      (const void *)&QPROF__CAT(qprof__site_, n), \
					      qprof__bits);                        \
		}                                                                  \
	} while (0)

/* Logs: arg 2 the message, arg 3 the length it would have had (>= QPROF_LOG_MAX
 * means it was cut). Formatted only while a tracer listens. While the ring
 * is on, the message goes into the ring instead of through the probe (its
 * site is 16-aligned: ring_layout.h): the probe's asm tests the ring
 * semaphore and jumps over its nop to LRING. (One asm for both: a separate
 * test made GCC allocate the registers of the caller's loop worse, costing
 * 2 instructions a marker while detached.) */
#if defined(__x86_64__) || defined(__i386__)
#define QPROF__LOG_PROBE(site, lring)                                              \
	__asm__ goto("cmpw $0, %[qrs]\n\tjne %l[" #lring "]\n\t"                 \
		     QPROF__NOTE("log", "qprof_log_semaphore", "8@%[qa1] 8@%[qa2] -4@%[qa3]") QPROF__REF \
		     : : [qa1] "r"((const void *)&(site)), [qa2] "nr"((const char *)qprof__msg), \
		       [qa3] "nr"(qprof__len), [qref] "i"(&(site)), [qrs] "m"(qprof_ring_semaphore) \
		     : "cc" : lring)
#else
#define QPROF__LOG_PROBE(site, lring)                                              \
	do {                                                                       \
		if (qprof_ring_semaphore != 0)                                     \
			goto lring;                                                \
		QPROF__PROBE3R("log", "qprof_log_semaphore", (const void *)&(site), \
			      (const char *)qprof__msg, qprof__len);               \
	} while (0)
#endif
#define QPROF_LOG(...) QPROF__LOG_N(__COUNTER__, __VA_ARGS__)
#define QPROF__LOG_N(n, ...) QPROF__LOG_NN(n, __VA_ARGS__)
#define QPROF__LOG_NN(n, ...)                                                      \
	do {                                                                       \
		static struct qprof_site QPROF__CAT(qprof__site_, n)               \
			__attribute__((used, aligned(16))) =                       \
				QPROF__SITE_INIT(QPROF_KIND_LOG, "log");           \
		if (__builtin_expect(qprof_log_semaphore != 0, 0)) {               \
			__label__ qprof__lring, qprof__ldone;                      \
			char qprof__msg[QPROF_LOG_MAX];                            \
			int qprof__len = qprof__log_fmt(qprof__msg, sizeof(qprof__msg), __VA_ARGS__); \
			QPROF__LOG_PROBE(QPROF__CAT(qprof__site_, n), qprof__lring); \
			goto qprof__ldone;                                         \
		qprof__lring:                                                      \
			qprof__ring_log(&QPROF__CAT(qprof__site_, n), qprof__msg, qprof__len); \
		qprof__ldone:;                                                     \
		}                                                                  \
	} while (0)

#endif /* QPROF_DISABLE */

#endif /* QPROF_QPROF_H */

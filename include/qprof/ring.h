/* SPDX-License-Identifier: MIT */
/* ring.h - the ring fast path of the qprof markers (marker ABI 2), included
 * by qprof.h; not meant to be included alone.
 *
 * While qprofd's uprobe on the probe qprof:ring_register is attached, the
 * kernel raises that probe's USDT semaphore, qprof_ring_semaphore (one per
 * module: executable or shared library). Every marker tests it; while it is
 * zero that test is all a marker adds to its nop5 (a compare and a branch).
 * While it is raised, a marker writes a 16-byte record into its thread's
 * ring, in the program's own memory, with no system call and no lock. A
 * thread's first record takes the cold path: it takes a ring from the
 * module's free list or maps one (mmap, no malloc) and announces it through
 * ring_register (arg 1 the ring's address, arg 2 its size in bytes). A pthread
 * key destructor gives the ring of an exiting thread back to the free list,
 * so a process has as many rings as it ever had threads alive at once.
 *
 * The layout below is a contract with qprofd, which reads the rings with
 * process_vm_readv (daemon/collect/ring_*.c). Little-endian, x86-64.
 *
 *   offset 0   struct qprof_ring       the header, 64 bytes, then open[32]
 *   offset 320 struct qprof_ring_rec   rec[nrec], nrec a power of two
 *
 * Record i (i counts every record the ring ever took) is at rec[i & (nrec -
 * 1)]. The writer fills the record, then stores head = i + 1 with release
 * order: a reader that read head = h may read records i < h, and records it
 * read are whole unless the writer lapped it meanwhile, which a second read
 * of head tells (records i <= head2 - nrec may have been overwritten).
 *
 * A record is {ts, word}: ts the time stamp counter (rdtsc) on x86, else
 * CLOCK_MONOTONIC ns (header flag QPROF_RING_F_MONO); word the site
 * descriptor's address (8-aligned) or'ed with the record kind (low 3 bits).
 * A kind with an argument (QPROF_REC_VALUE: the double's bits, QPROF_REC_
 * BEGIN/END: the name literal's address) is followed by one QPROF_REC_ARG
 * record {argument, QPROF_REC_ARG}; both are published by one head store.
 * The spans across threads write a record followed by two ARG records (the
 * name literal's address, then the id), all three published by one head
 * store: QPROF_SPAN_BEGIN as QPROF_REC_BEGIN, QPROF_SPAN_END as
 * QPROF_REC_END, QPROF_SPAN_STEP as QPROF_REC_MARK; a second ARG record is
 * what tells them from QPROF_SCOPE_BEGIN/END and QPROF_MARK (the whole
 * record scheme: ring_layout.h).
 * QPROF_REC_THREAD opens the records of a new owner of the ring: word =
 * generation << 32 | tid << 3 | QPROF_REC_THREAD. QPROF_LOG writes a head
 * and its text records (ring_layout.h) while qprof_log_semaphore is also
 * raised (qprofd keeps the log probe attached to raise it; while the ring
 * semaphore is up the marker jumps over that probe's nop).
 */
#ifndef QPROF_RING_H
#define QPROF_RING_H

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring_layout.h"

/* Strict -std=c11 hides these two names; their Linux values. */
#ifdef MAP_ANONYMOUS
#define QPROF__MAP_ANON MAP_ANONYMOUS
#else
#define QPROF__MAP_ANON 0x20
#endif

#define QPROF_RING_BYTES \
	((uint64_t)QPROF_RING_HDR_SIZE + (uint64_t)QPROF_RING_RECORDS * sizeof(struct qprof_ring_rec))
/* The bytes of a ring of N records. */
#define QPROF__RING_BYTES_OF(n) ((uint64_t)QPROF_RING_HDR_SIZE + (uint64_t)(n) * sizeof(struct qprof_ring_rec))
/* The thread's ring pointer while it has none and may not take one: its
 * mmap failed, or its ring went back to the free list at its exit. */
#define QPROF__RING_NONE ((struct qprof_ring *)1)

/* The ring pointer's TLS model: initial-exec in an executable (a fixed
 * offset from the thread pointer); the default, dynamic one in a shared
 * library (-fPIC without -fPIE). An initial-exec variable of a dlopen'ed
 * library takes glibc's static TLS surplus, which dlclose does not give
 * back (it only shrinks from the top): 23 cycles of dlopen/dlclose of 10
 * marked plugins used it up ("cannot allocate memory in static TLS
 * block"), and the plugins could not be loaded any more. */
#if defined(__PIC__) && !defined(__PIE__)
#define QPROF__TLS_ATTR __attribute__((weak, visibility("hidden")))
#else
#define QPROF__TLS_ATTR __attribute__((weak, visibility("hidden"), tls_model("initial-exec")))
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* Module-wide state (weak + hidden: one per executable or library). */
__attribute__((weak, visibility("hidden"), section(".probes"))) volatile unsigned short qprof_ring_semaphore;
QPROF__TLS_ATTR __thread struct qprof_ring *qprof__ring_tls;
__attribute__((weak, visibility("hidden"))) struct qprof_ring *qprof__ring_free;
__attribute__((weak, visibility("hidden"))) int qprof__ring_lock;
__attribute__((weak, visibility("hidden"))) pthread_once_t qprof__ring_once = PTHREAD_ONCE_INIT;
__attribute__((weak, visibility("hidden"))) pthread_key_t qprof__ring_key;
__attribute__((weak, visibility("hidden"))) int qprof__ring_key_ok;
/* qprofd's wish for new rings' size (ring_layout.h), written by qprofd;
 * in .probes beside the semaphores, where qprofd checks a note's
 * semaphore field points */
__attribute__((weak, visibility("hidden"), aligned(8), section(".probes"))) struct qprof_ring_cfg qprof__ring_cfg = {
	QPROF_RING_CFG_MAGIC, 0
};
#ifdef __cplusplus
}
#endif

static inline __attribute__((always_inline)) uint64_t qprof__ring_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
#endif
}

static inline __attribute__((always_inline)) struct qprof_ring_rec *qprof__ring_slot(struct qprof_ring *r,
										      uint64_t i)
{
	return (struct qprof_ring_rec *)((char *)r + QPROF_RING_HDR_SIZE) + (i & (r->nrec - 1));
}

static inline uint32_t qprof__gettid(void)
{
#if defined(__x86_64__)
	long t;

	/* the system call itself: syscall(2) is not declared under strict C11 */
	__asm__ __volatile__("syscall" : "=a"(t) : "0"((long)SYS_gettid) : "rcx", "r11", "memory");
	return (uint32_t)t;
#else
	return (uint32_t)syscall(SYS_gettid);
#endif
}

/* The announcement: a USDT probe whose semaphore is the markers' test. On
 * x86-64 its arguments are in fixed registers (rdi, rsi), so that qprofd
 * reads them with a plain uprobe program. A third argument, the constant 2,
 * says that this module's spans across threads write ring records (qprofd
 * then attaches no BPF program to them); modules without it keep their
 * spans on BPF. */
static __attribute__((noinline, cold, unused)) void qprof__ring_announce(struct qprof_ring *r)
{
	uint64_t bytes = QPROF__RING_BYTES_OF(r->nrec);

#if defined(__x86_64__)
	__asm__ __volatile__(QPROF__NOTE("ring_register", "qprof_ring_semaphore", "8@%%rdi 8@%%rsi 4@$2")
			     : : "D"(r), "S"(bytes) : "memory");
#else
	QPROF__PROBE2("ring_register", "qprof_ring_semaphore", (const void *)r, bytes);
#endif
}

/* The records a new ring gets: qprofd's wish when it is one it may ask
 * for, else the markers' own. The note qprof:ring_config tells qprofd
 * where the wish is (its semaphore field); its nop is never probed. */
static __attribute__((unused)) uint32_t qprof__ring_nrec(void)
{
	uint32_t want;

	__asm__ __volatile__(QPROF__NOTE("ring_config", "qprof__ring_cfg", "") : : : "memory");
	want = __atomic_load_n(&qprof__ring_cfg.records, __ATOMIC_RELAXED);
	if (qprof__ring_cfg.magic == QPROF_RING_CFG_MAGIC && want >= QPROF_RING_CFG_MIN &&
	    want <= QPROF_RING_CFG_MAX && !(want & (want - 1)))
		return want;
	return QPROF_RING_RECORDS;
}

static __attribute__((unused)) void qprof__ring_lock_take(void)
{
	while (__atomic_exchange_n(&qprof__ring_lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&qprof__ring_lock, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

static __attribute__((unused)) void qprof__ring_lock_drop(void)
{
	__atomic_store_n(&qprof__ring_lock, 0, __ATOMIC_RELEASE);
}

/* The key destructor, at the thread's exit: the ring goes back to the free
 * list, and the thread writes no more (its later markers, in other
 * destructors, find QPROF__RING_NONE). */
static __attribute__((unused)) void qprof__ring_release(void *p)
{
	struct qprof_ring *r = (struct qprof_ring *)p;

	qprof__ring_tls = QPROF__RING_NONE;
	if (!r)
		return;
	__atomic_store_n(&r->tid, 0, __ATOMIC_RELAXED);
	qprof__ring_lock_take();
	r->next = qprof__ring_free;
	qprof__ring_free = r;
	qprof__ring_lock_drop();
}

static __attribute__((unused)) void qprof__ring_key_init(void)
{
	qprof__ring_key_ok = pthread_key_create(&qprof__ring_key, qprof__ring_release) == 0;
}

/* Cold path, once per thread: a ring from the free list or a new mapping,
 * a THREAD record, the announcement. NULL when there is none to be had
 * (the thread then writes nothing, without asking again). */
static __attribute__((noinline, cold, unused)) struct qprof_ring *qprof__ring_first(void)
{
	struct qprof_ring *r;
	uint64_t h;

	if (qprof__ring_tls == QPROF__RING_NONE)
		return NULL;
	qprof__ring_tls = QPROF__RING_NONE;
	pthread_once(&qprof__ring_once, qprof__ring_key_init);
	if (!qprof__ring_key_ok)
		return NULL;
	qprof__ring_lock_take();
	r = qprof__ring_free;
	if (r)
		qprof__ring_free = r->next;
	qprof__ring_lock_drop();
	if (!r) {
		uint32_t nrec = qprof__ring_nrec();
		void *m = mmap(NULL, QPROF__RING_BYTES_OF(nrec), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | QPROF__MAP_ANON, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		r = (struct qprof_ring *)m;
		r->magic = QPROF_RING_MAGIC;
		r->version = QPROF_RING_VERSION;
		r->rec_size = sizeof(struct qprof_ring_rec);
		r->nrec = nrec;
#if !defined(__x86_64__) && !defined(__i386__)
		r->flags = QPROF_RING_F_MONO;
#endif
	}
	if (pthread_setspecific(qprof__ring_key, r)) {
		qprof__ring_release(r);
		return NULL;
	}
	r->next = NULL;
	r->generation++;
	r->tid = qprof__gettid();
	r->depth = 0;
	r->span_site = 0;
	h = r->head;
	qprof__ring_slot(r, h)->ts = qprof__ring_now();
	qprof__ring_slot(r, h)->word = (r->generation << 32) | ((uint64_t)r->tid << 3) | QPROF_REC_THREAD;
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
	qprof__ring_tls = r;
	qprof__ring_announce(r);
	return r;
}

/* The cold calls of the hot path, x86-64: the marker's code calls
 * qprof__ring_first and qprof__ring_announce through qprof__ring_thunk, from
 * an asm statement that the compiler does not take for a call. A function
 * holding markers therefore stays a leaf (no frame, no register saved for a
 * call that almost never happens: a detached marker is its nop5, a compare
 * and a branch, also in a small function), and three things keep it safe:
 *   - the asm steps below the red zone before its call (lea -128(%rsp));
 *   - the thunk saves every register it or the C code may change (the
 *     general ones the ABI lets a callee clobber, the whole vector and x87
 *     state by xsave, or fxsave where the OS has no xsave), aligns the stack
 *     and tells the unwinder where the caller's frame is;
 *   - the same block reads the flags (pushf), which makes gcc and clang keep
 *     nothing below %rsp in the function: a leaf may otherwise keep live
 *     data in the red zone, and a uprobe that the kernel optimised into a
 *     call (nop5 sites, Linux >= 6.18) writes there. tests/unit/
 *     test_redzone.sh checks it for every marker, gcc and clang, -O2 -O3 -Os.
 * Elsewhere plain calls, which make the function a non-leaf. */
#if defined(__x86_64__)
#ifdef __cplusplus
extern "C" {
#endif
/* xsave area size of this CPU and OS, 1 for fxsave, 0 until the thunk's
 * first run. */
__attribute__((weak, visibility("hidden"))) unsigned int qprof__ring_xsz;
#ifdef __cplusplus
}
#endif
/* In: rax the C function, r10 its argument (not rdi: the caller's code
 * often holds an argument of its own there); out: rax its result.
 * Everything else as it was. The caller's frame: CFA = rsp at entry + 8 + 128. */
__asm__(".pushsection .text.qprof__ring_thunk,\"axG\",@progbits,qprof__ring_thunk,comdat\n"
	".weak qprof__ring_thunk\n"
	".hidden qprof__ring_thunk\n"
	".type qprof__ring_thunk,@function\n"
	"qprof__ring_thunk:\n"
	".cfi_startproc\n"
	".cfi_def_cfa_offset 136\n"
	".cfi_offset 16, -136\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 144\n"
	".cfi_offset 6, -144\n"
	"movq %rsp, %rbp\n"
	".cfi_def_cfa_register 6\n"
	"pushq %rax\n" /* -8(%rbp): the result, later */
	"pushq %rcx\n"
	"pushq %rdx\n"
	"pushq %rsi\n"
	"pushq %rdi\n"
	"pushq %r8\n"
	"pushq %r9\n"
	"pushq %r10\n"
	"pushq %r11\n"
	"movq %rax, %r11\n"
	"movq %r10, %rdi\n"
	"movl qprof__ring_xsz(%rip), %ecx\n"
	"testl %ecx, %ecx\n"
	"jnz 1f\n"
	"pushq %rbx\n"
	"movl $1, %esi\n"
	"movl $1, %eax\n"
	"cpuid\n"
	"btl $27, %ecx\n" /* OSXSAVE */
	"jnc 2f\n"
	"movl $0xd, %eax\n"
	"xorl %ecx, %ecx\n"
	"cpuid\n"
	"movl %ebx, %esi\n" /* the size for the features XCR0 enables */
	"2:\n"
	"popq %rbx\n"
	"movl %esi, qprof__ring_xsz(%rip)\n"
	"movl %esi, %ecx\n"
	"1:\n"
	"cmpl $1, %ecx\n"
	"jne 3f\n"
	"subq $512, %rsp\n"
	"andq $-64, %rsp\n"
	"fxsave64 (%rsp)\n"
	"jmp 4f\n"
	"3:\n"
	"subq %rcx, %rsp\n"
	"andq $-64, %rsp\n"
	"xorl %eax, %eax\n" /* the xsave header past XSTATE_BV must be 0 */
	"movq %rax, 512(%rsp)\n"
	"movq %rax, 520(%rsp)\n"
	"movq %rax, 528(%rsp)\n"
	"movq %rax, 536(%rsp)\n"
	"movq %rax, 544(%rsp)\n"
	"movq %rax, 552(%rsp)\n"
	"movq %rax, 560(%rsp)\n"
	"movq %rax, 568(%rsp)\n"
	"movl $-1, %eax\n"
	"movl $-1, %edx\n"
	"xsave64 (%rsp)\n"
	"4:\n"
	"call *%r11\n"
	"movq %rax, -8(%rbp)\n"
	"cmpl $1, qprof__ring_xsz(%rip)\n"
	"jne 5f\n"
	"fxrstor64 (%rsp)\n"
	"jmp 6f\n"
	"5:\n"
	"movl $-1, %eax\n"
	"movl $-1, %edx\n"
	"xrstor64 (%rsp)\n"
	"6:\n"
	"leaq -72(%rbp), %rsp\n"
	"popq %r11\n"
	"popq %r10\n"
	"popq %r9\n"
	"popq %r8\n"
	"popq %rdi\n"
	"popq %rsi\n"
	"popq %rdx\n"
	"popq %rcx\n"
	"popq %rax\n"
	"popq %rbp\n"
	".cfi_def_cfa 7, 136\n"
	"ret\n"
	".cfi_endproc\n"
	".size qprof__ring_thunk, .-qprof__ring_thunk\n"
	".popsection\n");

/* FN(ARG) through the thunk. */
static inline __attribute__((always_inline)) uintptr_t qprof__ring_call(uintptr_t fn, const void *arg)
{
	/* pushf: what keeps the function's data above %rsp (see above) */
	uint64_t f = __builtin_ia32_readeflags_u64();
	register const void *a __asm__("r10") = arg;

	__asm__ __volatile__("leaq -128(%%rsp), %%rsp\n\t"
			     "call qprof__ring_thunk\n\t"
			     "leaq 128(%%rsp), %%rsp"
			     : "+a"(fn) : "r"(a), "r"(f) : "cc", "memory");
	return fn;
}
#define QPROF__RING_FIRST() ((struct qprof_ring *)qprof__ring_call((uintptr_t)&qprof__ring_first, NULL))
#define QPROF__RING_ANNOUNCE(r) ((void)qprof__ring_call((uintptr_t)&qprof__ring_announce, (r)))
#else
#define QPROF__RING_FIRST() qprof__ring_first()
#define QPROF__RING_ANNOUNCE(r) qprof__ring_announce(r)
#endif

static inline __attribute__((always_inline)) struct qprof_ring *qprof__ring_get(void)
{
	struct qprof_ring *r = qprof__ring_tls;

	if (__builtin_expect((uintptr_t)r <= 1, 0))
		r = QPROF__RING_FIRST();
	return r;
}

/* Publish records up to H; announce again every QPROF_RING_ANNOUNCE. */
static inline __attribute__((always_inline)) void qprof__ring_publish(struct qprof_ring *r, uint64_t h)
{
	__atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
	if (__builtin_expect((h & (QPROF_RING_ANNOUNCE - 1)) <= 1, 0))
		QPROF__RING_ANNOUNCE(r);
}

/* Open scopes: an enter writes its site into open[] before depth grows
 * (the CPU sampler, interrupting this thread, reads depth then open[]); an
 * exit never takes depth below 0 (a scope entered before the semaphore
 * rose exits without its enter). */
static inline __attribute__((always_inline)) void qprof__ring_depth(struct qprof_ring *r, const void *site,
								     int depth)
{
	uint32_t d = r->depth;

	if (depth > 0) {
		if (d < QPROF_RING_OPEN)
			r->open[d] = (uint64_t)(uintptr_t)site;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		r->depth = d + 1;
	} else if (depth < 0 && d) {
		r->depth = d - 1;
	}
}

/* One record, WORD = site | kind, then NARGS (0..2, a constant at every
 * call: what it leaves out folds away) argument records A1, A2, published
 * together; DEPTH the change of open scopes. Only called while the
 * semaphore is raised.
 * A record that opens a duration (ENTER, BEGIN) takes its time stamp last,
 * just before the head store; every other one takes it first. So what the
 * marker does besides, the first write to a ring page (a page fault: 6-9
 * us on this kind of VM, on every 256th record of a ring's first lap) and
 * an announcement (a uprobe), falls outside the durations the records
 * measure. */
static inline __attribute__((always_inline)) void qprof__ring_putn(const void *site, unsigned int kind,
								    unsigned int nargs, uint64_t a1,
								    uint64_t a2, int depth)
{
	struct qprof_ring *r = qprof__ring_get();
	struct qprof_ring_rec *rec, *first;
	const int opening = kind == QPROF_REC_ENTER || kind == QPROF_REC_BEGIN;
	uint64_t h;

	if (!r)
		return;
	h = r->head;
	first = rec = qprof__ring_slot(r, h);
	if (!opening)
		rec->ts = qprof__ring_now();
	rec->word = (uint64_t)(uintptr_t)site | kind;
	if (nargs > 0) {
		rec = qprof__ring_slot(r, h + 1);
		rec->ts = a1;
		rec->word = QPROF_REC_ARG;
	}
	if (nargs > 1) {
		rec = qprof__ring_slot(r, h + 2);
		rec->ts = a2;
		rec->word = QPROF_REC_ARG;
	}
	qprof__ring_depth(r, site, depth);
	if (opening) {
		if (__builtin_expect(((h + 1 + nargs) & (QPROF_RING_ANNOUNCE - 1)) <= 1, 0))
			QPROF__RING_ANNOUNCE(r);
		/* the stores above stay before the stamp (the compiler's order;
		 * a faulting store is re-run with all after it, the stamp too) */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		first->ts = qprof__ring_now();
		__atomic_store_n(&r->head, h + 1 + nargs, __ATOMIC_RELEASE);
	} else {
		qprof__ring_publish(r, h + 1 + nargs);
	}
}

/* One record. */
static inline __attribute__((always_inline)) void qprof__ring_put(const void *site, unsigned int kind,
								   int depth)
{
	qprof__ring_putn(site, kind, 0, 0, 0, depth);
}

/* A record and its argument record, published together. */
static inline __attribute__((always_inline)) void qprof__ring_put2(const void *site, unsigned int kind,
								    uint64_t arg, int depth)
{
	qprof__ring_putn(site, kind, 1, arg, 0, depth);
}

/* The span open on the thread (the header's span_site and span_id), for
 * its CPU samples: QPROF_SPAN_BEGIN opens its span there; QPROF_SPAN_END
 * of the same name and id on this thread closes it. The sampler reads the
 * header while this thread is interrupted: the site goes to 0 first and
 * is stored last, so it never sees a site with another span's id. */
static inline __attribute__((always_inline)) void qprof__ring_span(const void *site, unsigned int kind,
								    uint64_t name, uint64_t id)
{
	struct qprof_ring *r = qprof__ring_tls;

	if ((uintptr_t)r <= 1)
		return;
	if (kind == QPROF_REC_BEGIN) {
		r->span_site = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		r->span_id = id;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		r->span_site = (uint64_t)(uintptr_t)site;
	} else if (kind == QPROF_REC_END && r->span_site && r->span_id == id &&
		   (uint64_t)(uintptr_t)((const struct qprof_site *)(uintptr_t)r->span_site)->name == name) {
		r->span_site = 0;
	}
}

/* A record and two argument records, published together: the spans across
 * threads (QPROF_SPAN_BEGIN/STEP/END: arguments the name literal's address
 * and the id). Never changes the thread's depth; a begin or an end moves
 * the thread's open span. */
static inline __attribute__((always_inline)) void qprof__ring_put3(const void *site, unsigned int kind,
								    uint64_t a1, uint64_t a2)
{
	qprof__ring_putn(site, kind, 2, a1, a2, 0);
	if (kind != QPROF_REC_MARK)
		qprof__ring_span(site, kind, a1, a2);
}

/* QPROF_LOG's records (ring_layout.h): the head and the text, published
 * together. 0 when the thread has no ring (its mmap failed, or it logs in
 * a TLS destructor after its ring went back): the message is dropped. */
static __attribute__((noinline, unused)) int qprof__ring_log(const void *site, const char *msg, int len)
{
	struct qprof_ring *r = qprof__ring_get();
	struct qprof_ring_rec *rec;
	unsigned int stored, lenf, i, n;
	uint64_t h;

	if (!r)
		return 0;
	stored = len < 0 ? 0u : (unsigned int)len;
	if (stored > (unsigned int)(QPROF_LOG_MAX - 1))
		stored = (unsigned int)(QPROF_LOG_MAX - 1);
	if (stored > QPROF_RING_LOG_STORED)
		stored = QPROF_RING_LOG_STORED;
	lenf = len < 0 ? 0u : len > QPROF_RING_LOG_LEN_MAX ? QPROF_RING_LOG_LEN_MAX : (unsigned int)len;
	n = (stored + QPROF_RING_LOG_CHUNK - 1) / QPROF_RING_LOG_CHUNK;
	if (n + 1 > r->nrec / 4) /* a ring too small for the text: the head alone */
		stored = n = 0;
	h = r->head;
	rec = qprof__ring_slot(r, h);
	rec->ts = qprof__ring_now();
	rec->word = (uint64_t)(uintptr_t)site | QPROF_REC_ARG | (uint64_t)stored << 47 | (uint64_t)lenf << 55;
	for (i = 0; i < n; i++) {
		unsigned int off = i * QPROF_RING_LOG_CHUNK;
		unsigned int k = stored - off < QPROF_RING_LOG_CHUNK ? stored - off : QPROF_RING_LOG_CHUNK;
		unsigned char b[16] = { 0 };
		uint64_t lo, hi;

		memcpy(b, msg + off, k);
		memcpy(&lo, b, 8);
		memcpy(&hi, b + 8, 8);
		rec = qprof__ring_slot(r, h + 1 + i);
		rec->ts = lo;
		rec->word = hi << 8 | QPROF_REC_LOG_TEXT;
	}
	__atomic_store_n(&r->head, h + 1 + n, __ATOMIC_RELEASE);
	if (h / QPROF_RING_ANNOUNCE != (h + 1 + n) / QPROF_RING_ANNOUNCE)
		qprof__ring_announce(r);
	return 1;
}

/* The test every marker makes: on x86 one compare with memory and one
 * branch (asm goto; the compiler's own test is a load, a test and a branch). */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(QPROF_NO_ASM_GOTO)
static inline __attribute__((always_inline)) int qprof__ring_on(void)
{
	__asm__ goto("cmpw $0, %0\n\tjne %l[on]" : : "m"(qprof_ring_semaphore) : "cc" : on);
	return 0;
on:
	return 1;
}
/* QPROF_VALUE listens to both semaphores: 4 instructions. */
static inline __attribute__((always_inline)) int qprof__value_on(void)
{
	__asm__ goto("cmpw $0, %0\n\tjne %l[on]\n\tcmpw $0, %1\n\tjne %l[on]"
		     : : "m"(qprof_ring_semaphore), "m"(qprof_value_semaphore) : "cc" : on);
	return 0;
on:
	return 1;
}
#define QPROF__RING_ON() __builtin_expect(qprof__ring_on(), 0)
#define QPROF__VALUE_ON() __builtin_expect(qprof__value_on(), 0)
#else
#define QPROF__RING_ON() __builtin_expect(qprof_ring_semaphore != 0, 0)
#define QPROF__VALUE_ON() \
	__builtin_expect(qprof_ring_semaphore != 0 || qprof_value_semaphore != 0, 0)
#endif

#endif /* QPROF_RING_H */

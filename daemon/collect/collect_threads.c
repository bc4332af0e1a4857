/* collect_threads.c - every thread of a process and its stacks, without
 * stopping it: a task iterator link per request (bpf/threads.bpf.c,
 * filtered by the link to the process) reads each thread's saved user
 * registers, the top of its user stack and its kernel stack; the copy is
 * unwound here by the CFI (unwind.c, as CPU samples are), else by frame
 * pointers and a scan for return addresses. No ptrace, no signal. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <time.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect_threads.h"
#include "common/procfs.h"
#include "bpf/threads.h"
#include "threads.skel.h"
#include "unwind.h"

struct qp_threads {
	struct threads *skel;
	/* one request at a time: the iterator's per-CPU scratch is shared and
	 * a sleepable program can be preempted by another run of itself. Only
	 * thread requests take it; each holds it ~ms, at most SAMPLE_WAIT_MS
	 * more. */
	pthread_mutex_t lock;
	struct qp_unwind *uw;	/* its own, under lock; NULL: no CFI unwinding */
};

#define SAMPLE_PERIOD_NS 100000	/* a running thread is sampled after 0.1 ms of its CPU time */
#define SAMPLE_WAIT_MS 50	/* then it is left with its iterator record */

int qp_threads_open(struct qp_threads **out, char *err, size_t errlen)
{
	/* a Dwfl is made at each request (one at a time): the CPU sampler's
	 * limit against a storm of new processes would leave quick requests
	 * with the scans */
	struct qp_unwind_opts uo = { .makes_per_s = 1000 };
	struct qp_threads *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->skel = threads__open();
	if (!t->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the thread iterator: %s", strerror(errno));
		free(t);
		return ret;
	}
	ret = threads__load(t->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the thread iterator: %s", strerror(-ret));
		threads__destroy(t->skel);
		free(t);
		return ret;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->uw = qp_unwind_new(&uo);	/* out of memory: the scans only */
	*out = t;
	return 0;
}

void qp_threads_close(struct qp_threads *t)
{
	if (!t)
		return;
	threads__destroy(t->skel);
	qp_unwind_free(t->uw);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

size_t qp_unwind_fp(uint64_t ip, uint64_t sp, uint64_t bp, const uint8_t *stack, size_t len, uint64_t *out,
		    size_t max)
{
	size_t n = 0;

	if (!max)
		return 0;
	out[n++] = ip;
	while (n < max && bp >= sp && bp - sp <= len && len - (bp - sp) >= 16 && !(bp & 7)) {
		uint64_t next, ret;

		memcpy(&next, stack + (bp - sp), 8);
		memcpy(&ret, stack + (bp - sp) + 8, 8);
		if (!ret)
			break;
		out[n++] = ret;
		if (next <= bp)
			break;	/* frames go up the stack, or it is no frame chain */
		bp = next;
	}
	return n;
}

/* The length of an indirect call `ff /2` whose ModRM byte is M (after the
 * opcode; a REX prefix adds one), 0 when M is no `/2`. */
static unsigned int ff2_len(uint8_t m)
{
	unsigned int mod = m >> 6, rm = m & 7, len = 2;

	if (((m >> 3) & 7) != 2)
		return 0;
	if (mod == 3)
		return 2;
	if (rm == 4) {	/* a SIB byte */
		len++;
		if (mod == 0)
			return len;	/* a SIB base of 5 with mod 0 adds disp32: not told apart here */
	}
	if (mod == 0)
		return rm == 5 ? 6 : len;
	return len + (mod == 1 ? 1 : 4);
}

/* Is RET a return address: do the bytes before it, CODE[0..7] (the 8 bytes
 * ending at RET), end with a call instruction? */
bool qp_is_after_call(const uint8_t code[8])
{
	unsigned int k;

	if (code[3] == 0xe8)	/* call rel32 */
		return true;
	for (k = 2; k <= 7; k++) {
		const uint8_t *op = code + 8 - k;
		unsigned int l;

		if (op[0] != 0xff)
			continue;
		l = ff2_len(op[1]);
		if (l == k)
			return true;
		if (l + 1 == k && k < 8 && (code[8 - k - 1] & 0xf0) == 0x40)	/* REX ff /2 */
			return true;
	}
	return false;
}

/* The words of the copy that are return addresses into executable
 * mappings of PID (a call right before them), from FROM to TO (offsets
 * into the copy), appended to OUT[*N..MAX). */
static void scan(int pid, const struct qp_maps *maps, const uint8_t *stack, size_t from, size_t to, uint64_t *out,
		 size_t *n, size_t max)
{
	size_t off;

	for (off = from & ~(size_t)7; off + 8 <= to && *n < max; off += 8) {
		const struct qp_map *m;
		uint64_t w;
		uint8_t code[8];
		struct iovec l = { code, 8 }, r;

		memcpy(&w, stack + off, 8);
		m = qp_maps_find(maps, w);
		if (!m || !strchr(m->perms, 'x') || w - 8 < m->start)
			continue;
		r.iov_base = (void *)(uintptr_t)(w - 8);
		r.iov_len = 8;
		if (process_vm_readv(pid, &l, 1, &r, 1, 0) != 8 || !qp_is_after_call(code))
			continue;
		out[(*n)++] = w;
	}
}

/* The copy unwound by the CFI (unwind.c): the record holds ip, sp and bp
 * only, the other registers are unknown to it. Kept when it has at least
 * as many frames as the frame-pointer and scan walk (S already holds that
 * one), or reached the outermost frame with more than the pc: a frame
 * whose CFA needs an unknown register ends the walk as if outermost, and
 * the other walk then keeps its frames. */
static void take_dwarf(struct qp_unwind *uw, struct qp_thread_stack *s, const struct qp_thread_rec *r, int pid,
		       size_t len)
{
	uint64_t regs[QP_UNWIND_REGS] = { 0 }, ips[QP_THREAD_MAX_FRAMES];
	struct qp_unwind_in in = {
		.pid = (uint32_t)pid, .tid = r->tid, .regs = regs, .stack = r->ustack, .len = len,
		.known = 1u << 6 | 1u << 7 | 1u << 16,
	};
	size_t n = 0;
	int ret;

	regs[6] = r->bp;
	regs[7] = r->sp;
	regs[16] = r->ip;
	ret = qp_unwind_stack(uw, &in, ips, QP_THREAD_MAX_FRAMES, &n);
	if (ret < 0 || !n || (n < s->nuser && (ret == 0 || n < 2)))
		return;
	memcpy(s->user, ips, n * sizeof(ips[0]));
	s->nuser = n;
	s->unwind = QP_UNWIND_DWARF;
}

static void take(struct qp_threads *t, struct qp_thread_stack *s, const struct qp_thread_rec *r, int pid,
		 const struct qp_maps *maps)
{
	size_t i, nk, len, n;
	uint64_t chain[QP_THREAD_MAX_FRAMES];

	memset(s, 0, sizeof(*s));
	s->tid = (int)r->tid;
	s->state = r->state;
	s->kthread = r->flags & QP_THREAD_F_KTHREAD;
	s->on_cpu = r->flags & QP_THREAD_F_ON_CPU;
	s->sampled = r->flags & QP_THREAD_F_SAMPLED;
	nk = r->kstack_bytes > 0 ? (size_t)r->kstack_bytes / 8 : 0;
	for (i = 0; i < nk && i < QP_THREAD_KFRAMES && r->kstack[i]; i++)
		s->kernel[s->nkernel++] = r->kstack[i];
	if (!(r->flags & QP_THREAD_F_USER) || !r->ip)
		return;
	s->user_ok = true;
	len = r->ustack_len > QP_THREAD_USTACK ? QP_THREAD_USTACK : r->ustack_len;
	s->user[0] = r->ip;
	n = 1;
	if (r->bp >= r->sp && r->bp - r->sp <= len && len - (r->bp - r->sp) >= 16 && !(r->bp & 7)) {
		/* frames of functions without a frame pointer (glibc's) lie
		 * between sp and the first frame: their return addresses */
		scan(pid, maps, r->ustack, 0, (size_t)(r->bp - r->sp), s->user, &n, QP_THREAD_MAX_FRAMES);
		s->unwind = n > 1 ? QP_UNWIND_FP_SCAN : QP_UNWIND_FP;
		nk = qp_unwind_fp(r->ip, r->sp, r->bp, r->ustack, len, chain, QP_THREAD_MAX_FRAMES);
		for (i = 1; i < nk && n < QP_THREAD_MAX_FRAMES; i++)
			s->user[n++] = chain[i];
	} else {
		/* no frame chain from here (bp is used as a general register):
		 * every return address on the copied stack, in order */
		scan(pid, maps, r->ustack, 0, len, s->user, &n, QP_THREAD_SCAN_FRAMES);
		s->unwind = QP_UNWIND_SCAN;
	}
	s->nuser = n;
	if (t->uw)
		take_dwarf(t->uw, s, r, pid, len);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The threads of V[] that were running when iterated: a task-clock perf
 * event on each, whose first tick (SAMPLE_PERIOD_NS of its own CPU time)
 * takes registers and stack together (thread_sample); what came within
 * SAMPLE_WAIT_MS replaces the iterator's record. Never stops anything. */
static void sample_running(struct qp_threads *t, int pid, struct qp_thread_stack *v, size_t nv,
			   const struct qp_maps *maps, struct qp_thread_rec *rec)
{
	int mfd = bpf_map__fd(t->skel->maps.sampled);
	struct bpf_link **links;
	size_t i, want = 0, got = 0;
	uint64_t until;

	links = calloc(nv, sizeof(*links));
	if (!links)
		return;
	for (i = 0; i < nv && want < QP_THREAD_SAMPLED_MAX; i++) {
		struct perf_event_attr a;
		__u32 tid = (__u32)v[i].tid;
		int fd;

		if (!v[i].on_cpu)
			continue;
		bpf_map_delete_elem(mfd, &tid);
		memset(&a, 0, sizeof(a));
		a.type = PERF_TYPE_SOFTWARE;
		a.size = sizeof(a);
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		a.sample_period = SAMPLE_PERIOD_NS;
		a.disabled = 1;
		fd = (int)syscall(__NR_perf_event_open, &a, v[i].tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			continue;
		links[i] = bpf_program__attach_perf_event(t->skel->progs.thread_sample, fd);
		if (!links[i]) {
			close(fd);
			continue;
		}
		want++;
	}
	until = mono_ms() + SAMPLE_WAIT_MS;
	while (want && got < want && mono_ms() < until) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
		for (got = 0, i = 0; i < nv; i++) {
			__u32 tid = (__u32)v[i].tid;

			if (links[i] && !bpf_map_lookup_elem(mfd, &tid, rec))
				got++;
		}
	}
	for (i = 0; i < nv; i++) {
		__u32 tid = (__u32)v[i].tid;

		if (!links[i])
			continue;
		bpf_link__destroy(links[i]);	/* closes the perf event too */
		if (!bpf_map_lookup_elem(mfd, &tid, rec) && rec->magic == QP_THREAD_MAGIC && rec->tid == tid)
			take(t, &v[i], rec, pid, maps);
		bpf_map_delete_elem(mfd, &tid);
	}
	free(links);
}

static int stacks_locked(struct qp_threads *t, int pid, struct qp_thread_stack **out, size_t *n,
			 bool *truncated, char *err, size_t errlen)
{
	union bpf_iter_link_info linfo;
	struct bpf_link *link;
	struct qp_thread_rec *rec;
	struct qp_thread_stack *v = NULL;
	struct qp_maps maps = { 0 };
	size_t nv = 0, cap = 0, have = 0;
	int fd, ret = 0;

	*out = NULL;
	*n = 0;
	*truncated = false;
	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH)) {
		snprintf(err, errlen, "no process %d", pid);
		return -ESRCH;
	}
	memset(&linfo, 0, sizeof(linfo));
	linfo.task.pid = (__u32)pid;
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &linfo, .link_info_len = sizeof(linfo));
	link = bpf_program__attach_iter(t->skel->progs.thread_dump, &opts);
	if (!link) {
		ret = -errno;
		snprintf(err, errlen, "cannot start the thread iterator: %s", strerror(errno));
		return ret;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot start the thread iterator: %s", strerror(errno));
		bpf_link__destroy(link);
		return ret;
	}
	rec = malloc(sizeof(*rec));
	if (qp_maps_read(pid, &maps)) {
		ret = -ESRCH;
		snprintf(err, errlen, "no process %d", pid);
		goto out;
	}
	if (!rec) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t got = read(fd, (char *)rec + have, sizeof(*rec) - have);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			ret = -errno;
			snprintf(err, errlen, "reading the thread iterator: %s", strerror(errno));
			break;
		}
		if (!got)
			break;
		have += (size_t)got;
		if (have < sizeof(*rec))
			continue;
		have = 0;
		if (rec->magic != QP_THREAD_MAGIC) {
			ret = -EPROTO;
			snprintf(err, errlen, "the thread iterator's records are out of step");
			break;
		}
		if (nv == QP_THREADS_MAX) {
			*truncated = true;
			break;
		}
		if (nv == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct qp_thread_stack *nvv = realloc(v, nc * sizeof(*v));

			if (!nvv) {
				ret = -ENOMEM;
				break;
			}
			v = nvv;
			cap = nc;
		}
		take(t, &v[nv++], rec, pid, &maps);
	}
	if (!ret && nv)
		sample_running(t, pid, v, nv, &maps, rec);
	/* the Dwfl lives for one request: nothing of this process is kept
	 * open, and a later process with its pid starts afresh */
	if (t->uw)
		qp_unwind_forget(t->uw, (uint32_t)pid);
out:
	qp_maps_free(&maps);
	free(rec);
	close(fd);
	bpf_link__destroy(link);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (ret) {
		free(v);
		return ret;
	}
	if (!nv) {	/* exited meanwhile */
		free(v);
		snprintf(err, errlen, "no process %d", pid);
		return -ESRCH;
	}
	*out = v;
	*n = nv;
	return 0;
}

int qp_threads_stacks(struct qp_threads *t, int pid, struct qp_thread_stack **out, size_t *n,
		      bool *truncated, char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = stacks_locked(t, pid, out, n, truncated, err, errlen);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

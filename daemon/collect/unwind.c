/* unwind.c - see unwind.h. libdwfl does the CFI work: each process gets a
 * Dwfl of its mappings and a "process state" whose callbacks serve the one
 * sample being unwound (its registers, and reads from its stack copy only),
 * so nothing here ptraces or reads the live process's memory. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "elf_snap.h"
#include "unwind.h"
#include "unwind_fast.h"
#include "common/util.h"

#define REFRESH_NS 1000000000ull	/* a process's Dwfl is made again at most once a second */
/* Dwfls made per second, all processes: under --all a busy machine starts
 * processes faster than their files can be read; the others keep their
 * frame-pointer stacks meanwhile (counted deferred) */
#define MAKES_PER_S 16
/* A process sampled this often (a busy one) may take the whole budget of a
 * second; one seen less (under --all, mostly short-lived ones: a build's
 * compilers) only half of it, so a stream of new processes cannot starve a
 * long-running one. A deferred process tries again at its next sample, not
 * a second later: the first samples after the window opens get it. */
#define HOT_HITS 8
#define REG_SP 7
#define REG_IP 16

/* the sample being unwound: the process state's callbacks read it */
struct cur {
	const struct qp_unwind_in *in;
	bool given;
};

struct qp_unwind;

struct proc {
	struct qp_unwind *u;
	uint32_t pid;
	Dwfl *dwfl;		/* NULL: could not be made at made_ns */
	struct qp_ufast *fast;	/* its rules (unwind_fast.c), made on first use, dropped with it */
	uint64_t made_ns;
	uint64_t used;		/* u->tick of its latest use */
	uint32_t hits;		/* samples unwound or tried (saturates) */
	bool deferred;		/* its last make was over the budget */
};

struct qp_unwind {
	char proc_root[256];
	bool fixture;		/* proc_root is not /proc: maps read from the file, no vDSO */
	struct proc *procs;
	unsigned int nprocs, max_procs;
	unsigned int makes_per_s;	/* qp_unwind_opts.makes_per_s, or MAKES_PER_S */
	bool dwfl_only;		/* qp_unwind_opts.dwfl_only */
	uint64_t tick;
	uint64_t window_ns;	/* MAKES_PER_S: the current second, and makes in it */
	unsigned int made_in_window;
	struct cur cur;
	struct qp_unwind_stats st;
};

/* ---- the process state's callbacks ------------------------------------ */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct cur *c = arg;

	(void)dwfl;
	if (c->given)
		return 0;
	c->given = true;
	*thread_argp = c;
	return (pid_t)c->in->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct cur *c = arg;

	(void)dwfl;
	*thread_argp = c;
	return (uint32_t)tid == c->in->tid;
}

/* Only the copy: an address outside it (or a word crossing its end) fails
 * the read, which ends the walk there. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct cur *c = arg;
	uint64_t w;

	(void)dwfl;
	if (!qp_unwind_copy_read(c->in, addr, &w))
		return false;
	*result = w;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct qp_unwind_in *in = ((struct cur *)thread_arg)->in;
	int i;

	if (!in->known) {
		if (!dwfl_thread_state_registers(thread, 0, QP_UNWIND_REGS, (const Dwarf_Word *)in->regs))
			return false;
	} else {
		for (i = 0; i < QP_UNWIND_REGS; i++)
			if ((in->known >> i & 1) &&
			    !dwfl_thread_state_registers(thread, i, 1, (const Dwarf_Word *)&in->regs[i]))
				return false;
	}
	dwfl_thread_state_register_pc(thread, in->regs[REG_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- finding the files ------------------------------------------------ */

/* A mapped file by the process's own root (its mount namespace), else by
 * the path as we see it. Only regular files: a FIFO or a device a hostile
 * process maps would block or misbehave on open or read. *USERDATA is the
 * process's entry (set by tag_module). libdwfl maps what it is handed and
 * ends it (elf_end, close) in dwfl_end: it gets a sealed copy of the parts
 * that unwinding reads (elf_snap.h), never the file, so that a library
 * truncated under it cannot raise SIGBUS in qprofd. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	const struct proc *p = *userdata;
	char path[4096];
	struct stat sb;
	int fd = -1, copy, k;

	/* [vdso: PID]: libdwfl reads it from the live process's memory into
	 * its own; a file of a module not tagged (none is: tag_module runs
	 * before any lookup) is not handed to libdwfl's opener, which maps it */
	if (name[0] != '/') {
		if (!p || p->u->fixture)
			return -1;
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	}
	if (!p)
		return -1;
	for (k = 0; k < 2 && fd < 0; k++) {
		int w = k ? snprintf(path, sizeof(path), "%s", name)
			  : snprintf(path, sizeof(path), "%s/%u/root%s", p->u->proc_root, p->pid, name);

		/* a device is never opened (an open alone can act on one) */
		if (w < 0 || (size_t)w >= sizeof(path) || stat(path, &sb) || !S_ISREG(sb.st_mode))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0 && (fstat(fd, &sb) || !S_ISREG(sb.st_mode))) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return -1;
	copy = qp_elf_snapshot(fd, NULL);
	close(fd);
	/* no name left behind on failure: libdwfl would open it itself */
	if (copy < 0 || !(*file_name = strdup(path))) {
		if (copy >= 0)
			close(copy);
		else
			p->u->st.files_refused++;
		return -1;
	}
	*elfp = NULL;
	return copy;
}

/* No separate debug files: .eh_frame (or the file's own .debug_frame) is
 * what unwinding needs, and libdwfl's search would open paths a hostile
 * file names (a FIFO blocks on open). The symbolizer finds debug files. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	*debuginfo_file_name = NULL;
	return -1;
}

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = find_elf,
	.find_debuginfo = no_debuginfo,
};

static int tag_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
	(void)mod;
	(void)name;
	(void)start;
	*userdata = arg;
	return DWARF_CB_OK;
}

/* ---- processes ---------------------------------------------------------- */

/* P's Dwfl and the rules cached for it, gone. */
static void proc_drop(struct proc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	p->dwfl = NULL;
	qp_ufast_free(p->fast);
	p->fast = NULL;
}

/* P's Dwfl, made from its mappings now; false when none could be made. */
static bool proc_make(struct qp_unwind *u, struct proc *p)
{
	char path[300];
	uint64_t now = qp_now_ns();
	unsigned int cap = p->hits >= HOT_HITS ? u->makes_per_s : u->makes_per_s / 2;
	FILE *f;
	int ret;

	if (now - u->window_ns >= REFRESH_NS) {
		u->window_ns = now;
		u->made_in_window = 0;
	}
	if (u->made_in_window >= cap) {
		/* keep what it has (a refresh waits) and try at the next sample */
		u->st.deferred++;
		p->deferred = true;
		return false;
	}
	u->made_in_window++;
	p->deferred = false;
	proc_drop(p);
	p->made_ns = now;
	p->dwfl = dwfl_begin(&dwfl_cbs);
	if (!p->dwfl)
		goto fail;
	dwfl_report_begin(p->dwfl);
	if (u->fixture) {
		snprintf(path, sizeof(path), "%s/%u/maps", u->proc_root, p->pid);
		f = fopen(path, "re");
		if (!f)
			goto fail;
		ret = dwfl_linux_proc_maps_report(p->dwfl, f);
		fclose(f);
	} else {
		ret = dwfl_linux_proc_report(p->dwfl, (pid_t)p->pid);
	}
	if (dwfl_report_end(p->dwfl, NULL, NULL) || ret)
		goto fail;
	dwfl_getmodules(p->dwfl, tag_module, p, 0);
	if (!dwfl_attach_state(p->dwfl, NULL, (pid_t)p->pid, &thread_cbs, &u->cur))
		goto fail;
	return true;
fail:
	proc_drop(p);
	u->st.errors++;
	return false;
}

/* PID's entry, made (or taking the least recently used one's place) when new. */
static struct proc *proc_get(struct qp_unwind *u, uint32_t pid)
{
	struct proc *p, *lru = NULL;
	unsigned int i;

	for (i = 0; i < u->nprocs; i++) {
		p = &u->procs[i];
		if (p->pid == pid) {
			p->used = ++u->tick;
			return p;
		}
		if (!lru || p->used < lru->used)
			lru = p;
	}
	if (u->nprocs < u->max_procs) {
		p = &u->procs[u->nprocs++];
	} else {
		p = lru;
		proc_drop(p);
	}
	memset(p, 0, sizeof(*p));
	p->u = u;
	p->pid = pid;
	p->used = ++u->tick;
	proc_make(u, p);
	return p;
}

void qp_unwind_forget(struct qp_unwind *u, uint32_t pid)
{
	unsigned int i;

	for (i = 0; u && i < u->nprocs; i++) {
		if (u->procs[i].pid != pid)
			continue;
		proc_drop(&u->procs[i]);
		u->procs[i] = u->procs[--u->nprocs];
		/* the moved entry's modules point at its old place */
		if (i < u->nprocs && u->procs[i].dwfl)
			dwfl_getmodules(u->procs[i].dwfl, tag_module, &u->procs[i], 0);
		return;
	}
}

struct qp_unwind *qp_unwind_new(const struct qp_unwind_opts *opts)
{
	struct qp_unwind *u = calloc(1, sizeof(*u));
	const char *root = opts && opts->proc_root ? opts->proc_root : "/proc";

	if (!u)
		return NULL;
	snprintf(u->proc_root, sizeof(u->proc_root), "%s", root);
	u->fixture = strcmp(root, "/proc") != 0;
	u->max_procs = opts && opts->max_procs ? opts->max_procs : 32;
	u->makes_per_s = opts && opts->makes_per_s ? opts->makes_per_s : MAKES_PER_S;
	u->dwfl_only = opts && opts->dwfl_only;
	u->procs = calloc(u->max_procs, sizeof(*u->procs));
	if (!u->procs) {
		free(u);
		return NULL;
	}
	return u;
}

void qp_unwind_free(struct qp_unwind *u)
{
	unsigned int i;

	if (!u)
		return;
	for (i = 0; i < u->nprocs; i++)
		proc_drop(&u->procs[i]);
	free(u->procs);
	free(u);
}

void qp_unwind_stats(const struct qp_unwind *u, struct qp_unwind_stats *out)
{
	*out = u->st;
}

/* ---- the walk ------------------------------------------------------------ */

enum stop { STOP_NONE, STOP_DEPTH, STOP_LOOP, STOP_BAD };

struct walk {
	uint64_t *ips;
	size_t max, n;
	uint64_t last_sp;
	enum stop stop;
};

static int on_frame(Dwfl_Frame *f, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool act;

	if (!dwfl_frame_pc(f, &pc, &act) || !pc) {
		w->stop = STOP_BAD;
		return DWARF_CB_ABORT;
	}
	/* a caller's frame lies above its callee's: a CFA that does not rise
	 * is a loop (hostile or corrupt CFI or stack) */
	if (dwfl_frame_reg(f, REG_SP, &sp) == 0) {
		if (w->n && sp <= w->last_sp) {
			w->stop = STOP_LOOP;
			return DWARF_CB_ABORT;
		}
		w->last_sp = sp;
	}
	if (w->n == w->max) {
		w->stop = STOP_DEPTH;
		return DWARF_CB_ABORT;
	}
	w->ips[w->n++] = pc;
	return DWARF_CB_OK;
}

/* Whether PID's code at RA - 5 is a call (e8 rel32) to TRAMP, the page of
 * the kernel's uprobe trampoline: the site as the kernel rewrote it. (The
 * file's nop5 cannot be read there: libdwfl is handed a copy of the file's
 * CFI parts only, without its code, elf_snap.h.) */
static bool calls_trampoline(uint32_t pid, uint64_t ra, uint64_t tramp)
{
	uint8_t code[5];
	struct iovec l = { code, sizeof(code) }, r = { (void *)(uintptr_t)(ra - 5), sizeof(code) };
	int32_t rel;

	if (process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(code) || code[0] != 0xe8)
		return false;
	memcpy(&rel, code + 1, sizeof(rel));
	return ra + (uint64_t)(int64_t)rel == tramp;
}

/* A pc in no module may be in the kernel's [uprobes-trampoline] page: the
 * probed site's call pushed the return address, then the trampoline up to
 * three registers. The return address is the highest of the four words at
 * sp that points into a module right after a call to this page; *WORDS: the words up to and with it. */
static bool trampoline_caller(struct proc *p, const struct qp_unwind_in *in, uint64_t *ra, size_t *words)
{
	size_t k;

	for (k = 4; k > 0; k--) {
		if (qp_unwind_copy_read(in, in->regs[REG_SP] + (k - 1) * 8, ra) && *ra > 5 &&
		    dwfl_addrmodule(p->dwfl, *ra - 5) &&
		    calls_trampoline(p->pid, *ra, in->regs[REG_IP] & ~4095ull)) {
			*words = k;
			return true;
		}
	}
	return false;
}

static int unwind_in(struct qp_unwind *u, struct proc *p, const struct qp_unwind_in *in, uint64_t *ips,
		     size_t max, size_t *n);

/* The trampoline's frame (IN's pc), then the probed function's and its
 * callers, unwound from the call (RA - 1, sp above RA: the copy past it). */
static int unwind_trampoline(struct qp_unwind *u, struct proc *p, const struct qp_unwind_in *in, uint64_t ra,
			     size_t words, uint64_t *ips, size_t max, size_t *n)
{
	uint64_t regs[QP_UNWIND_REGS];
	struct qp_unwind_in in2 = *in;
	int ret;

	memcpy(regs, in->regs, sizeof(regs));
	regs[REG_IP] = ra - 1;
	regs[REG_SP] += words * 8;
	in2.regs = regs;
	in2.stack += words * 8;
	in2.len -= words * 8;
	ips[0] = in->regs[REG_IP];
	ret = unwind_in(u, p, &in2, ips + 1, max - 1, n);
	if (*n)
		ips[1] = ra;
	(*n)++;
	return ret;
}

int qp_unwind_stack(struct qp_unwind *u, const struct qp_unwind_in *in, uint64_t *ips, size_t max,
		    size_t *n)
{
	uint64_t ra;
	size_t words;
	struct proc *p;

	*n = 0;
	if (!max)
		return -EINVAL;
	p = proc_get(u, in->pid);
	if (p->hits < UINT32_MAX)
		p->hits++;
	if (!p->dwfl && (p->deferred || qp_now_ns() - p->made_ns >= REFRESH_NS))
		proc_make(u, p);
	if (p->dwfl && !dwfl_addrmodule(p->dwfl, in->regs[REG_IP])) {
		if (p->deferred || qp_now_ns() - p->made_ns >= REFRESH_NS) {
			if (proc_make(u, p))
				u->st.refreshes++;
		}
		if (p->dwfl && !dwfl_addrmodule(p->dwfl, in->regs[REG_IP])) {
			if (max > 1 && in->len > 32 && trampoline_caller(p, in, &ra, &words))
				return unwind_trampoline(u, p, in, ra, words, ips, max, n);
			u->st.no_module++;
			ips[0] = in->regs[REG_IP];
			*n = 1;
			return 0;
		}
	}
	if (!p->dwfl)
		return -ESRCH;
	return unwind_in(u, p, in, ips, max, n);
}

/* IN's stack (its pc in a module of P's Dwfl) by the fast rules, else libdwfl. */
static int unwind_in(struct qp_unwind *u, struct proc *p, const struct qp_unwind_in *in, uint64_t *ips,
		     size_t max, size_t *n)
{
	struct walk w = { .ips = ips, .max = max };
	int ret;

	*n = 0;
	if (!u->dwfl_only) {
		enum qp_ufast_end end = qp_ufast_walk(&p->fast, p->dwfl, in, ips, max, n, &u->st.fast_resets);

		if (end != QP_UFAST_SLOW) {
			u->st.fast++;
			if (end == QP_UFAST_COMPLETE) {
				u->st.unwound++;
				return 1;
			}
			if (end == QP_UFAST_DEPTH)
				u->st.truncated++;
			else if (end == QP_UFAST_LOOP)
				u->st.loops++;
			else
				u->st.partial++;
			return 0;
		}
		*n = 0;
	}
	u->st.slow++;
	u->cur.in = in;
	u->cur.given = false;
	ret = dwfl_getthread_frames(p->dwfl, (pid_t)in->tid, on_frame, &w);
	u->cur.in = NULL;
	*n = w.n;
	if (ret == 0 && w.stop == STOP_NONE) {
		u->st.unwound++;
		return 1;
	}
	if (w.stop == STOP_DEPTH)
		u->st.truncated++;
	else if (w.stop == STOP_LOOP)
		u->st.loops++;
	else
		u->st.partial++;
	return 0;
}

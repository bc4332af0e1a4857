// SPDX-License-Identifier: GPL-2.0
/* lifecycle.bpf.c - fork and exec of the processes qprofd watches.
 *
 * Fork: kernel 6.x turns a uprobe on a nop5 into a call to a per-mm
 * trampoline after its first hit. fork copies the patched text into the
 * child but not the trampoline mapping, so the child would die at the first
 * optimized site it runs. sched_process_fork runs before the child is first
 * woken: when the parent has uprobe trampolines, the child gets SIGSTOP here,
 * so it stops before its first user instruction, and the daemon repairs its
 * sites and sends SIGCONT. Children of watched processes are watched too.
 *
 * Exec: the daemon learns at once that a watched process (or one starting a
 * --binary file) replaced its image. A target is stopped there too, before
 * the new image runs, until the daemon has closed the old image's figures
 * and attached to the new one.
 *
 * Libraries: a uprobe on the dynamic linker's _dl_debug_state (called by
 * glibc after every load and unload, as debuggers know) reports a target
 * whose r_debug reads RT_CONSISTENT and holds it (SIGSTOP) until the daemon
 * has probed what it mapped; lc_held bounds the hold (see lifecycle.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "lifecycle.h"

char LICENSE[] SEC("license") = "GPL";

#define SIGSTOP 19

extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				u64 value) __ksym;
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;

/* Number of --binary files in lc_files (set by the daemon). */
__u32 nfiles = 0;
/* 1: a load is held at the rendezvous (set by the daemon; --dl-hold-ms 0: not) */
__u32 dl_hold = 0;
/* Set by the daemon: CLOCK_MONOTONIC ns of its poll loop's last turn (the
 * loop ends holds); 1 when it has CAP_KILL; its uid and euid. A hold is
 * taken only when the daemon can end it: see hold_refused. */
__u64 dl_alive_ns = 0;
__u32 dl_kill_any = 0;
__u32 dl_uid = 0, dl_euid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} lc_watch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct lc_file);
	__type(value, __u32);
} lc_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} lc_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QPROF_LCNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} lc_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} lc_held SEC(".maps");

/* The last r_state other than RT_CONSISTENT seen per tgid: RT_DELETE
 * before RT_CONSISTENT is an unload, reported without a hold. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} lc_dlstate SEC(".maps");

static __always_inline void lcount(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&lc_counters, &which);

	if (c)
		(*c)++;
}

/* The record is reserved before any SIGSTOP: a process is stopped only when
 * the daemon is sure to hear of it (a stop nobody answers would hang it). */
static __always_inline struct lc_event *reserve(__u32 kind)
{
	struct lc_event *e = bpf_ringbuf_reserve(&lc_events, sizeof(*e), 0);

	if (!e) {
		lcount(QPROF_LCNT_LOST);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	return e;
}

/* Does TASK map a --binary file? For a process that maps a --binary
 * library, not adopted yet: the daemon's /proc rescan comes within a second. */
static __always_inline bool maps_binary_file(struct task_struct *task)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	bool found = false;

	bpf_iter_task_vma_new(&it, task, 0);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		struct lc_file f;
		struct inode *ino;

		if (!vma->vm_file)
			continue;
		ino = BPF_CORE_READ(vma, vm_file, f_inode);
		f.dev = BPF_CORE_READ(ino, i_sb, s_dev);
		f.ino = BPF_CORE_READ(ino, i_ino);
		if (bpf_map_lookup_elem(&lc_files, &f)) {
			found = true;
			break;
		}
	}
	bpf_iter_task_vma_destroy(&it);
	return found;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(lc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid, desc = QPROF_LC_DESCENDANT;
	struct lc_event *e;
	struct mm_struct *mm;
	__u32 *w, watched;

	if (ptgid == ctgid)
		return 0;	/* a new thread */
	w = bpf_map_lookup_elem(&lc_watch, &ptgid);
	mm = parent->mm;
	if (w) {
		watched = *w;
	} else {
		/* not watched: only a process that maps a --binary file and has
		 * trampolines, not yet adopted, matters */
		if (!nfiles || !mm || !BPF_CORE_READ(mm, uprobes_state.head_tramps.first) ||
		    !maps_binary_file(parent))
			return 0;
		watched = QPROF_LC_DESCENDANT;
	}
	if (!mm || child->mm == mm) {
		/* vfork, posix_spawn: the child runs on the parent's mm, trampolines included */
		lcount(QPROF_LCNT_SHARED_MM);
		return 0;
	}
	lcount(QPROF_LCNT_FORKS);
	if (bpf_map_update_elem(&lc_watch, &ctgid, &desc, BPF_NOEXIST) == -7 /* E2BIG */)
		lcount(QPROF_LCNT_WATCH_FULL);
	e = reserve(QPROF_LC_FORK);
	if (!e)
		return 0;
	e->watched = watched;
	e->pid = ptgid;
	e->child = ctgid;
	e->ts_ns = bpf_ktime_get_ns();
	if (BPF_CORE_READ(mm, uprobes_state.head_tramps.first)) {
		int ret = bpf_send_signal_task(child, SIGSTOP, PIDTYPE_TGID, 0);

		if (ret) {
			e->signal_err = ret;
			lcount(QPROF_LCNT_SIGNAL_FAILED);
		} else {
			e->stopped = 1;
			lcount(QPROF_LCNT_STOPPED);
		}
	}
	/* wakes the daemon at once: a child may be waiting */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(lc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid, *w, *b, watched = 0, binary = 0;
	struct lc_event *e;
	struct lc_file f;
	struct inode *ino;

	ino = BPF_CORE_READ(bprm, file, f_inode);
	f.dev = BPF_CORE_READ(ino, i_sb, s_dev);
	f.ino = BPF_CORE_READ(ino, i_ino);
	w = bpf_map_lookup_elem(&lc_watch, &tgid);
	if (w)
		watched = *w;
	b = bpf_map_lookup_elem(&lc_files, &f);
	if (b)
		binary = 1;
	if (!watched && !binary)
		return 0;
	if (watched == QPROF_LC_DESCENDANT && !binary) {
		bpf_map_delete_elem(&lc_watch, &tgid); /* a fresh mm: nothing of ours left in it */
		return 0;
	}
	if (binary && !watched) {
		__u32 t = QPROF_LC_TARGET;

		/* watched from its first instruction, before the daemon adopts it */
		bpf_map_update_elem(&lc_watch, &tgid, &t, BPF_ANY);
	}
	lcount(QPROF_LCNT_EXECS);
	e = reserve(QPROF_LC_EXEC);
	if (!e)
		return 0;
	e->pid = tgid;
	e->watched = watched;
	e->binary = binary;
	e->dev = f.dev;
	e->ino = f.ino;
	e->ts_ns = bpf_ktime_get_ns();
	/* a target stops before the new image's first instruction, so that the
	 * daemon closes the old image's figures before new ones come */
	if (watched == QPROF_LC_TARGET && !bpf_send_signal_task(p, SIGSTOP, PIDTYPE_TGID, 0))
		e->stopped = 1;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(lc_exit, struct task_struct *p, bool group_dead)
{
	__u32 tgid = p->tgid, *w;

	if (!group_dead)
		return 0;
	w = bpf_map_lookup_elem(&lc_watch, &tgid);
	if (w && *w == QPROF_LC_DESCENDANT)
		bpf_map_delete_elem(&lc_watch, &tgid);
	return 0;
}

/* 0 when the daemon can end a hold of the current process in time, else
 * the counter of the reason it cannot: its poll loop is silent (qprofd
 * stopped or stuck: every hold would last the whole bound), the process is
 * ptraced (the stop is reported to the tracer, and SIGCONT does not end a
 * tracing stop), or qprofd may not signal it (the kernel's kill permission:
 * CAP_KILL, else a uid in common; a hold it could not end would be ended by
 * nobody, as the release process has qprofd's credentials). */
static __always_inline __u32 hold_refused(__u64 now)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u32 uid, suid;

	if (now > dl_alive_ns && now - dl_alive_ns > QPROF_DL_ALIVE_NS)
		return QPROF_LCNT_DL_SKIP_STALE;
	if (BPF_CORE_READ(task, ptrace))
		return QPROF_LCNT_DL_SKIP_TRACED;
	if (dl_kill_any)
		return 0;
	uid = BPF_CORE_READ(task, real_cred, uid.val);
	suid = BPF_CORE_READ(task, real_cred, suid.val);
	if (uid == dl_euid || suid == dl_euid || uid == dl_uid || suid == dl_uid)
		return 0;
	return QPROF_LCNT_DL_SKIP_NOSIGNAL;
}

/* _dl_debug_state of a dynamic linker (one link per ld.so file, every
 * process). The cookie is the distance from _dl_debug_state to _r_debug in
 * that file (0: unknown, every call reported). */
SEC("uprobe")
int lc_dl(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, *w;
	__s64 delta = (__s64)bpf_get_attach_cookie(ctx);
	__u32 what = QPROF_DL_LOADED, *last;
	struct lc_event *e;
	__u32 refused;
	__u64 now;

	w = bpf_map_lookup_elem(&lc_watch, &tgid);
	if (!w || *w != QPROF_LC_TARGET)
		return 0;
	if (delta) {
		__u64 at = bpf_get_func_ip(ctx) + delta + QPROF_R_STATE_OFF;
		int state = -1;

		if (!bpf_probe_read_user(&state, sizeof(state), (void *)at) &&
		    state != QPROF_RT_CONSISTENT) {
			/* RT_ADD / RT_DELETE: the change is under way, nothing to see yet */
			bpf_map_update_elem(&lc_dlstate, &tgid, &state, BPF_ANY);
			return 0;
		}
		last = bpf_map_lookup_elem(&lc_dlstate, &tgid);
		if (last && *last == QPROF_RT_DELETE)
			what = QPROF_DL_UNLOADED;
	}
	e = reserve(QPROF_LC_DL);
	if (!e)
		return 0;
	lcount(QPROF_LCNT_DL);
	now = bpf_ktime_get_ns();
	e->pid = tgid;
	e->watched = *w;
	e->ts_ns = now;
	e->dl_what = what;
	/* the entry before the signal: the release process can always end it */
	if (what == QPROF_DL_UNLOADED || !dl_hold) {
		/* reported, not held */
	} else if ((refused = hold_refused(now))) {
		lcount(refused);	/* reported, probed when qprofd can, not held */
	} else if (!bpf_map_update_elem(&lc_held, &tgid, &now, BPF_NOEXIST)) {
		if (!bpf_send_signal(SIGSTOP)) {
			e->stopped = 1;
			lcount(QPROF_LCNT_DL_HELD);
		} else {
			bpf_map_delete_elem(&lc_held, &tgid);
			lcount(QPROF_LCNT_DL_UNHELD);
		}
	} else {
		lcount(QPROF_LCNT_DL_UNHELD);
	}
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

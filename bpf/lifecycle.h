/* lifecycle.h - the contract between bpf/lifecycle.bpf.c and qprofd's
 * lifecycle watcher (daemon/lifecycle.c): which processes are watched, the
 * --binary files whose new processes are watched from their exec on, and
 * the fork and exec records sent to the daemon. */
#ifndef QPROF_LIFECYCLE_H
#define QPROF_LIFECYCLE_H

/* lc_watch values: why a tgid is watched */
#define QPROF_LC_TARGET		1	/* a target of qprofd (set by the daemon) */
#define QPROF_LC_DESCENDANT	2	/* forked from a watched process (set by BPF) */

/* Key of lc_files: a file as the kernel names it. dev is the kernel's
 * encoding, (major << 20) | minor, not the one of stat(2). */
struct lc_file {
	__u64 dev;
	__u64 ino;
};

enum lc_kind {
	QPROF_LC_FORK = 1,	/* a watched process forked a child with its own mm */
	QPROF_LC_EXEC = 2,	/* a watched process, or one running a --binary file, exec'd */
	QPROF_LC_DL = 3,	/* a target's dynamic linker reached its rendezvous (RT_CONSISTENT):
				 * a library was loaded or unloaded; stopped = held (lc_held) */
};

/* The hold at the rendezvous: lc_held maps a held tgid to the CLOCK_MONOTONIC
 * ns of its SIGSTOP. Whoever deletes the entry first sends SIGCONT: the
 * daemon once the new library's probes are attached, or its release
 * process (a child of qprofd that outlives it) once the hold is older than
 * qprofd's bound (--dl-hold-ms). */
#define QPROF_RT_CONSISTENT	0
#define QPROF_RT_ADD		1
#define QPROF_RT_DELETE		2

/* A load is held until the new library is probed; an unload is not held
 * (its links are released in the background: the kernel waits for grace
 * periods, tens of ms, which no dlclose should wait for). */
enum lc_dl_what {
	QPROF_DL_LOADED = 0,	/* RT_CONSISTENT after RT_ADD (or unknown) */
	QPROF_DL_UNLOADED = 1,	/* RT_CONSISTENT after RT_DELETE */
};
/* struct r_debug: r_state (int) at this offset on LP64; RT_CONSISTENT is 0 */
#define QPROF_R_STATE_OFF	24
/* A load is not held when the daemon's poll loop, which ends holds, has
 * not turned for this long (it turns at least every 250 ms). */
#define QPROF_DL_ALIVE_NS	2000000000ull


struct lc_event {
	__u32 kind;		/* enum lc_kind */
	__u32 pid;		/* the parent (fork) or the process (exec), a tgid */
	__u32 child;		/* fork: the child's tgid */
	__u32 stopped;		/* 1 when SIGSTOP was sent: to the child (fork), the target (exec) */
	__s32 signal_err;	/* fork: bpf_send_signal_task's return when it failed */
	__u32 watched;		/* lc_watch value of pid before the event, 0 = none */
	__u32 binary;		/* exec: 1 when the new file is in lc_files */
	__u32 dl_what;		/* dl: enum lc_dl_what */
	__u64 ts_ns;		/* CLOCK_MONOTONIC */
	__u64 dev, ino;		/* exec: the new executable (kernel dev encoding) */
};

enum lc_counter {
	QPROF_LCNT_FORKS = 0,	/* forks of watched processes (own mm) */
	QPROF_LCNT_STOPPED,	/* children stopped because the parent had uprobe trampolines */
	QPROF_LCNT_SIGNAL_FAILED, /* SIGSTOP could not be sent */
	QPROF_LCNT_SHARED_MM,	/* vfork / CLONE_VM children of watched processes: left alone */
	QPROF_LCNT_EXECS,	/* execs reported */
	QPROF_LCNT_LOST,	/* no room for a record: then no SIGSTOP either (nobody would resume it) */
	QPROF_LCNT_WATCH_FULL,	/* descendants not watched: lc_watch full */
	QPROF_LCNT_DL,		/* rendezvous of targets reported (RT_CONSISTENT) */
	QPROF_LCNT_DL_HELD,	/* of which held (SIGSTOP) until the daemon attached */
	QPROF_LCNT_DL_UNHELD,	/* not held: already held, lc_held full or the signal failed */
	/* not held because qprofd could not end the hold in time, or at all: */
	QPROF_LCNT_DL_SKIP_STALE,	/* its poll loop silent for QPROF_DL_ALIVE_NS (stopped, stuck) */
	QPROF_LCNT_DL_SKIP_TRACED,	/* ptraced: the stop goes to the tracer, SIGCONT cannot end it */
	QPROF_LCNT_DL_SKIP_NOSIGNAL,	/* qprofd may not signal it (no CAP_KILL, another user) */
	QPROF_LCNT__MAX,
};
#endif

/* lifecycle_dl.c - libraries loaded and unloaded by targets: one uprobe
 * link per dynamic linker file (ld.so) on _dl_debug_state, the function
 * glibc calls after every change of its link map (bpf/lifecycle.bpf.c
 * lc_dl reports a target's RT_CONSISTENT and holds it with SIGSTOP), and the
 * release process: a child of qprofd that ends every hold older than the
 * bound (--dl-hold-ms, 100 ms by default) and, when qprofd is gone (crash,
 * SIGKILL: its pipe reads EOF), every hold at once. A target is never left
 * stopped by us. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lifecycle.skel.h"
#include "lifecycle_priv.h"
#include "common/log.h"
#include "common/procfs.h"
#include "targets_priv.h"
#include "common/util.h"
#include "bpf/lifecycle.h"

#define LC_MAX_LDSOS 64
#define RELEASE_TICK_MS 10

struct lc_ldso {
	dev_t dev;
	ino_t ino;
	struct bpf_link *link;	/* a perf-event uprobe (no uprobe-multi), or NULL */
	int fd;			/* a uprobe-multi link, or -1 */
};

/* link_create for BPF_TRACE_UPROBE_MULTI (48), as the kernel lays it out:
 * libbpf 1.1 predates it (collect_attach.c does the same). A uprobe-multi
 * link needs no perf event: CAP_BPF and CAP_PERFMON do, as for the scopes. */
struct lc_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, multi_flags, pid;
	uint32_t pad[9];
};

static int attach_multi(int prog_fd, const char *path, uint64_t off, uint64_t cookie)
{
	struct lc_multi_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)prog_fd;
	a.attach_type = QP_LC_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)&off;
	a.cookies = (uint64_t)(uintptr_t)&cookie;
	a.cnt = 1;
	return (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
}

/* _dl_debug_state's file offset and the distance to _r_debug (0 when the
 * file has none) from FD's dynamic symbols. 0, or -ENOENT (no such
 * function: not a glibc-style dynamic linker), -EINVAL (not ELF). */
static int ldso_symbols(int fd, uint64_t *off, int64_t *delta)
{
	uint64_t dds = 0, rdebug = 0;
	Elf_Scn *scn = NULL;
	size_t i, nph;
	Elf *e;
	int ret = -ENOENT;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL); /* read, not mapped: a file rewritten under us must not SIGBUS qprofd */
	if (!e || elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -EINVAL;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "_dl_debug_state") && GELF_ST_TYPE(sym.st_info) == STT_FUNC)
				dds = sym.st_value;
			else if (!strcmp(name, "_r_debug") && GELF_ST_TYPE(sym.st_info) == STT_OBJECT &&
				 sym.st_size >= QPROF_R_STATE_OFF + 4)
				rdebug = sym.st_value;
		}
	}
	/* the function's file offset through its executable PT_LOAD */
	if (dds && !elf_getphdrnum(e, &nph)) {
		for (i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
				continue;
			if (dds >= ph.p_vaddr && dds - ph.p_vaddr < ph.p_filesz) {
				*off = dds - ph.p_vaddr + ph.p_offset;
				*delta = rdebug ? (int64_t)(rdebug - dds) : 0;
				ret = 0;
				break;
			}
		}
	}
	elf_end(e);
	return ret;
}

static bool ldso_name(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "ld-", 3) || !strncmp(b, "ld.so", 5);
}

/* lc->lock held. Link PATH (the file open at FD, DEV/INO) unless known. */
static void ldso_add(struct qp_lifecycle *lc, const char *path, int fd, dev_t dev, ino_t ino)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o);
	struct lc_ldso *v;
	uint64_t off = 0;
	int64_t delta = 0;
	size_t i;
	int ret;

	for (i = 0; i < lc->nldsos; i++)
		if (lc->ldsos[i].dev == dev && lc->ldsos[i].ino == ino)
			return;
	if (lc->nldsos == LC_MAX_LDSOS)
		return;
	v = realloc(lc->ldsos, (lc->nldsos + 1) * sizeof(*v));
	if (!v)
		return;
	lc->ldsos = v;
	v = &lc->ldsos[lc->nldsos++];
	v->dev = dev;
	v->ino = ino;
	v->link = NULL;
	v->fd = -1;
	ret = ldso_symbols(fd, &off, &delta);
	if (ret) {
		qp_info("%s: no _dl_debug_state: libraries loaded later are found by the 1 s rescan only",
			path);
		return;
	}
	o.bpf_cookie = (uint64_t)delta;
	if (lc->dl_multi)
		v->fd = attach_multi(bpf_program__fd(lc->skel->progs.lc_dl), path, off, (uint64_t)delta);
	else
		v->link = bpf_program__attach_uprobe_opts(lc->skel->progs.lc_dl, -1, path, (size_t)off, &o);
	if (!v->link && v->fd < 0) {
		qp_warn("%s: cannot probe _dl_debug_state: %s; libraries loaded later are found by "
			"the 1 s rescan only", path, strerror(errno));
		return;
	}
	{
		/* PATH may be a /proc/PID/map_files/ link (the very inode
		 * mapped): name the file itself */
		char real[PATH_MAX];
		ssize_t n = strstr(path, "/map_files/") ? readlink(path, real, sizeof(real) - 1) : -1;

		if (n > 0)
			real[n] = '\0';
		qp_info("libraries loaded later (dlopen) are probed as they load: the dynamic loader %s is "
			"watched%s", n > 0 ? real : path, delta ? "" : " (every call of its _dl_debug_state "
			"reported: no _r_debug found)");
	}
}

void qp_lifecycle_watch_ldso(struct qp_lifecycle *lc, int pid, const struct qp_maps *maps)
{
	char path[PATH_MAX + 32];
	size_t i;

	/* no hold without the process that bounds it */
	if (!lc || !maps || lc->releaser <= 0)
		return;
	for (i = 0; i < maps->n; i++) {
		const struct qp_map *m = &maps->v[i];
		char err[256];
		struct stat st;
		int fd;

		if (m->path[0] != '/' || !strchr(m->perms, 'x') || !ldso_name(m->path))
			continue;
		/* the very inode mapped: map_files, else the path through the
		 * process's root checked against the maps line (no CAP_SYS_ADMIN) */
		if (qp_map_open(pid > 0 ? pid : getpid(), m, path, sizeof(path), &fd, err, sizeof(err)))
			continue;
		if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == m->inode) {
			pthread_mutex_lock(&lc->lock);
			ldso_add(lc, path, fd, st.st_dev, st.st_ino);
			pthread_mutex_unlock(&lc->lock);
		}
		close(fd);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The release process: every RELEASE_TICK_MS, the holds older than
 * BOUND_NS are ended; when qprofd is gone, all of them. Async-signal-safe
 * calls only (it is a fork of a
 * process that may have threads): poll, bpf(2), kill, _exit. */
static __attribute__((noreturn)) void releaser_main(int rfd, int held, uint64_t bound_ns)
{
	int lo = rfd < held ? rfd : held, hi = rfd < held ? held : rfd;

	/* nothing of qprofd's but these two: no socket, no link, no program */
	if (lo > 3)
		close_range(3, (unsigned int)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned int)lo + 1, (unsigned int)hi - 1, 0);
	close_range((unsigned int)hi + 1, ~0U, 0);
	prctl(PR_SET_NAME, "qprofd-release");
	for (;;) {
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		bool gone = poll(&p, 1, RELEASE_TICK_MS) > 0;	/* qprofd never writes: EOF */
		uint64_t now = mono_ns();
		__u32 key, next;
		int first = 1, guard = 0;

		while (guard++ < 8192 &&
		       !bpf_map_get_next_key(held, first ? NULL : &key, &next)) {
			__u64 ts;

			first = 0;
			key = next;
			if (bpf_map_lookup_elem(held, &key, &ts))
				continue;
			if ((gone || lc_hold_over(now, ts, bound_ns)) && !bpf_map_delete_elem(held, &key))
				kill((pid_t)key, SIGCONT);
		}
		if (gone)
			_exit(0);
	}
}

/* Is CAP_KILL in qprofd's effective set? (capget: no libcap for one bit) */
static __u32 has_cap_kill(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return 0;
	return (d[CAP_KILL / 32].effective >> (CAP_KILL % 32)) & 1;
}

int lc_dl_start(struct qp_lifecycle *lc, char *err, size_t errlen)
{
	int p[2], held = bpf_map__fd(lc->skel->maps.lc_held);
	pid_t pid;

	lc->releaser_pipe = -1;
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int ret = -errno;

		close(p[0]);
		close(p[1]);
		snprintf(err, errlen, "fork of the release process: %s", strerror(-ret));
		return ret;
	}
	if (pid == 0) {
		close(p[1]);
		releaser_main(p[0], held, lc->hold_ns);
	}
	close(p[0]);
	lc->releaser = pid;
	lc->releaser_pipe = p[1];
	/* whom qprofd (and its release process, a fork) may send SIGCONT */
	lc->skel->bss->dl_kill_any = has_cap_kill();
	lc->skel->bss->dl_uid = (__u32)getuid();
	lc->skel->bss->dl_euid = (__u32)geteuid();
	lc->skel->bss->dl_alive_ns = mono_ns();
	lc->skel->bss->dl_hold = lc->hold_ns ? 1 : 0;	/* holds only now that they are bounded */
	return 0;
}

void qp_lifecycle_alive(struct qp_lifecycle *lc)
{
	if (lc)
		lc->skel->bss->dl_alive_ns = mono_ns();
}

void lc_dl_check(struct qp_lifecycle *lc)
{
	size_t i;

	if (lc->releaser <= 0 || waitpid(lc->releaser, NULL, WNOHANG) != lc->releaser)
		return;
	/* it died (killed by someone): no more holds, no more links */
	qp_warn("the release process %d is gone: libraries loaded by targets are found by the "
		"1 s rescan only from now on", (int)lc->releaser);
	lc->releaser = 0;
	for (i = 0; i < lc->nldsos; i++) {
		bpf_link__destroy(lc->ldsos[i].link);
		lc->ldsos[i].link = NULL;
		if (lc->ldsos[i].fd >= 0)
			close(lc->ldsos[i].fd);
		lc->ldsos[i].fd = -1;
	}
}

void lc_dl_stop(struct qp_lifecycle *lc)
{
	size_t i;

	/* no new hold: the links go first */
	lc->skel->bss->dl_hold = 0;
	for (i = 0; i < lc->nldsos; i++) {
		bpf_link__destroy(lc->ldsos[i].link);
		if (lc->ldsos[i].fd >= 0)
			close(lc->ldsos[i].fd);
	}
	free(lc->ldsos);
	lc->ldsos = NULL;
	lc->nldsos = 0;
	if (lc->releaser_pipe >= 0)
		close(lc->releaser_pipe);	/* it releases every hold left, and exits */
	lc->releaser_pipe = -1;
	if (lc->releaser > 0)
		waitpid(lc->releaser, NULL, 0);
	lc->releaser = 0;
}

bool lc_dl_release(struct qp_lifecycle *lc, int pid, uint64_t ts_ns)
{
	int held = bpf_map__fd(lc->skel->maps.lc_held);
	__u32 key = (__u32)pid;
	__u64 ts = 0;
	uint64_t hold;

	if (bpf_map_lookup_elem(held, &key, &ts) || ts != ts_ns) {
		/* the release process was first (or a newer hold, whose own
		 * record is queued): not ours to end */
		lc->dl_released_late++;
		return true;
	}
	if (bpf_map_delete_elem(held, &key)) {
		lc->dl_released_late++;
		return true;
	}
	if (kill(pid, SIGCONT) && errno != ESRCH)
		qp_warn("pid %d: SIGCONT after its library rendezvous: %s", pid, strerror(errno));
	hold = mono_ns() - ts_ns;
	lc->dl_released++;
	lc->dl_hold_sum_ns += hold;
	if (hold > lc->dl_hold_max_ns)
		lc->dl_hold_max_ns = hold;
	return false;
}

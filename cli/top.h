/* top.h - what the files of `qprof-cli top` share: one round of figures
 * (the functions and scopes of one interval), and the three jobs done on it:
 * fetching it from the daemon (top_fetch.c), turning answers into figures
 * and sorting them (top_figures.c), drawing them as text (top_draw.c). The
 * command and its live mode are cmd_top.c. */
#ifndef QPROF_CLI_TOP_H
#define QPROF_CLI_TOP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "common/buf.h"
#include "common/stackstats.h"

#define TOP_ONCE_FUNCS 20	/* rows of the plain frame */
#define TOP_ONCE_SCOPES 40

/* A function of the interval: name (a folded frame; unsymbolized frames
 * grouped per module), self and total samples. */
struct fn_row {
	const char *name;	/* in the round's fnstats */
	uint64_t self, total;
};

enum { SD_P50, SD_P99, SD_P999, SD_MAX, SD_TOTAL, SD_N };

struct scope_row {
	char *name, *parent, *kind;
	uint64_t pid, count;
	double rate;
	double dur[SD_N];
	bool has_dur[SD_N];
	uint64_t calibration_ns;	/* the BPF collector's, taken off each duration */
	/* the kernel figures of the interval, when the daemon has them */
	bool has_kernel;
	uint64_t off_cpu_ns, voluntary, involuntary;
};

struct target {
	int64_t pid;
	char comm[32];
	uint64_t ring_lost;	/* scopes its rings lost since attach (status's lost_scopes) */
	bool ring_lost_est;	/* ... an estimate */
};

struct round {
	int64_t pid;		/* 0: every target */
	int interval;
	char version[64];
	struct target *targets;
	size_t ntargets;
	struct qp_stackstats fnstats;	/* self/total per function (common/stackstats.h) */
	struct fn_row *fns;
	size_t nfns;
	uint64_t samples;
	struct scope_row *scopes;
	size_t nscopes;
	bool kernel;		/* some scope row has kernel figures */
	bool filled;		/* functions and scopes are there */
	char err[512];		/* not empty: the round failed */
};

enum fn_sort { FS_SELF, FS_TOTAL };
enum sc_sort { SS_BUSY, SS_RATE, SS_P50, SS_P99, SS_MAX };
extern const char *const top_fs_names[];
extern const char *const top_ss_names[];

/* top_fetch.c: a round (status, then folded stacks and scopes of the next
 * INTERVAL seconds at the same time). Never NULL but when out of memory; a
 * failed round has r->err set. Safe from any thread. */
struct round *top_collect(const char *sock, int64_t pid, int interval);

/* top_figures.c */
void top_round_free(struct round *r);	/* accepts NULL */
int top_take_status(struct round *r, const json_t *root);	/* targets, version; -ENOMEM */
/* Functions out of "comm;root;...;leaf count" lines (TEXT is cut up). */
int top_take_folded(struct round *r, char *text, size_t len);
int top_take_scopes(struct round *r, const json_t *root);	/* -EPROTO, -ENOMEM */
void top_sort_round(struct round *r, enum fn_sort fs, enum sc_sort ss);
json_t *top_round_json(const struct round *r);	/* --json */

/* top_draw.c: a frame as text in a buffer, ANSI escapes when ANSI. The
 * scopes' off-CPU columns (OFF ms, SWITCH) are drawn when the round has
 * kernel figures and the frame is unlimited or at least TOP_KERNEL_WIDTH
 * wide (at 80 columns they would leave the names no room). */
#define TOP_KERNEL_WIDTH 100
struct top_screen {
	struct qp_buf b;	/* b.failed: out of memory */
	int width;		/* 0: no limit */
	int col;		/* characters on the current line */
	bool ansi;
};

void top_screen_raw(struct top_screen *s, const char *p, size_t n);
/* The whole frame; HEIGHT 0: no limit but the --once row caps; STATUS (may
 * be NULL) on the bottom line. */
void top_draw_frame(struct top_screen *s, const struct round *r, int64_t pid, int interval,
		    int height, enum fn_sort fs, enum sc_sort ss, const char *status);
#endif

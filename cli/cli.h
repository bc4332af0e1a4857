/* cli.h - what the parts of qprof-cli share: the context passed to every
 * command (no mutable globals), the command signature, the exit codes, the
 * option-parsing helpers that turn bad argv into one clear message, and the
 * daemon call that turns transport and HTTP errors into messages. */
#ifndef QPROF_CLI_H
#define QPROF_CLI_H
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "http_client.h"
#include "common/util.h"

#define CLI_PROG "qprof-cli"
#define CLI_DEFAULT_SOCKET "/run/qprof/qprofd.sock"

/* Exit codes: 0 done, 1 the work failed (daemon, file, I/O), 2 bad usage or
 * a command this version does not have. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

#define CLI_PID_MAX 4194304		/* PID_MAX_LIMIT on 64-bit Linux */
#define CLI_SECONDS_MAX 300		/* the daemon clamps to 1..300 */
#define CLI_HTTP_TIMEOUT_S 30		/* on top of any collection time */

struct cli_ctx {
	const char *socket;	/* --socket, or NULL: QPROF_SOCKET, then the default */
	bool json;		/* --json: machine-readable output */
	const char *cmd;	/* the command being run, for messages */
};

struct cli_cmd {
	const char *name;
	int (*func)(struct cli_ctx *ctx, int argc, char **argv);
	const char *summary;	/* NULL: hidden from the command list */
};

/* Options every command accepts besides its own, so that
 * `qprof-cli scopes --json` works like `qprof-cli --json scopes`. */
enum { CLI_OPT_HELP = 'h', CLI_OPT_JSON = 0x100, CLI_OPT_SOCKET, CLI_OPT_CMD_BASE };
#define CLI_COMMON_OPTS                                                          \
	{ "help", no_argument, NULL, CLI_OPT_HELP },                             \
	{ "json", no_argument, NULL, CLI_OPT_JSON },                             \
	{ "socket", required_argument, NULL, CLI_OPT_SOCKET }

/* Resolve the socket path: --socket, QPROF_SOCKET, the default. */
const char *cli_socket(const struct cli_ctx *ctx);

/* "qprof-cli CMD: <message>" + a hint to --help, on stderr. Returns CLI_USAGE.
 * With --json (once parsed): {"error": "<message>"} on stdout instead. */
__printf(2, 3) int cli_usage_error(const struct cli_ctx *ctx, const char *fmt, ...);
/* "qprof-cli: <message>" on stderr, or {"error": "<message>"} on stdout with
 * --json (CTX may be NULL: plain text). Returns CLI_FAIL. */
__printf(2, 3) int cli_fail(const struct cli_ctx *ctx, const char *fmt, ...);

/* Handle an option getopt_long returned that the command did not: common
 * options, unknown options, missing values. Returns -1 when handled and the
 * command should continue, else the exit code (0 after --help, printed with
 * HELP). */
int cli_common_opt(struct cli_ctx *ctx, int c, char **argv, const struct option *opts,
		   const char *help);
/* Run getopt_long over a command's argv (argv[0] is the command name). */
int cli_getopt(int argc, char **argv, const struct option *opts);
/* Any argument left after the options is an error for commands that take none. */
int cli_no_operands(const struct cli_ctx *ctx, int argc, char **argv);

/* The next option of a command that takes no operand: the code of one of
 * its own options (> 0, optarg set), else 0 with *RC -1 when the options are
 * all read and good, or *RC the exit code (after --help, or a usage error
 * printed). The common options, unknown ones and operands are handled here. */
int cli_next_opt(struct cli_ctx *ctx, int argc, char **argv, const struct option *opts, const char *help,
		 int *rc);
/* The options of a command that takes --pid N and no operand (besides the
 * common ones): -1 when the command goes on (*PID_ARG: the value or NULL),
 * else the exit code (after --help, or a usage error printed). */
int cli_pid_only_opts(struct cli_ctx *ctx, int argc, char **argv, const char *help,
		      const char **pid_arg);

/* Checked values of options; a bad one prints its message and returns
 * CLI_USAGE, a good one 0. */
int cli_parse_pid(const struct cli_ctx *ctx, const char *opt, const char *s, int64_t *pid);
int cli_parse_seconds(const struct cli_ctx *ctx, const char *s, int64_t *sec);
/* The pid of the daemon's only target (GET /api/status), for commands
 * whose --pid may be left out; CLI_FAIL (said why: "qprofd has N targets:
 * say which with --pid N") otherwise. */
int cli_only_target(struct cli_ctx *ctx, int64_t *pid);
/* Check --pid and --seconds (either may be NULL) and append pid= and
 * seconds= to the request TARGET (of size LEN). 0, CLI_USAGE or CLI_FAIL
 * (message printed); *sec (may be NULL) gets the seconds, 0 when absent. */
int cli_query_pid_seconds(const struct cli_ctx *ctx, const char *pid_arg, const char *sec_arg,
			  char *target, size_t len, int64_t *sec);

/* Why a call failed: the transport's reason (status 0), the daemon's
 * {"error": ...} (daemon_said) or its status line. Raw text: the caller keeps
 * control characters off the terminal. */
struct cli_call_err {
	int status;		/* HTTP status, 0 when there was no answer */
	bool daemon_said;	/* text is the daemon's own "error" */
	char text[4200];
};

/* Call the daemon at SOCK without printing anything (any thread): 0 with
 * RESP filled on a 2xx answer, else CLI_FAIL with E filled and RESP empty. */
int cli_call_quiet(const char *sock, const char *method, const char *target, const char *body,
		   int timeout_s, struct http_response *resp, struct cli_call_err *e);
/* Call the daemon. 0 with RESP filled on a 2xx answer; otherwise the error
 * (connection, protocol or the daemon's {"error": ...}) has been printed
 * (as {"error": ..., "http_status": N} on stdout with --json), RESP is empty
 * and the exit code CLI_FAIL is returned. */
int cli_api_call(const struct cli_ctx *ctx, const char *method, const char *target,
		 const char *body, int timeout_s, struct http_response *resp);
/* Print E as cli_api_call does; returns CLI_FAIL. */
int cli_call_failed(const struct cli_ctx *ctx, const struct cli_call_err *e);
/* output.c: write DATA to PATH through a temporary file renamed into place
 * (never half a file). CLI_OK, or CLI_FAIL with the reason printed. */
int cli_write_file(const struct cli_ctx *ctx, const char *path, const char *data, size_t len);
/* RESP's body to the file OUT, then WRITTEN(RESP, OUT) or, when NULL,
 * "wrote OUT (N bytes)" on stderr; to standard output when OUT is NULL or
 * "-". The exit code (errors printed). */
int cli_write_body(const struct cli_ctx *ctx, const char *out, const struct http_response *resp,
		   void (*written)(const struct http_response *resp, const char *path));
/* "collecting for SEC s..." on stderr when SEC and stderr is a terminal. */
void cli_say_collecting(int64_t sec);
/* The daemon's text may hold anything: its control characters become '?'. */
void cli_clean_text(char *s);
/* Parse a 2xx body as a JSON object; NULL after printing why not. */
json_t *cli_api_json(const struct cli_ctx *ctx, const struct http_response *resp);
/* --json: the daemon's answer byte for byte, with a final newline. */
void cli_print_body(const struct http_response *resp);

/* GET TARGET and show it: with --json the answer byte for byte, else
 * PRINT on the parsed object. The exit code (errors printed). */
int cli_get_and_print(const struct cli_ctx *ctx, const char *target, int timeout_s,
		      int (*print)(const struct cli_ctx *ctx, const json_t *root));

/* Numbers out of the daemon's JSON: false when absent or null. */
bool cli_json_double(const json_t *obj, const char *key, double *out);
bool cli_json_u64(const json_t *obj, const char *key, uint64_t *out);
const char *cli_json_str(const json_t *obj, const char *key);	/* NULL if absent */

/* Human table of targets (status, attach); ARR is a JSON array of targets. */
int cli_print_targets(const struct cli_ctx *ctx, const json_t *arr);
/* A line per ring target of ARR (a JSON array of targets; only PID's when
 * PID) that lost records: its losses in scopes, marks and values, exact
 * or estimated. Nothing for one that lost none. */
void cli_print_ring_losses(const json_t *targets, uint64_t pid);
/* The same after GET /api/status (nothing when it fails). */
void cli_ring_loss_footer(const struct cli_ctx *ctx, uint64_t pid);

int cmd_status(struct cli_ctx *ctx, int argc, char **argv);
int cmd_attach(struct cli_ctx *ctx, int argc, char **argv);
int cmd_detach(struct cli_ctx *ctx, int argc, char **argv);
int cmd_scopes(struct cli_ctx *ctx, int argc, char **argv);
int cmd_probes(struct cli_ctx *ctx, int argc, char **argv);
int cmd_folded(struct cli_ctx *ctx, int argc, char **argv);
int cmd_flamegraph(struct cli_ctx *ctx, int argc, char **argv);
int cmd_pprof(struct cli_ctx *ctx, int argc, char **argv);
int cmd_values(struct cli_ctx *ctx, int argc, char **argv);
int cmd_logs(struct cli_ctx *ctx, int argc, char **argv);
int cmd_top(struct cli_ctx *ctx, int argc, char **argv);
int cmd_report(struct cli_ctx *ctx, int argc, char **argv);
int cmd_trace(struct cli_ctx *ctx, int argc, char **argv);
int cmd_threads(struct cli_ctx *ctx, int argc, char **argv);
int cmd_heap(struct cli_ctx *ctx, int argc, char **argv);
int cmd_offcpu(struct cli_ctx *ctx, int argc, char **argv);
int cmd_slow(struct cli_ctx *ctx, int argc, char **argv);
#endif

/* test_cli_output.c - where qprof-cli's answers and errors go, against the
 * fake server of cli_harness.h: with --json every error is one
 * {"error": ...} object on stdout with the usual exit code (usage errors once
 * --json is parsed, connection errors, broken answers, the daemon's errors
 * with "http_status"); "-o -" is standard output for folded, flamegraph and
 * pprof (no file named "-"); an empty profile, which the daemon flags with
 * X-Qprof-Note, prints the note on stderr, writes nothing and exits 1.
 *
 * Usage: test_cli_output QPROF_CLI json|stdout|note */
#define _GNU_SOURCE	/* strcasestr */
#include "cli_harness.h"

#include <pty.h>
#include <sys/stat.h>

/* qprof-cli ARGS with standard output a terminal (a pty): its exit code,
 * its stderr in ERR. */
static int run_on_tty(const char *const *args, char *err, size_t len)
{
	const char *argv[16];
	int master, slave, status = 0, ep[2];
	size_t n = 0, got = 0;
	ssize_t k;
	pid_t pid;

	argv[n++] = cli_path;
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (openpty(&master, &slave, NULL, NULL, NULL) || pipe(ep))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(slave, 1);
		dup2(ep[1], 2);
		setenv("QPROF_SOCKET", "/nonexistent/qprof.sock", 1);
		execv(cli_path, (char *const *)argv);
		_exit(127);
	}
	close(slave);
	close(ep[1]);
	while (got + 1 < len && (k = read(ep[0], err + got, len - 1 - got)) > 0)
		got += (size_t)k;
	err[got] = '\0';
	close(ep[0]);
	close(master);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char note_head[] =
	"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
	"X-Qprof-Note: no samples inside scope 'nosuch' (unknown scope, or never on CPU)\r\n"
	"Content-Length: 0\r\n\r\n";
static const char note_err[] =
	"qprof-cli: empty profile: no samples inside scope 'nosuch' (unknown scope, or never on CPU)\n";

static bool exists(const char *name)
{
	struct stat st;

	return lstat(name, &st) == 0;
}

/* Usage error: exit 2, exactly OUT on stdout, nothing on stderr. */
static void expect_json_usage(const char *const *args, const char *out)
{
	struct run r;

	run_cli(&r, "/nonexistent/qprof.sock", args);
	CHECK_INT(r.code, 2);
	CHECK_STR(r.out, out);
	CHECK_STR(r.err, "");
}

static void test_json(void)
{
	struct fake f;
	struct run r;

	/* usage errors once --json is parsed, before or after the command */
	expect_json_usage((const char *[]){ "--json", "scopes", "--pid", "x", NULL },
			  "{\"error\":\"invalid --pid 'x': a process id is a whole number from 1 "
			  "to 4194304\"}\n");
	expect_json_usage((const char *[]){ "--json", "frobnicate", NULL },
			  "{\"error\":\"unknown command 'frobnicate'\"}\n");
	expect_json_usage((const char *[]){ "--json", NULL }, "{\"error\":\"no command given\"}\n");
	expect_json_usage((const char *[]){ "folded", "--json", "--seconds", "0", NULL },
			  "{\"error\":\"invalid --seconds '0': a whole number of seconds from 1 "
			  "to 300\"}\n");
	/* values are checked once all options are read: --json may come last */
	expect_json_usage((const char *[]){ "scopes", "--pid", "x", "--json", NULL },
			  "{\"error\":\"invalid --pid 'x': a process id is a whole number from 1 "
			  "to 4194304\"}\n");
	/* an option error met before --json is read is plain text (documented) */
	run_cli(&r, NULL, (const char *[]){ "scopes", "--bogus", "--json", NULL });
	CHECK_INT(r.code, 2);
	CHECK_STR(r.out, "");
	CHECK_HAS(r.err, "qprof-cli scopes: unknown option '--bogus'");

	/* nobody listening */
	run_cli(&r, NULL,
		(const char *[]){ "--json", "--socket", "/nonexistent/q.sock", "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "{\"error\":\"cannot connect to qprofd at /nonexistent/q.sock: No such "
			 "file or directory (is qprofd running?)\"}\n");
	CHECK_STR(r.err, "");

	/* the daemon's error, with its status */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 404 Not Found\r\nContent-Length: 32\r\n\r\n",
					"{\"error\":\"no such target: 999\"}\n", NULL },
		 (const char *[]){ "--json", "detach", "--pid", "999", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "{\"error\":\"no such target: 999\",\"http_status\":404}\n");
	CHECK_STR(r.err, "");
	/* quotes and control characters stay escaped JSON */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 400 Bad Request\r\nContent-Length: 32\r\n\r\n",
					"{\"error\":\"bad \\\"x\\\"\\u001b[31m\"}\n", NULL },
		 (const char *[]){ "scopes", "--json", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "{\"error\":\"bad \\\"x\\\"\\u001B[31m\",\"http_status\":400}\n");
	/* an error answer that is not JSON */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 500 Internal Server Error\r\n\r\noops", NULL },
		 (const char *[]){ "--json", "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "{\"error\":\"qprofd answered HTTP 500 Internal Server Error\","
			 "\"http_status\":500}\n");
	CHECK_STR(r.err, "");
	/* a reason phrase that is not UTF-8 still makes valid JSON */
	run_fake(&r, &f, (const char *const[]){ "HTTP/1.1 502 B\xff\xfe" "d\r\n\r\n", NULL },
		 (const char *[]){ "--json", "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "{\"error\":\"qprofd answered HTTP 502 B??d\",\"http_status\":502}\n");
	/* not HTTP at all */
	run_fake(&r, &f, (const char *const[]){ "hello there\r\n\r\n", NULL },
		 (const char *[]){ "--json", "values", NULL });
	CHECK_INT(r.code, 1);
	CHECK(strncmp(r.out, "{\"error\":\"bad answer from qprofd at ", 36) == 0);
	CHECK_HAS(r.out, "not an HTTP/1.x answer\"}\n");
	CHECK_STR(r.err, "");
	/* an empty profile */
	run_fake(&r, &f, (const char *const[]){ note_head, NULL },
		 (const char *[]){ "--json", "folded", "--scope", "nosuch", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "{\"error\":\"empty profile: no samples inside scope 'nosuch' (unknown "
			 "scope, or never on CPU)\"}\n");
	CHECK_STR(r.err, "");
	/* a failure of the CLI itself (no daemon involved) */
	run_cli(&r, NULL, (const char *[]){ "--json", "probes", "/nonexistent/binary", NULL });
	CHECK_INT(r.code, 1);
	CHECK(strncmp(r.out, "{\"error\":\"cannot read probes of /nonexistent/binary: ", 52) == 0);
	CHECK_STR(r.err, "");
	/* without --json nothing changed: plain text on stderr */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 404 Not Found\r\nContent-Length: 32\r\n\r\n",
					"{\"error\":\"no such target: 999\"}\n", NULL },
		 (const char *[]){ "detach", "--pid", "999", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "");
	CHECK_STR(r.err, "qprof-cli: no such target: 999 (HTTP 404)\n");
}

static void test_stdout(void)
{
	static const char folded[] = "strategy;main;calc_ma 7\nstrategy;main 3\n";
	static const char svg[] = "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n";
	static const char pb[] = "\x1f\x8b\x08 pprof stand-in";
	char head[160];
	struct fake f;
	struct run r;

	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(folded));
	run_fake(&r, &f, (const char *const[]){ head, folded, NULL },
		 (const char *[]){ "folded", "-o", "-", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, folded);
	CHECK_STR(r.err, "");
	CHECK(!exists("-"));

	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: image/svg+xml\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(svg));
	run_fake(&r, &f, (const char *const[]){ head, svg, NULL },
		 (const char *[]){ "flamegraph", "-o", "-", "--pid", "42", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, svg);
	CHECK_STR(r.err, "");
	CHECK(strncmp(f.req, "GET /api/cpu/flamegraph?pid=42 HTTP/1.1\r\n", 41) == 0);
	CHECK(!exists("-"));

	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(pb));
	run_fake(&r, &f, (const char *const[]){ head, pb, NULL },
		 (const char *[]){ "pprof", "--output", "-", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, pb);
	CHECK_STR(r.err, "");
	CHECK(!exists("-"));

	/* pprof and flamegraph without -o: standard output when it is no
	 * terminal; on a terminal, a usage error that says what to do */
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(pb));
	run_fake(&r, &f, (const char *const[]){ head, pb, NULL },
		 (const char *[]){ "pprof", "--seconds", "1", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, pb);
	CHECK(strncmp(f.req, "GET /pprof/profile?seconds=1 HTTP/1.1\r\n", 39) == 0);
	CHECK(!exists("-"));
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: image/svg+xml\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(svg));
	run_fake(&r, &f, (const char *const[]){ head, svg, NULL },
		 (const char *[]){ "flamegraph", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, svg);
	{
		char err[1024];

		CHECK_INT(run_on_tty((const char *[]){ "pprof", NULL }, err, sizeof(err)), 2);
		CHECK_HAS(err, "pprof writes a gzipped protobuf: give -o FILE.pb.gz, or send standard "
			  "output to a file or a pipe (qprof-cli pprof > FILE.pb.gz)");
		CHECK_INT(run_on_tty((const char *[]){ "flamegraph", NULL }, err, sizeof(err)), 2);
		CHECK_HAS(err, "flamegraph writes SVG: give -o FILE.svg");
	}

	/* offcpu: the route follows the file name (folded without -o) */
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(folded));
	run_fake(&r, &f, (const char *const[]){ head, folded, NULL },
		 (const char *[]){ "offcpu", "--pid", "42", "--scope", "calc_ma", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, folded);
	CHECK(strncmp(f.req, "GET /api/offcpu/folded?pid=42&scope=calc_ma HTTP/1.1\r\n", 54) == 0);
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: image/svg+xml\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(svg));
	run_fake(&r, &f, (const char *const[]){ head, svg, NULL },
		 (const char *[]){ "offcpu", "-o", "t_offcpu.svg", NULL });
	CHECK_INT(r.code, 0);
	CHECK(strncmp(f.req, "GET /api/offcpu/flamegraph HTTP/1.1\r\n", 37) == 0);
	CHECK(exists("t_offcpu.svg"));
	unlink("t_offcpu.svg");
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(pb));
	run_fake(&r, &f, (const char *const[]){ head, pb, NULL },
		 (const char *[]){ "offcpu", "-o", "t_offcpu.pb.gz", "--seconds", "2", NULL });
	CHECK_INT(r.code, 0);
	CHECK(strncmp(f.req, "GET /pprof/offcpu?seconds=2 HTTP/1.1\r\n", 38) == 0);
	unlink("t_offcpu.pb.gz");

	/* a real file name still makes a file, and says so on stderr */
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		 "Content-Length: %zu\r\n\r\n", strlen(folded));
	run_fake(&r, &f, (const char *const[]){ head, folded, NULL },
		 (const char *[]){ "folded", "-o", "./-x", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "");
	CHECK_STR(r.err, "wrote ./-x (40 bytes)\n");
	{
		char buf[128];

		slurp("./-x", buf, sizeof(buf));
		CHECK_STR(buf, folded);
		unlink("./-x");
	}
}

static void test_note(void)
{
	static const char ctl_head[] =
		"HTTP/1.1 200 OK\r\nX-Qprof-Note: no samples\x1b[2J here\r\n"
		"Content-Length: 0\r\n\r\n";
	struct fake f;
	struct run r;

	run_fake(&r, &f, (const char *const[]){ note_head, NULL },
		 (const char *[]){ "folded", "--scope", "nosuch", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "");
	CHECK_STR(r.err, note_err);
	CHECK(strncmp(f.req, "GET /api/cpu/folded?scope=nosuch HTTP/1.1\r\n", 43) == 0);

	/* nothing written for an empty profile, not even an empty file */
	run_fake(&r, &f, (const char *const[]){ note_head, NULL },
		 (const char *[]){ "flamegraph", "--scope", "nosuch", "-o", "empty.svg", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.err, note_err);
	CHECK(!exists("empty.svg"));
	run_fake(&r, &f, (const char *const[]){ note_head, NULL },
		 (const char *[]){ "pprof", "--scope", "nosuch", "-o", "-", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.out, "");
	CHECK_STR(r.err, note_err);

	/* the daemon's note reaches the terminal without its control bytes */
	run_fake(&r, &f, (const char *const[]){ ctl_head, NULL }, (const char *[]){ "folded", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.err, "qprof-cli: empty profile: no samples?[2J here\n");
}

int main(int argc, char **argv)
{
	const char *mode;
	char rm[128];

	if (argc < 3) {
		fprintf(stderr, "usage: %s QPROF_CLI json|stdout|note\n", argv[0]);
		return 2;
	}
	cli_path = argv[1];
	mode = argv[2];
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/qprof-cli-test.XXXXXX");
	if (!mkdtemp(tmpdir) || chdir(tmpdir)) {
		perror(tmpdir);
		return 1;
	}
	if (strcmp(mode, "json") == 0)
		test_json();
	else if (strcmp(mode, "stdout") == 0)
		test_stdout();
	else if (strcmp(mode, "note") == 0)
		test_note();
	else
		fprintf(stderr, "unknown mode %s\n", mode), tl_fail++;
	if (chdir("/"))
		perror("chdir");
	snprintf(rm, sizeof(rm), "rm -rf '%s'", tmpdir);
	if (system(rm) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return test_done(mode);
}

/* output.c - what the commands that fetch a profile or a trace do with
 * the daemon's answer: the "collecting" line while a window runs, the
 * daemon's notes kept off the terminal's control codes, and the body
 * written to a file (through a temporary renamed into place: never half a
 * file) or to standard output. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"

int cli_write_file(const struct cli_ctx *ctx, const char *path, const char *data, size_t len)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	size_t off = 0;
	int fd;

	if (!tmp)
		return cli_fail(ctx, "out of memory");
	snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		int e = errno;

		free(tmp);
		return cli_fail(ctx, "cannot write %s: %s", path, strerror(e));
	}
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;

			close(fd);
			unlink(tmp);
			free(tmp);
			return cli_fail(ctx, "cannot write %s: %s", path, strerror(e));
		}
		off += (size_t)n;
	}
	fchmod(fd, 0644);
	if (close(fd) || rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		free(tmp);
		return cli_fail(ctx, "cannot write %s: %s", path, strerror(e));
	}
	free(tmp);
	return CLI_OK;
}

void cli_say_collecting(int64_t sec)
{
	if (sec && isatty(STDERR_FILENO))
		fprintf(stderr, "collecting for %lld s...\n", (long long)sec);
}

void cli_clean_text(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int cli_write_body(const struct cli_ctx *ctx, const char *out, const struct http_response *resp,
		   void (*written)(const struct http_response *resp, const char *path))
{
	int rc;

	if (out && strcmp(out, "-")) {
		rc = cli_write_file(ctx, out, resp->body, resp->body_len);
		if (rc)
			return rc;
		if (written)
			written(resp, out);
		else
			fprintf(stderr, "wrote %s (%zu bytes)\n", out, resp->body_len);
		return CLI_OK;
	}
	fwrite(resp->body, 1, resp->body_len, stdout);
	return fflush(stdout) ? cli_fail(ctx, "cannot write to standard output") : CLI_OK;
}

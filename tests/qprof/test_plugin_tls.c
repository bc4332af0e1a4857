/* test_plugin_tls.c - a marked plugin (marker ABI 2: the ring's per-thread
 * pointer) can be loaded and unloaded without end: 10 copies of it (10
 * files), 100 cycles of dlopen, one call, dlclose of all in load order.
 * With the ring
 * pointer initial-exec in a shared library, glibc's static TLS surplus ran
 * out at cycle 23 ("cannot allocate memory in static TLS block"). No root,
 * no qprofd.   usage: test_plugin_tls PLUGIN.so TMPDIR */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testlib.h"

#define NLIBS 10
#define CYCLES 100

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	char paths[NLIBS][4096];
	void *h[NLIBS];
	int c, i, k, loaded = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: test_plugin_tls PLUGIN.so TMPDIR\n");
		return 2;
	}
	mkdir(argv[2], 0755);
	for (i = 0; i < NLIBS; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/plugin%d.so", argv[2], i);
		CHECK_INT(copy_file(argv[1], paths[i]), 0);
	}
	for (c = 0; c < CYCLES; c++) {
		for (i = 0; i < NLIBS; i++) {
			void (*work)(void);

			h[i] = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
			if (!h[i]) {
				fprintf(stderr, "cycle %d, %s: %s\n", c, paths[i], dlerror());
				break;
			}
			work = (void (*)(void))dlsym(h[i], "plugin_work");
			if (work)
				work();
			loaded++;
		}
		/* in load order, as a host unloads its plugins: glibc gives
		 * static TLS back only from the top, i.e. in reverse order */
		for (k = 0; k < i; k++)
			dlclose(h[k]);
		if (i < NLIBS)
			break;
	}
	CHECK_INT(loaded, NLIBS * CYCLES);
	for (i = 0; i < NLIBS; i++)
		unlink(paths[i]);
	rmdir(argv[2]);
	return test_done("test_plugin_tls");
}

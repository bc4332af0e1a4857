/* debuginfod.c - see debuginfod.h. One thread takes the build-ids asked
 * for in turn and tries each server: a 200 answer is streamed into
 * CACHE/.tmp.ID (never past the size cap: the transfer is cut), checked
 * (ELF, the build-id asked for, a .symtab or DWARF), fsync'ed and renamed
 * into CACHE/.build-id/xx/rest.debug. A 404 is a miss at that server; no
 * answer within the timeout, a connection refused or another status is a
 * failure; a file that fails the checks is refused. The outcome of a
 * build-id is the best of its servers' (fetched, refused, failed, missing)
 * and is kept with the reason of every server for status. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curl/curl.h>
#include "debuginfod.h"
#include "common/elf_build_id.h"
#include "common/hashtab.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/util.h"

#define BID_MAX 128		/* hex digits of a build-id asked for */
#define REASON_MAX 2048	/* the reasons of every server tried (up to 8), for status */

enum id_state { ID_PENDING, ID_FETCHING, ID_FETCHED, ID_MISSING, ID_FAILED, ID_REFUSED };
static const char *const state_name[] = { "pending", "fetching", "fetched", "missing", "failed", "refused" };

/* The value of a build-id in f->ids. */
struct idstate {
	enum id_state state;
	uint64_t until_ns;	/* a miss or failure is not asked again before */
	char *path;		/* the file that asked, for status */
};

struct outcome {
	char bid[BID_MAX + 1];
	char file[256];
	enum id_state state;
	char reason[REASON_MAX];
	uint64_t bytes, ms;
};

struct qp_dbgf {
	char *urls[QP_DBGF_MAX_URLS];
	size_t nurls;
	char cache[PATH_MAX];
	int cache_fd;
	unsigned int timeout_s, miss_s;
	uint64_t max_bytes;
	qp_dbgf_arrived_fn arrived;
	void *ctx;
	pthread_t th;
	bool started;
	bool curl_init;
	pthread_mutex_t lock;	/* all below; never held across a transfer or a check */
	pthread_cond_t cond;
	bool stop;		/* also read by the transfer's progress callback */
	struct qp_htab ids;	/* bid -> struct idstate */
	size_t queue[QP_DBGF_MAX_IDS];	/* indices into ids, FIFO */
	size_t qhead, qn;
	char current[BID_MAX + 1];	/* being fetched, "" when none */
	uint64_t asked, negative_hits, dropped;
	uint64_t fetched, fetched_bytes, missing, failed, refused, timeouts, attempts;
	struct outcome recent[QP_DBGF_RECENT];
	size_t nrecent, recent_next;
};

const char *qp_dbgf_cache_dir(const struct qp_dbgf *f)
{
	return f ? f->cache : NULL;
}

static int bad(char *err, size_t errlen, int ret, const char *fmt, const char *arg)
{
	snprintf(err, errlen, fmt, arg);
	return ret;
}

static int parse_urls(struct qp_dbgf *f, const char *urls, char *err, size_t errlen)
{
	const char *p = urls;

	while (*p) {
		size_t n;
		char *u;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if (!n)
			break;
		if (f->nurls == QP_DBGF_MAX_URLS)
			return bad(err, errlen, -E2BIG, "debuginfod: at most 8 servers (%s)", urls);
		if (n > 1024 || (strncmp(p, "http://", 7) && strncmp(p, "https://", 8)))
			return bad(err, errlen, -EINVAL,
				   "debuginfod: a server is an http:// or https:// URL of at most 1024 bytes (%s)",
				   urls);
		u = strndup(p, n);
		if (!u)
			return -ENOMEM;
		while (n > 8 && u[n - 1] == '/')	/* BASE/ and BASE are one server */
			u[--n] = '\0';
		f->urls[f->nurls++] = u;
		p += n + strspn(p + n, "/");
	}
	if (!f->nurls)
		return bad(err, errlen, -EINVAL, "debuginfod: no server in '%s'", urls);
	return 0;
}

/* DIR made (its parents 0755, itself 0700) and opened; refused unless it
 * is a directory of ours that nobody else may write (root fetches into it). */
static int open_cache(struct qp_dbgf *f, const char *dir, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;
	size_t i, n = strlen(dir);

	if (!n || n >= sizeof(path) - 64 || dir[0] != '/')
		return bad(err, errlen, -EINVAL, "debuginfod: the cache is an absolute path (%s)", dir);
	memcpy(path, dir, n + 1);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	for (i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, i == n ? 0700 : 0755) && errno != EEXIST) {
			snprintf(err, errlen, "debuginfod: cannot make %s: %s", path, strerror(errno));
			return -errno;
		}
		if (i != n)
			path[i] = '/';
	}
	f->cache_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (f->cache_fd < 0) {
		snprintf(err, errlen, "debuginfod: cannot open the cache %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(f->cache_fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, errlen, "debuginfod: the cache %s must be ours and writable by us only", path);
		return -EPERM;
	}
	if (mkdirat(f->cache_fd, ".build-id", 0700) && errno != EEXIST) {
		snprintf(err, errlen, "debuginfod: cannot make %s/.build-id: %s", path, strerror(errno));
		return -errno;
	}
	snprintf(f->cache, sizeof(f->cache), "%s", path);
	return 0;
}

/* Temporary files a qprofd that died mid-transfer left. */
static void sweep_tmp(struct qp_dbgf *f)
{
	int fd = openat(f->cache_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, ".tmp.", 5))
			unlinkat(f->cache_fd, e->d_name, 0);
	closedir(d);
}

int qp_dbgf_new(const struct qp_dbgf_opts *o, struct qp_dbgf **out, char *err, size_t errlen)
{
	struct qp_dbgf *f;
	int ret;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return bad(err, errlen, -EINVAL, "debuginfod: %s", "libelf is unusable");
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->cache_fd = -1;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	qp_htab_init(&f->ids, sizeof(struct idstate));
	f->timeout_s = o->timeout_s ? o->timeout_s : QP_DBGF_TIMEOUT_S_DEFAULT;
	f->max_bytes = o->max_bytes ? o->max_bytes : (uint64_t)QP_DBGF_MAX_MB_DEFAULT << 20;
	f->miss_s = o->miss_s ? o->miss_s : QP_DBGF_MISS_S;
	ret = parse_urls(f, o->urls ? o->urls : "", err, errlen);
	if (!ret)
		ret = open_cache(f, o->cache_dir, err, errlen);
	if (!ret && curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "debuginfod: libcurl cannot start");
		ret = -EIO;
	}
	if (ret) {
		qp_dbgf_free(f);
		return ret;
	}
	f->curl_init = true;
	sweep_tmp(f);
	*out = f;
	return 0;
}

/* ---- one transfer ---------------------------------------------------- */

enum { FR_OK, FR_MISSING, FR_FAILED, FR_REFUSED };

struct sink {
	struct qp_dbgf *f;
	int fd;
	uint64_t bytes;
	bool too_big, werr;
};

static size_t sink_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sink *k = arg;
	size_t n = size * nmemb, done = 0;

	if (k->bytes + n > k->f->max_bytes) {
		k->too_big = true;
		return 0;	/* cuts the transfer */
	}
	while (done < n) {
		ssize_t w = write(k->fd, data + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			k->werr = true;
			return 0;
		}
		done += (size_t)w;
	}
	k->bytes += n;
	return n;
}

static int abort_on_stop(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct qp_dbgf *f = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return __atomic_load_n(&f->stop, __ATOMIC_RELAXED);
}

/* Is the file FD the debug file of BID? "" in WHY when it is. */
static void check_file(int fd, const char *bid, char *why, size_t n)
{
	char got[2 * 64 + 1];
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;
	bool useful = false;

	why[0] = '\0';
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		snprintf(why, n, "not an ELF file");
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		snprintf(why, n, "an ELF file of type %u, not an executable or a library", eh.e_type);
		goto out;
	}
	if (!qp_elf_build_id(e, got, sizeof(got)) || strcmp(got, bid)) {
		snprintf(why, n, "an ELF file of build-id '%s', not the one asked for", got);
		goto out;
	}
	if (elf_getshdrstrndx(e, &shstrndx))
		shstrndx = 0;
	while ((scn = elf_nextscn(e, scn)) && !useful) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_size || sh.sh_type == SHT_NOBITS)
			continue;
		name = shstrndx ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		useful = sh.sh_type == SHT_SYMTAB || (name && !strcmp(name, ".debug_info"));
	}
	if (!useful)
		snprintf(why, n, "an ELF file of the build-id with neither .symtab nor .debug_info");
out:
	if (e)
		elf_end(e);
}

/* GET BASE's debug file of BID into the temporary file TMP (made anew).
 * FR_*, with the reason in WHY (WN bytes) when not FR_OK. */
static int fetch_from(struct qp_dbgf *f, const char *base, const char *bid, const char *tmp,
		      uint64_t *bytes, char *why, size_t wn)
{
	char url[1200], cerr[CURL_ERROR_SIZE] = "";
	struct sink k = { .f = f };
	long status = 0;
	CURLcode rc;
	CURL *c;
	int ret = FR_FAILED;

	*bytes = 0;
	snprintf(url, sizeof(url), "%s/buildid/%s/debuginfo", base, bid);
	unlinkat(f->cache_fd, tmp, 0);
	k.fd = openat(f->cache_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (k.fd < 0) {
		snprintf(why, wn, "cannot make %.200s/%.140s: %.60s", f->cache, tmp, strerror(errno));
		return FR_FAILED;
	}
	c = curl_easy_init();
	if (!c) {
		snprintf(why, wn, "libcurl: out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 4L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "qprofd");
	/* no Accept-Encoding: what comes is the file itself, never inflated here */
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)f->timeout_s);
	/* the timeout: nothing received for TIMEOUT_S (a server that took the
	 * connection and never answers); a slow one is given 8 times as long in all */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)f->timeout_s);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 8L * f->timeout_s);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)f->max_bytes);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &k);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, f);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	*bytes = k.bytes;
	if (k.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		snprintf(why, wn, "refused: larger than %llu bytes",
			 (unsigned long long)f->max_bytes);
		ret = FR_REFUSED;
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		pthread_mutex_lock(&f->lock);
		f->timeouts++;
		pthread_mutex_unlock(&f->lock);
		snprintf(why, wn, "no answer within %u s (%s)", f->timeout_s, cerr[0] ? cerr : "timeout");
	} else if (k.werr) {
		snprintf(why, wn, "cannot write %.200s/%.140s", f->cache, tmp);
	} else if (rc != CURLE_OK) {
		snprintf(why, wn, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
	} else if (status == 404) {
		snprintf(why, wn, "not there (404)");
		ret = FR_MISSING;
	} else if (status != 200) {
		snprintf(why, wn, "HTTP status %ld", status);
	} else {
		char bad_file[200];

		check_file(k.fd, bid, bad_file, sizeof(bad_file));
		if (bad_file[0]) {
			snprintf(why, wn, "refused: %s", bad_file);
			ret = FR_REFUSED;
		} else if (fsync(k.fd)) {
			snprintf(why, wn, "cannot write %.200s/%.140s: %.60s", f->cache, tmp, strerror(errno));
		} else {
			ret = FR_OK;
		}
	}
out:
	close(k.fd);
	if (ret != FR_OK)
		unlinkat(f->cache_fd, tmp, 0);
	return ret;
}

/* The debug file of BID from the first server that has it, renamed into
 * its place; the outcome in O. */
static void fetch_id(struct qp_dbgf *f, const char *bid, struct outcome *o, char *final, size_t flen)
{
	char tmp[BID_MAX + 8], dir[32], rel[BID_MAX + 32], why[512];
	uint64_t t0 = qp_now_ns();
	int best = FR_MISSING;
	size_t i, used = 0;

	snprintf(tmp, sizeof(tmp), ".tmp.%s", bid);
	snprintf(dir, sizeof(dir), ".build-id/%.2s", bid);
	snprintf(rel, sizeof(rel), ".build-id/%.2s/%.126s.debug", bid, bid + 2);
	for (i = 0; i < f->nurls && best != FR_OK; i++) {
		uint64_t bytes = 0;
		int r;

		if (__atomic_load_n(&f->stop, __ATOMIC_RELAXED))
			break;
		pthread_mutex_lock(&f->lock);
		f->attempts++;
		pthread_mutex_unlock(&f->lock);
		r = fetch_from(f, f->urls[i], bid, tmp, &bytes, why, sizeof(why));
		if (r == FR_OK && ((mkdirat(f->cache_fd, dir, 0700) && errno != EEXIST) ||
				  renameat(f->cache_fd, tmp, f->cache_fd, rel))) {
			snprintf(why, sizeof(why), "cannot put it in %.200s/%.140s: %.60s", f->cache, rel, strerror(errno));
			unlinkat(f->cache_fd, tmp, 0);
			r = FR_FAILED;
		}
		if (r == FR_OK) {
			o->bytes = bytes;
			snprintf(why, sizeof(why), "%llu bytes", (unsigned long long)bytes);
		}
		/* fetched, else refused (a server sent something wrong), else failed, else missing */
		if (r == FR_OK || (r == FR_REFUSED && best != FR_OK) ||
		    (r == FR_FAILED && best == FR_MISSING))
			best = r;
		used += (size_t)snprintf(o->reason + used, used < sizeof(o->reason) ? sizeof(o->reason) - used : 0,
					 "%s%s: %s", i ? "; " : "", f->urls[i], why);
		if (used >= sizeof(o->reason))
			used = sizeof(o->reason);
	}
	o->ms = (qp_now_ns() - t0) / 1000000;
	o->state = best == FR_OK ? ID_FETCHED : best == FR_REFUSED ? ID_REFUSED
		 : best == FR_FAILED ? ID_FAILED : ID_MISSING;
	if (snprintf(final, flen, "%s/%s", f->cache, rel) >= (int)flen)
		final[0] = '\0';
}

static void *fetch_thread(void *arg)
{
	struct qp_dbgf *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct outcome o = { 0 };
		struct idstate *st;
		char final[PATH_MAX];
		size_t idx;

		while (!f->stop && !f->qn)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->stop)
			break;
		idx = f->queue[f->qhead];
		f->qhead = (f->qhead + 1) % QP_DBGF_MAX_IDS;
		f->qn--;
		st = qp_htab_value(&f->ids, idx);
		st->state = ID_FETCHING;
		snprintf(o.bid, sizeof(o.bid), "%s", qp_htab_key(&f->ids, idx, NULL));
		snprintf(o.file, sizeof(o.file), "%s", st->path ? st->path : "");
		snprintf(f->current, sizeof(f->current), "%s", o.bid);
		pthread_mutex_unlock(&f->lock);

		fetch_id(f, o.bid, &o, final, sizeof(final));

		pthread_mutex_lock(&f->lock);
		f->current[0] = '\0';
		st = qp_htab_value(&f->ids, idx);	/* the table may have grown */
		if (__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
			st->state = ID_PENDING;
			break;
		}
		st->state = o.state;
		st->until_ns = qp_now_ns() + (uint64_t)f->miss_s * 1000000000ull;
		f->fetched += o.state == ID_FETCHED;
		f->fetched_bytes += o.bytes;
		f->missing += o.state == ID_MISSING;
		f->failed += o.state == ID_FAILED;
		f->refused += o.state == ID_REFUSED;
		f->recent[f->recent_next] = o;
		f->recent_next = (f->recent_next + 1) % QP_DBGF_RECENT;
		if (f->nrecent < QP_DBGF_RECENT)
			f->nrecent++;
		if (o.state == ID_FETCHED) {
			qp_info("debuginfod: the debug file of %s (%s) fetched, %llu bytes in %llu ms", o.file,
				o.bid, (unsigned long long)o.bytes, (unsigned long long)o.ms);
		} else {
			qp_info("debuginfod: no debug file for %s (%s): %s", o.file, o.bid, o.reason);
		}
		pthread_mutex_unlock(&f->lock);
		/* the symbolizer reads the file on this thread, no lock of ours held */
		if (o.state == ID_FETCHED && f->arrived)
			f->arrived(f->ctx, o.bid, final);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int qp_dbgf_start(struct qp_dbgf *f, qp_dbgf_arrived_fn arrived, void *ctx)
{
	int ret;

	f->arrived = arrived;
	f->ctx = ctx;
	ret = pthread_create(&f->th, NULL, fetch_thread, f);
	if (ret)
		return -ret;
	f->started = true;
	return 0;
}

void qp_dbgf_free(struct qp_dbgf *f)
{
	size_t i;

	if (!f)
		return;
	if (f->started) {
		pthread_mutex_lock(&f->lock);
		__atomic_store_n(&f->stop, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->th, NULL);
	}
	for (i = 0; i < f->ids.n; i++)
		free(((struct idstate *)qp_htab_value(&f->ids, i))->path);
	qp_htab_free(&f->ids);
	for (i = 0; i < f->nurls; i++)
		free(f->urls[i]);
	if (f->cache_fd >= 0)
		close(f->cache_fd);
	if (f->curl_init)
		curl_global_cleanup();
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static bool bid_ok(const char *bid)
{
	size_t n = strlen(bid);

	return n >= 4 && n <= BID_MAX && strspn(bid, "0123456789abcdef") == n;
}

void qp_dbgf_want(struct qp_dbgf *f, const char *bid, const char *path)
{
	struct idstate *st;
	bool made = false, queue = false;
	int64_t idx;

	if (!f || !bid || !bid_ok(bid))
		return;
	pthread_mutex_lock(&f->lock);
	idx = f->ids.n < QP_DBGF_MAX_IDS ? qp_htab_add(&f->ids, bid, strlen(bid), &made)
					  : qp_htab_find(&f->ids, bid, strlen(bid));
	if (idx < 0) {
		f->dropped++;	/* past QP_DBGF_MAX_IDS build-ids, or no memory */
		goto out;
	}
	st = qp_htab_value(&f->ids, (size_t)idx);
	if (made) {
		st->path = path ? strdup(path) : NULL;
		queue = true;
	} else if ((st->state == ID_MISSING || st->state == ID_FAILED || st->state == ID_REFUSED) &&
		   qp_now_ns() >= st->until_ns) {
		queue = true;	/* its time in the negative cache is over */
	} else if (st->state == ID_FETCHED) {
		char rel[BID_MAX + 32];

		/* asked again: the file was removed from the cache meanwhile */
		snprintf(rel, sizeof(rel), ".build-id/%.2s/%.126s.debug", bid, bid + 2);
		queue = faccessat(f->cache_fd, rel, F_OK, 0) != 0;
	} else {
		f->negative_hits += st->state != ID_PENDING && st->state != ID_FETCHING;
	}
	if (queue) {
		if (f->qn == QP_DBGF_MAX_IDS) {
			f->dropped++;
			goto out;
		}
		st->state = ID_PENDING;
		f->queue[(f->qhead + f->qn++) % QP_DBGF_MAX_IDS] = (size_t)idx;
		f->asked++;
		pthread_cond_signal(&f->cond);
	}
out:
	pthread_mutex_unlock(&f->lock);
}

void qp_dbgf_status_json(struct qp_dbgf *f, struct qp_json *j)
{
	size_t i;

	qp_json_key(j, "debuginfod");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "enabled", f != NULL);
	if (!f) {
		qp_json_obj_end(j);
		return;
	}
	qp_json_key(j, "urls");
	qp_json_arr_begin(j);
	for (i = 0; i < f->nurls; i++)
		qp_json_str(j, f->urls[i]);
	qp_json_arr_end(j);
	qp_json_kv_str(j, "cache_dir", f->cache);
	qp_json_kv_u64(j, "timeout_s", f->timeout_s);
	qp_json_kv_u64(j, "max_bytes", f->max_bytes);
	pthread_mutex_lock(&f->lock);
	qp_json_kv_u64(j, "asked", f->asked);
	qp_json_kv_u64(j, "pending", f->qn + (f->current[0] != '\0'));
	qp_json_kv_str(j, "fetching", f->current[0] ? f->current : NULL);
	qp_json_kv_u64(j, "fetched", f->fetched);
	qp_json_kv_u64(j, "fetched_bytes", f->fetched_bytes);
	qp_json_kv_u64(j, "missing", f->missing);
	qp_json_kv_u64(j, "failed", f->failed);
	qp_json_kv_u64(j, "refused", f->refused);
	qp_json_kv_u64(j, "attempts", f->attempts);
	qp_json_kv_u64(j, "timeouts", f->timeouts);
	qp_json_kv_u64(j, "negative_hits", f->negative_hits);
	qp_json_kv_u64(j, "dropped", f->dropped);
	qp_json_key(j, "recent");	/* the latest first */
	qp_json_arr_begin(j);
	for (i = 0; i < f->nrecent; i++) {
		const struct outcome *o =
			&f->recent[(f->recent_next + QP_DBGF_RECENT - 1 - i) % QP_DBGF_RECENT];

		qp_json_obj_begin(j);
		qp_json_kv_str(j, "build_id", o->bid);
		qp_json_kv_str(j, "file", o->file);
		qp_json_kv_str(j, "result", state_name[o->state]);
		qp_json_kv_str(j, "reason", o->reason);
		qp_json_kv_u64(j, "bytes", o->bytes);
		qp_json_kv_u64(j, "ms", o->ms);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	pthread_mutex_unlock(&f->lock);
	qp_json_obj_end(j);
}

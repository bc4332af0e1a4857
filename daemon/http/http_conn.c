/* http_conn.c - connection accounting for one listener (see http_conn.h):
 * counts, the long-poll cap, and the watchdog that enforces the request
 * deadline by shutting overdue sockets down. */
#include "http_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "common/log.h"
#include "common/util.h"

#define WATCH_MS 200

struct qp_conn_slot {
	struct qp_conn_slot *prev, *next;
	int fd;			/* our dup of the connection's socket */
	uint64_t since_ns;	/* when the request being received began */
	bool receiving;		/* a request (or the wait for one) is under way */
	bool shut;		/* the watchdog shut it down */
	bool over_limit;
};

struct qp_conns {
	char name[16];
	uint64_t deadline_ns;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t watchdog;
	bool stop;
	struct qp_conn_slot *head;
	struct qp_conns_stats st;
};

/* Every listener's accounting, for qp_conns_totals. */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qp_conns *all[4];

/* A power of two: log the 1st, 2nd, 4th, ... so a flood does not flood the log. */
static bool worth_logging(uint64_t n)
{
	return n && !(n & (n - 1));
}

static void *watchdog_main(void *arg)
{
	struct qp_conns *cs = arg;
	struct timespec until;

	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		uint64_t now = qp_now_ns(), closed = 0;
		struct qp_conn_slot *s;

		for (s = cs->head; s; s = s->next) {
			if (!s->receiving || s->shut || now - s->since_ns < cs->deadline_ns)
				continue;
			/* the server's thread sees end-of-file and closes the connection */
			shutdown(s->fd, SHUT_RDWR);
			s->shut = true;
			closed++;
		}
		if (closed) {
			cs->st.closed_overdue += closed;
			qp_info("%s: closed %llu connection(s) that sent no complete request within %llu s (%llu so far)",
				cs->name, (unsigned long long)closed,
				(unsigned long long)(cs->deadline_ns / 1000000000ull),
				(unsigned long long)cs->st.closed_overdue);
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += WATCH_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&cs->wake, &cs->lock, &until);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

struct qp_conns *qp_conns_new(const char *name, unsigned int deadline_s)
{
	struct qp_conns *cs = calloc(1, sizeof(*cs));
	size_t i;

	if (!cs)
		return NULL;
	snprintf(cs->name, sizeof(cs->name), "%s", name);
	cs->deadline_ns = (uint64_t)deadline_s * 1000000000ull;
	pthread_mutex_init(&cs->lock, NULL);
	qp_cond_init_monotonic(&cs->wake);
	if (pthread_create(&cs->watchdog, NULL, watchdog_main, cs)) {
		pthread_cond_destroy(&cs->wake);
		pthread_mutex_destroy(&cs->lock);
		free(cs);
		return NULL;
	}
	pthread_mutex_lock(&all_lock);
	for (i = 0; i < QP_ARRAY_SIZE(all); i++) {
		if (!all[i]) {
			all[i] = cs;
			break;
		}
	}
	pthread_mutex_unlock(&all_lock);
	return cs;
}

void qp_conns_free(struct qp_conns *cs)
{
	struct qp_conn_slot *s, *n;
	size_t i;

	if (!cs)
		return;
	pthread_mutex_lock(&all_lock);
	for (i = 0; i < QP_ARRAY_SIZE(all); i++)
		if (all[i] == cs)
			all[i] = NULL;
	pthread_mutex_unlock(&all_lock);
	pthread_mutex_lock(&cs->lock);
	cs->stop = true;
	pthread_cond_broadcast(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->watchdog, NULL);
	for (s = cs->head; s; s = n) {	/* none left when the server closed them all */
		n = s->next;
		close(s->fd);
		free(s);
	}
	pthread_cond_destroy(&cs->wake);
	pthread_mutex_destroy(&cs->lock);
	free(cs);
}

struct qp_conn_slot *qp_conns_open(struct qp_conns *cs, int fd)
{
	struct qp_conn_slot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (s->fd < 0) {
		qp_warn("%s: cannot watch a connection: %s", cs->name, strerror(errno));
		free(s);
		return NULL;
	}
	s->since_ns = qp_now_ns();
	s->receiving = true;
	pthread_mutex_lock(&cs->lock);
	s->next = cs->head;
	if (cs->head)
		cs->head->prev = s;
	cs->head = s;
	s->over_limit = ++cs->st.open > QP_HTTP_MAX_CONNECTIONS;
	pthread_mutex_unlock(&cs->lock);
	return s;
}

void qp_conns_close(struct qp_conns *cs, struct qp_conn_slot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&cs->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		cs->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	cs->st.open--;
	pthread_mutex_unlock(&cs->lock);
	close(s->fd);
	free(s);
}

bool qp_conn_over_limit(const struct qp_conn_slot *s)
{
	return s && s->over_limit;
}

void qp_conns_request_in(struct qp_conns *cs, struct qp_conn_slot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&cs->lock);
	s->receiving = false;
	pthread_mutex_unlock(&cs->lock);
}

void qp_conns_request_done(struct qp_conns *cs, struct qp_conn_slot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&cs->lock);
	s->receiving = true;
	s->since_ns = qp_now_ns();
	pthread_mutex_unlock(&cs->lock);
}

bool qp_conns_long_begin(struct qp_conns *cs)
{
	bool ok;
	uint64_t refused = 0;

	pthread_mutex_lock(&cs->lock);
	ok = cs->st.long_polls < QP_HTTP_MAX_LONG_POLLS;
	if (ok)
		cs->st.long_polls++;
	else
		refused = ++cs->st.refused_long;
	pthread_mutex_unlock(&cs->lock);
	if (!ok && worth_logging(refused))
		qp_warn("%s: long poll refused with 503: %d already running (%llu refused so far)", cs->name,
			QP_HTTP_MAX_LONG_POLLS, (unsigned long long)refused);
	return ok;
}

void qp_conns_long_end(struct qp_conns *cs)
{
	pthread_mutex_lock(&cs->lock);
	cs->st.long_polls--;
	pthread_mutex_unlock(&cs->lock);
}

void qp_conns_count_refused_full(struct qp_conns *cs)
{
	uint64_t n;

	pthread_mutex_lock(&cs->lock);
	n = ++cs->st.refused_full;
	pthread_mutex_unlock(&cs->lock);
	if (worth_logging(n))
		qp_warn("%s: request refused with 503: more than %d connections open (%llu refused so far)",
			cs->name, QP_HTTP_MAX_CONNECTIONS, (unsigned long long)n);
}

void qp_conns_stats(struct qp_conns *cs, struct qp_conns_stats *out)
{
	pthread_mutex_lock(&cs->lock);
	*out = cs->st;
	pthread_mutex_unlock(&cs->lock);
}

void qp_conns_totals(struct qp_conns_stats *out)
{
	struct qp_conns_stats st;
	size_t i;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&all_lock);
	for (i = 0; i < QP_ARRAY_SIZE(all); i++) {
		if (!all[i])
			continue;
		qp_conns_stats(all[i], &st);
		out->open += st.open;
		out->long_polls += st.long_polls;
		out->closed_overdue += st.closed_overdue;
		out->refused_long += st.refused_long;
		out->refused_full += st.refused_full;
	}
	pthread_mutex_unlock(&all_lock);
}

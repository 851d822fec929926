/* http: the /metrics server thread (see http.h). One thread serves every
 * connection at once with poll(): nonblocking sockets in a table of
 * HTTP_MAXCONN; each has 2 s from its accept for its request head and
 * then 5 s for the whole answer, so a silent, trickling or non-reading
 * client (any user of the node can connect) costs a scrape nothing but
 * its slot. When the table is full, a new connection closes the oldest
 * one still sending its request (else the oldest): refusing the new one
 * instead would let 32 silent connections, renewed every 2 s, shut out
 * every scrape; evicting the oldest leaves a flooder to push a scrape out
 * only by opening 32 connections between its connect and its request.
 * Each answer is sent from the document as it was when its request was
 * complete (a snapshot wr_http_set never changes; only its reference
 * count is taken under the lock), and wr_http_stop ends all at once. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_MAXCONN 32
#define HEAD_MS 2000    /* the whole request head, from the accept */
#define SEND_MS 5000    /* the whole answer */
#define PAUSE_MS 100    /* no accept after one failed for want of fds */

/* one version of the document: freed by whoever drops its last reference */
struct doc {
	size_t refs, len;
	char body[];
};

struct conn {
	int fd;                   /* -1: a free slot */
	int sending;              /* 0: reading the request head */
	unsigned long seq;        /* the order of accepts: the oldest is evicted */
	long long deadline;
	size_t n, off;            /* bytes of req (the head read, then the answer's head); of the answer sent */
	struct doc *doc;          /* the answer's body (NULL: none) */
	char req[4096];
};

struct wr_http {
	int fd, stop_pipe[2];
	pthread_t th;
	pthread_mutex_t mu;
	struct doc *doc;          /* the newest document (NULL: none yet) */
	unsigned long seq;
	long long pause_until;
	struct conn c[HTTP_MAXCONN];
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void doc_drop(struct wr_http *h, struct doc *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&h->mu);
	int last = --d->refs == 0;
	pthread_mutex_unlock(&h->mu);
	if (last)
		free(d);
}

static void conn_close(struct wr_http *h, struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	doc_drop(h, c->doc);
	c->doc = NULL;
}

/* The answer to a complete head: its status and headers in c->req, its
 * body the newest document (a reference), then sent within SEND_MS. */
static void conn_answer(struct wr_http *h, struct conn *c, long long now)
{
	static const char nf[] = "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n"
	                         "Connection: close\r\n\r\nnot found\n";
	const char *q = c->req;
	int ok = strncmp(q, "GET /metrics ", 13) == 0 || strncmp(q, "GET /metrics?", 13) == 0 ||
	         strncmp(q, "GET / ", 6) == 0;
	c->sending = 1;
	c->deadline = now + SEND_MS;
	c->off = 0;
	if (!ok) {
		memcpy(c->req, nf, sizeof nf - 1);
		c->n = sizeof nf - 1;
		return;
	}
	pthread_mutex_lock(&h->mu);
	if ((c->doc = h->doc))
		c->doc->refs++;
	pthread_mutex_unlock(&h->mu);
	int n = snprintf(c->req, sizeof c->req, "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; "
	                 "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", c->doc ? c->doc->len : 0);
	c->n = (size_t)n;
}

/* Reads what the client sent: 1 when the head is complete (a blank line,
 * or 4 KiB), 0 for more later, -1 on end or error. */
static int conn_read(struct conn *c)
{
	for (;;) {
		if (c->n + 1 >= sizeof c->req)
			return 1;
		ssize_t r = recv(c->fd, c->req + c->n, sizeof c->req - 1 - c->n, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (r <= 0)
			return -1;
		size_t from = c->n > 3 ? c->n - 3 : 0;    /* a blank line across two reads */
		c->n += (size_t)r;
		c->req[c->n] = '\0';
		if (strstr(c->req + from, "\r\n\r\n") || strstr(c->req + from, "\n\n"))
			return 1;
	}
}

/* Sends what the socket takes: 1 when all is sent, 0 for more later, -1
 * on error. */
static int conn_send(struct conn *c)
{
	size_t total = c->n + (c->doc ? c->doc->len : 0);
	while (c->off < total) {
		const char *p = c->off < c->n ? c->req + c->off : c->doc->body + (c->off - c->n);
		size_t len = c->off < c->n ? c->n - c->off : total - c->off;
		ssize_t w = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w <= 0)
			return -1;
		c->off += (size_t)w;
	}
	return 1;
}

/* One connection's turn: what poll saw, or its deadline. */
static void conn_step(struct wr_http *h, struct conn *c, short revents, long long now)
{
	int r = 0;
	if (!c->sending && (revents & (POLLIN | POLLHUP | POLLERR))) {
		r = conn_read(c);
		if (r == 1) {
			conn_answer(h, c, now);
			r = 0;
			revents |= POLLOUT;    /* the socket's buffer is most likely free */
		}
	}
	if (r == 0 && c->sending && (revents & (POLLOUT | POLLHUP | POLLERR)))
		r = conn_send(c);
	if (r != 0 || now >= c->deadline)
		conn_close(h, c);
}

/* A free slot; in a full table, the oldest connection still sending its
 * request (else the oldest) is closed for it. */
static struct conn *conn_slot(struct wr_http *h)
{
	struct conn *v = NULL;
	for (int i = 0; i < HTTP_MAXCONN; i++) {
		struct conn *c = &h->c[i];
		if (c->fd < 0)
			return c;
		if (!v || (!c->sending && v->sending) || (c->sending == v->sending && c->seq < v->seq))
			v = c;
	}
	conn_close(h, v);
	return v;
}

/* Accepts what waits (at most a table's worth per turn, so those in the
 * table are served in between). Each is read at once: under a flood of
 * connections a scrape's request is usually in its socket by its accept,
 * and answered before the accepts after it can evict it. */
static void accept_new(struct wr_http *h, long long now)
{
	for (int k = 0; k < HTTP_MAXCONN; k++) {
		int fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				h->pause_until = now + PAUSE_MS;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		struct conn *c = conn_slot(h);
		*c = (struct conn){ .fd = fd, .seq = ++h->seq, .deadline = now + HEAD_MS };
		conn_step(h, c, POLLIN, now);    /* a request already there is answered before any later accept can evict it */
	}
}

static void *loop(void *arg)
{
	struct wr_http *h = arg;
	struct pollfd p[2 + HTTP_MAXCONN];
	struct conn *pc[2 + HTTP_MAXCONN];
	for (;;) {
		long long now = now_ms(), next = -1;
		int np = 2;
		p[0] = (struct pollfd){ h->stop_pipe[0], POLLIN, 0 };
		p[1] = (struct pollfd){ now < h->pause_until ? -1 : h->fd, POLLIN, 0 };
		if (now < h->pause_until)
			next = h->pause_until;
		for (int i = 0; i < HTTP_MAXCONN; i++) {
			struct conn *c = &h->c[i];
			if (c->fd < 0)
				continue;
			pc[np] = c;
			p[np++] = (struct pollfd){ c->fd, c->sending ? POLLOUT : POLLIN, 0 };
			if (next < 0 || c->deadline < next)
				next = c->deadline;
		}
		int wait = next < 0 ? -1 : next > now ? (int)(next - now) : 0;
		if (poll(p, (nfds_t)np, wait) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		now = now_ms();
		for (int i = 2; i < np; i++)
			conn_step(h, pc[i], p[i].revents, now);
		if (p[1].revents & POLLIN)
			accept_new(h, now);
	}
	for (int i = 0; i < HTTP_MAXCONN; i++)
		if (h->c[i].fd >= 0)
			conn_close(h, &h->c[i]);
	return NULL;
}

struct wr_http *wr_http_start(const char *host, int port, int *bound)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	if (getaddrinfo(host, ps, &hints, &ai) != 0 || !ai) {
		fprintf(stderr, "llm-train-wrap: --metrics-http: '%s' is not a numeric IP address\n", host);
		return NULL;
	}
	struct wr_http *h = calloc(1, sizeof *h);
	int one = 1;
	if (!h)
		goto fail;
	for (int i = 0; i < HTTP_MAXCONN; i++)
		h->c[i].fd = -1;
	h->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(h->fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(h->fd, 64) != 0) {
		fprintf(stderr, "llm-train-wrap: --metrics-http: cannot listen on %s port %d: %s\n", host, port, strerror(errno));
		goto fail;
	}
	struct sockaddr_storage sa;
	socklen_t sl = sizeof sa;
	getsockname(h->fd, (struct sockaddr *)&sa, &sl);
	*bound = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
	                                        : ((struct sockaddr_in *)&sa)->sin_port);
	if (pipe2(h->stop_pipe, O_CLOEXEC) != 0)
		goto fail;
	pthread_mutex_init(&h->mu, NULL);
	if (pthread_create(&h->th, NULL, loop, h) != 0) {
		fprintf(stderr, "llm-train-wrap: --metrics-http: cannot start the server thread\n");
		close(h->stop_pipe[0]);
		close(h->stop_pipe[1]);
		pthread_mutex_destroy(&h->mu);
		goto fail;
	}
	freeaddrinfo(ai);
	return h;
fail:
	freeaddrinfo(ai);
	if (h && h->fd >= 0)
		close(h->fd);
	free(h);
	return NULL;
}

void wr_http_set(struct wr_http *h, const char *body, size_t len)
{
	struct doc *d = h ? malloc(sizeof *d + len + 1) : NULL;
	if (!d)
		return;
	d->refs = 1;
	d->len = len;
	if (len)
		memcpy(d->body, body, len);
	pthread_mutex_lock(&h->mu);
	struct doc *old = h->doc;
	h->doc = d;
	int last = old && --old->refs == 0;
	pthread_mutex_unlock(&h->mu);
	if (last)
		free(old);
}

void wr_http_stop(struct wr_http *h)
{
	if (!h)
		return;
	if (write(h->stop_pipe[1], "x", 1) != 1) { /* the thread ends with the process */ }
	pthread_join(h->th, NULL);
	close(h->stop_pipe[0]);
	close(h->stop_pipe[1]);
	close(h->fd);
	free(h->doc);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* http: the /metrics server thread (see http.h). One connection at a time:
 * a scrape is a few kilobytes, served from memory; each connection has 2 s
 * for its request head (0.2 s while another waits to connect) and 5 s for
 * the answer in all, so a slow, silent or stuck client (any user of the
 * node can connect) delays the next by that much at most, and
 * wr_http_stop ends a connection at once. */
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

struct wr_http {
	int fd, stop_pipe[2];
	pthread_t th;
	pthread_mutex_t mu;
	char *body;
	size_t len;
};

#define HEAD_MS 2000    /* the whole request head */
#define SEND_MS 5000    /* the whole answer */
#define YIELD_MS 200    /* then a waiting client ends a slow request head */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 when fd is ready for events before the deadline, 0 on timeout, -1 on
 * wr_http_stop, an error or a connection waiting on rival (the listening
 * socket; -1: none): one client never holds the thread longer. */
static int wait_fd(struct wr_http *h, int fd, short events, long long deadline, int rival)
{
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p[3] = { { fd, events, 0 }, { h->stop_pipe[0], POLLIN, 0 }, { rival, POLLIN, 0 } };
		int r = poll(p, 3, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || p[1].revents || p[2].revents)
			return -1;
		return r > 0 && (p[0].revents & (events | POLLHUP | POLLERR)) ? 1 : 0;
	}
}

static void send_all(struct wr_http *h, int fd, const char *p, size_t n, long long deadline)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(h, fd, POLLOUT, deadline, -1) != 1)
				return;
			continue;
		}
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Reads the request head (up to a blank line, 4 KiB, 2 s in all) into buf.
 * After YIELD_MS a client still sending gives way to one waiting to
 * connect: silent connections made first cost a scrape 0.2 s each. */
static int read_head(struct wr_http *h, int fd, char *buf, size_t cap)
{
	size_t n = 0;
	long long start = now_ms(), deadline = start + HEAD_MS;
	while (n + 1 < cap) {
		int early = now_ms() < start + YIELD_MS;
		int w = wait_fd(h, fd, POLLIN, early ? start + YIELD_MS : deadline, early ? -1 : h->fd);
		if (w < 0 || (w == 0 && !early))
			return -1;
		if (w == 0)
			continue;
		ssize_t r = recv(fd, buf + n, cap - 1 - n, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r <= 0)
			return -1;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return 0;
	}
	return 0;
}

/* The answer is sent from a copy, outside the lock: a client that does
 * not read never blocks wr_http_set (the wrapper's main loop). */
static void serve(struct wr_http *h, int c)
{
	char req[4096], hdr[256];
	if (read_head(h, c, req, sizeof req) != 0)
		return;
	long long deadline = now_ms() + SEND_MS;
	int ok = (strncmp(req, "GET /metrics ", 13) == 0 || strncmp(req, "GET /metrics?", 13) == 0 ||
	          strncmp(req, "GET / ", 6) == 0);
	if (!ok) {
		static const char nf[] = "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nnot found\n";
		send_all(h, c, nf, sizeof nf - 1, deadline);
		return;
	}
	pthread_mutex_lock(&h->mu);
	size_t len = h->len;
	char *body = len ? malloc(len) : NULL;
	if (body)
		memcpy(body, h->body, len);
	pthread_mutex_unlock(&h->mu);
	if (len && !body) {
		static const char busy[] = "HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
		send_all(h, c, busy, sizeof busy - 1, deadline);
		return;
	}
	int n = snprintf(hdr, sizeof hdr, "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
	                 "Content-Length: %zu\r\nConnection: close\r\n\r\n", len);
	send_all(h, c, hdr, (size_t)n, deadline);
	send_all(h, c, body, len, deadline);
	free(body);
}

static void *loop(void *arg)
{
	struct wr_http *h = arg;
	for (;;) {
		struct pollfd p[2] = { { h->fd, POLLIN, 0 }, { h->stop_pipe[0], POLLIN, 0 } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int c = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve(h, c);
		close(c);
	}
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
	h->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(h->fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(h->fd, 16) != 0) {
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
		goto fail;
	}
	freeaddrinfo(ai);
	return h;
fail:
	freeaddrinfo(ai);
	if (h && h->fd > 0)
		close(h->fd);
	free(h);
	return NULL;
}

void wr_http_set(struct wr_http *h, const char *body, size_t len)
{
	char *b = malloc(len + 1);
	if (!h || !b) {
		free(b);
		return;
	}
	memcpy(b, body, len);
	pthread_mutex_lock(&h->mu);
	free(h->body);
	h->body = b;
	h->len = len;
	pthread_mutex_unlock(&h->mu);
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
	free(h->body);
	free(h);
}

/* store.c: the munge-authenticated TCP key-value rendezvous store of
 * store.h. One thread, poll() over the listening socket and up to
 * LLMT_STORE_MAX_CONNS clients, every buffer bounded. Written by hand:
 * no well-kept C library offers an authenticated rendezvous store (the
 * torch/gloo TCPStore trusts anyone who can reach the port). */
#define _GNU_SOURCE
#include "store.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <munge.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FRAME_MAX (LLMT_STORE_KEY_MAX + LLMT_STORE_VALUE_MAX + 2)
#define PAYLOAD_FMT "llmt-store/1 job=%s nonce=%s"

static void fmt_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fmt_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- server ------------------------------------------------------------ */
enum { ST_AUTH, ST_READY, ST_WAIT };

struct conn {
	int fd;
	int state;
	int64_t since;                    /* accept time (auth deadline) */
	char peer[64];
	char nonce[33];
	unsigned char *in;                /* FRAME_MAX + 4 */
	size_t inlen;
	unsigned char *out;
	size_t outlen, outcap, outoff;
	char want[LLMT_STORE_KEY_MAX + 1];/* key a GET waits for */
};

struct kv {
	char key[LLMT_STORE_KEY_MAX + 1];
	unsigned char *val;
	size_t len;
};

struct llmt_store {
	int lfd;
	char job[128];
	uid_t uid;
	munge_ctx_t ctx;
	struct conn *conns;
	unsigned nconns;
	struct kv *kvs;
	unsigned nkvs;
	unsigned refused;
};

llmt_store *llmt_store_listen(const char *bind_addr, int *port, const char *job,
			      const char *munge_socket, char *err, size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	llmt_store *s;
	int one = 1;

	if (!job || strlen(job) >= sizeof s->job || strpbrk(job, " \n")) {
		fmt_err(err, errlen, "store: bad job id '%s'", job ? job : "(null)");
		return NULL;
	}
	if (*port < 0 || *port > 65535) {
		fmt_err(err, errlen, "store: bad port %d", *port);
		return NULL;
	}
	if (bind_addr && *bind_addr && inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
		fmt_err(err, errlen, "store: bad bind address '%s' (IPv4 dotted quad)", bind_addr);
		return NULL;
	}
	s = calloc(1, sizeof *s);
	if (!s || !(s->conns = calloc(LLMT_STORE_MAX_CONNS, sizeof *s->conns)) ||
	    !(s->kvs = calloc(LLMT_STORE_MAX_KEYS, sizeof *s->kvs)) || !(s->ctx = munge_ctx_create())) {
		fmt_err(err, errlen, "store: out of memory");
		goto fail;
	}
	snprintf(s->job, sizeof s->job, "%s", job);
	s->uid = getuid();
	if (munge_socket && munge_ctx_set(s->ctx, MUNGE_OPT_SOCKET, munge_socket) != EMUNGE_SUCCESS) {
		fmt_err(err, errlen, "store: munge socket %s: %s", munge_socket, munge_ctx_strerror(s->ctx));
		goto fail;
	}
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0) {
		fmt_err(err, errlen, "store: socket: %s", strerror(errno));
		goto fail;
	}
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	sa.sin_port = htons((uint16_t)*port);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) || listen(s->lfd, 256) ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl)) {
		fmt_err(err, errlen, "store: listen on %s:%d: %s", bind_addr && *bind_addr ? bind_addr : "*",
			*port, strerror(errno));
		close(s->lfd);
		goto fail;
	}
	*port = ntohs(sa.sin_port);
	return s;
fail:
	if (s) {
		if (s->ctx)
			munge_ctx_destroy(s->ctx);
		free(s->conns);
		free(s->kvs);
		free(s);
	}
	return NULL;
}

unsigned llmt_store_refused(const llmt_store *s)
{
	return s->refused;
}

static void conn_close(llmt_store *s, unsigned i)
{
	struct conn *c = &s->conns[i];

	close(c->fd);
	free(c->in);
	free(c->out);
	s->conns[i] = s->conns[--s->nconns];
}

/* Queue one frame for c; -1 when its output buffer would pass a bound. */
static int queue(struct conn *c, char tag, const void *a, size_t alen)
{
	size_t need = 4 + (tag ? 1 : 0) + alen;
	uint32_t n = htonl((uint32_t)(need - 4));

	if (c->outlen + need > 4 * (size_t)FRAME_MAX)
		return -1;
	if (c->outlen + need > c->outcap) {
		size_t cap = c->outlen + need + 256;
		unsigned char *p = realloc(c->out, cap);
		if (!p)
			return -1;
		c->out = p;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, &n, 4);
	c->outlen += 4;
	if (tag)
		c->out[c->outlen++] = (unsigned char)tag;
	if (alen)
		memcpy(c->out + c->outlen, a, alen);
	c->outlen += alen;
	return 0;
}

static int queue_str(struct conn *c, const char *msg)
{
	return queue(c, 0, msg, strlen(msg));
}

static void refuse(llmt_store *s, struct conn *c, const char *why)
{
	char msg[300];

	s->refused++;
	fprintf(stderr, "llm-train store: refused %s: %s\n", c->peer, why);
	snprintf(msg, sizeof msg, "ERR %s", why);
	queue_str(c, msg);
	/* flush best effort, then the caller closes */
	if (c->outlen > c->outoff)
		(void)!send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int auth(llmt_store *s, struct conn *c, const unsigned char *cred, size_t len)
{
	char want[256], why[256], *text;
	void *payload = NULL;
	int plen = 0;
	uid_t uid;
	gid_t gid;
	munge_err_t e;

	if (len == 0 || len >= LLMT_STORE_CRED_MAX || memchr(cred, 0, len)) {
		refuse(s, c, "malformed credential");
		return -1;
	}
	text = strndup((const char *)cred, len);
	if (!text)
		return -1;
	e = munge_decode(text, s->ctx, &payload, &plen, &uid, &gid);
	free(text);
	if (e != EMUNGE_SUCCESS) {
		snprintf(why, sizeof why, "munge credential: %s", munge_strerror(e));
		free(payload);
		refuse(s, c, why);
		return -1;
	}
	if (uid != s->uid) {
		snprintf(why, sizeof why, "uid %u is not the job's user (uid %u)", (unsigned)uid, (unsigned)s->uid);
		free(payload);
		refuse(s, c, why);
		return -1;
	}
	snprintf(want, sizeof want, PAYLOAD_FMT, s->job, c->nonce);
	if (!payload || plen != (int)strlen(want) || memcmp(payload, want, (size_t)plen)) {
		snprintf(why, sizeof why, "credential of uid %u is not for job %s and this connection",
			 (unsigned)uid, s->job[0] ? s->job : "(none)");
		free(payload);
		refuse(s, c, why);
		return -1;
	}
	free(payload);
	c->state = ST_READY;
	return queue_str(c, "OK");
}

static struct kv *kv_find(llmt_store *s, const char *key)
{
	for (unsigned i = 0; i < s->nkvs; i++)
		if (!strcmp(s->kvs[i].key, key))
			return &s->kvs[i];
	return NULL;
}

/* Serve waiting GETs of key. */
static void wake(llmt_store *s, const struct kv *kv)
{
	for (unsigned i = 0; i < s->nconns; i++) {
		struct conn *c = &s->conns[i];
		if (c->state == ST_WAIT && !strcmp(c->want, kv->key)) {
			queue(c, 'V', kv->val, kv->len);
			c->state = ST_READY;
		}
	}
}

static int request(llmt_store *s, struct conn *c, const unsigned char *f, size_t len)
{
	const unsigned char *z;
	struct kv *kv;

	if (len < 2)
		return queue_str(c, "ERR empty request"), -1;
	if (f[0] == 'S') {
		z = memchr(f + 1, 0, len - 1);
		if (!z || z == f + 1 || (size_t)(z - f - 1) > LLMT_STORE_KEY_MAX)
			return queue_str(c, "ERR bad key"), -1;
		size_t vlen = len - (size_t)(z + 1 - f);
		if (vlen > LLMT_STORE_VALUE_MAX)
			return queue_str(c, "ERR value too large"), -1;
		kv = kv_find(s, (const char *)f + 1);
		if (!kv) {
			if (s->nkvs == LLMT_STORE_MAX_KEYS)
				return queue_str(c, "ERR store full"), -1;
			kv = &s->kvs[s->nkvs++];
			memcpy(kv->key, f + 1, (size_t)(z - f));
		}
		free(kv->val);
		kv->val = malloc(vlen + 1);
		if (!kv->val) {
			kv->len = 0;
			return queue_str(c, "ERR out of memory"), -1;
		}
		memcpy(kv->val, z + 1, vlen);
		kv->len = vlen;
		if (queue_str(c, "OK"))
			return -1;
		wake(s, kv);
		return 0;
	}
	if (f[0] == 'G') {
		if (len - 1 > LLMT_STORE_KEY_MAX || memchr(f + 1, 0, len - 1))
			return queue_str(c, "ERR bad key"), -1;
		memcpy(c->want, f + 1, len - 1);
		c->want[len - 1] = 0;
		kv = kv_find(s, c->want);
		if (kv)
			return queue(c, 'V', kv->val, kv->len);
		c->state = ST_WAIT;
		return 0;
	}
	return queue_str(c, "ERR unknown request"), -1;
}

/* Read what c has; handle whole frames. -1: close the connection. */
static int conn_read(llmt_store *s, struct conn *c)
{
	ssize_t r = recv(c->fd, c->in + c->inlen, FRAME_MAX + 4 - c->inlen, MSG_DONTWAIT);

	if (r == 0)
		return -1;
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	c->inlen += (size_t)r;
	while (c->inlen >= 4) {
		uint32_t n;
		memcpy(&n, c->in, 4);
		n = ntohl(n);
		size_t lim = c->state == ST_AUTH ? LLMT_STORE_CRED_MAX : FRAME_MAX;
		if (n > lim) {
			if (c->state == ST_AUTH)
				refuse(s, c, "oversized credential frame");
			return -1;
		}
		if (c->inlen < 4 + (size_t)n)
			return 0;
		if (c->state == ST_WAIT)
			return -1;   /* a request while a GET waits: protocol error */
		int rc = c->state == ST_AUTH ? auth(s, c, c->in + 4, n) : request(s, c, c->in + 4, n);
		memmove(c->in, c->in + 4 + n, c->inlen - 4 - n);
		c->inlen -= 4 + n;
		if (rc)
			return -1;
	}
	return 0;
}

static void accept_one(llmt_store *s)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof sa;
	unsigned char rnd[16];
	int fd = accept4(s->lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
	char host[INET_ADDRSTRLEN] = "?";

	if (fd < 0)
		return;
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
	if (s->nconns == LLMT_STORE_MAX_CONNS || getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		fprintf(stderr, "llm-train store: refused %s:%u: too many connections\n", host, ntohs(sa.sin_port));
		s->refused++;
		close(fd);
		return;
	}
	struct conn *c = &s->conns[s->nconns];
	memset(c, 0, sizeof *c);
	c->fd = fd;
	c->since = now_ms();
	snprintf(c->peer, sizeof c->peer, "%s:%u", host, ntohs(sa.sin_port));
	for (int i = 0; i < 16; i++)
		snprintf(c->nonce + 2 * i, 3, "%02x", rnd[i]);
	c->in = malloc(FRAME_MAX + 4);
	if (!c->in || queue_str(c, c->nonce)) {
		free(c->in);
		free(c->out);
		close(fd);
		return;
	}
	s->nconns++;
}

int llmt_store_serve(llmt_store *s, int idle_ms, volatile int *stop, char *err, size_t errlen)
{
	struct pollfd *pf = calloc(LLMT_STORE_MAX_CONNS + 1, sizeof *pf);
	int64_t last = now_ms();

	if (!pf) {
		fmt_err(err, errlen, "store: out of memory");
		return -1;
	}
	while (!(stop && *stop)) {
		unsigned n = s->nconns;
		pf[0] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		for (unsigned i = 0; i < n; i++)
			pf[i + 1] = (struct pollfd){ .fd = s->conns[i].fd,
				.events = POLLIN | (s->conns[i].outlen > s->conns[i].outoff ? POLLOUT : 0) };
		int r = poll(pf, n + 1, 100);
		int64_t t = now_ms();
		if (r < 0 && errno != EINTR) {
			fmt_err(err, errlen, "store: poll: %s", strerror(errno));
			free(pf);
			return -1;
		}
		if (r > 0)
			last = t;
		if (idle_ms > 0 && t - last > idle_ms)
			break;
		/* connections in reverse: conn_close moves the last one into i */
		for (unsigned i = n; i-- > 0;) {
			struct conn *c = &s->conns[i];
			int bad = 0;
			if (pf[i + 1].revents & (POLLERR | POLLNVAL))
				bad = 1;
			if (!bad && (pf[i + 1].revents & POLLOUT)) {
				ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL | MSG_DONTWAIT);
				if (w < 0 && errno != EAGAIN && errno != EINTR)
					bad = 1;
				else if (w > 0 && (c->outoff += (size_t)w) == c->outlen)
					c->outoff = c->outlen = 0;
			}
			if (!bad && (pf[i + 1].revents & (POLLIN | POLLHUP)))
				bad = conn_read(s, c) != 0;
			if (!bad && c->state == ST_AUTH && t - c->since > LLMT_STORE_AUTH_MS) {
				refuse(s, c, "no credential in time");
				bad = 1;
			}
			if (bad)
				conn_close(s, i);
		}
		if (pf[0].revents & POLLIN)
			for (int k = 0; k < 64 && s->nconns < LLMT_STORE_MAX_CONNS + 1; k++) {
				unsigned before = s->nconns, ref = s->refused;
				accept_one(s);
				if (s->nconns == before && s->refused == ref)
					break;
			}
	}
	free(pf);
	return 0;
}

void llmt_store_free(llmt_store *s)
{
	if (!s)
		return;
	while (s->nconns)
		conn_close(s, s->nconns - 1);
	for (unsigned i = 0; i < s->nkvs; i++)
		free(s->kvs[i].val);
	free(s->kvs);
	free(s->conns);
	close(s->lfd);
	munge_ctx_destroy(s->ctx);
	free(s);
}

/* ---- client ------------------------------------------------------------ */
static int wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };

	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return errno = ETIMEDOUT, -1;
		int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int send_all(int fd, const void *buf, size_t n, int64_t deadline)
{
	const char *p = buf;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(fd, POLLOUT, deadline))
				return -1;
		} else {
			return -1;
		}
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t n, int64_t deadline)
{
	char *p = buf;

	while (n) {
		ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
		} else if (r == 0) {
			return errno = ECONNRESET, -1;
		} else if (errno == EAGAIN || errno == EINTR) {
			if (wait_fd(fd, POLLIN, deadline))
				return -1;
		} else {
			return -1;
		}
	}
	return 0;
}

static int send_frame(int fd, char tag, const void *a, size_t alen, const void *b, size_t blen,
		      int64_t deadline)
{
	uint32_t n = htonl((uint32_t)((tag ? 1 : 0) + alen + blen));

	return send_all(fd, &n, 4, deadline) || (tag && send_all(fd, &tag, 1, deadline)) ||
	       send_all(fd, a, alen, deadline) || (blen && send_all(fd, b, blen, deadline)) ? -1 : 0;
}

/* Receive one frame into a new NUL-terminated buffer (max bytes). */
static unsigned char *recv_frame(int fd, size_t max, size_t *len, int64_t deadline)
{
	uint32_t n;
	unsigned char *p;

	if (recv_all(fd, &n, 4, deadline))
		return NULL;
	n = ntohl(n);
	if (n > max)
		return errno = EMSGSIZE, NULL;
	p = malloc((size_t)n + 1);
	if (!p)
		return NULL;
	if (recv_all(fd, p, n, deadline)) {
		free(p);
		return NULL;
	}
	p[n] = 0;
	*len = n;
	return p;
}

int llmt_store_connect(const char *host, int port, const char *job, const char *munge_socket,
		       int timeout_ms, const char *cred_in, char *cred_out, size_t cred_out_len,
		       char *err, size_t errlen)
{
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char portstr[16], payload[256];
	unsigned char *nonce = NULL, *reply = NULL;
	char *cred = NULL;
	size_t len;
	int fd = -1, rc;

	snprintf(portstr, sizeof portstr, "%d", port);
	if ((rc = getaddrinfo(host, portstr, &hints, &ai)) != 0) {
		fmt_err(err, errlen, "store: %s:%d: %s", host, port, gai_strerror(rc));
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		fmt_err(err, errlen, "store: connect %s:%d: %s", host, port, strerror(errno));
		goto fail;
	}
	nonce = recv_frame(fd, 64, &len, deadline);
	if (!nonce) {
		fmt_err(err, errlen, "store: %s:%d: no nonce: %s", host, port, strerror(errno));
		goto fail;
	}
	if (cred_in) {
		cred = strdup(cred_in);
	} else {
		munge_ctx_t ctx = munge_ctx_create();
		munge_err_t e;
		if (!ctx) {
			fmt_err(err, errlen, "store: out of memory");
			goto fail;
		}
		if (munge_socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, munge_socket) != EMUNGE_SUCCESS) {
			fmt_err(err, errlen, "store: munge socket %s: %s", munge_socket, munge_ctx_strerror(ctx));
			munge_ctx_destroy(ctx);
			goto fail;
		}
		snprintf(payload, sizeof payload, PAYLOAD_FMT, job ? job : "", (const char *)nonce);
		e = munge_encode(&cred, ctx, payload, (int)strlen(payload));
		if (e != EMUNGE_SUCCESS) {
			fmt_err(err, errlen, "store: munge_encode: %s", munge_ctx_strerror(ctx));
			munge_ctx_destroy(ctx);
			goto fail;
		}
		munge_ctx_destroy(ctx);
	}
	if (!cred) {
		fmt_err(err, errlen, "store: out of memory");
		goto fail;
	}
	if (cred_out && cred_out_len)
		snprintf(cred_out, cred_out_len, "%s", cred);
	if (send_frame(fd, 0, cred, strlen(cred), NULL, 0, deadline)) {
		fmt_err(err, errlen, "store: %s:%d: send: %s", host, port, strerror(errno));
		goto fail;
	}
	reply = recv_frame(fd, 512, &len, deadline);
	if (!reply || strcmp((char *)reply, "OK")) {
		if (reply && !strncmp((char *)reply, "ERR ", 4))
			fmt_err(err, errlen, "store: %s:%d: refused: %s", host, port, (char *)reply + 4);
		else
			fmt_err(err, errlen, "store: %s:%d: refused (connection closed)", host, port);
		goto fail;
	}
	free(reply);
	free(nonce);
	free(cred);
	freeaddrinfo(ai);
	return fd;
fail:
	free(reply);
	free(nonce);
	free(cred);
	if (ai)
		freeaddrinfo(ai);
	if (fd >= 0)
		close(fd);
	return -1;
}

int llmt_store_set(int fd, const char *key, const void *val, size_t len, char *err, size_t errlen)
{
	int64_t deadline = now_ms() + 30000;
	unsigned char *r;
	size_t n;

	if (!*key || strlen(key) > LLMT_STORE_KEY_MAX || len > LLMT_STORE_VALUE_MAX) {
		fmt_err(err, errlen, "store: set: key or value too large");
		return -1;
	}
	if (send_frame(fd, 'S', key, strlen(key) + 1, val, len, deadline) ||
	    !(r = recv_frame(fd, 512, &n, deadline))) {
		fmt_err(err, errlen, "store: set %s: %s", key, strerror(errno));
		return -1;
	}
	if (strcmp((char *)r, "OK")) {
		fmt_err(err, errlen, "store: set %s: %s", key, (char *)r);
		free(r);
		return -1;
	}
	free(r);
	return 0;
}

int llmt_store_get(int fd, const char *key, void *buf, size_t cap, size_t *len, int timeout_ms,
		   char *err, size_t errlen)
{
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
	unsigned char *r;
	size_t n;

	if (!*key || strlen(key) > LLMT_STORE_KEY_MAX) {
		fmt_err(err, errlen, "store: get: bad key");
		return -1;
	}
	if (send_frame(fd, 'G', key, strlen(key), NULL, 0, deadline) ||
	    !(r = recv_frame(fd, LLMT_STORE_VALUE_MAX + 1, &n, deadline))) {
		fmt_err(err, errlen, "store: get %s: %s", key, errno == ETIMEDOUT ? "timed out" : strerror(errno));
		return -1;
	}
	if (n == 0 || r[0] != 'V') {
		fmt_err(err, errlen, "store: get %s: %s", key, (char *)r);
		free(r);
		return -1;
	}
	*len = n - 1;
	if (n - 1 > cap) {
		fmt_err(err, errlen, "store: get %s: value of %zu bytes exceeds %zu", key, n - 1, cap);
		free(r);
		return -1;
	}
	memcpy(buf, r + 1, n - 1);
	free(r);
	return 0;
}

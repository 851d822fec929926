/* Unit tests of the live metrics' pure parts and server: the text
 * exposition of a view (labels escaped, NaN, per-rank series only for
 * ranks with timings), a metrics.jsonl line read back, [HOST:]PORT, and
 * the /metrics server answering GET /metrics with the document and
 * anything else with 404, and serving a scrape at once while other
 * clients (any user of the node can connect) trickle their request a byte
 * at a time, stay silent, read slowly or never read the answer, and while
 * more connect than its table holds. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <math.h>
#include <signal.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wrapper/http.h"
#include "wrapper/live.h"
#include "wrapper/prom.h"

static void test_exposition(void **state)
{
	(void)state;
	struct wr_metric_rec m;
	memset(&m, 0, sizeof m);
	assert_int_equal(wr_metric_parse("{\"step\":7,\"loss\":3.25,\"grad_norm\":1.5,\"lr\":0.001,\"tokens_per_s\":100,"
	                                 "\"mfu\":null,\"step_time_s\":0.5}\n", &m), 0);
	assert_int_equal(wr_metric_parse("{\"loss\":1}", &m), -1);
	assert_int_equal(m.step, 7);
	assert_true(isnan(m.mfu));
	struct wr_hb hb[2];
	memset(hb, 0, sizeof hb);
	hb[0].valid = hb[1].valid = true;
	hb[0].step = 7;
	hb[1].step = 6;
	snprintf(hb[0].host, sizeof hb[0].host, "n\"1");
	snprintf(hb[1].host, sizeof hb[1].host, "n2");
	assert_int_equal(wr_rank_times_parse("timing 2 1 1 0.5 0.1 0.2 0.1 0.1 0 0  0.6 0.3 0.05 0.1 0.1 0.05 0 0", &hb[0].t), 0);
	struct wr_live_view v = { .job = "42", .attempt = 1, .m = &m, .hb = hb, .nranks = 2 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	wr_prom_live(f, &v);
	fclose(f);
	assert_non_null(strstr(text, "llm_train_step{job=\"42\"} 7\n"));
	assert_non_null(strstr(text, "llm_train_loss{job=\"42\"} 3.25\n"));
	assert_non_null(strstr(text, "llm_train_mfu{job=\"42\"} NaN\n"));
	assert_non_null(strstr(text, "llm_train_rank_step_seconds{job=\"42\",rank=\"0\",node=\"n\\\"1\"} 0.6\n"));
	assert_non_null(strstr(text, "llm_train_rank_comm_wait_seconds{job=\"42\",rank=\"0\",node=\"n\\\"1\",group=\"pp\"} 0.1\n"));
	assert_non_null(strstr(text, "llm_train_rank_step{job=\"42\",rank=\"1\",node=\"n2\"} 6\n"));
	/* rank 1 has no timing line: no compute series for it */
	assert_null(strstr(text, "llm_train_rank_compute_seconds{job=\"42\",rank=\"1\""));
	assert_non_null(strstr(text, "# TYPE llm_train_rank_seconds_total counter\n"));
	free(text);
}

static char *label(const char *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	wr_prom_label(f, v);
	fclose(f);
	return text;
}

/* Label values are the user's bytes (SLURM_JOB_ID, a heartbeat's host,
 * cut at 63 bytes); one that is not UTF-8 made Prometheus, node_exporter
 * and `promtool check metrics` refuse the whole text (red before: "4\xff2"
 * written as it came). */
static void test_label_utf8(void **state)
{
	(void)state;
	static const char *const in[][2] = {
		{ "4\xff" "2", "4?2" },                          /* not a lead byte */
		{ "\xc0\xaf", "??" },                             /* overlong '/' */
		{ "\xe0\x80\xaf", "???" },                         /* overlong, 3 bytes */
		{ "\xed\xa0\x80", "???" },                         /* a UTF-16 surrogate */
		{ "\xf4\x90\x80\x80", "????" },                     /* past U+10FFFF */
		{ "n1\xc3", "n1?" },                               /* cut in a sequence (%63s) */
		{ "\xe2\x82" "x", "??x" },
		{ "caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80" },   /* valid: kept */
		{ "a\\b\"c\nd", "a\\\\b\\\"c\\nd" },                    /* the three escapes */
	};
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		char *t = label(in[i][0]);
		if (strcmp(t, in[i][1]) != 0)
			fail_msg("label %zu: got '%s', want '%s'", i, t, in[i][1]);
		free(t);
	}
	/* the whole exposition with such a job and node passes promtool */
	struct wr_hb hb[1];
	memset(hb, 0, sizeof hb);
	hb[0].valid = true;
	snprintf(hb[0].host, sizeof hb[0].host, "n\xff\xc0\xaf\n\"x\xed\xa0\x80");
	assert_int_equal(wr_rank_times_parse("timing 2 1 1 0.5 0.1 0.2 0.1 0.1 0 0  0.6 0.3 0.05 0.1 0.1 0.05 0 0", &hb[0].t), 0);
	struct wr_metric_rec m;
	assert_int_equal(wr_metric_parse("{\"step\":3,\"loss\":1.5}", &m), 0);
	struct wr_live_view v = { .job = "4\xff\xfe\"2\\", .attempt = 0, .m = &m, .hb = hb, .nranks = 1 };
	char path[] = "/tmp/llmt-prom-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	wr_prom_live(f, &v);
	fclose(f);
	if (access("/usr/bin/promtool", X_OK) == 0) {
		char cmd[200];
		snprintf(cmd, sizeof cmd, "/usr/bin/promtool check metrics < %s", path);
		int rc = system(cmd);
		assert_int_equal(rc, 0);
	} else {
		printf("note: /usr/bin/promtool missing: the text not checked by it\n");
	}
	unlink(path);
}

static void test_addr(void **state)
{
	(void)state;
	char host[64];
	int port = -1;
	assert_int_equal(wr_http_addr("9100", host, sizeof host, &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 9100);
	assert_int_equal(wr_http_addr("0.0.0.0:0", host, sizeof host, &port), 0);
	assert_string_equal(host, "0.0.0.0");
	assert_int_equal(port, 0);
	assert_int_equal(wr_http_addr("::1:8080", host, sizeof host, &port), 0);
	assert_string_equal(host, "::1");
	/* strtol alone took " 80", "+80", "-0" (port 0: any) and "127.0.0.1: 80" */
	const char *bad[] = { "", "x", "65536", "-1", ":80", "1.2.3.4:", "80x", " 80", "+80", "-0",
	                      "127.0.0.1: 80", "99999999999999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (wr_http_addr(bad[i], host, sizeof host, &port) == 0)
			fail_msg("'%s' accepted", bad[i]);
}

/* The one client of these tests: a connection to the server (its reads
 * time out after 10 s, so a server that never answers fails the test
 * instead of hanging it; rcvbuf > 0: that receive buffer, a reader that
 * keeps the server sending) and, with get, one request read to its end. */
static int dial(int port, int rcvbuf)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 10 };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(s >= 0);
	assert_int_equal(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	if (rcvbuf > 0)
		assert_int_equal(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof a), 0);
	return s;
}

static void get(int port, const char *req, char *out, size_t len)
{
	int s = dial(port, 0);
	assert_true(write(s, req, strlen(req)) == (ssize_t)strlen(req));
	size_t n = 0;
	ssize_t r;
	while (n + 1 < len && (r = read(s, out + n, len - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(s);
}

static void test_server(void **state)
{
	(void)state;
	int port = 0;
	char buf[4096];
	assert_null(wr_http_start("not-an-ip", 0, &port));
	struct wr_http *h = wr_http_start("127.0.0.1", 0, &port);
	assert_non_null(h);
	assert_true(port > 0);
	wr_http_set(h, "llm_train_step{job=\"1\"} 3\n", 26);
	get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
	assert_non_null(strstr(buf, "HTTP/1.0 200 OK"));
	assert_non_null(strstr(buf, "Content-Length: 26\r\n"));
	assert_non_null(strstr(buf, "\r\n\r\nllm_train_step{job=\"1\"} 3\n"));
	get(port, "GET /etc/passwd HTTP/1.0\r\n\r\n", buf, sizeof buf);
	assert_non_null(strstr(buf, "404"));
	wr_http_stop(h);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Before: each recv had its own 2 s deadline and none the request, so a
 * client sending a byte a second held the one-at-a-time server for over
 * an hour (4 KiB) and every scrape waited behind it. */
static void test_server_slowloris(void **state)
{
	(void)state;
	int port = 0;
	char buf[4096];
	struct wr_http *h = wr_http_start("127.0.0.1", 0, &port);
	assert_non_null(h);
	wr_http_set(h, "x 1\n", 4);
	int slow = dial(port, 0);
	pid_t pid = fork();
	if (pid == 0) {    /* the trickler: "GET " and a byte every 0.5 s for 8 s */
		for (int i = 0; i < 16 && send(slow, "G", 1, MSG_NOSIGNAL) == 1; i++)
			usleep(500 * 1000);
		_exit(0);
	}
	usleep(200 * 1000);
	double t0 = now_s();
	get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof buf);
	double took = now_s() - t0;
	assert_non_null(strstr(buf, "200 OK"));
	if (took > 4.0)
		fail_msg("a scrape waited %.1f s behind a slow client", took);
	close(slow);
	waitpid(pid, NULL, 0);
	wr_http_stop(h);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "the server blocked the caller behind a client that does not read\n";
	if (write(2, m, sizeof m - 1) < 0) { /* exiting anyway */ }
	_exit(1);
}

/* Before: the answer was sent while holding the document's lock, with no
 * deadline: a client that asks and never reads (a large document fills
 * the socket buffers) blocked wr_http_set, i.e. the wrapper's main loop,
 * and wr_http_stop at the job's end, forever. */
static void test_server_stuck_reader(void **state)
{
	(void)state;
	int port = 0;
	char buf[4096];
	size_t big = 16u << 20;
	char *doc = malloc(big);
	assert_non_null(doc);
	memset(doc, 'x', big);
	struct wr_http *h = wr_http_start("127.0.0.1", 0, &port);
	assert_non_null(h);
	wr_http_set(h, doc, big);
	int stuck = dial(port, 0);
	assert_int_equal(send(stuck, "GET /metrics HTTP/1.0\r\n\r\n", 25, 0), 25);
	usleep(300 * 1000);
	signal(SIGALRM, on_alarm);
	alarm(20);
	wr_http_set(h, "y 2\n", 4);    /* the main loop's next update */
	get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof buf);
	assert_non_null(strstr(buf, "\r\n\r\ny 2\n"));
	wr_http_stop(h);
	alarm(0);
	close(stuck);
	free(doc);
}

/* 1 when the server answered or closed s within ms, 0 when s is silent */
static int answered(int s, int ms)
{
	struct pollfd p = { s, POLLIN, 0 };
	return poll(&p, 1, ms) > 0;
}

/* Before: one connection at a time. Twelve silent connections made first
 * cost a scrape 2 s each (24 s, past Prometheus' 10 s scrape timeout)
 * with the head deadline alone, ~2.5 s with the 0.2 s yield; a client
 * that asks and reads slowly held the server for its 5 s answer deadline
 * and five of them 25 s. Now the server serves every connection at once:
 * with 20 silent connections and 5 slow readers open, the scrape is
 * answered while all of them are still open and none of the silent ones
 * has been answered or closed (each has 2 s for its request); the slow
 * readers get the document of their request (their own snapshot, though
 * it was replaced since); and wr_http_stop ends them all at once. */
static void test_server_flood(void **state)
{
	(void)state;
	int port = 0, silent[20], slow[5];
	char buf[4096];
	size_t big = 8u << 20;    /* more than the socket buffers hold */
	char *doc = malloc(big);
	assert_non_null(doc);
	memset(doc, 'x', big);
	struct wr_http *h = wr_http_start("127.0.0.1", 0, &port);
	assert_non_null(h);
	wr_http_set(h, doc, big);
	for (int i = 0; i < 5; i++) {
		slow[i] = dial(port, 4096);
		assert_int_equal(send(slow[i], "GET /metrics HTTP/1.0\r\n\r\n", 25, 0), 25);
	}
	for (int i = 0; i < 20; i++)
		silent[i] = dial(port, 0);
	usleep(200 * 1000);
	wr_http_set(h, "x 1\n", 4);
	get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof buf);
	assert_non_null(strstr(buf, "200 OK"));
	assert_non_null(strstr(buf, "Content-Length: 4\r\n"));
	assert_non_null(strstr(buf, "\r\n\r\nx 1\n"));
	for (int i = 0; i < 20; i++)
		if (answered(silent[i], 0))
			fail_msg("silent connection %d answered or closed before the scrape was done", i);
	/* a slow reader, read to its end: the document it asked for */
	size_t got = 0;
	ssize_t r;
	while ((r = read(slow[0], buf, sizeof buf)) > 0)
		got += (size_t)r;
	close(slow[0]);
	assert_true(got > big && got < big + 256);
	signal(SIGALRM, on_alarm);
	alarm(5);
	wr_http_stop(h);
	alarm(0);
	for (int i = 0; i < 20; i++) {
		assert_true(answered(silent[i], 1000));    /* closed by wr_http_stop */
		close(silent[i]);
	}
	for (int i = 1; i < 5; i++)
		close(slow[i]);
	free(doc);
}

/* 40 silent connections, more than the server's table (32): the oldest
 * are closed to make room, in the order they came, the newest stay open,
 * and a scrape made after them all is answered at once. */
static void test_server_table_full(void **state)
{
	(void)state;
	int port = 0, s[40];
	char buf[4096];
	struct wr_http *h = wr_http_start("127.0.0.1", 0, &port);
	assert_non_null(h);
	wr_http_set(h, "x 1\n", 4);
	for (int i = 0; i < 40; i++) {
		s[i] = dial(port, 0);
		usleep(2000);    /* accepted in this order */
	}
	get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof buf);
	assert_non_null(strstr(buf, "\r\n\r\nx 1\n"));
	/* 40 + the scrape in 32 places: the first 9 made room */
	for (int i = 0; i < 9; i++)
		if (!answered(s[i], 1000))
			fail_msg("connection %d (of the oldest) still open", i);
	for (int i = 9; i < 40; i++)
		if (answered(s[i], 0))
			fail_msg("connection %d (of the newest) closed", i);
	wr_http_stop(h);
	for (int i = 0; i < 40; i++)
		close(s[i]);
}

static void fill_text(FILE *f, void *arg)
{
	fputs(arg, f);
}

/* Before: --metrics-textfile (e.g. in node_exporter's shared textfile
 * directory) was written through PATH.tmp.PID, opened with fopen "w":
 * another user who made that name a link (or their own file) first had
 * the wrapper truncate and write the link's target, a file of the job's
 * user (~/.bashrc here). Now the temporary name is unpredictable and
 * created exclusively, never through a link. */
static void test_write_atomic_planted_tmp(void **state)
{
	(void)state;
	char dir[] = "/tmp/llmt-wa.XXXXXX", path[300], tmp[400], victim[300], buf[64] = "";
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/job.prom", dir);
	snprintf(victim, sizeof victim, "%s/bashrc", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	FILE *v = fopen(victim, "w");
	assert_non_null(v);
	fputs("precious\n", v);
	fclose(v);
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(wr_write_atomic(path, fill_text, "x 1\n"), 0);
	v = fopen(victim, "r");
	assert_non_null(v);
	assert_non_null(fgets(buf, sizeof buf, v));
	fclose(v);
	assert_string_equal(buf, "precious\n");
	v = fopen(path, "r");
	assert_non_null(v);
	assert_non_null(fgets(buf, sizeof buf, v));
	fclose(v);
	assert_string_equal(buf, "x 1\n");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	mode_t um = umask(0);
	umask(um);
	assert_int_equal(st.st_mode & 0777, 0666 & ~um);    /* as fopen made it */
	unlink(tmp);
	unlink(path);
	unlink(victim);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_label_utf8),
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_server_slowloris),
		cmocka_unit_test(test_server_stuck_reader),
		cmocka_unit_test(test_server_flood),
		cmocka_unit_test(test_server_table_full),
		cmocka_unit_test(test_write_atomic_planted_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

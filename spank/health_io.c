/* health_io.c: node health, I/O part: bounded kernel log reading, GPU
 * device counting, free space and running scontrol with a timeout. Every
 * call is bounded in bytes and time because it runs inside slurmd's
 * prolog/epilog where a hang holds the node. */
#define _GNU_SOURCE
#include "health_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t llmt_monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void)
{
	return llmt_monotonic_us() / 1000;
}

/* /dev/kmsg: every read() returns exactly one record; EAGAIN at the end. */
static int scan_kmsg(int fd, size_t max_bytes, int64_t deadline_ms,
                     struct llmt_health_scan *scan, char *err, size_t errlen)
{
	char rec[8192];
	size_t total = 0;
	/* A fresh open reads from the oldest record still in the ring buffer. */
	while (total < max_bytes) {
		if (now_ms() > deadline_ms)
			break;
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EPIPE || errno == EINTR)
				continue;    /* record overwritten while reading */
			snprintf(err, errlen, "read /dev/kmsg: %s", strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		llmt_health_scan_line(scan, rec, (size_t)n);
	}
	return 0;
}

static int scan_file(int fd, size_t max_bytes, int64_t deadline_ms,
                     struct llmt_health_scan *scan, const char *path, char *err, size_t errlen)
{
	char buf[16384];
	char line[LLMT_KLOG_MAX_LINE];
	size_t ll = 0, total = 0;
	int skipping = 0;    /* inside a line longer than LLMT_KLOG_MAX_LINE */
	while (total < max_bytes && now_ms() <= deadline_ms) {
		size_t want = sizeof(buf);
		if (want > max_bytes - total)
			want = max_bytes - total;
		ssize_t n = read(fd, buf, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "read %s: %s", path, strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				if (ll > 0)
					llmt_health_scan_line(scan, line, ll);
				ll = 0;
				skipping = 0;
			} else if (!skipping) {
				if (ll < sizeof(line))
					line[ll++] = buf[i];
				else {
					llmt_health_scan_line(scan, line, ll);
					ll = 0;
					skipping = 1;
				}
			}
		}
	}
	if (ll > 0)
		llmt_health_scan_line(scan, line, ll);
	return 0;
}

int llmt_klog_scan(const char *path, int64_t since_us, size_t max_bytes, int timeout_ms,
                   struct llmt_health_scan *scan, char *err, size_t errlen)
{
	const char *p = (path && *path) ? path : "/dev/kmsg";
	if (max_bytes == 0 || max_bytes > LLMT_KLOG_MAX_BYTES)
		max_bytes = LLMT_KLOG_MAX_BYTES;
	llmt_health_scan_init(scan, since_us);
	if (p[0] != '/') {
		snprintf(err, errlen, "kernel log path %s is not absolute", p);
		return -1;
	}
	int fd = open(p, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(err, errlen, "open %s: %s", p, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "stat %s: %s", p, strerror(errno));
		close(fd);
		return -1;
	}
	int rc;
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 2000);
	if (S_ISCHR(st.st_mode)) {
		rc = scan_kmsg(fd, max_bytes, deadline, scan, err, errlen);
	} else if (S_ISREG(st.st_mode)) {
		if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
			snprintf(err, errlen, "%s: refusing a file not owned by root or writable by others", p);
			close(fd);
			return -1;
		}
		rc = scan_file(fd, max_bytes, deadline, scan, p, err, errlen);
	} else {
		snprintf(err, errlen, "%s: not a kernel log device or regular file", p);
		rc = -1;
	}
	close(fd);
	return rc;
}

int llmt_gpu_count(const char *dev_dir, char *err, size_t errlen)
{
	const char *d = (dev_dir && *dev_dir) ? dev_dir : "/dev";
	int dfd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "open %s: %s", d, strerror(errno));
		return -1;
	}
	DIR *dir = fdopendir(dfd);
	if (!dir) {
		snprintf(err, errlen, "opendir %s: %s", d, strerror(errno));
		close(dfd);
		return -1;
	}
	int count = 0;
	unsigned seen = 0;
	struct dirent *e;
	while ((e = readdir(dir)) != NULL && seen++ < 100000) {
		const char *n = e->d_name;
		if (strncmp(n, "nvidia", 6) != 0 || n[6] == '\0')
			continue;
		size_t i = 6;
		while (n[i] >= '0' && n[i] <= '9')
			i++;
		if (n[i] == '\0')
			count++;
	}
	closedir(dir);
	return count;
}

int llmt_free_bytes(const char *root, uint64_t *avail, char *err, size_t errlen)
{
	struct statvfs sv;
	if (!root || root[0] != '/') {
		snprintf(err, errlen, "checkpoint root %s is not absolute", root ? root : "(null)");
		return -1;
	}
	if (statvfs(root, &sv) != 0) {
		snprintf(err, errlen, "statvfs %s: %s", root, strerror(errno));
		return -1;
	}
	*avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	return 0;
}

char *const llmt_child_env[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *)"LANG=C", NULL };

/* Reaps pid if it has ended; a child stuck in the kernel (uninterruptible
 * I/O) is left behind: init reaps it once the caller has exited. */
static void abandon(pid_t pid)
{
	kill(pid, SIGKILL);
	for (int i = 0; i < 10; i++) {
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return;
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

int llmt_call_bounded(llmt_bounded_fn fn, const void *arg, void *out, size_t outlen,
		      int timeout_ms, const char *what, char *err, size_t errlen)
{
	/* what the child sends: rc, err text, then out */
	struct reply { int rc; char err[512]; };
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "%s: pipe: %s", what, strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "%s: fork: %s", what, strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		struct reply r;
		memset(&r, 0, sizeof(r));
		r.rc = fn(arg, out, r.err, sizeof(r.err));
		int ok = write(fds[1], &r, sizeof(r)) == (ssize_t)sizeof(r) &&
			 write(fds[1], out, outlen) == (ssize_t)outlen;
		_exit(ok ? 0 : 1);
	}
	close(fds[1]);
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
	struct reply r;
	size_t want = sizeof(r) + outlen, got = 0;
	char *buf = malloc(want);
	int rc = -1;
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", what);
		goto done;
	}
	while (got < want) {
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			snprintf(err, errlen, "%s timed out after %d ms", what, timeout_ms);
			goto done;
		}
		struct pollfd pf = { fds[0], POLLIN, 0 };
		int pr = poll(&pf, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		ssize_t n = read(fds[0], buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "%s: the checking process died", what);
			goto done;
		}
		got += (size_t)n;
	}
	memcpy(&r, buf, sizeof(r));
	memcpy(out, buf + sizeof(r), outlen);
	r.err[sizeof(r.err) - 1] = '\0';
	rc = r.rc;
	if (rc != 0)
		snprintf(err, errlen, "%s", r.err);
done:
	free(buf);
	close(fds[0]);
	if (rc == 0 || got == want) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	} else {
		abandon(pid);
	}
	return rc;
}

struct klog_args { const char *path; int64_t since_us; int timeout_ms; };

static int klog_child(const void *arg, void *out, char *err, size_t errlen)
{
	const struct klog_args *a = arg;
	return llmt_klog_scan(a->path, a->since_us, 0, a->timeout_ms, out, err, errlen);
}

int llmt_klog_scan_bounded(const char *path, int64_t since_us, int timeout_ms,
			   struct llmt_health_scan *scan, char *err, size_t errlen)
{
	/* the scan stops itself at the deadline; the child's own bound is a
	 * little later so that a read stuck in the kernel is the only cause */
	struct klog_args a = { path, since_us, timeout_ms };
	llmt_health_scan_init(scan, since_us);
	return llmt_call_bounded(klog_child, &a, scan, sizeof(*scan), timeout_ms + 500,
				 "kernel log scan", err, errlen);
}

static int gpu_child(const void *arg, void *out, char *err, size_t errlen)
{
	int n = llmt_gpu_count(arg, err, errlen);
	*(int *)out = n;
	return n < 0 ? -1 : 0;
}

int llmt_gpu_count_bounded(const char *dev_dir, int timeout_ms, char *err, size_t errlen)
{
	int n = -1;
	if (llmt_call_bounded(gpu_child, dev_dir, &n, sizeof(n), timeout_ms, "GPU count", err,
			      errlen) != 0)
		return -1;
	return n;
}

static int space_child(const void *arg, void *out, char *err, size_t errlen)
{
	return llmt_free_bytes(arg, out, err, errlen);
}

int llmt_free_bytes_bounded(const char *root, uint64_t *avail, int timeout_ms,
			    char *err, size_t errlen)
{
	*avail = 0;
	return llmt_call_bounded(space_child, root, avail, sizeof(*avail), timeout_ms,
				 "statvfs", err, errlen);
}

int llmt_run_bounded(char *const argv[], int timeout_ms, char *err, size_t errlen)
{
	if (!argv || !argv[0] || argv[0][0] != '/') {
		snprintf(err, errlen, "command %s is not an absolute path", argv && argv[0] ? argv[0] : "(null)");
		return -1;
	}
	/* The fixed environment, plus the daemon's own SLURM_CONF (slurmd
	 * sets it in the prolog/epilog environment from its configuration;
	 * the job's environment never reaches here) so that scontrol finds
	 * the cluster a slurmd started with -f serves. */
	char conf[1100];
	char *env[4] = { llmt_child_env[0], llmt_child_env[1], NULL, NULL };
	const char *sc = getenv("SLURM_CONF");
	if (sc && sc[0] == '/' && strlen(sc) < 1024 && strcspn(sc, "\n\r\t") == strlen(sc)) {
		snprintf(conf, sizeof(conf), "SLURM_CONF=%s", sc);
		env[2] = conf;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
		execve(argv[0], argv, env);
		_exit(127);
	}
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 5000);
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			snprintf(err, errlen, "waitpid %s: %s", argv[0], strerror(errno));
			return -1;
		}
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			snprintf(err, errlen, "%s timed out after %d ms", argv[0], timeout_ms);
			return -1;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (WIFEXITED(status)) {
		if (WEXITSTATUS(status) == 127)
			snprintf(err, errlen, "%s could not be run", argv[0]);
		else if (WEXITSTATUS(status) != 0)
			snprintf(err, errlen, "%s exited with %d", argv[0], WEXITSTATUS(status));
		return WEXITSTATUS(status);
	}
	snprintf(err, errlen, "%s killed by signal %d", argv[0], WTERMSIG(status));
	return -1;
}

/* health_io.c: node health, I/O part: bounded kernel log reading, GPU
 * device counting, free space and running scontrol with a timeout. Every
 * call is bounded in bytes and time because it runs inside slurmd's
 * prolog/epilog where a hang holds the node. */
#define _GNU_SOURCE
#include "health_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

int llmt_run_bounded(char *const argv[], int timeout_ms, char *err, size_t errlen)
{
	if (!argv || !argv[0] || argv[0][0] != '/') {
		snprintf(err, errlen, "command %s is not an absolute path", argv && argv[0] ? argv[0] : "(null)");
		return -1;
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
		execv(argv[0], argv);
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

/* health_selftest.c: the prolog's self-test run (health_io.h's
 * llmt_selftest_run): the admin's llm-train in a child of its own process
 * group, the fixed environment (TMPDIR the caller's private directory),
 * its stdout read bounded in bytes and time,
 * the whole group killed at the deadline. */
#define _GNU_SOURCE
#include "health_io.h"
#include "llmt_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void child(const char *cmd, const char *tmpdir, int wfd)
{
	/* Open MPI starts as a singleton; as root only when told it may; its
	 * session directory in the caller's private tmpdir, not /tmp */
	char tmp[LLMT_PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "TMPDIR=%s", tmpdir);
	char *env[] = { llmt_child_env[0], llmt_child_env[1], "OMPI_ALLOW_RUN_AS_ROOT=1",
	                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMP_NUM_THREADS=1", tmp, NULL };
	char *argv[] = { (char *)cmd, "selftest", "--size", "small", NULL };
	setpgid(0, 0);
	int nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 2);
	}
	dup2(wfd, 1);
	execve(cmd, argv, env);
	_exit(127);
}

int llmt_selftest_run(const char *cmd, const char *tmpdir, int timeout_ms, char *out, size_t outlen,
		      char *err, size_t errlen)
{
	int p[2];
	if (!cmd || cmd[0] != '/' || outlen < 1) {
		snprintf(err, errlen, "self-test command %s is not an absolute path", cmd ? cmd : "(null)");
		return -1;
	}
	if (!tmpdir || tmpdir[0] != '/' || strlen(tmpdir) >= LLMT_PATH_MAX + 16) {
		snprintf(err, errlen, "self-test TMPDIR %s is not an absolute path", tmpdir ? tmpdir : "(null)");
		return -1;
	}
	if (pipe2(p, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0)
		child(cmd, tmpdir, p[1]);
	setpgid(pid, pid);
	close(p[1]);
	size_t n = 0;
	int64_t deadline = ms_now() + (timeout_ms > 0 ? timeout_ms : 60000);
	int status = 0, timed_out = 0, eof = 0;
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		/* read what there is (a descendant holding the pipe is not waited for) */
		while (!eof) {
			char junk[4096];
			ssize_t r = n + 1 < outlen ? read(p[0], out + n, outlen - 1 - n) : read(p[0], junk, sizeof junk);
			if (r > 0 && n + 1 < outlen)
				n += (size_t)r;
			else if (r == 0 || (r < 0 && errno != EINTR))
				break;
			if (r == 0)
				eof = 1;
		}
		if (w == pid)
			break;
		int64_t left = deadline - ms_now();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		struct pollfd pf = { eof ? -1 : p[0], POLLIN, 0 };
		poll(&pf, 1, (int)(left < 50 ? left : 50));
	}
	close(p[0]);
	out[n] = '\0';
	if (timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		snprintf(err, errlen, "%s selftest timed out after %d ms", cmd, timeout_ms);
		return -1;
	}
	kill(-pid, SIGKILL);   /* leftovers of the group (an MPI helper) */
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	snprintf(err, errlen, "%s selftest killed by signal %d", cmd, WTERMSIG(status));
	return -1;
}

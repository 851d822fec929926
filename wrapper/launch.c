/* launch: checkpoint choice through the checkpoint tool and the fork/exec
 * of srun. The tool owns the checkpoint format (manifest, checksums);
 * here we only read the one manifest flag the recovery policy needs. */
#define _GNU_SOURCE
#include "launch.h"
#include "include/llmt/ckptgen.h"
#include "include/llmt/exitcodes.h"
#include "rdfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool shield;

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void wr_shield_children(bool on)
{
	shield = on;
}

static void child_signals(void)
{
	sigset_t mask;
	sigemptyset(&mask);
	if (shield) {
		/* A blocked signal stays blocked across exec: the command
		 * finishes even while Slurm is signalling the requeued job. */
		sigaddset(&mask, SIGTERM);
		sigaddset(&mask, SIGINT);
		sigaddset(&mask, SIGHUP);
		sigaddset(&mask, SIGUSR1);
		sigaddset(&mask, SIGUSR2);
	}
	sigprocmask(SIG_SETMASK, &mask, NULL);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
}

/* Reads both pipes to EOF (bounded by the buffers; the rest is dropped)
 * or until deadline (mono() seconds; <= 0: none). False when the
 * deadline came first (the pipes are closed then). */
static bool drain2(int ofd, char *out, size_t len, int efd, char *err, size_t errlen, double deadline)
{
	size_t on = 0, en = 0;
	struct pollfd p[2] = { { ofd, POLLIN, 0 }, { efd, POLLIN, 0 } };
	int open_ = 2;
	bool in_time = true;
	char junk[4096];
	while (open_ > 0) {
		double left = deadline > 0 ? deadline - mono() : -1;
		if (deadline > 0 && left <= 0) {
			in_time = false;
			break;
		}
		int rc = poll(p, 2, left < 0 ? -1 : (int)(left * 1000) + 1);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char *buf = i ? err : out;
			size_t *n = i ? &en : &on, cap = i ? errlen : len;
			ssize_t r;
			if (buf && *n + 1 < cap)
				r = read(p[i].fd, buf + *n, cap - 1 - *n);
			else
				r = read(p[i].fd, junk, sizeof junk);
			if (r > 0 && buf && *n + 1 < cap)
				*n += (size_t)r;
			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
				close(p[i].fd);
				p[i].fd = -1;
				open_--;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	if (out && len)
		out[on] = '\0';
	if (err && errlen)
		err[en] = '\0';
	return in_time;
}

/* Waits for pid until deadline (<= 0: none); past it, SIGKILL to pid (our
 * own child, not yet reaped: the pid is still ours) and reaps it. Its
 * exit code, 128 + signal, -1, or WR_RUN_TIMEDOUT. */
static int reap(pid_t pid, double deadline, bool killed)
{
	int st;
	for (;;) {
		pid_t w = waitpid(pid, &st, killed || deadline <= 0 ? 0 : WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		if (w == 0 && mono() >= deadline) {
			kill(pid, SIGKILL);
			killed = true;
		} else if (w == 0) {
			poll(NULL, 0, 10);
		}
	}
	if (killed)
		return WR_RUN_TIMEDOUT;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int wr_run_capture_timeout(char *const argv[], char *out, size_t len, char *err, size_t errlen, double timeout_s)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(pe, O_CLOEXEC) != 0) {
		close(po[0]);
		close(po[1]);
		return -1;
	}
	double deadline = timeout_s > 0 ? mono() + timeout_s : 0;
	pid_t pid = fork();
	if (pid < 0) {
		close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
		return -1;
	}
	if (pid == 0) {
		child_signals();
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	bool in_time = drain2(po[0], out, len, pe[0], err, errlen, deadline);
	if (!in_time)
		kill(pid, SIGKILL);
	return reap(pid, deadline, !in_time);
}

int wr_run_capture(char *const argv[], char *out, size_t len, char *err, size_t errlen)
{
	return wr_run_capture_timeout(argv, out, len, err, errlen, 0);
}

/* A listed checkpoint's generation (include/llmt/ckptgen.h): its
 * manifest's (llm-train) or its marker's (the llm_train Python module);
 * 0 without either or without the field, or with a bad one (the listers
 * refuse those; another tool's). */
static long long ckpt_generation(const char *dir)
{
	static const char *const names[] = { "manifest.json", "llm_train.complete" };
	char p[4200];
	json_error_t je;
	long long g = 0;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		json_t *m = wr_json_load_file(p, &je);
		if (!m)
			continue;
		if (llmt_ckpt_gen_parse(json_object_get(m, "generation"), &g))
			g = 0;
		json_decref(m);
		break;
	}
	return g;
}

/* newest first: the generation, then the step */
static int newest_first(const void *a, const void *b)
{
	const struct wr_ckpt *x = a, *y = b;
	if (x->gen != y->gen)
		return x->gen < y->gen ? 1 : -1;
	if (x->step != y->step)
		return x->step < y->step ? 1 : -1;
	return -strcmp(x->path, y->path);
}

int wr_ckpt_list(const char *tool, const char *dir, struct wr_ckpt *out, int max,
                 struct wr_ledger *l)
{
	static char obuf[1 << 20], ebuf[1 << 16];
	char *argv[] = { (char *)tool, "ckpt-list", (char *)dir, NULL };
	int rc = wr_run_capture(argv, obuf, sizeof obuf, ebuf, sizeof ebuf);
	/* Every stderr line of a listing is a checkpoint the tool refused:
	 * report it; a failed listing's lines say why it failed */
	for (char *save = NULL, *ln = strtok_r(ebuf, "\n", &save); ln && rc != 127; ln = strtok_r(NULL, "\n", &save)) {
		fprintf(stderr, "llm-train-wrap: %s%s\n", rc == 0 ? "checkpoint skipped: " : "", ln);
		if (l && rc == 0)
			wr_ledger_event(l, "checkpoint_skipped", json_pack("{s:o}", "why", wr_json_text(ln)));
	}
	if (rc == 127)
		return -2;   /* no such tool */
	if (rc != 0) {
		fprintf(stderr, "llm-train-wrap: %s ckpt-list %s failed (exit %d)\n", tool, dir, rc);
		/* a CKPT_DIR not a directory (66) or that cannot be listed (74) */
		return rc == LLMT_EXIT_NOINPUT || rc == LLMT_EXIT_IO ? -rc : -1;
	}
	int n = 0;
	for (char *save = NULL, *ln = strtok_r(obuf, "\n", &save); ln && n < max;
	     ln = strtok_r(NULL, "\n", &save)) {
		char path[4096];
		long step;
		if (sscanf(ln, "%ld %4095[^\n]", &step, path) != 2 || step < 0) {
			fprintf(stderr, "llm-train-wrap: %s ckpt-list: bad line '%s'\n", tool, ln);
			continue;
		}
		out[n].step = step;
		out[n].gen = ckpt_generation(path);
		snprintf(out[n].path, sizeof out[n].path, "%s", path);
		n++;
	}
	/* newest first whatever the tool's order (a kept copy of an old
	 * checkpoint must not be listed, and so resumed from, first): by
	 * generation (a rollback's new step above the abandoned later ones),
	 * then step (checkpoints without one, any tool's) */
	qsort(out, (size_t)n, sizeof *out, newest_first);
	return n;
}

int wr_ckpt_agree(const char *dir)
{
	char p[4200];
	json_error_t err;
	snprintf(p, sizeof p, "%s/manifest.json", dir);
	json_t *m = wr_json_load_file(p, &err);
	if (!m) {
		fprintf(stderr, "llm-train-wrap: %s: %s\n", p, err.text);
		return -1;
	}
	int r = json_is_true(json_object_get(m, "replicas_agree")) ? 1 : 0;
	json_decref(m);
	return r;
}

int wr_ckpt_pick(const struct wr_ckpt *c, int n, long max_step, bool need_agree,
                 const struct wr_history *h, int *nbad, struct wr_ledger *l)
{
	if (nbad)
		*nbad = 0;
	for (int i = 0; i < n; i++) {
		if (max_step >= 0 && c[i].step > max_step)
			continue;
		if (h && wr_history_is_bad(h, c[i].path)) {
			fprintf(stderr, "llm-train-wrap: %s: marked bad (it failed to load), not used\n", c[i].path);
			if (nbad)
				++*nbad;
			continue;
		}
		if (need_agree && wr_ckpt_agree(c[i].path) != 1) {
			fprintf(stderr, "llm-train-wrap: %s: replicas did not agree, not used\n", c[i].path);
			if (l)
				wr_ledger_event(l, "checkpoint_skipped", json_pack("{s:o,s:s}", "path", wr_json_text(c[i].path),
				                "why", "replicas_agree is not true"));
			continue;
		}
		return i;
	}
	return -1;
}

int wr_launch(const struct wr_launch *c, struct wr_step *s)
{
	char *argv[512];
	char exc[WR_MAX_NODES * (WR_NODE_LEN + 1) + 16], nn[32], nt[32], jn[160];
	int k = 0;
	if (!c->direct) {
		argv[k++] = (char *)c->srun;
		argv[k++] = "--kill-on-bad-exit=1";
		if (c->overlap)
			argv[k++] = "--overlap";
		if (c->name) {
			snprintf(jn, sizeof jn, "--job-name=%s", c->name);
			argv[k++] = jn;
		}
		if (c->exclude && c->exclude->n > 0) {
			size_t o = (size_t)snprintf(exc, sizeof exc, "--exclude=");
			for (int i = 0; i < c->exclude->n && o < sizeof exc; i++)
				o += (size_t)snprintf(exc + o, sizeof exc - o, "%s%s", i ? "," : "", c->exclude->name[i]);
			argv[k++] = exc;
		}
		if (c->nodes > 0) {
			snprintf(nn, sizeof nn, "--nodes=%d", c->nodes);
			argv[k++] = nn;
		}
		if (c->ntasks > 0) {
			snprintf(nt, sizeof nt, "--ntasks=%d", c->ntasks);
			argv[k++] = nt;
		}
	}
	for (int i = 0; c->cmd[i] && k < 510; i++)
		argv[k++] = c->cmd[i];
	argv[k] = NULL;

	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
		fprintf(stderr, "llm-train-wrap: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "llm-train-wrap: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		child_signals();
		/* --no-srun: a command in its own process group outlived a
		 * wrapper killed by SIGKILL (OOM killer, kill -9) and trained on
		 * beside the next run in the same CKPT_DIR; now it gets SIGTERM
		 * (llm-train saves and stops, as on preemption). Under srun the
		 * end of the batch step ends the step. */
		if (c->direct && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent))
			_exit(127);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "llm-train-wrap: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);   /* both sides, so no race with a signal */
	close(po[1]);
	close(pe[1]);
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	s->pid = pid;
	s->out_fd = po[0];
	s->err_fd = pe[0];
	fprintf(stderr, "llm-train-wrap: launched:");
	for (int i = 0; i < k; i++)
		fprintf(stderr, " %s", argv[i]);
	fprintf(stderr, "\n");
	return 0;
}

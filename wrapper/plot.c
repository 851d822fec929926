/* plot: the loss PNG through gnuplot. The script and its data go to
 * gnuplot's stdin (a memfd), the picture comes from its stdout into a file
 * made like wr_write_atomic's: no run-dir name or text reaches the script. */
#define _GNU_SOURCE
#include "plot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void wr_plot_label(const char *s, char *out, size_t len)
{
	size_t n = 0;
	/* letters, digits and ._- only: a quote would end gnuplot's string
	 * (then `system "..."` runs), a backquote is command substitution */
	for (; s && *s && n + 1 < len; s++) {
		char c = *s;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		         c == '_' || c == '-';
		out[n++] = ok ? c : '?';
	}
	if (len)
		out[n] = '\0';
}

/* the script with the points inline (a datablock), at offset 0 */
static int script(const char *job, const long *step, const double *loss, int n)
{
	char lab[128];
	int fd = memfd_create("llmt-plot", MFD_CLOEXEC);
	FILE *f = fd < 0 ? NULL : fdopen(dup(fd), "w");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	wr_plot_label(job, lab, sizeof lab);
	fprintf(f, "set terminal png size 900,500\nset title 'training loss (job %s)'\n"
	           "set xlabel 'step'\nset ylabel 'loss'\nset grid\n$loss << EOD\n", lab);
	for (int i = 0; i < n; i++)
		fprintf(f, "%ld %.9g\n", step[i], loss[i]);
	fprintf(f, "EOD\nplot $loss using 1:2 with lines title 'loss'\n");
	if (ferror(f) | (fclose(f) != 0) || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* gnuplot < in > out; its stderr (the first errlen-1 bytes) in err */
static int run(const char *gnuplot, int in, int out, char *err, size_t errlen)
{
	int pe[2];
	if (pipe2(pe, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in, 0);
		dup2(out, 1);
		dup2(pe[1], 2);
		char *argv[] = { (char *)gnuplot, NULL };
		execvp(gnuplot, argv);
		fprintf(stderr, "cannot run %s: %s\n", gnuplot, strerror(errno));
		_exit(127);
	}
	close(pe[1]);
	size_t n = 0;
	ssize_t r;
	char junk[4096];
	while (pid > 0 && ((r = read(pe[0], n + 1 < errlen ? err + n : junk,
	                             n + 1 < errlen ? errlen - 1 - n : sizeof junk)) > 0 ||
	                   (r < 0 && errno == EINTR)))
		if (r > 0 && n + 1 < errlen)
			n += (size_t)r;
	close(pe[0]);
	if (errlen)
		err[n] = '\0';
	int st;
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int wr_plot_png(const char *gnuplot, const char *job, const long *step, const double *loss, int n,
                const char *png, char *err, size_t errlen)
{
	char tmp[4300];
	snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", png);
	mode_t um = umask(0);
	umask(um);
	int in = script(job, step, loss, n);
	int out = in < 0 ? -1 : mkstemp(tmp);
	if (out < 0 || fchmod(out, 0666 & ~um) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", in < 0 ? "the script" : tmp, strerror(errno));
		if (out >= 0)
			close(out), unlink(tmp);
		if (in >= 0)
			close(in);
		return -1;
	}
	int rc = run(gnuplot, in, out, err, errlen);
	close(in);
	if (close(out) != 0 && rc == 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		rc = -1;
	}
	if (rc == 0 && rename(tmp, png) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", png, strerror(errno));
		rc = -1;
	}
	if (rc != 0)
		unlink(tmp);
	return rc;
}

/* model_read.c: the model config of tp=auto, read by the plugin (as root
 * in slurmstepd, with the user's privileges dropped in user_init; as the
 * user in sbatch and srun): bounded and refusing links, FIFOs, devices,
 * large files and files the user could not read; the messages never quote
 * the file's content. Then the choice for the step (llmt_auto_apply). */
#include "autolayout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmt/err.h"
#include "llmt_limits.h"
#include "yaml_walk.h"

/* err without the parser's quotes of the text: "file:3: unknown key" */
static void unquote(char *s)
{
	char *q = strchr(s, '\'');
	if (q) {
		while (q > s && q[-1] == ' ')
			q--;
		*q = '\0';
	}
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

/* The owner's, group's or others' read bit, as open(2) picks them. The
 * group's counts only where this process holds the user's identity (its
 * groups are then the user's: sbatch, srun, slurmstepd's user_init with
 * privileges dropped), never root's groups for a user. */
static int user_may_read(const struct stat *st, uid_t uid)
{
	if (st->st_uid == uid)
		return (st->st_mode & S_IRUSR) != 0;
	int in_group = 0;
	if (geteuid() == uid) {
		gid_t g[256];
		int n = getgroups(256, g);
		in_group = st->st_gid == getegid();
		for (int i = 0; i < n && !in_group; i++)
			in_group = g[i] == st->st_gid;
	}
	return (st->st_mode & (in_group ? S_IRGRP : S_IROTH)) != 0;
}

static int read_all(int fd, char *buf, size_t max, size_t *n)
{
	*n = 0;
	while (*n <= max) {
		ssize_t r = read(fd, buf + *n, max + 1 - *n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		*n += (size_t)r;
	}
	return 0;
}

int llmt_model_read(const char *path, uid_t uid, llmt_config *c, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		SET_ERR("model=%.200s: %s", path, errno == ELOOP ? "is a symbolic link (refused)" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		SET_ERR("model=%.200s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_size > (off_t)LLMT_MODEL_MAX) {
		SET_ERR("model=%.200s: larger than %u KiB (a model config is a few lines)", path,
			LLMT_MODEL_MAX >> 10);
		close(fd);
		return -1;
	}
	/* root reads it for the user: only what the user may read */
	if (uid != (uid_t)-1 && uid != 0 && !user_may_read(&st, uid)) {
		SET_ERR("model=%.200s: not readable by the job's user (owned by you, readable by a group "
			"of yours, or by all)", path);
		close(fd);
		return -1;
	}
	char *text = malloc(LLMT_MODEL_MAX + 1);
	size_t n = 0;
	if (!text || read_all(fd, text, LLMT_MODEL_MAX, &n) != 0 || n > LLMT_MODEL_MAX) {
		SET_ERR("model=%.200s: %s", path, !text ? "out of memory" : n > LLMT_MODEL_MAX ?
			"grew while read" : strerror(errno));
		free(text);
		close(fd);
		return -1;
	}
	close(fd);
	char e[512];
	int rc = yw_bounded(text, n, path, LLMT_YAML_MAX_DEPTH, LLMT_YAML_MAX_ANCHORS, e, sizeof(e));
	if (rc == 0)
		rc = llmt_config_parse(text, n, path, c, e, sizeof(e));
	free(text);
	if (rc != 0) {
		unquote(e);
		SET_ERR("model=%s: not a model config the planner can read", e);
		return -1;
	}
	return 0;
}

int llmt_auto_apply(struct llmt_opts *o, const struct llmt_policy *p, uid_t uid,
		    const char *nodelist, const unsigned *tpn, unsigned nnodes,
		    struct llmt_auto_out *out, char *err, size_t errlen)
{
	if (!llmt_opts_is_auto(o) || o->choice.done)
		return 0;
	llmt_config c;
	if (llmt_model_read(o->model, uid, &c, err, errlen) != 0)
		return -1;
	struct llmt_auto_out *tmp = out ? out : malloc(sizeof(*tmp));
	if (!tmp) {
		SET_ERR("tp=auto: out of memory");
		return -1;
	}
	int rc = llmt_auto_decide(o, p, &c, nodelist, tpn, nnodes, tmp, err, errlen);
	if (!out)
		free(tmp);
	return rc;
}

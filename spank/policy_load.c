/* policy_load.c: reading the admin policy file for the parser: bounded
 * (size, regular file, no blocking open) and the ownership and mode
 * checks the plugin makes before it trusts the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "llmt/err.h"


int llmt_policy_load(const char *path, struct llmt_policy **out, char *err, size_t errlen)
{
	int fd;
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;
	int rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			struct llmt_policy *p = malloc(sizeof(*p));
			if (!p) {
				SET_ERR("%s: out of memory", path);
				return LLMT_POLICY_ERROR;
			}
			llmt_policy_defaults(p);
			*out = p;
			SET_ERR("%s: not found, using built-in defaults", path);
			return LLMT_POLICY_DEFAULTS;
		}
		SET_ERR("%s: %s", path, strerror(errno));
		return LLMT_POLICY_ERROR;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		SET_ERR("%s: not a regular file", path);
		close(fd);
		return LLMT_POLICY_ERROR;
	}
	if (st.st_size > LLMT_POLICY_MAX_BYTES) {
		SET_ERR("%s: larger than %u bytes", path, LLMT_POLICY_MAX_BYTES);
		close(fd);
		return LLMT_POLICY_ERROR;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		SET_ERR("%s: out of memory", path);
		close(fd);
		return LLMT_POLICY_ERROR;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			SET_ERR("%s: read: %s", path, strerror(errno));
			free(buf);
			close(fd);
			return LLMT_POLICY_ERROR;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	rc = llmt_policy_parse(buf, got, path, out, err, errlen);
	free(buf);
	return rc;
}

int llmt_policy_check_stat(const struct stat *st, const char *path, char *err, size_t errlen)
{
	if (!S_ISREG(st->st_mode)) {
		SET_ERR("%s: not a regular file", path);
		return -1;
	}
	if (st->st_uid != 0) {
		SET_ERR("%s: owned by uid %u, must be owned by root", path, (unsigned)st->st_uid);
		return -1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		SET_ERR("%s: writable by group or others (mode %04o): must be 0644 or stricter",
			path, (unsigned)(st->st_mode & 07777));
		return -1;
	}
	return 0;
}

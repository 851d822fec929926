/* owndir.h: whether a directory the job writes and later trusts (the
 * checkpoint dir, heartbeat dir, run dir) is its own: one another user made
 * first could hold planted checkpoints or read the job's. Shared by the
 * runtime and the wrapper (wrapper/python/llm_train.py has the same rule). */
#ifndef LLMT_OWNDIR_H
#define LLMT_OWNDIR_H
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when path is missing, or a directory owned by this user (or root)
 * that not every user may write without the sticky bit, and no existing
 * directory above it is writable by every user without the sticky bit
 * (anyone could rename the next one away and put theirs there); else -1
 * with "WHAT PATH: why: refused" in err. */
static inline int llmt_dir_owned(const char *what, const char *path, char *err, size_t errlen)
{
	char p[4096];
	struct stat st;
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof p)
		return 0;   /* the caller's own length check says it */
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		int ok = stat(p, &st) == 0;
		if (ok && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
			snprintf(err, errlen, "%s %s: %s is writable by every user without the sticky bit (mode %04o): refused",
			         what, path, p, (unsigned)(st.st_mode & 07777));
			return -1;
		}
		p[i] = c;
	}
	if (stat(path, &st) != 0)
		return 0;
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s %s: not a directory: refused", what, path);
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "%s %s: owned by uid %u, not by this user (uid %u): refused", what, path,
		         (unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

#endif

/* owndir.h: whether a directory the job writes and later trusts (the
 * checkpoint dir, heartbeat dir, run dir) is its own: one another user made
 * first could hold planted checkpoints or read the job's. Shared by the
 * runtime and the wrapper (wrapper/python/llm_train.py has the same rule). */
#ifndef LLMT_OWNDIR_H
#define LLMT_OWNDIR_H
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when gid is the group LLM_TRAIN_TRUST_GROUP names (a name or a
 * number) and this process is in it: its members are trusted, opt-in (a
 * site's common group would trust every user) */
static inline int llmt_in_group(gid_t gid)
{
	gid_t list[256];
	if (getegid() == gid)
		return 1;
	int n = getgroups(256, list);
	for (int i = 0; i < n; i++)
		if (list[i] == gid)
			return 1;
	return 0;
}

static inline int llmt_dir_group_trusted(gid_t gid)
{
	const char *g = getenv("LLM_TRAIN_TRUST_GROUP");
	gid_t want;
	char *end;

	if (!g || !*g)
		return 0;
	long v = strtol(g, &end, 10);
	if (*end == 0 && v >= 0)
		want = (gid_t)v;
	else {
		struct group *gr = getgrnam(g);
		if (!gr)
			return 0;
		want = gr->gr_gid;
	}
	return want == gid && llmt_in_group(gid);
}

/* 0 when path is missing, or a directory owned by this user (or root, or a
 * member of the group LLM_TRAIN_TRUST_GROUP names, the directory's group)
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
	if (st.st_uid != geteuid() && st.st_uid != 0 && !llmt_dir_group_trusted(st.st_gid)) {
		char hint[160];
		snprintf(hint, sizeof hint, " (a project directory of your group %u: LLM_TRAIN_TRUST_GROUP=%u)",
		         (unsigned)st.st_gid, (unsigned)st.st_gid);
		snprintf(err, errlen, "%s %s: owned by uid %u, not by this user (uid %u): refused%s%s", what, path,
		         (unsigned)st.st_uid, (unsigned)geteuid(), llmt_in_group(st.st_gid) ? hint : "",
		         st.st_uid == 65534 ? " (uid 65534 is NFS's nobody: root squashed, or an ID mapping failed)" : "");
		return -1;
	}
	return 0;
}

#endif

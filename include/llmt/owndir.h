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

/* 1 when this process is in group gid (its effective or a supplementary one) */
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

/* 1 when gid is the group LLM_TRAIN_TRUST_GROUP names (a name or a
 * number) and this process is in it: its members are trusted, opt-in (a
 * site's common group would trust every user) */
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

/* out: path with its longest existing head resolved (links, "..", the
 * working directory of a relative path) and the rest as given; -1 when it
 * does not fit or nothing resolves */
static inline int llmt_dir_resolve(const char *path, char *out, size_t outlen)
{
	char head[4096];
	size_t n = strlen(path), h = n;

	if (n >= sizeof head)
		return -1;
	memcpy(head, path, n + 1);
	for (;;) {
		char *r = realpath(h ? head : ".", NULL);
		if (r) {
			const char *rest = path + h;
			int k = snprintf(out, outlen, "%s%s%s", r, h || !*rest || *rest == '/' ? "" : "/", rest);
			free(r);
			return k < 0 || (size_t)k >= outlen ? -1 : 0;
		}
		while (h > 0 && head[h - 1] != '/')
			h--;            /* drop the last component */
		while (h > 1 && head[h - 1] == '/')
			h--;
		if ((h == 0 && path[0] == '/') || (h == 1 && head[0] == '/') || !*head)
			return -1;   /* "/" itself, or "." (tried last), did not resolve */
		head[h] = 0;
	}
}

/* -1 (err set) when p or a directory above it is writable by every user
 * without the sticky bit; path is the caller's, for the message */
static inline int llmt_dir_open_above(const char *what, const char *path, char *p, char *err, size_t errlen)
{
	struct stat st;
	size_t n = strlen(p);

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
	return 0;
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
	if (llmt_dir_open_above(what, path, p, err, errlen))
		return -1;
	/* and the directories it lies in once links are followed */
	if (llmt_dir_resolve(path, p, sizeof p) == 0 && llmt_dir_open_above(what, path, p, err, errlen))
		return -1;
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

/* mkdir_race.c: an LD_PRELOAD shim playing another user at the worst
 * moment. dir_owner.sh: mkdir(2) of the path in LLMT_RACE_DIR first makes
 * that directory itself and gives it to uid 4242, then fails with EEXIST,
 * as the real mkdir would after them (needs root: chown).
 * report_hostile.sh: the first access(2) first points the link
 * LLMT_FLIP_LINK at LLMT_FLIP_TO (a run dir's link swapped just after
 * root judged where it led). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int mkdir(const char *path, mode_t mode)
{
	const char *race = getenv("LLMT_RACE_DIR");
	if (race && strcmp(path, race) == 0 && syscall(SYS_mkdir, path, 0755) == 0) {
		if (chown(path, 4242, 4242) != 0)
			return -1;
		errno = EEXIST;
		return -1;
	}
	return (int)syscall(SYS_mkdir, path, mode);
}

int access(const char *path, int mode)
{
	static int flipped;
	const char *l = getenv("LLMT_FLIP_LINK"), *to = getenv("LLMT_FLIP_TO");
	if (l && to && !flipped) {
		flipped = 1;
		char tmp[4200];
		snprintf(tmp, sizeof tmp, "%s.flip", l);
		if (symlink(to, tmp) != 0 || rename(tmp, l) != 0)
			return -1;
	}
	return (int)syscall(SYS_access, path, mode);
}

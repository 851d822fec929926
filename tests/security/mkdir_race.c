/* mkdir_race.c: an LD_PRELOAD shim playing another user at the worst
 * moment. dir_owner.sh: mkdir(2) of the path in LLMT_RACE_DIR first makes
 * that directory itself and gives it to uid 4242, then fails with EEXIST,
 * as the real mkdir would after them (needs root: chown).
 * report_hostile.sh: the first access(2) first points the link
 * LLMT_FLIP_LINK at LLMT_FLIP_TO (a run dir's link swapped just after
 * root judged where it led); with LLMT_FLIP_OPEN set, the first open(2)
 * of a path ending in ledger.jsonl does it instead (ckpt-unmark). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

static int flipped;

/* LLMT_FLIP_LINK -> LLMT_FLIP_TO, once; -1 when that fails */
static int flip(void)
{
	const char *l = getenv("LLMT_FLIP_LINK"), *to = getenv("LLMT_FLIP_TO");
	if (l && to && !flipped) {
		flipped = 1;
		char tmp[4200];
		snprintf(tmp, sizeof tmp, "%s.flip", l);
		if (symlink(to, tmp) != 0 || rename(tmp, l) != 0)
			return -1;
	}
	return 0;
}

static int open_flip(const char *path, int flags, va_list ap)
{
	size_t n = strlen(path);
	mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
	if (getenv("LLMT_FLIP_OPEN") && n >= 12 && strcmp(path + n - 12, "ledger.jsonl") == 0 && flip() != 0)
		return -1;
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int fd = open_flip(path, flags, ap);
	va_end(ap);
	return fd;
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int access(const char *path, int mode)
{
	if (!getenv("LLMT_FLIP_OPEN") && flip() != 0)
		return -1;
	return (int)syscall(SYS_access, path, mode);
}

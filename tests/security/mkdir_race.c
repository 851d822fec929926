/* mkdir_race.c: an LD_PRELOAD shim for dir_race.sh: mkdir(2) of the path
 * in LLMT_RACE_DIR first makes that directory itself and gives it to uid
 * 4242 (as another user does between a check and the mkdir), then fails
 * with EEXIST, as the real mkdir would after them. Needs root (chown). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
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

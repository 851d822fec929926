/* runowner: the admin's commands over a run dir (report, ckpt-unmark):
 * root acts as the dir's owner, anyone else only on their own, and the
 * user's text they print reaches a terminal as printable ASCII. */
#define _GNU_SOURCE
#include "runowner.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "include/llmt/exitcodes.h"

int wr_as_owner(const char *prog, const char *dir, int fd)
{
	struct stat st;
	if (fd >= 0 ? fstat(fd, &st) != 0 : stat(dir, &st) != 0)
		return 0;   /* said by the caller: 66 */
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		fprintf(stderr, "%s: '%s' is writable by every user (mode %04o): refused\n", prog, dir,
		        (unsigned)(st.st_mode & 07777));
		return LLMT_EXIT_USAGE;
	}
	if (st.st_uid == geteuid())
		return 0;
	if (geteuid() != 0) {
		fprintf(stderr, "%s: '%s' belongs to uid %u, not to uid %u: refused (run it as that user or root)\n",
		        prog, dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return LLMT_EXIT_USAGE;
	}
	/* the owner's own primary group, not the dir's: a dir made under a
	 * setgid one has that group whether or not its owner is a member */
	errno = 0;
	struct passwd *pw = getpwuid(st.st_uid);
	if (!pw) {
		fprintf(stderr, "%s: '%s' belongs to uid %u, who has no passwd entry: refused\n", prog, dir,
		        (unsigned)st.st_uid);
		return LLMT_EXIT_USAGE;
	}
	gid_t gid = pw->pw_gid;
	if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(st.st_uid) != 0 || geteuid() != st.st_uid ||
	    getegid() != gid) {
		fprintf(stderr, "%s: cannot become uid %u (the owner of '%s'): %s\n",
		        prog, (unsigned)st.st_uid, dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	fprintf(stderr, "%s: '%s' belongs to uid %u: read and written as uid %u gid %u\n", prog, dir,
	        (unsigned)st.st_uid, (unsigned)st.st_uid, (unsigned)gid);
	return 0;
}

const char *wr_shown(const char *s, char *buf, size_t len)
{
	size_t n = 0;
	for (; *s && n + 1 < len; s++)
		buf[n++] = (unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e ? '?' : *s;
	buf[n] = '\0';
	return buf;
}


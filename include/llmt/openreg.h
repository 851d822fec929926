/* openreg.h: opening a file another process may have replaced with a FIFO
 * or a device: without waiting in open(2) for a peer (O_NONBLOCK), regular
 * files only. Shared by the wrapper's readers (wrapper/rdfile.c) and the
 * runtime's checkpoint readers (runtime/ckpt/ckpt_fs.c). */
#ifndef LLMT_OPENREG_H
#define LLMT_OPENREG_H
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* fd of path opened with flags (O_CREAT makes it 0666 less the umask), a
 * regular file, back in blocking mode; -1 with errno (EINVAL: not a
 * regular file, a directory included). */
static inline int llmt_open_regular(const char *path, int flags)
{
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

#endif

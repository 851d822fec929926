/* rdfile: the non-blocking opener of the job's files (see rdfile.h). */
#define _GNU_SOURCE
#include "rdfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *wr_fopen_read(const char *path)
{
	/* O_NONBLOCK: open(2) of a FIFO without a writer waits forever */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	if (!(f = fdopen(fd, "r"))) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

FILE *wr_fopen_write(const char *path, const char *mode)
{
	int fl = O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (mode[0] == 'a' ? O_APPEND : 0);
	int fd = open(path, fl, 0666);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if (mode[0] == 'w' && ftruncate(fd, 0) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	if (!(f = fdopen(fd, mode))) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

json_t *wr_json_load_file(const char *path, json_error_t *err)
{
	FILE *f = wr_fopen_read(path);
	if (!f) {
		snprintf(err->text, sizeof err->text, "%s", errno == EINVAL ? "not a regular file" : strerror(errno));
		return NULL;
	}
	json_t *o = json_loadf(f, 0, err);
	fclose(f);
	return o;
}

/* rdfile: the non-blocking opener of the job's files (see rdfile.h). */
#define _GNU_SOURCE
#include "rdfile.h"
#include "include/llmt/openreg.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* fd as a stream, closed (errno kept) when that fails */
static FILE *stream(int fd, const char *mode)
{
	FILE *f = fd < 0 ? NULL : fdopen(fd, mode);
	if (!f && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

FILE *wr_fopen_read(const char *path)
{
	return stream(llmt_open_regular(path, O_RDONLY), "r");
}

FILE *wr_fopen_write(const char *path, const char *mode)
{
	int fd = llmt_open_regular(path, O_WRONLY | O_CREAT | (mode[0] == 'a' ? O_APPEND : 0));
	if (fd >= 0 && mode[0] == 'w' && ftruncate(fd, 0) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		fd = -1;
	}
	return stream(fd, mode);
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

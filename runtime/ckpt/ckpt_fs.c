/* ckpt_fs.c: checked file helpers of the checkpoint code: full writes and
 * reads, fsync of files and directories, atomic replace (tmp + fsync +
 * rename + fsync dir), whole-file XXH3 checksums (libxxhash). */
#include "ckpt_int.h"
#include "llmt/openreg.h"
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

int ck_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return r < 0 || (size_t)r >= n;
}

int ck_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int ck_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = pread(fd, p, n > (1u << 30) ? (1u << 30) : n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			return -2;
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int ck_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	if (rc != 0 && (errno == EINVAL || errno == EROFS))
		rc = 0;   /* file systems without directory fsync */
	close(fd);
	return rc;
}

static void dirname_of(const char *path, char *out, size_t outlen)
{
	const char *s = strrchr(path, '/');

	if (!s)
		ck_fmt(out, outlen, ".");
	else if (s == path)
		ck_fmt(out, outlen, "/");
	else
		ck_fmt(out, outlen, "%.*s", (int)(s - path), path);
}

/* tmp + fsync + rename + fsync of the directory; moved: the directory may
 * be renamed by a reader as soon as the file has its name */
static int write_atomic(const char *path, const void *data, size_t n, int moved, char *err, size_t errlen)
{
	char tmp[4200], dir[4096];
	int fd, e;

	ck_fmt(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ck_fmt(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
		return -1;
	}
	if (ck_write_all(fd, data, n) != 0 || fsync(fd) != 0) {
		e = errno;
		close(fd);
		unlink(tmp);
		ck_fmt(err, errlen, "%s: write failed: %s", tmp, strerror(e));
		return -1;
	}
	if (close(fd) != 0) {
		e = errno;
		unlink(tmp);
		ck_fmt(err, errlen, "%s: close failed: %s", tmp, strerror(e));
		return -1;
	}
	if (rename(tmp, path) != 0) {
		e = errno;
		unlink(tmp);
		ck_fmt(err, errlen, "%s: rename failed: %s", path, strerror(e));
		return -1;
	}
	dirname_of(path, dir, sizeof dir);
	if (ck_fsync_dir(dir) != 0 && !(moved && errno == ENOENT)) {
		ck_fmt(err, errlen, "%s: fsync failed: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

int ck_write_file_atomic(const char *path, const void *data, size_t n, char *err, size_t errlen)
{
	return write_atomic(path, data, n, 0, err, errlen);
}

/* A rank's done record in the temporary step directory: world rank 0 may
 * take it, write the manifest (its fsync of the directory makes every
 * entry durable) and rename the directory between this rename and the
 * fsync after it, which then finds no directory (ENOENT): the record was
 * taken, not lost. Seen on a loaded 2-core machine: rank 1's save of step
 * 110 reported "fsync failed: No such file or directory" for a checkpoint
 * that had committed, and the run exited 74 at its next save. */
int ck_write_record(const char *path, const void *data, size_t n, char *err, size_t errlen)
{
	return write_atomic(path, data, n, 1, err, errlen);
}

int ck_open_ro(const char *path)
{
	return llmt_open_regular(path, O_RDONLY);
}

char *ck_read_small(const char *path, size_t max, size_t *len)
{
	int fd = ck_open_ro(path);
	struct stat st;
	char *buf;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		close(fd);   /* errno says which, not a stale value */
		errno = S_ISREG(st.st_mode) ? EFBIG : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return NULL;
	}
	if (st.st_size > 0 && ck_pread_all(fd, buf, (size_t)st.st_size, 0) != 0) {
		free(buf);
		close(fd);
		errno = EIO;
		return NULL;
	}
	close(fd);
	buf[st.st_size] = 0;
	if (len)
		*len = (size_t)st.st_size;
	return buf;
}

int ck_mkdir_p(const char *dir)
{
	char p[4096];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof p)
		return errno = EINVAL, -1;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] == '/' || p[i] == 0) {
			char c = p[i];
			p[i] = 0;
			if (mkdir(p, 0700) != 0 && errno != EEXIST)
				return -1;
			p[i] = c;
		}
	}
	return 0;
}

int ck_hash_file(int fd, uint64_t *hash, uint64_t *size)
{
	enum { CHUNK = 8 << 20 };
	XXH3_state_t *st = XXH3_createState();
	char *buf = malloc(CHUNK);
	uint64_t off = 0;
	int rc = -1;

	if (!st || !buf)
		goto out;
	XXH3_64bits_reset(st);
	for (;;) {
		ssize_t r = pread(fd, buf, CHUNK, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		if (r == 0)
			break;
		XXH3_64bits_update(st, buf, (size_t)r);
		off += (uint64_t)r;
	}
	*hash = XXH3_64bits_digest(st);
	*size = off;
	rc = 0;
out:;
	int e = errno;   /* the read's, not the frees' */
	free(buf);
	if (st)
		XXH3_freeState(st);
	errno = e;
	return rc;
}

int64_t ck_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ck_parse_step_name(const char *name, long *step)
{
	const char *p = name + 5;
	long v = 0;
	int nd = 0;

	if (strncmp(name, "step_", 5) != 0)
		return -1;
	for (; *p; p++, nd++) {
		if (*p < '0' || *p > '9' || v > 100000000000L)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (nd < 8)
		return -1;
	*step = v;
	return 0;
}

/* mask.c: the loss-mask shard's file format (mask.h): path, header check,
 * reads, and the atomic write. */
#include "mask.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "shard.h"

void llmt_mask_path(const char *bin_path, char *out, size_t cap)
{
	size_t n = strlen(bin_path);

	if (n >= 4 && !strcmp(bin_path + n - 4, ".bin"))
		n -= 4;
	snprintf(out, cap, "%.*s.mask", (int)n, bin_path);
}

int llmt_mask_open(llmt_mask *m, const char *path, uint64_t ntok, char *err, size_t errlen)
{
	int32_t hdr[LLMT_SHARD_HEADER_INTS];
	struct stat st;

	memset(m, 0, sizeof(*m));
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_DATA;
	}
	if (pread(m->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || fstat(m->fd, &st)) {
		snprintf(err, errlen, "%s: truncated header", path);
		goto bad;
	}
	if (hdr[0] != LLMT_MASK_MAGIC || hdr[1] != LLMT_MASK_VERSION) {
		snprintf(err, errlen, "%s: not a loss-mask shard (magic %d version %d; want %d version %d)",
			path, hdr[0], hdr[1], LLMT_MASK_MAGIC, LLMT_MASK_VERSION);
		goto bad;
	}
	if (hdr[2] < 0 || (uint64_t)hdr[2] != ntok ||
		(uint64_t)st.st_size != LLMT_SHARD_HEADER_BYTES + ntok) {
		snprintf(err, errlen, "%s: %d flags for a token shard of %llu tokens (file of %lld bytes)",
			path, hdr[2], (unsigned long long)ntok, (long long)st.st_size);
		goto bad;
	}
	m->ntok = ntok;
	m->seq = hdr[3];
	return 0;
bad:
	close(m->fd);
	m->fd = -1;
	return LLMT_EXIT_DATA;
}

int llmt_mask_read(const llmt_mask *m, uint64_t off, size_t n, uint8_t *out, char *err,
	size_t errlen)
{
	ssize_t r = pread(m->fd, out, n, (off_t)(LLMT_SHARD_HEADER_BYTES + off));

	if (r != (ssize_t)n) {
		snprintf(err, errlen, "loss mask: short read at token %llu (the file changed?)",
			(unsigned long long)off);
		return LLMT_EXIT_IO;
	}
	return 0;
}

void llmt_mask_close(llmt_mask *m)
{
	if (m->fd > 0)
		close(m->fd);
	m->fd = -1;
}

int llmt_mask_write(const char *path, const uint8_t *flags, size_t n, int seq, char *err,
	size_t errlen)
{
	int32_t hdr[LLMT_SHARD_HEADER_INTS] = { LLMT_MASK_MAGIC, LLMT_MASK_VERSION, (int32_t)n, seq };

	return llmt_shard_write_raw(path, hdr, flags, 1, n, err, errlen);
}

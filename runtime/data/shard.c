/* shard.c: checked reading and writing of llm.c token shards. */
#include "shard.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "llmt/exitcodes.h"

int llmt_shard_open(llmt_shard *s, const char *path, char *err, size_t errlen)
{
	int32_t hdr[LLMT_SHARD_HEADER_INTS];
	struct stat st;
	ssize_t got;
	uint64_t want;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_DATA;
	}
	if (fstat(s->fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto bad;
	}
	got = pread(s->fd, hdr, sizeof(hdr), 0);
	if (got != (ssize_t)sizeof(hdr)) {
		snprintf(err, errlen, "%s: truncated header (%lld of %d bytes)", path,
			(long long)(got < 0 ? 0 : got), LLMT_SHARD_HEADER_BYTES);
		goto bad;
	}
	if (hdr[0] != LLMT_SHARD_MAGIC) {
		snprintf(err, errlen, "%s: bad magic %d (want %d): not an llm.c token shard",
			path, hdr[0], LLMT_SHARD_MAGIC);
		goto bad;
	}
	if (hdr[1] != LLMT_SHARD_VERSION && hdr[1] != LLMT_SHARD_VERSION_U32) {
		snprintf(err, errlen, "%s: unsupported shard version %d (want %d, uint16 tokens, or %d, uint32 tokens)",
			path, hdr[1], LLMT_SHARD_VERSION, LLMT_SHARD_VERSION_U32);
		goto bad;
	}
	if (hdr[2] < 0) {
		snprintf(err, errlen, "%s: negative token count %d", path, hdr[2]);
		goto bad;
	}
	if (hdr[3] < 0) {
		snprintf(err, errlen, "%s: negative vocabulary size %d in the header", path, hdr[3]);
		goto bad;
	}
	s->version = hdr[1];
	s->width = s->version == LLMT_SHARD_VERSION ? 2 : 4;
	s->vocab = (uint32_t)hdr[3];
	s->ntok = (uint64_t)(uint32_t)hdr[2];
	want = LLMT_SHARD_HEADER_BYTES + (uint64_t)s->width * s->ntok;
	if ((uint64_t)st.st_size != want) {
		snprintf(err, errlen, "%s: %s: header says %llu tokens (%llu bytes) but the file has %lld bytes",
			path, (uint64_t)st.st_size < want ? "truncated" : "trailing bytes",
			(unsigned long long)s->ntok, (unsigned long long)want, (long long)st.st_size);
		goto bad;
	}
	s->path = strdup(path);
	if (!s->path) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto bad;
	}
	return 0;
bad:
	close(s->fd);
	s->fd = -1;
	return LLMT_EXIT_DATA;
}

/* Version 1 tokens land packed at the front of out and are widened in
 * place from the back: out[i] covers uint16 slots 2i and 2i+1, both at or
 * after slot i, which are already widened or are slot i itself. */
int llmt_shard_read(const llmt_shard *s, uint64_t off, size_t n, uint32_t *out,
	int vocab, char *err, size_t errlen)
{
	size_t w = (size_t)s->width, want = n * w, done = 0;
	char *dst = (char *)out;

	if (off + n > s->ntok) {
		snprintf(err, errlen, "%s: read of tokens %llu..%llu past the end (%llu)", s->path,
			(unsigned long long)off, (unsigned long long)(off + n), (unsigned long long)s->ntok);
		return LLMT_EXIT_DATA;
	}
	while (done < want) {
		ssize_t r = pread(s->fd, dst + done, want - done,
			(off_t)(LLMT_SHARD_HEADER_BYTES + off * w + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "%s: %s at token %llu", s->path,
				r < 0 ? strerror(errno) : "unexpected end of file (changed while training?)",
				(unsigned long long)(off + done / w));
			return r < 0 ? LLMT_EXIT_IO : LLMT_EXIT_DATA;
		}
		done += (size_t)r;
	}
	if (w == 2)
		for (size_t i = n; i-- > 0;) {
			uint16_t v;
			memcpy(&v, dst + 2 * i, 2);
			out[i] = v;
		}
	for (size_t i = 0; i < n; i++)
		if (out[i] >= (uint32_t)vocab) {
			snprintf(err, errlen, "%s: token %u at index %llu is outside the vocabulary (%d)",
				s->path, out[i], (unsigned long long)(off + i), vocab);
			return LLMT_EXIT_DATA;
		}
	return 0;
}

void llmt_shard_close(llmt_shard *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	s->path = NULL;
	s->fd = -1;
}

int llmt_shard_write_raw(const char *path, const int32_t *hdr, const void *data, size_t w,
	size_t n, char *err, size_t errlen)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (fwrite(hdr, LLMT_SHARD_HEADER_BYTES, 1, f) != 1 || (n && fwrite(data, w, n, f) != n)) {
		snprintf(err, errlen, "%s: write failed: %s", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
		return LLMT_EXIT_IO;
	}
	if (fclose(f) || rename(tmp, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return LLMT_EXIT_IO;
	}
	return 0;
}

static int write_file(const char *path, int32_t version, const void *tok, size_t n, size_t w,
	uint32_t vocab, char *err, size_t errlen)
{
	int32_t hdr[LLMT_SHARD_HEADER_INTS] = { LLMT_SHARD_MAGIC, version, 0, (int32_t)vocab };

	if (n > INT32_MAX) {
		snprintf(err, errlen, "%s: %zu tokens do not fit one shard (max %d)", path, n, INT32_MAX);
		return LLMT_EXIT_IO;
	}
	hdr[2] = (int32_t)n;
	return llmt_shard_write_raw(path, hdr, tok, w, n, err, errlen);
}

int llmt_shard_write(const char *path, const uint16_t *tok, size_t n, char *err, size_t errlen)
{
	return write_file(path, LLMT_SHARD_VERSION, tok, n, 2, 0, err, errlen);
}

int llmt_shard_write_ids(const char *path, const uint32_t *tok, size_t n, uint32_t vocab,
	char *err, size_t errlen)
{
	uint16_t *narrow;
	int rc;

	if (vocab > INT32_MAX) {
		snprintf(err, errlen, "%s: vocabulary of %u ids does not fit the header", path, vocab);
		return LLMT_EXIT_SOFTWARE;
	}
	if (vocab > LLMT_SHARD_U16_VOCAB)
		return write_file(path, LLMT_SHARD_VERSION_U32, tok, n, 4, vocab, err, errlen);
	narrow = malloc(2 * (n ? n : 1));
	if (!narrow) {
		snprintf(err, errlen, "%s: out of memory", path);
		return LLMT_EXIT_SOFTWARE;
	}
	for (size_t i = 0; i < n; i++)
		narrow[i] = (uint16_t)tok[i];
	rc = write_file(path, LLMT_SHARD_VERSION, narrow, n, 2, vocab, err, errlen);
	free(narrow);
	return rc;
}

/* ckpt_hfcache.c: the Hugging Face hub cache layout, as huggingface_hub's
 * snapshot_download and `huggingface-cli download` leave it:
 *   CACHE/models--ORG--NAME/refs/main           the commit of "main"
 *   CACHE/models--ORG--NAME/snapshots/REV/FILE  -> ../../blobs/HASH
 *   CACHE/models--ORG--NAME/blobs/HASH          the file's bytes
 * Import and --init-from take a snapshot directory, or the repo root (its
 * refs/main names the snapshot); a tokenizer file's link is followed when
 * it resolves into the same repo's blobs/ (ckpt_hftok.c). */
#include "ckpt_int.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REV_MAX 255

/* rdir (a realpath) is .../models--X/snapshots/REV and real (a realpath)
 * is .../models--X/blobs/NAME of the same models--X: 1, else 0 */
int ck_hf_cache_blob(const char *rdir, const char *real)
{
	const char *rev = strrchr(rdir, '/'), *snaps, *repo;
	size_t rlen;

	if (!rev || rev == rdir)
		return 0;
	for (snaps = rev - 1; snaps > rdir && *snaps != '/'; snaps--)
		;
	if (*snaps != '/' || (size_t)(rev - snaps) != strlen("/snapshots") || strncmp(snaps, "/snapshots", 10))
		return 0;
	for (repo = snaps - 1; repo > rdir && *repo != '/'; repo--)
		;
	if (*repo != '/' || strncmp(repo, "/models--", 9) || snaps - repo <= 9)
		return 0;
	rlen = (size_t)(snaps - rdir);   /* .../models--X */
	if (strncmp(real, rdir, rlen) || strncmp(real + rlen, "/blobs/", 7))
		return 0;
	return real[rlen + 7] && !strchr(real + rlen + 7, '/');
}

/* a revision as refs/main may hold it: a commit hash or a plain name
 * (letters, digits, '.', '_', '-'; no '/', not starting with '.': never
 * a path out of snapshots/) */
static int rev_ok(const char *r)
{
	size_t n = strlen(r);

	if (!n || n > REV_MAX || r[0] == '.')
		return 0;
	return strspn(r, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* ROOT/refs/main into rev (one line, at most one trailing newline). 0, 1
 * when there is none, or an exit code with err. */
static int read_ref(const char *root, char *rev, char *err, size_t errlen)
{
	char path[4300], buf[REV_MAX + 3];
	struct stat sb;
	ssize_t n;
	int fd;

	ck_fmt(path, sizeof path, "%s/refs/main", root);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno != ELOOP)
		return ck_absent(errno) ? 1 : (ck_fmt(err, errlen, "%s: %s", path, strerror(errno)), LLMT_EXIT_IO);
	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {   /* a link, a FIFO: never followed or waited on */
		if (fd >= 0)
			close(fd);
		ck_fmt(err, errlen, "%s: not a regular file", path);
		return LLMT_EXIT_USAGE;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		ck_fmt(err, errlen, "%s: %s", path, strerror(errno));
		return LLMT_EXIT_IO;
	}
	buf[n] = 0;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	if ((size_t)n != strlen(buf) || !rev_ok(buf)) {
		for (char *p = buf; *p; p++)
			if (*p < ' ' || *p > '~')
				*p = '?';
		ck_fmt(err, errlen, "%s: '%.64s'%s is no revision (a commit hash or a name of letters, digits, '.', "
		       "'_', '-')", path, buf, (size_t)n >= sizeof buf - 2 ? "..." : "");
		return LLMT_EXIT_USAGE;
	}
	memcpy(rev, buf, (size_t)n + 1);
	return 0;
}

int llmt_hf_resolve(const char *hfdir, char *out, size_t len, char *err, size_t errlen)
{
	char path[4300], rev[REV_MAX + 1];
	struct stat sb;
	int rc;

	ck_fmt(path, sizeof path, "%s/config.json", hfdir);
	ck_fmt(out, len, "%s", hfdir);
	if (stat(path, &sb) == 0)
		return 0;
	ck_fmt(path, sizeof path, "%s/snapshots", hfdir);
	if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return 0;   /* no cache repo: config.json missing is said later */
	if ((rc = read_ref(hfdir, rev, err, errlen)) != 0)
		return rc == 1 ? 0 : rc;
	if (ck_fmt(out, len, "%s/snapshots/%s", hfdir, rev)) {
		ck_fmt(err, errlen, "%s: path too long", hfdir);
		return LLMT_EXIT_USAGE;
	}
	if (stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		ck_fmt(err, errlen, "%s: refs/main names %s, which is not there (download it again)", hfdir, out);
		return LLMT_EXIT_NOINPUT;
	}
	return 0;
}

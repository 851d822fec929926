/* fuzz_util.c: scratch files for the fuzz targets (see fuzz_util.h). Any
 * failure here is a broken test machine, not a finding: abort loudly. */
#include "fuzz_util.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[512];
static char names[8][64];
static unsigned nnames;

static void cleanup(void)
{
	char p[640];

	for (unsigned i = 0; i < nnames; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		unlink(p);
	}
	if (dir[0])
		rmdir(dir);
}

const char *fuzz_dir(void)
{
	const char *t;

	if (dir[0])
		return dir;
	t = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/llmt-fuzz.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "fuzz: mkdtemp %s: %s\n", dir, strerror(errno));
		abort();
	}
	atexit(cleanup);
	return dir;
}

static void remember(const char *name)
{
	for (unsigned i = 0; i < nnames; i++)
		if (!strcmp(names[i], name))
			return;
	if (nnames < sizeof names / sizeof names[0])
		snprintf(names[nnames++], sizeof names[0], "%s", name);
}

const char *fuzz_write(int slot, const char *name, const uint8_t *data, size_t len)
{
	static char paths[4][640];
	char *p = paths[slot & 3];
	size_t off = 0;
	int fd;

	snprintf(p, sizeof paths[0], "%s/%s", fuzz_dir(), name);
	remember(name);
	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "fuzz: %s: %s\n", p, strerror(errno));
		abort();
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w <= 0) {
			fprintf(stderr, "fuzz: write %s: %s\n", p, strerror(errno));
			abort();
		}
		off += (size_t)w;
	}
	close(fd);
	return p;
}

void fuzz_unlink(const char *name)
{
	char p[640];

	snprintf(p, sizeof p, "%s/%s", fuzz_dir(), name);
	unlink(p);
}

void fuzz_split(const uint8_t *data, size_t len, const uint8_t **a, size_t *alen,
		const uint8_t **b, size_t *blen)
{
	*a = data;
	*alen = len;
	*b = NULL;
	*blen = 0;
	for (size_t i = 0; i + 3 <= len; i++) {
		if ((i == 0 || data[i - 1] == '\n') && !memcmp(data + i, "%%\n", 3)) {
			*alen = i;
			*b = data + i + 3;
			*blen = len - i - 3;
			return;
		}
	}
}

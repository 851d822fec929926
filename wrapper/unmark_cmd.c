/* unmark_cmd: `llm-train-wrap ckpt-unmark RUN_DIR PATH...|--all`: lifts
 * ckpt_bad marks (a checkpoint that failed to load is never picked again)
 * by appending a ckpt_unmark event to the run dir's ledger; the ledger
 * stays append-only and later runs read the marks back without it. */
#define _GNU_SOURCE
#include "unmark_cmd.h"
#include "ledger.h"
#include "rdfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "include/llmt/exitcodes.h"
#include "runowner.h"

#define PROG "llm-train-wrap ckpt-unmark"

static void usage(void)
{
	fprintf(stderr, "usage: llm-train-wrap ckpt-unmark RUN_DIR PATH... | --all\n");
}

/* The mark of h that PATH names: the same string, or the same directory
 * (a relative path, from the caller's cwd (cwd), a trailing slash, a link
 * to it). -1 when none. */
static int find_mark(const struct wr_history *h, const char *path, int cwd)
{
	struct stat a, b;
	bool have = fstatat(cwd, path, &a, 0) == 0;

	for (int i = 0; i < h->nbad; i++)
		if (strcmp(h->bad[i].path, path) == 0)
			return i;
	for (int i = 0; have && i < h->nbad; i++)
		if (fstatat(cwd, h->bad[i].path, &b, 0) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return i;
	return -1;
}

/* The marks, one per line, for a message (stderr) */
static void list_marks(const struct wr_history *h)
{
	if (h->nbad == 0)
		fprintf(stderr, PROG ": no checkpoint is marked bad\n");
	char b[4200];
	for (int i = 0; i < h->nbad; i++)
		fprintf(stderr, PROG ": marked bad: %s\n", wr_shown(h->bad[i].path, b, sizeof b));
}

int wr_unmark_main(int argc, char **argv)
{
	static struct wr_history h;
	struct wr_ledger l = { 0 };
	char *led = l.path;
	struct stat sb;
	bool all = argc == 3 && strcmp(argv[2], "--all") == 0;

	if (argc < 3 || argv[1][0] == '-') {
		usage();
		return LLMT_EXIT_USAGE;
	}
	const char *dir = argv[1];
	/* as report: a missing run dir or ledger is a missing input (66), a
	 * path that is no directory a usage error */
	if (snprintf(led, sizeof l.path, "%s/ledger.jsonl", dir) >= (int)sizeof l.path ||
	    (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))) {
		fprintf(stderr, PROG ": '%s' is not a run dir\n", dir);
		return LLMT_EXIT_USAGE;
	}
	if (stat(dir, &sb) != 0) {
		fprintf(stderr, PROG ": '%s' is not a run dir: %s\n", dir, strerror(errno));
		return LLMT_EXIT_NOINPUT;
	}
	/* judged, then read and written through one open of it (the cwd, as
	 * report): a link on the way swapped just after root judged where it
	 * led must not make root write into what it points at then */
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int own = wr_as_owner(PROG, dir, dfd);   /* root over a user's dir: as the user */
	if (own)
		return own;
	if (dfd < 0 || fchdir(dfd) != 0) {
		fprintf(stderr, PROG ": cannot enter '%s': %s\n", dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	close(dfd);
	if (cwd < 0)
		cwd = AT_FDCWD;   /* a cwd this user cannot open: relative PATHs from the run dir */
	/* a ledger that is not a regular file (a FIFO would block the open):
	 * refused at once, by the reader and by the writer below */
	if (wr_ledger_load("ledger.jsonl", NULL, &h) != 0) {
		fprintf(stderr, PROG ": cannot read %s: %s\n", led, strerror(errno));
		return errno == EINVAL ? LLMT_EXIT_USAGE : LLMT_EXIT_IO;
	}
	if (lstat("ledger.jsonl", &sb) != 0) {
		fprintf(stderr, PROG ": '%s' is not a run dir (no %s)\n", dir, led);
		return LLMT_EXIT_NOINPUT;
	}
	/* every PATH must name a mark before anything is written */
	int idx[WR_BAD_MAX], n = 0;
	for (int a = 2; !all && a < argc; a++) {
		int k = argv[a][0] == '-' ? -2 : find_mark(&h, argv[a], cwd);
		if (k == -2) {
			fprintf(stderr, PROG ": '%s': not a checkpoint path (--all alone lifts every mark)\n", argv[a]);
			usage();
			return LLMT_EXIT_USAGE;
		}
		if (k < 0) {
			/* %s of the user's bytes on a terminal: shown as given */
			fprintf(stderr, PROG ": '%s' is not marked bad in %s\n", argv[a], led);
			list_marks(&h);
			return LLMT_EXIT_USAGE;
		}
		bool dup = false;
		for (int i = 0; i < n; i++)
			dup |= idx[i] == k;
		if (!dup && n < WR_BAD_MAX)
			idx[n++] = k;
	}
	if (all && h.nbad == 0) {
		list_marks(&h);
		return 0;
	}
	if (!(l.f = wr_fopen_write("ledger.jsonl", "a"))) {
		fprintf(stderr, PROG ": cannot open %s: %s\n", led, strerror(errno));
		return errno == EINVAL ? LLMT_EXIT_USAGE : LLMT_EXIT_IO;
	}
	if (all) {
		wr_ledger_event(&l, "ckpt_unmark", json_pack("{s:b}", "all", 1));
		fprintf(stderr, PROG ": %d mark(s) lifted: the next run may pick them again\n", h.nbad);
	}
	/* the mark's own path (as the wrapper wrote it), so the reader's
	 * string match holds */
	for (int i = 0; i < n; i++) {
		wr_ledger_event(&l, "ckpt_unmark", json_pack("{s:o}", "path", wr_json_text(h.bad[idx[i]].path)));
		char b[4200];
		fprintf(stderr, PROG ": %s: mark lifted: the next run may pick it again\n",
		        wr_shown(h.bad[idx[i]].path, b, sizeof b));
	}
	int rc = ferror(l.f) ? LLMT_EXIT_IO : 0;
	wr_ledger_close(&l);
	return rc;
}

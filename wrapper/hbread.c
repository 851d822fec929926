/* hbread: the heartbeat directory's reader (see hbread.h). */
#define _GNU_SOURCE
#include "hbread.h"
#include "rdfile.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbfile.h"

/* a whole small file into buf (NUL-terminated); its length or -1 */
static long slurp(const char *path, char *buf, size_t len)
{
	FILE *f = wr_fopen_read(path);
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return (long)n;
}

static void read_rank(const char *path, long r, const struct wr_hbtake *t, struct wr_hbread_ops *ops)
{
	char text[2048];
	struct wr_hb h;

	if (r < 0 || r >= t->n)
		return;
	if (ops)
		ops->opens++;
	if (slurp(path, text, sizeof text) < 0 || wr_hb_rank_text(text, &h))
		return;
	wr_hb_take(t, r, &h);
}

static int read_dir(const char *dir, const struct wr_hbtake *t, struct wr_hbread_ops *ops)
{
	static char *node;   /* a node file's text: the watch loop's thread only */
	const size_t node_len = 1 << 20;
	char path[4600];
	struct dirent *e;
	DIR *d;

	if (!node && !(node = malloc(node_len)))
		return -1;
	if (ops)
		ops->lists++;
	if (!(d = opendir(dir)))
		return -1;
	while ((e = readdir(d))) {
		const char *nm = e->d_name;
		char *end;
		if (strstr(nm, ".tmp"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, nm);
		if (strncmp(nm, "rank_", 5) == 0) {
			long r = strtol(nm + 5, &end, 10);
			if (end != nm + 5 && !*end)
				read_rank(path, r, t, ops);
		} else if (strncmp(nm, "node_", 5) == 0) {
			if (ops)
				ops->opens++;
			if (slurp(path, node, node_len) >= 0)
				wr_hb_node_take(node, t);
		}
	}
	closedir(d);
	return 0;
}

int wr_hb_read_new(const char *dir, struct wr_hb *out, int n, const struct wr_hbold *old,
                   struct wr_hbread_ops *ops)
{
	struct wr_hbtake t = { .out = out, .old = old, .n = n };

	memset(out, 0, (size_t)(n > 0 ? n : 0) * sizeof *out);
	return read_dir(dir, &t, ops);
}

int wr_hb_read_dir(const char *dir, struct wr_hb *out, int n, struct wr_hbread_ops *ops)
{
	return wr_hb_read_new(dir, out, n, NULL, ops);
}

int wr_hb_snapshot(const char *dir, struct wr_hbold *old, int n)
{
	struct wr_hbtake t = { .snap = old, .n = n };

	memset(old, 0, (size_t)(n > 0 ? n : 0) * sizeof *old);
	return read_dir(dir, &t, NULL);
}

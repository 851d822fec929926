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

static void read_rank(const char *path, long r, struct wr_hb *out, int n, struct wr_hbread_ops *ops)
{
	char text[2048];
	struct wr_hb h;

	if (r < 0 || r >= n)
		return;
	if (ops)
		ops->opens++;
	if (slurp(path, text, sizeof text) < 0 || wr_hb_rank_text(text, &h))
		return;
	if (!out[r].valid || out[r].time <= h.time)
		out[r] = h;
}

int wr_hb_read_dir(const char *dir, struct wr_hb *out, int n, struct wr_hbread_ops *ops)
{
	static char *node;   /* a node file's text: the watch loop's thread only */
	const size_t node_len = 1 << 20;
	char path[4600];
	struct dirent *e;
	DIR *d;

	memset(out, 0, (size_t)(n > 0 ? n : 0) * sizeof *out);
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
				read_rank(path, r, out, n, ops);
		} else if (strncmp(nm, "node_", 5) == 0) {
			if (ops)
				ops->opens++;
			if (slurp(path, node, node_len) >= 0)
				wr_hb_node_text(node, out, n);
		}
	}
	closedir(d);
	return 0;
}

/* hbfile: parsers of the rank and node heartbeat files (see hbfile.h). */
#include "hbfile.h"

#include <stdlib.h>
#include <string.h>

static char *next_line(char **p)
{
	char *s = *p, *e;

	if (!s || !*s)
		return NULL;
	e = strchr(s, '\n');
	if (e) {
		*e = 0;
		*p = e + 1;
	} else {
		*p = s + strlen(s);
	}
	return s;
}

int wr_hb_rank_text(char *text, struct wr_hb *h)
{
	char *p = text, *l = next_line(&p);

	if (!l || wr_hb_parse(l, h))
		return -1;
	if ((l = next_line(&p)))
		wr_rank_times_parse(l, &h->t);
	return 0;
}

int wr_hb_node_text(char *text, struct wr_hb *out, int n)
{
	char *p = text, *l = next_line(&p);
	struct wr_hb h;
	int cur = -1, taken = 0;

	if (!l || strncmp(l, "node ", 5))
		return -1;
	while ((l = next_line(&p))) {
		if (l[0] == 'r' && l[1] >= '0' && l[1] <= '9') {
			char *end;
			long r = strtol(l + 1, &end, 10);
			cur = -1;
			if (*end != ' ' || r < 0 || r >= n || wr_hb_parse(end + 1, &h))
				continue;
			if (out[r].valid && out[r].time > h.time)
				continue;
			out[r] = h;
			cur = (int)r;
			taken++;
		} else if (cur >= 0 && strncmp(l, "timing ", 7) == 0) {
			wr_rank_times_parse(l, &out[cur].t);
			cur = -1;
		}
	}
	return taken;
}

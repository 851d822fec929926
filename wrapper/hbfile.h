/* hbfile: the heartbeat files' text as the wrapper parses it: a rank's
 * file (its line and optional timing line) and a node's file (its ranks'
 * records, the node channel of include/llmt/heartbeat.h), and the records
 * left over from before a launch. Pure logic. */
#ifndef LLMT_WRAP_HBFILE_H
#define LLMT_WRAP_HBFILE_H

#include "hang.h"

/* A rank file's text: 0 with *h filled, or -1 (h->valid false). */
int wr_hb_rank_text(char *text, struct wr_hb *h);

/* The records a rank had before a launch (leftovers of an earlier
 * attempt, one per file that held one: its rank file, the files of the
 * nodes it ran on), by what the writer wrote: step, content time, phase.
 * A record of the new attempt differs from all of them; no clock is
 * compared, so a writer's clock behind the wrapper's does not make its
 * beats look old. */
#define WR_HB_OLD 4
struct wr_hbold {
	int n;
	struct { long step; double time; int phase; } k[WR_HB_OLD];
};
bool wr_hbold_has(const struct wr_hbold *o, const struct wr_hb *h);
void wr_hbold_add(struct wr_hbold *o, const struct wr_hb *h);   /* past WR_HB_OLD: the oldest replaced */

/* Where parsed records go: with snap, each is added to snap[r]; else into
 * out[r] unless it is in old[r] (old may be NULL) or out[r] holds a newer
 * one. Ranks r outside 0 <= r < n are skipped. */
struct wr_hbtake {
	struct wr_hb *out;
	const struct wr_hbold *old;
	struct wr_hbold *snap;
	int n;
};
/* One record of rank r; true when taken into out. */
bool wr_hb_take(const struct wr_hbtake *t, long r, const struct wr_hb *h);

/* A node file's text (modified), its records through t. Returns the
 * records taken, or -1 when the text is not a node file (no "node "
 * header). */
int wr_hb_node_take(char *text, const struct wr_hbtake *t);
/* The same into out[0..n) (no leftovers skipped). */
int wr_hb_node_text(char *text, struct wr_hb *out, int n);

#endif

/* hbfile: the heartbeat files' text as the wrapper parses it: a rank's
 * file (its line and optional timing line) and a node's file (its ranks'
 * records, the node channel of include/llmt/heartbeat.h). Pure logic. */
#ifndef LLMT_WRAP_HBFILE_H
#define LLMT_WRAP_HBFILE_H

#include "hang.h"

/* A rank file's text: 0 with *h filled, or -1 (h->valid false). */
int wr_hb_rank_text(char *text, struct wr_hb *h);

/* A node file's text (modified): each record of a rank 0 <= r < n goes
 * into out[r] unless out[r] holds a newer one. Returns the records taken,
 * or -1 when the text is not a node file (no "node " header). */
int wr_hb_node_text(char *text, struct wr_hb *out, int n);

#endif

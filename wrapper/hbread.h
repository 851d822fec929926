/* hbread: reads the heartbeat directory for the watch loop: one listing,
 * then one open per node file node_HOST (llm-train under Slurm) and per
 * rank file rank_NNNNN (other trainers, local runs) that is there; and
 * the records there before a launch, to tell this attempt's from them. */
#ifndef LLMT_WRAP_HBREAD_H
#define LLMT_WRAP_HBREAD_H

#include "hbfile.h"

struct wr_hbread_ops {
	long lists;   /* directory listings */
	long opens;   /* files opened */
};

/* Fills out[0..n) (cleared first: valid false where no record was
 * found; the newer of a rank's file and its node's record wins). ops, if
 * not NULL, counts the file-system calls. 0, or -1 if dir cannot be listed. */
int wr_hb_read_dir(const char *dir, struct wr_hb *out, int n, struct wr_hbread_ops *ops);

/* The same, but a record that is in old[r] (wr_hb_snapshot before the
 * launch) is skipped: a leftover of an earlier attempt (old may be NULL). */
int wr_hb_read_new(const char *dir, struct wr_hb *out, int n, const struct wr_hbold *old,
                   struct wr_hbread_ops *ops);

/* Every record in dir, from every file, into old[0..n) (cleared first):
 * taken just before a launch. 0, or -1 if dir cannot be listed (none
 * there yet: old stays empty). */
int wr_hb_snapshot(const char *dir, struct wr_hbold *old, int n);

#endif

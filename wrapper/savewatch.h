/* savewatch: the save phase's own hang limit. How long each rank has been
 * in phase save (on the wrapper's clock), the longest save seen (the run
 * dir's ledger, this job's attempts, the ranks' timing lines) and the limit
 * derived from it. Pure logic: watch.c feeds it heartbeats. */
#ifndef LLMT_WRAP_SAVEWATCH_H
#define LLMT_WRAP_SAVEWATCH_H

#include <stdbool.h>

#include "hang.h"

struct wr_save_cfg {
	double factor;    /* limit = factor x the longest save seen ... (0: off: the pause cap only) */
	double floor_s;   /* ... at least this ... */
	double cap_s;     /* ... at most this (the pause cap) */
};

/* The limit on one save: the cap while no save is known (longest_s < 0) or
 * the factor is 0, else factor x longest_s within [floor_s, cap_s]. */
double wr_save_limit(const struct wr_save_cfg *c, double longest_s);

/* One rank's save as the wrapper sees it. */
struct wr_saverank {
	bool in;          /* its last heartbeat read was in phase save */
	long step;        /* ... at this step */
	double since;     /* when the wrapper first read it in that save */
};

/* Takes rank r's heartbeat h (valid, read at now; phase and step matter):
 * a save begins when h is in phase save at another step than the one
 * tracked, or after another phase; it ends with any other phase. Returns
 * the length of a save that just ended (on the wrapper's clock: within a
 * read of the truth), else -1. */
double wr_save_track(struct wr_saverank *r, const struct wr_hb *h, double now);

/* The rank in a save for longer than limit (the longest such), or -1;
 * *held gets its time in the save. Ranks whose heartbeat shows another
 * phase (r->in false) are not judged. */
int wr_save_find(const struct wr_saverank *r, int n, double now, double limit, double *held);

/* The longer of longest_s (< 0: none known) and a save of save_s (< 0:
 * none): the longest save seen. */
double wr_save_longest(double longest_s, double save_s);

#endif

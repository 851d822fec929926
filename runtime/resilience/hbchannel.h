/* hbchannel.h: one rank's end of the node heartbeat channel: attaches to
 * its node's shared segment (hbnode.h) for the Slurm step, writes its slot,
 * and flushes the node's file CKPT_DIR/heartbeat/node_HOST when it is its
 * turn. Instance-based (the benchmark drives thousands in one process). */
#ifndef LLMT_HBCHANNEL_H
#define LLMT_HBCHANNEL_H

#include <stddef.h>
#include "hbnode.h"

struct llmt_hbc {
	struct llmt_hbn_seg *g;
	int slot, rank, created;
	char shm[200];
	char path[4200], tmp[4300];
	char host[64];
	long flushes;            /* node files this rank wrote (the benchmark counts them) */
};

/* Which channel LLM_TRAIN_HEARTBEAT_CHANNEL asks for: 1 node (also when
 * unset), 0 rank files, -1 a bad value (message in err). */
int llmt_hbc_wanted(const char *value, char *err, size_t errlen);

/* Attaches rank (its node host, already made safe) for the step named by
 * key (SLURM_JOB_ID.SLURM_STEP_ID) at local slot slot; dir is the
 * heartbeat directory. 0, or -1 (message in err); -2 when the segment
 * is another user's (or open to others): refused. */
int llmt_hbc_open(struct llmt_hbc *c, const char *dir, const char *host, const char *key, int slot, int rank,
	char *err, size_t errlen);

/* Writes the rank's text (its rank file's content, stamped t_ns) into its
 * slot. */
void llmt_hbc_write(struct llmt_hbc *c, long long t_ns, const char *text);

/* Flushes the node file if it is due (see llmt_hbn_claim) or forced.
 * Returns 1 when this rank wrote it, 0 when not, -1 on a write error. */
int llmt_hbc_flush(struct llmt_hbc *c, long long now_ns, double min_s, double force_s, int force);

/* Detaches; the node's last rank to leave flushes and removes the segment. */
void llmt_hbc_close(struct llmt_hbc *c, long long now_ns);

#endif

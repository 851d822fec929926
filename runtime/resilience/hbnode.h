/* hbnode.h: the node-level heartbeat channel's shared record (one segment
 * per node and step, in shared memory, one slot per local rank) and its
 * pure logic: a slot's lock-free write and read, the choice of the rank
 * that flushes, and the node file's text (include/llmt/heartbeat.h). */
#ifndef LLMT_HBNODE_H
#define LLMT_HBNODE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define LLMT_HBN_MAGIC 0x4c4d48424e4f4431ULL   /* "LMHBNOD1" */
#define LLMT_HBN_SLOTS 512                      /* local ranks per node at most */
#define LLMT_HBN_TEXT 976                       /* a rank file's text (two lines) */

struct llmt_hbn_slot {
	_Atomic uint32_t seq;    /* odd while its rank writes it */
	int32_t rank;            /* global rank, -1: never written */
	_Atomic int64_t time_ns; /* when the rank last wrote it (its own heartbeat time) */
	char text[LLMT_HBN_TEXT];
};

struct llmt_hbn_seg {
	uint64_t magic;
	_Atomic int32_t attached;   /* local ranks attached and not stopped */
	int32_t pad;
	_Atomic uint64_t gen;       /* bumped by every slot write */
	_Atomic uint64_t flushed;   /* the gen the last flush saw */
	_Atomic int64_t flush_ns;   /* when the last flush was claimed */
	char pad2[24];
	struct llmt_hbn_slot slot[LLMT_HBN_SLOTS];
};

/* Writes rank's text (one rank file's content) into slot s, stamped t_ns. */
void llmt_hbn_slot_write(struct llmt_hbn_seg *g, int s, int rank, long long t_ns, const char *text);

/* Copies slot s's text into out (len >= LLMT_HBN_TEXT) and its rank, or
 * returns -1: never written, or being written (a writer stopped mid-write
 * stays unreadable: the wrapper keeps its last record, which ages). */
int llmt_hbn_slot_read(struct llmt_hbn_seg *g, int s, char *out, int *rank);

/* Whether this caller flushes now (and it is claimed): something changed
 * since the last flush and min_s passed since it, or force_s passed
 * (refresh), or force is set. Lock-free: a stopped rank blocks nobody. */
int llmt_hbn_claim(struct llmt_hbn_seg *g, long long now_ns, double min_s, double force_s, int force,
	uint64_t *gen);
void llmt_hbn_flushed(struct llmt_hbn_seg *g, uint64_t gen);

/* The node file's text of every readable slot: a header line
 * "node HOST FLUSH_NS" then per rank "r<R> " + its first line, and its
 * other lines as they are. Returns the length, or -1 if buf is too small. */
long llmt_hbn_compose(struct llmt_hbn_seg *g, const char *host, long long now_ns, char *buf, size_t len);

/* The slot of a local rank from the environment (SLURM_LOCALID), or -1. */
int llmt_hbn_local_slot(const char *localid);

#endif

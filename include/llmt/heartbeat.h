/* heartbeat.h: the heartbeat contract between the runtime (writes,
 * runtime/resilience/heartbeat.c) and the wrapper (reads, wrapper/hbread.c
 * and hang.c): one file per rank, or one file per node holding its ranks'
 * records (doc/contracts.md). */
#ifndef LLMT_HEARTBEAT_CONTRACT_H
#define LLMT_HEARTBEAT_CONTRACT_H

/* the file of rank R under the heartbeat directory DIR: (DIR, R) */
#define LLMT_HB_PATH_FMT "%s/rank_%05d"
/* the file of node HOST (the node channel): (DIR, HOST); its first line
 * "node HOST FLUSH_NS", then per rank "r<R> " + the rank file's first
 * line, and its second line as it is */
#define LLMT_HB_NODE_PATH_FMT "%s/node_%s"
/* the node channel's shared-memory segment names of one Slurm step in
 * /dev/shm start with (UID, JOB_ID, STEP_ID); the SPANK plugin removes
 * those left at the step's end (ranks killed before they detached) */
#define LLMT_HB_SHM_STEP_FMT "llmt-hb-%u-%u.%u-"
/* its line: step, unix time in ns, phase (init load train save done),
 * seconds of the last step; then " host" when known, and a newline */
#define LLMT_HB_LINE_FMT "%ld %lld %s %.6f"
/* llm-train's refresh period (seconds) in load/save and while a rank waits
 * in a call under the watchdog's deadline (a short deadline makes it
 * shorter), and the greatest age of a refreshed heartbeat when read: the
 * writer ticks at a quarter period and writes once a period. The wrapper's
 * pause and stuck-rank margins are built on these (wrapper/hang.h). */
#define LLMT_HB_PERIOD_S 2.0
#define LLMT_HB_MAX_AGE_S (1.25 * LLMT_HB_PERIOD_S)

#endif

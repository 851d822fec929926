/* heartbeat.h: the heartbeat contract between the runtime (writes,
 * runtime/resilience/heartbeat.c) and the wrapper (reads, wrapper/watch.c
 * and hang.c): one file per rank, one line rewritten in place. */
#ifndef LLMT_HEARTBEAT_CONTRACT_H
#define LLMT_HEARTBEAT_CONTRACT_H

/* the file of rank R under the heartbeat directory DIR: (DIR, R) */
#define LLMT_HB_PATH_FMT "%s/rank_%05d"
/* its line: step, unix time in ns, phase (init load train save done),
 * seconds of the last step; then " host" when known, and a newline */
#define LLMT_HB_LINE_FMT "%ld %lld %s %.6f"

#endif

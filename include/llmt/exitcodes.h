/* Exit codes of llm-train: the contract the wrapper's decisions follow.
 * sysexits where one fits; 85-89 are this project's own. Shared by the
 * runtime, the wrapper and the man pages. */
#ifndef LLMT_EXITCODES_H
#define LLMT_EXITCODES_H

#define LLMT_EXIT_OK         0   /* training finished */
#define LLMT_EXIT_USAGE      64  /* EX_USAGE: usage or config error, never retried */
#define LLMT_EXIT_DATA       65  /* EX_DATAERR: bad data (token shard, checkpoint content) */
#define LLMT_EXIT_NOINPUT    66  /* EX_NOINPUT: an input file is missing */
#define LLMT_EXIT_SOFTWARE   70  /* EX_SOFTWARE: internal error (a bug): not retried blindly */
#define LLMT_EXIT_IO         74  /* EX_IOERR: checkpoint or output I/O failed */
#define LLMT_EXIT_TRANSIENT  75  /* EX_TEMPFAIL: lost peer, communication error: restart */
#define LLMT_EXIT_ROLLBACK   85  /* numerical fault persisted: roll back further, skip data */
#define LLMT_EXIT_SDC        86  /* silent data corruption suspected: DP replicas disagree, or a
                                     * master share no longer matches its weights */
#define LLMT_EXIT_REQUEUE    87  /* preempted (SIGUSR1/SIGTERM): checkpoint written, requeue */
#define LLMT_EXIT_BADNODE    88  /* selftest: a node computed wrong answers or is too slow (named in its report) */
#define LLMT_EXIT_BADCKPT    89  /* the checkpoint resumed from failed to load (checksum, size, content):
                                     * the wrapper marks it bad and resumes from an older one */

#endif

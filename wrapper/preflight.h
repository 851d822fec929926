/* preflight: the self-test (`llm-train selftest`) run by the wrapper over
 * the allocation, one task per node, before the first attempt and after
 * every node fault; its bad nodes are placed out (a spare, a smaller dp,
 * a requeue) with their figures in the ledger. */
#ifndef LLMT_WRAP_PREFLIGHT_H
#define LLMT_WRAP_PREFLIGHT_H

#include "job.h"

/* Runs the self-test when the job wants it (j->preflight, in Slurm), over
 * the allocation's nodes not excluded, into RUN_DIR/selftest-ATTEMPT.json.
 * Returns WR_NEXT_RESTART to launch the next attempt (nothing found, the
 * bad nodes placed out, or the self-test itself failing: reported, not
 * fatal), WR_NEXT_REQUEUE (too few nodes left: requeue without them) or
 * WR_NEXT_STOP (j->exit_code set). when: "start", "node_fault" (ledger). */
enum wr_next wr_job_preflight(struct wr_job *j, const char *when);

/* The action's ledger event and log line (shared with wr_job_act) */
void wr_job_log_action(struct wr_job *j, const struct wr_action *a, const char *source);

#endif

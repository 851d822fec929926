/* ledger: the job's event log RUN_DIR/ledger.jsonl (JSON lines, jansson),
 * appended across requeues, and the history read back from it (restarts,
 * failures, excluded nodes, attempts, allocated time) at each run start. */
#ifndef LLMT_WRAP_LEDGER_H
#define LLMT_WRAP_LEDGER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "classify.h"
#include "goodput.h"

struct wr_ledger {
	FILE *f;
	char path[4096];
};

/* Opens RUN_DIR/ledger.jsonl for appending (creating RUN_DIR). -1 with a
 * message naming the file on error; -2 (after one line) when RUN_DIR is
 * then another user's (include/llmt/owndir.h: made since the caller's
 * check). */
int wr_ledger_open(struct wr_ledger *l, const char *run_dir);
void wr_ledger_close(struct wr_ledger *l);

/* Writes {"time":now,"event":event, ...fields} as one line and flushes.
 * Takes the reference to fields (may be NULL). */
void wr_ledger_event(struct wr_ledger *l, const char *event, json_t *fields);

/* With on, every event is also printed on stderr (-v). */
void wr_ledger_verbose(bool on);

/* json array of node names */
json_t *wr_nodes_json(const struct wr_nodes *s);

/* A JSON string of s (NULL: ""); bytes that are not UTF-8 become '?'
 * (jansson refuses them, and json_pack would drop the whole event). */
json_t *wr_json_text(const char *s);

#define WR_HIST_MAX 512
#define WR_BAD_MAX 32

/* A checkpoint marked bad (event ckpt_bad): it failed to load, never picked again */
struct wr_bad_ckpt {
	char path[4096];
	bool trusted;                   /* llm-train's exit 89 said so (else the load-phase rule) */
	char id[64];                    /* llmt_ckpt_id when marked ("" : the path alone) */
};

struct wr_history {
	int runs;                       /* start events seen */
	int attempts_total;             /* launch events seen: next attempt number */
	int restarts;                   /* actions that used the budget */
	double restart_times[WR_HIST_MAX];
	int nrestart_times;
	struct wr_past past[WR_HIST_MAX];
	int npast;
	long fail_steps[WR_HIST_MAX];   /* step reached at each failure (-1 unknown) */
	struct wr_nodes excluded;       /* from the newest action */
	struct wr_attempt attempts[WR_HIST_MAX];
	int nattempts;
	double allocated_s;             /* sum over runs: start to its last event */
	double failure_time_s;          /* allocated time of runs, for the MTBF estimate */
	int failures;                   /* failures (not preemptions) so far */
	bool pending;                   /* the newest action was a requeue: its settings carry over */
	long max_resume_step;
	long skip_until_step;
	bool need_agree;
	bool last_run_cut;              /* the newest run has no end or requeue event */
	double last_run_end;            /* time of its last event */
	struct wr_bad_ckpt bad[WR_BAD_MAX]; /* checkpoints marked bad: by exit 89 in any job of the
	                                     * run dir, by the load-phase rule in this job */
	int nbad;
	double save_longest_s;          /* the longest save event's save_s of the run dir (< 0: none) */
};

/* Adds path to h's bad checkpoints (no duplicates; full: the oldest mark
 * is dropped); id as llmt_ckpt_id (include/llmt/ckptid.h) gave it when marked ("": by path alone). */
void wr_history_bad_id(struct wr_history *h, const char *path, bool trusted, const char *id);
/* Lifts h's marks of path (every identity); NULL: all of them (event
 * ckpt_unmark, written by llm-train-wrap ckpt-unmark). */
void wr_history_unmark(struct wr_history *h, const char *path);
/* Whether the checkpoint at path is marked bad in h (the same path, and
 * the same identity where the mark has one) */
bool wr_history_is_bad(const struct wr_history *h, const char *path);

/* Reads the ledger at path into h (an absent file is an empty history).
 * Lines that do not parse are skipped with a warning on stderr. The
 * restart budget (restarts, their times, a pending requeue) counts only
 * runs of job (requeues keep the job id); a new job in the same run dir
 * starts with a full budget. job NULL: count every run. */
int wr_ledger_load(const char *path, const char *job, struct wr_history *h);

#endif

/* hang: progress judgement from heartbeats. Parses heartbeat lines, keeps
 * observed step times, derives the hang timeout (k x median step time,
 * floor and cap), finds a stalled rank, a straggler, and the rank that
 * stalled its peers into the communication watchdog. Pure logic. */
#ifndef LLMT_WRAP_HANG_H
#define LLMT_WRAP_HANG_H

#include <stdbool.h>

#include "ranktimes.h"
#include "llmt/heartbeat.h"

enum wr_phase { PH_NONE = 0, PH_INIT, PH_LOAD, PH_TRAIN, PH_SAVE, PH_DONE };

struct wr_hb {
	bool valid;          /* a heartbeat was read for this rank */
	long step;
	double time;         /* content time, seconds since the epoch (the writer's
	                        clock; wr_hb_mark makes it the wrapper's) */
	enum wr_phase phase;
	double last_step_s;  /* duration of the rank's last step */
	char host[64];       /* optional 5th field: the rank's node */
	struct wr_rank_times t; /* optional second line: its step time breakdown */
};

/* The wrapper's own clock for one rank's heartbeat: the content it last
 * read (step, content time, phase) and when (the wrapper's clock) it
 * first read that content. */
struct wr_hbmark {
	bool valid;
	long step;
	double raw;   /* content time as written, on the writer's clock */
	int phase;
	double seen;
	double off;   /* the writer's clock less ours, as best seen (late by a read's delay at most) */
};
/* h, a record of this attempt, read at now (the wrapper's clock): content
 * that differs from m's is new, seen now. h->time becomes when its content
 * was first seen: a heartbeat's age is the wrapper's own, and the writer's
 * clock (behind or ahead of the wrapper's) is never compared with it.
 * The time in its timing line (h->t.first) is moved onto the wrapper's
 * clock by m->off (late by at most the least delay of a read). True when
 * the content is new. */
bool wr_hb_mark(struct wr_hbmark *m, struct wr_hb *h, double now);

/* Parses "<step> <unix_time_ns> <phase> <last_step_seconds> [host]".
 * Returns 0, or -1 (hb->valid false) on a malformed line. */
int wr_hb_parse(const char *line, struct wr_hb *hb);
const char *wr_phase_name(enum wr_phase p);

#define WR_STEPTIMES 256
struct wr_steptimes {
	double v[WR_STEPTIMES];
	int n, next;
};
void wr_steptimes_add(struct wr_steptimes *st, double s);
double wr_median(const double *v, int n);   /* 0 for n == 0; does not reorder v */

struct wr_hang_cfg {
	double k;         /* timeout = k x median step time ... */
	double floor_s;   /* ... at least this ... */
	double cap_s;     /* ... at most this */
	double startup_s; /* the timeout before any step time is known (0: cap_s) */
	double pause_cap_s; /* load/save pause detection, but not past this (stuck I/O) */
};

double wr_hang_timeout(const struct wr_hang_cfg *c, const struct wr_steptimes *st);

/* The rank that made no progress for longer than its limit, or -1.
 * Limits: `timeout` in training. Load/save pause detection (pause_cap_s),
 * unless another rank has reached a later step (a rank left behind in a
 * save is stuck, not saving) or another paused rank beat max(`timeout`,
 * WR_PAUSE_BEHIND_S) later (its heartbeat thread runs, this one's does
 * not). startup_s for a rank still in init, or without a heartbeat while
 * others have one (counted from `since`, when this attempt's first
 * heartbeat appeared), until some rank has finished a step of this
 * attempt. No heartbeat at all: nothing to judge. The stalled rank is the
 * one silent the longest; *stale gets its silence. */
#define WR_PAUSE_BEHIND_S (4 * LLMT_HB_MAX_AGE_S)   /* 10 s: 4 refresh bounds */
int wr_hang_find(const struct wr_hb *hb, int n, double now, double since,
                 double timeout, double startup_s, double pause_cap_s, double *stale);

/* A rank whose last step took more than factor x the median of all ranks
 * (and at least min_s longer): returns the slowest such rank or -1. */
int wr_straggler(const struct wr_hb *hb, int n, double factor, double min_s, double *ratio);

/* After a rank exited 75 from the communication watchdog: the rank its
 * peers waited for. A rank waiting in a call under the watchdog's deadline
 * has its heartbeat rewritten every few seconds (at most LLMT_HB_MAX_AGE_S
 * old with llm-train); a rank stuck outside communication has not written one since
 * its step began, at least the deadline before the watchdog fired. So the
 * stuck rank is the one whose heartbeat is older than every other rank's
 * by more than margin_s. Returns it, or -1: margin_s <= 0, fewer than two
 * ranks, a rank without a heartbeat of this attempt (nothing to judge
 * from), or no rank stands out (all fresh, all equally stale). Ranks in
 * phase done are left out. *silent gets its silence at now, *gap how much
 * longer that is than the next rank's. */
int wr_stuck_find(const struct wr_hb *hb, int n, double now, double margin_s, double *silent, double *gap);

/* A vouched heartbeat's greatest age (2.5 s) with some slack (3 s). */
#define WR_STUCK_FLOOR_S (LLMT_HB_MAX_AGE_S + 0.5)
/* The margin for wr_stuck_find from the deadline LLM_TRAIN_COMM_TIMEOUT
 * (seconds): half of it, so that ranks merely out of step by up to half a
 * deadline are not blamed, and at least WR_STUCK_FLOOR_S; 0 when the
 * watchdog is off (<= 0): its exit 75 comes from elsewhere and no rank's
 * heartbeat is vouched for. */
double wr_stuck_margin(double comm_timeout_s);

/* After wr_hang_find named a rank: whether the evidence singles it out.
 * Without a marked collective wait (ddp_hook, job.collective()) a rank
 * blocked waiting for a hung peer goes stale too, so when every rank not
 * done is at the same step and their last beats lie within window_s of
 * each other, the stalest one is whichever beat first, not the culprit.
 * True then (*nranks: how many, *spread: newest less oldest last beat);
 * false when one rank is behind (an older step, no heartbeat while others
 * have one, or silent window_s longer than another) or fewer than two
 * ranks are judged, or when the newest last beat is at most
 * LLMT_HB_MAX_AGE_S before now: that rank still beats (it waits in a
 * marked collective), so the stalest is singled out however short the
 * hang timeout (at 4 s a waiter 1-2 s old lay within the window).
 * `since` as for wr_hang_find. */
bool wr_hang_together(const struct wr_hb *hb, int n, double since, double now, double window_s,
                      int *nranks, double *spread);

/* The window for wr_hang_together: a waiting rank's heartbeat is rewritten
 * every LLMT_HB_PERIOD_S (at most LLMT_HB_MAX_AGE_S old), so a rank whose
 * peers wait in a marked collective is older than them by more than this
 * once they have waited; ranks that all stopped at one step boundary lie
 * a fraction of a second apart. */
#define WR_HANG_TOGETHER_S WR_STUCK_FLOOR_S

#endif

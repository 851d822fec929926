/* hang: progress judgement from heartbeats. Parses heartbeat lines, keeps
 * observed step times, derives the hang timeout (k x median step time,
 * floor and cap), finds a stalled rank and a straggler. Pure logic. */
#ifndef LLMT_WRAP_HANG_H
#define LLMT_WRAP_HANG_H

#include <stdbool.h>

enum wr_phase { PH_NONE = 0, PH_INIT, PH_LOAD, PH_TRAIN, PH_SAVE, PH_DONE };

struct wr_hb {
	bool valid;          /* a heartbeat was read for this rank */
	long step;
	double time;         /* content time, seconds since the epoch */
	enum wr_phase phase;
	double last_step_s;  /* duration of the rank's last step */
	char host[64];       /* optional 5th field: the rank's node */
};

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
 * Limits: `timeout` in training; load/save pause detection (pause_cap_s)
 * unless another rank has reached a later step (a rank left behind in a
 * save is stuck, not saving); a rank still in init, or without a heartbeat
 * while others have one, gets startup_s, the latter counted from `since`
 * (when this attempt's first heartbeat appeared). No heartbeat at all:
 * nothing to judge. The stalled rank is the one silent the longest;
 * *stale gets its silence. */
int wr_hang_find(const struct wr_hb *hb, int n, double now, double since,
                 double timeout, double startup_s, double pause_cap_s, double *stale);

/* A rank whose last step took more than factor x the median of all ranks
 * (and at least min_s longer): returns the slowest such rank or -1. */
int wr_straggler(const struct wr_hb *hb, int n, double factor, double min_s, double *ratio);

#endif

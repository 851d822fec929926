/* heartbeat.h: the per-rank heartbeat file the wrapper watches:
 * DIR/rank_NNNNN holding "<step> <unix_time_ns> <phase> <last_step_seconds>
 * <host>" and, once a step is timed, a second line "timing ..." (the
 * rank's step time breakdown, steptime.h), rewritten with tmp + rename. During init/load/save a background
 * thread rewrites it every few seconds; during train only the loop does
 * (once per step), so a hung step shows as a stale time; except while the
 * rank waits in one communication call under the watchdog's deadline
 * (watchdog.h): the thread vouches for it then, so the rank the others
 * wait for is the one whose heartbeat goes stale. */
#ifndef LLMT_HEARTBEAT_H
#define LLMT_HEARTBEAT_H
#include <stddef.h>

typedef enum { LLMT_HB_INIT, LLMT_HB_LOAD, LLMT_HB_TRAIN, LLMT_HB_SAVE, LLMT_HB_DONE } llmt_hb_phase;

const char *llmt_hb_phase_name(llmt_hb_phase p);
/* Pure: the line for these values (with newline) into buf, without the
 * host field. */
int llmt_hb_format(char *buf, size_t len, long step, long long time_ns, llmt_hb_phase p, double last_step_s);
/* Pure: the same with the host field appended (host NULL or "": none). */
int llmt_hb_format_host(char *buf, size_t len, long step, long long time_ns, llmt_hb_phase p,
	double last_step_s, const char *host);
/* Pure: this rank's node for the host field: nodename (SLURMD_NODENAME)
 * when set and not empty, else hostname; characters other than letters,
 * digits, '.', '-', '_' become '_', cut to 63 bytes (what the wrapper
 * reads); "unknown" when both are empty. */
void llmt_hb_host(char *out, size_t len, const char *nodename, const char *hostname);

/* Start: creates dir if needed; the host field comes from
 * SLURMD_NODENAME, else gethostname(). Returns 0, or -1 with a message (the
 * caller exits LLMT_EXIT_IO). period_s: refresh during long phases. */
int llmt_hb_start(const char *dir, int rank, double period_s);
/* Record the state and rewrite the file now. */
void llmt_hb_set(long step, llmt_hb_phase p, double last_step_s);
/* The second line of the file from the next write on (the per-rank
 * timings, steptime.h; with its newline; NULL or "": none). */
void llmt_hb_set_timing(const char *line);
/* Final write (phase as given) and stop the thread. */
void llmt_hb_stop(llmt_hb_phase final_phase);

#endif

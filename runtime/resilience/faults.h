/* faults.h: test fault injection from LLM_TRAIN_FAULT=kind@step[:rank][/node]
 * (several separated by commas). Kinds: nan spike bitflip crash exit75
 * hang stall slowsave; a trailing '!' on the kind fires on every attempt,
 * else only when LLM_TRAIN_ATTEMPT is unset or 0. rank omitted: every rank;
 * /node: only in ranks on that node (the heartbeat's host name). */
#ifndef LLMT_FAULTS_H
#define LLMT_FAULTS_H
#include <stddef.h>

typedef enum { LLMT_FAULT_NAN, LLMT_FAULT_SPIKE, LLMT_FAULT_BITFLIP, LLMT_FAULT_CRASH,
	LLMT_FAULT_EXIT75, LLMT_FAULT_HANG, LLMT_FAULT_STALL, LLMT_FAULT_SLOWSAVE,
	LLMT_FAULT_NKINDS } llmt_fault_kind;

#define LLMT_MAX_FAULTS 8
typedef struct {
	int n;
	struct { llmt_fault_kind kind; long step; int rank; int always; } f[LLMT_MAX_FAULTS];
} llmt_faults;

/* Pure: parse spec (NULL or "" = none) for attempt `attempt` in a rank on
 * node `host` (NULL: on no named node). Faults that cannot fire on this
 * attempt or node are dropped. 0, or -1 with err set. */
int llmt_faults_parse(llmt_faults *fs, const char *spec, int attempt, const char *host, char *err,
	size_t errlen);
/* From LLM_TRAIN_FAULT and LLM_TRAIN_ATTEMPT, on this node (SLURMD_NODENAME,
 * else the host name, as the heartbeat names it). */
int llmt_faults_from_env(llmt_faults *fs, char *err, size_t errlen);
/* Whether a fault of kind fires at step on rank. */
int llmt_fault_at(const llmt_faults *fs, llmt_fault_kind kind, long step, int rank);
/* Fire the process-level kinds (crash, exit75, hang, stall) due at step on
 * rank. */
void llmt_faults_fire_process(const llmt_faults *fs, long step, int rank);
/* Fire slowsave (in the checkpoint save of step) on rank. */
void llmt_faults_fire_save(const llmt_faults *fs, long step, int rank);
/* How long stall and slowsave sleep: twice the communication deadline
 * (a peer that slow is lost to the others), 10 s when it is off. */
double llmt_faults_stall_s(void);

#endif

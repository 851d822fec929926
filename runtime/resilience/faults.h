/* faults.h: test fault injection from LLM_TRAIN_FAULT=kind@step[:rank][/node]
 * (several separated by commas). Kinds: nan spike bitflip crash exit75
 * hang stall slowsave masterflip sharefail, and the bad-node kinds wrongmath
 * slow slowlink (active from their step on); a trailing '!' on the kind fires on every attempt,
 * else only when LLM_TRAIN_ATTEMPT is unset or 0. rank omitted: every rank;
 * /node: only in ranks on that node (the heartbeat's host name). */
#ifndef LLMT_FAULTS_H
#define LLMT_FAULTS_H
#include <stddef.h>

typedef enum { LLMT_FAULT_NAN, LLMT_FAULT_SPIKE, LLMT_FAULT_BITFLIP, LLMT_FAULT_CRASH,
	LLMT_FAULT_EXIT75, LLMT_FAULT_HANG, LLMT_FAULT_STALL, LLMT_FAULT_SLOWSAVE,
	LLMT_FAULT_WRONGMATH, LLMT_FAULT_SLOW, LLMT_FAULT_SLOWLINK, LLMT_FAULT_MASTERFLIP,
	LLMT_FAULT_SHAREFAIL, LLMT_FAULT_NKINDS } llmt_fault_kind;

#define LLMT_MAX_FAULTS 8
typedef struct {
	int n;
	struct { llmt_fault_kind kind; long step; int rank; int always; } f[LLMT_MAX_FAULTS];
	double slow_factor;  /* slow: LLM_TRAIN_FAULT_SLOW, default 3 */
	double delay_ms;     /* slowlink: LLM_TRAIN_FAULT_DELAY_MS, default 20 */
} llmt_faults;

/* Pure: parse spec (NULL or "" = none) for attempt `attempt` in a rank on
 * node `host` (NULL: on no named node). Faults that cannot fire on this
 * attempt or node are dropped. 0, or -1 with err set. */
int llmt_faults_parse(llmt_faults *fs, const char *spec, int attempt, const char *host, char *err,
	size_t errlen);
/* From LLM_TRAIN_FAULT and LLM_TRAIN_ATTEMPT, on this node (SLURMD_NODENAME,
 * else the host name, as the heartbeat names it). */
int llmt_faults_from_env(llmt_faults *fs, char *err, size_t errlen);
/* Pure: LLM_TRAIN_FAULT_SLOW and LLM_TRAIN_FAULT_DELAY_MS (NULL or "":
 * the defaults 3 and 20) into fs. 0, or -1 with err naming the bad value. */
int llmt_faults_params(llmt_faults *fs, const char *slow, const char *delay_ms, char *err,
	size_t errlen);
/* Whether a fault of kind fires at step on rank. */
int llmt_fault_at(const llmt_faults *fs, llmt_fault_kind kind, long step, int rank);
/* Whether a fault of kind is active at step on rank: given for a step <=
 * step (wrongmath, slow, slowlink act from their step on); step < 0: for
 * any step (the self-test ignores the step). */
int llmt_fault_from(const llmt_faults *fs, llmt_fault_kind kind, long step, int rank);
/* The bad-node kinds active at step (< 0: any) on rank: wrongmath turns
 * the matrix products' perturbation on (model/matmul.h), slowlink the
 * delay of every send and collective (comm/comm.h). Once on, they stay
 * on. Says so on stderr the first time. */
void llmt_faults_fire_node(const llmt_faults *fs, long step, int rank);
/* slow: when active at step (< 0: any) on rank, sleep (factor - 1) x
 * compute_s, the compute time just measured. Returns the seconds slept. */
double llmt_faults_slow_sleep(const llmt_faults *fs, long step, int rank, double compute_s);
/* Fire the process-level kinds (crash, exit75, hang, stall) due at step on
 * rank. */
void llmt_faults_fire_process(const llmt_faults *fs, long step, int rank);
/* Fire slowsave (in the checkpoint save of step) on rank. */
void llmt_faults_fire_save(const llmt_faults *fs, long step, int rank);
/* How long stall and slowsave sleep: twice the communication deadline
 * (a peer that slow is lost to the others), 10 s when it is off. */
double llmt_faults_stall_s(void);

#endif

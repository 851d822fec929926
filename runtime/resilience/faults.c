/* faults.c: parser and triggers of LLM_TRAIN_FAULT (tests only; nothing
 * happens unless the variable is set). */
#include "faults.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include "comm/comm.h"
#include "heartbeat.h"
#include "llmt/exitcodes.h"
#include "model/matmul.h"
#include "watchdog.h"
#include "llmt/env.h"

static const char *kinds[] = { "nan", "spike", "bitflip", "crash", "exit75", "hang", "stall", "slowsave",
	"wrongmath", "slow", "slowlink", "masterflip", "sharefail" };

/* Sleep s seconds on the monotonic clock, through signals. */
static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

int llmt_faults_parse(llmt_faults *fs, const char *spec, int attempt, const char *host, char *err,
	size_t errlen)
{
	char buf[512], *save = NULL, *item;

	memset(fs, 0, sizeof(*fs));
	fs->slow_factor = 3;
	fs->delay_ms = 20;
	if (!spec || !*spec)
		return 0;
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "LLM_TRAIN_FAULT: too long");
		return -1;
	}
	strcpy(buf, spec);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *at = strchr(item, '@'), *end, *colon, *node = strchr(item, '/');
		int k, always = 0;
		long step, rank = -1;
		if (node) {
			*node++ = 0;
			if (!*node || strlen(node) > 63 || strchr(node, '/')) {
				snprintf(err, errlen, "LLM_TRAIN_FAULT: bad node '%s' (a host name, at most 63 bytes)", node);
				return -1;
			}
		}
		if (!at) {
			snprintf(err, errlen, "LLM_TRAIN_FAULT=%s: want kind@step[:rank][/node]", spec);
			return -1;
		}
		*at = 0;
		if (at > item && at[-1] == '!') {
			always = 1;
			at[-1] = 0;
		}
		for (k = 0; k < LLMT_FAULT_NKINDS; k++)
			if (!strcmp(item, kinds[k]))
				break;
		if (k == LLMT_FAULT_NKINDS) {
			snprintf(err, errlen, "LLM_TRAIN_FAULT: unknown kind '%s' (nan spike bitflip crash exit75 hang stall slowsave wrongmath slow slowlink masterflip sharefail)", item);
			return -1;
		}
		colon = strchr(at + 1, ':');
		if (colon)
			*colon = 0;
		errno = 0;
		step = strtol(at + 1, &end, 10);
		if (errno || end == at + 1 || *end || step < 0) {
			snprintf(err, errlen, "LLM_TRAIN_FAULT: bad step '%s'", at + 1);
			return -1;
		}
		if (colon) {
			rank = strtol(colon + 1, &end, 10);
			if (end == colon + 1 || *end || rank < 0) {
				snprintf(err, errlen, "LLM_TRAIN_FAULT: bad rank '%s'", colon + 1);
				return -1;
			}
		}
		if (fs->n == LLMT_MAX_FAULTS) {
			snprintf(err, errlen, "LLM_TRAIN_FAULT: more than %d faults", LLMT_MAX_FAULTS);
			return -1;
		}
		if ((!always && attempt != 0) || (node && (!host || strcmp(node, host))))
			continue;
		fs->f[fs->n].kind = (llmt_fault_kind)k;
		fs->f[fs->n].step = step;
		fs->f[fs->n].rank = (int)rank;
		fs->f[fs->n].always = always;
		fs->n++;
	}
	return 0;
}

int llmt_faults_from_env(llmt_faults *fs, char *err, size_t errlen)
{
	const char *a = getenv(LLMT_ENV_ATTEMPT);
	int attempt = a && *a ? atoi(a) : 0;
	char hn[256] = "", host[64];

	if (gethostname(hn, sizeof(hn) - 1))
		hn[0] = 0;
	llmt_hb_host(host, sizeof(host), getenv("SLURMD_NODENAME"), hn);
	if (llmt_faults_parse(fs, getenv(LLMT_ENV_FAULT), attempt, host, err, errlen))
		return -1;
	return llmt_faults_params(fs, getenv("LLM_TRAIN_FAULT_SLOW"), getenv("LLM_TRAIN_FAULT_DELAY_MS"),
		err, errlen);
}

static int param(const char *name, const char *s, double lo, double hi, double *out, char *err,
	size_t errlen)
{
	char *end;
	double v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		snprintf(err, errlen, "%s=%s: want a number in [%g, %g]", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int llmt_faults_params(llmt_faults *fs, const char *slow, const char *delay_ms, char *err,
	size_t errlen)
{
	if (param("LLM_TRAIN_FAULT_SLOW", slow, 1, 1000, &fs->slow_factor, err, errlen) ||
	    param("LLM_TRAIN_FAULT_DELAY_MS", delay_ms, 0, 60000, &fs->delay_ms, err, errlen))
		return -1;
	return 0;
}

int llmt_fault_from(const llmt_faults *fs, llmt_fault_kind kind, long step, int rank)
{
	for (int i = 0; i < fs->n; i++)
		if (fs->f[i].kind == kind && (step < 0 || fs->f[i].step <= step) &&
		    (fs->f[i].rank < 0 || fs->f[i].rank == rank))
			return 1;
	return 0;
}

void llmt_faults_fire_node(const llmt_faults *fs, long step, int rank)
{
	static int math_on, link_on;

	if (!math_on && llmt_fault_from(fs, LLMT_FAULT_WRONGMATH, step, rank)) {
		math_on = 1;
		fprintf(stderr, "llm-train: rank %d: injected fault wrongmath (%s %ld): one element of every matrix product perturbed\n",
			rank, step < 0 ? "self-test, step" : "from step", step);
		llmt_mm_set_perturb(1);
	}
	if (!link_on && llmt_fault_from(fs, LLMT_FAULT_SLOWLINK, step, rank)) {
		link_on = 1;
		fprintf(stderr, "llm-train: rank %d: injected fault slowlink (%s %ld): every send delayed %.1f ms\n",
			rank, step < 0 ? "self-test, step" : "from step", step, fs->delay_ms);
		llmt_comm_set_send_delay(fs->delay_ms / 1000);
	}
}

double llmt_faults_slow_sleep(const llmt_faults *fs, long step, int rank, double compute_s)
{
	static int said;
	double s = (fs->slow_factor - 1) * compute_s;

	if (!llmt_fault_from(fs, LLMT_FAULT_SLOW, step, rank) || !(s > 0))
		return 0;
	if (!said++)
		fprintf(stderr, "llm-train: rank %d: injected fault slow (%s %ld): compute x%g\n", rank,
			step < 0 ? "self-test, step" : "from step", step, fs->slow_factor);
	sleep_s(s);
	return s;
}

int llmt_fault_at(const llmt_faults *fs, llmt_fault_kind kind, long step, int rank)
{
	for (int i = 0; i < fs->n; i++)
		if (fs->f[i].kind == kind && fs->f[i].step == step && (fs->f[i].rank < 0 || fs->f[i].rank == rank))
			return 1;
	return 0;
}

void llmt_faults_fire_process(const llmt_faults *fs, long step, int rank)
{
	if (llmt_fault_at(fs, LLMT_FAULT_CRASH, step, rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault crash@%ld\n", rank, step);
		abort();
	}
	if (llmt_fault_at(fs, LLMT_FAULT_EXIT75, step, rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault exit75@%ld\n", rank, step);
		fflush(NULL);
		_exit(LLMT_EXIT_TRANSIENT);
	}
	if (llmt_fault_at(fs, LLMT_FAULT_HANG, step, rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault hang@%ld\n", rank, step);
		for (;;)
			pause();
	}
	if (llmt_fault_at(fs, LLMT_FAULT_STALL, step, rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault stall@%ld (%.1f s)\n", rank, step,
			llmt_faults_stall_s());
		sleep_s(llmt_faults_stall_s());
	}
}

void llmt_faults_fire_save(const llmt_faults *fs, long step, int rank)
{
	if (llmt_fault_at(fs, LLMT_FAULT_SLOWSAVE, step, rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault slowsave@%ld (%.1f s)\n", rank, step,
			llmt_faults_stall_s());
		sleep_s(llmt_faults_stall_s());
	}
}

double llmt_faults_stall_s(void)
{
	double t = llmt_wd_timeout();

	return t > 0 ? 2 * t : 10;
}

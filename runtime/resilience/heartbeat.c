/* heartbeat.c: heartbeat writer (its node's channel under a Slurm step,
 * hbchannel.h, else its own rank file) with a refresh thread for phases in
 * which the main thread may block for long (checkpoint I/O, startup) and
 * for waits in communication that the watchdog bounds. The node file is
 * flushed at most every quarter period, except a phase change: at once. */
#include "heartbeat.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "llmt/env.h"
#include "llmt/heartbeat.h"
#include "hbchannel.h"
#include "watchdog.h"

static const char *names[] = { "init", "load", "train", "save", "done" };

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int running, stop;
	char path[4096], tmp[4200];
	char host[64];
	char timing[320];    /* the second line (steptime.h), "" until set */
	long step;
	llmt_hb_phase phase;
	double last;
	double period;
	long long written;   /* time of the last write (ns) */
	int node;            /* the node channel (ch) instead of the rank file */
	int flushed_phase;   /* the phase of this rank's last flush of the node file */
	struct llmt_hbc ch;
} hb = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

const char *llmt_hb_phase_name(llmt_hb_phase p)
{
	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "init";
}

int llmt_hb_format(char *buf, size_t len, long step, long long time_ns, llmt_hb_phase p, double last_step_s)
{
	return llmt_hb_format_host(buf, len, step, time_ns, p, last_step_s, NULL);
}

int llmt_hb_format_host(char *buf, size_t len, long step, long long time_ns, llmt_hb_phase p,
	double last_step_s, const char *host)
{
	if (host && *host)
		return snprintf(buf, len, LLMT_HB_LINE_FMT " %s\n", step, time_ns, llmt_hb_phase_name(p),
			last_step_s, host);
	return snprintf(buf, len, LLMT_HB_LINE_FMT "\n", step, time_ns, llmt_hb_phase_name(p), last_step_s);
}

void llmt_hb_host(char *out, size_t len, const char *nodename, const char *hostname)
{
	const char *s = nodename && *nodename ? nodename : hostname && *hostname ? hostname : "unknown";
	size_t n = 0;

	if (!len)
		return;
	for (; s[n] && n + 1 < len && n < 63; n++) {
		unsigned char ch = (unsigned char)s[n];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			ch == '.' || ch == '-' || ch == '_';
		out[n] = ok ? (char)ch : '_';
	}
	out[n] = 0;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* called with hb.mu held: flushes the node file when due (rate-limited
 * to a quarter period, refreshed every ten) or at once when forced; notes
 * which phase reached the file */
static void flush_node(long long t_ns, int force)
{
	if (llmt_hbc_flush(&hb.ch, t_ns, hb.period / 4, 10 * hb.period, force) == 1)
		hb.flushed_phase = (int)hb.phase;
}

/* called with hb.mu held */
static void write_locked(void)
{
	char line[640];
	FILE *f;
	int n;

	hb.written = now_ns();
	n = llmt_hb_format_host(line, sizeof(line), hb.step, hb.written, hb.phase, hb.last, hb.host);
	if (n > 0 && hb.timing[0] && (size_t)n + strlen(hb.timing) < sizeof(line)) {
		memcpy(line + n, hb.timing, strlen(hb.timing) + 1);
		n += (int)strlen(hb.timing);
	}

	if (hb.node) {
		llmt_hbc_write(&hb.ch, hb.written, line);
		/* a phase change is news the wrapper must see at once (a rank
		 * frozen right after it would show its old phase) */
		flush_node(hb.written, (int)hb.phase != hb.flushed_phase);
		return;
	}
	f = fopen(hb.tmp, "w");
	if (!f)
		return; /* a missed beat is reported by the wrapper; never fatal here */
	if (fwrite(line, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		return;
	}
	if (fclose(f) == 0)
		rename(hb.tmp, hb.path);
}

/* In train: whether the rank has been waiting in one communication call
 * since the last tick, with the watchdog's deadline bounding that wait (a
 * rank stuck in compute, stopped or hung outside communication is not). */
static int waiting_in_comm(uint64_t *last_seq)
{
	uint64_t seq = llmt_wd_seq();
	int same = (seq & 1) && seq == *last_seq;

	*last_seq = seq;
	return same && llmt_wd_active();
}

static void *ticker(void *arg)
{
	uint64_t last_seq = 0;

	(void)arg;
	pthread_mutex_lock(&hb.mu);
	/* ticks at a quarter of the period; writes at most once a period, so
	 * a refreshed heartbeat is never older than 1.25 periods */
	while (!hb.stop) {
		int due;
		llmt_timedwait_s(&hb.cv, &hb.mu, CLOCK_REALTIME, hb.period / 4);
		if (hb.stop)
			break;
		/* the node channel's file lags a write by up to a quarter
		 * period: its rewrites come that much sooner, so a refreshed
		 * heartbeat is still never older than 1.25 periods when read */
		due = (double)(now_ns() - hb.written) >= (hb.node ? 0.75 : 1.0) * hb.period * 1e9;
		if (hb.phase == LLMT_HB_TRAIN ? waiting_in_comm(&last_seq) && due : hb.phase != LLMT_HB_DONE && due)
			write_locked();
		else if (hb.node)   /* the node's other ranks' news, if none of them flushed it */
			flush_node(now_ns(), 0);
	}
	pthread_mutex_unlock(&hb.mu);
	return NULL;
}

/* Under a Slurm step, the node channel (unless LLM_TRAIN_HEARTBEAT_CHANNEL
 * is rank): 1 on, 0 rank files (also when the segment is someone
 * else's), -1 a bad value or no segment. */
static int open_channel(const char *dir, int rank)
{
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	int slot = llmt_hbn_local_slot(getenv("SLURM_LOCALID"));
	char err[512], key[96];
	int want = llmt_hbc_wanted(getenv(LLMT_ENV_HEARTBEAT_CHANNEL), err, sizeof(err));

	if (want <= 0 || !job || !*job || !step || !*step || slot < 0) {
		if (want < 0)
			fprintf(stderr, "llm-train: %s\n", err);
		return want < 0 ? -1 : 0;
	}
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr, "llm-train: heartbeat dir %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(key, sizeof(key), "%.40s.%.40s", job, step);
	int rc = llmt_hbc_open(&hb.ch, dir, hb.host, key, slot, rank, err, sizeof(err));
	/* a segment another user made first (the name can be guessed): this
	 * rank's own file instead, so that they cannot fail the job */
	if (rc == -2)
		fprintf(stderr, "llm-train: %s: writing the rank file instead\n", err);
	else if (rc)
		fprintf(stderr, "llm-train: %s\n", err);
	return rc == -2 ? 0 : rc ? -1 : 1;
}

int llmt_hb_start(const char *dir, int rank, double period_s)
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "llm-train: heartbeat dir %s: %s\n", dir, strerror(errno));
		return -1;
	}
	char hn[256] = "";
	int node;

	if (gethostname(hn, sizeof(hn) - 1))
		hn[0] = 0;
	pthread_mutex_lock(&hb.mu);
	llmt_hb_host(hb.host, sizeof(hb.host), getenv("SLURMD_NODENAME"), hn);
	snprintf(hb.path, sizeof(hb.path), LLMT_HB_PATH_FMT, dir, rank);
	snprintf(hb.tmp, sizeof(hb.tmp), "%s.tmp", hb.path);
	hb.step = 0;
	hb.phase = LLMT_HB_INIT;
	hb.last = 0;
	hb.timing[0] = 0;
	hb.period = period_s > 0.05 ? period_s : 0.05;
	hb.stop = 0;
	hb.flushed_phase = LLMT_HB_INIT;   /* where every rank starts: not a change */
	node = open_channel(dir, rank);
	hb.node = node > 0;
	if (node < 0) {
		hb.path[0] = 0;
		pthread_mutex_unlock(&hb.mu);
		return -1;
	}
	write_locked();
	if (hb.node && hb.ch.created)   /* the node's file exists from the first rank on */
		flush_node(hb.written, 1);
	pthread_mutex_unlock(&hb.mu);
	if (!hb.node) {
		FILE *f = fopen(hb.path, "r");
		if (!f) {
			fprintf(stderr, "llm-train: heartbeat file %s: %s\n", hb.path, strerror(errno));
			return -1;
		}
		fclose(f);
	}
	if (pthread_create(&hb.th, NULL, ticker, NULL)) {
		fprintf(stderr, "llm-train: cannot start the heartbeat thread\n");
		return -1;
	}
	hb.running = 1;
	return 0;
}

void llmt_hb_set(long step, llmt_hb_phase p, double last_step_s)
{
	if (!hb.path[0])
		return;
	pthread_mutex_lock(&hb.mu);
	hb.step = step;
	hb.phase = p;
	hb.last = last_step_s;
	write_locked();
	pthread_mutex_unlock(&hb.mu);
}

void llmt_hb_set_timing(const char *line)
{
	if (!hb.path[0])
		return;
	pthread_mutex_lock(&hb.mu);
	snprintf(hb.timing, sizeof(hb.timing), "%s", line ? line : "");
	pthread_mutex_unlock(&hb.mu);
}

void llmt_hb_stop(llmt_hb_phase final_phase)
{
	if (!hb.path[0])
		return;
	pthread_mutex_lock(&hb.mu);
	hb.phase = final_phase;
	write_locked();
	hb.stop = 1;
	pthread_cond_signal(&hb.cv);
	pthread_mutex_unlock(&hb.mu);
	if (hb.running)
		pthread_join(hb.th, NULL);
	hb.running = 0;
	pthread_mutex_lock(&hb.mu);
	if (hb.node)
		llmt_hbc_close(&hb.ch, now_ns());
	hb.node = 0;
	hb.path[0] = 0;
	pthread_mutex_unlock(&hb.mu);
}

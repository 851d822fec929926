/* bench_hbchan.c: the heartbeat channel at scale: RANKS simulated ranks
 * (THREADS threads, a node's ranks spread over them so they race for the
 * flush as processes would) write a heartbeat per step, as rank files
 * (tmp + rename each) or through their node's segment (hbchannel.c), and
 * the wrapper's reader lists and reads the directory after every step.
 * Counts the file-system calls each makes and times the wrapper's tick. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llmt/heartbeat.h"
#include "resilience/hbchannel.h"
#include "wrapper/hbread.h"

static struct {
	const char *dir;
	int ranks, per_node, steps, threads, node;
	double step_s;
	struct llmt_hbc *ch;
	pthread_barrier_t bar;
	long step;
	long long t0;
} B;

static long w_opens[64], w_renames[64];

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void beat(int tid, int r, long long now)
{
	char line[256], path[4200], tmp[4300];
	int n = snprintf(line, sizeof line, LLMT_HB_LINE_FMT " n%05d\n", B.step, now, "train", B.step_s,
	                 r / B.per_node);

	if (B.node) {
		llmt_hbc_write(&B.ch[r], now, line);
		long before = B.ch[r].flushes;
		llmt_hbc_flush(&B.ch[r], now, 0.5, 20, 0);
		w_opens[tid] += B.ch[r].flushes - before;
		w_renames[tid] += B.ch[r].flushes - before;
		return;
	}
	snprintf(path, sizeof path, LLMT_HB_PATH_FMT, B.dir, r);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	w_opens[tid]++;
	if (!f)
		return;
	fwrite(line, 1, (size_t)n, f);
	if (fclose(f) == 0 && rename(tmp, path) == 0)
		w_renames[tid]++;
}

static void *writer(void *arg)
{
	int tid = (int)(long)arg;

	for (;;) {
		pthread_barrier_wait(&B.bar);   /* a step begins (or -1: the end) */
		if (B.step < 0)
			return NULL;
		/* the step's ranks write over its first quarter, as skewed ranks would */
		for (int r = tid; r < B.ranks; r += B.threads) {
			long long jitter = (long long)(B.step_s * 0.25e9) * r / B.ranks;
			beat(tid, r, B.t0 + (long long)(B.step * B.step_s * 1e9) + jitter);
		}
		pthread_barrier_wait(&B.bar);
	}
}

/* the wrapper's reader before this channel: one open per rank by name */
static int old_tick(struct wr_hb *hb)
{
	char p[4200], line[256];
	int found = 0;

	for (int r = 0; r < B.ranks; r++) {
		snprintf(p, sizeof p, LLMT_HB_PATH_FMT, B.dir, r);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof line, f) && wr_hb_parse(line, &hb[r]) == 0)
			found++;
		fclose(f);
	}
	return found;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 8 || (strcmp(argv[2], "rank") && strcmp(argv[2], "node"))) {
		fprintf(stderr, "usage: bench_hbchan DIR rank|node RANKS PER_NODE STEPS STEP_S THREADS\n");
		return 64;
	}
	B.dir = argv[1];
	B.node = !strcmp(argv[2], "node");
	B.ranks = atoi(argv[3]);
	B.per_node = atoi(argv[4]);
	B.steps = atoi(argv[5]);
	B.step_s = atof(argv[6]);
	B.threads = atoi(argv[7]);
	if (B.ranks < 1 || B.per_node < 1 || B.per_node > LLMT_HBN_SLOTS || B.steps < 1 || B.step_s <= 0 ||
	    B.threads < 1 || B.threads > 64) {
		fprintf(stderr, "bench_hbchan: bad arguments\n");
		return 64;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	B.t0 = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	struct wr_hb *hb = calloc((size_t)B.ranks, sizeof *hb);
	double *tick = calloc((size_t)B.steps, sizeof *tick), *old = calloc((size_t)B.steps, sizeof *old);
	B.ch = calloc((size_t)B.ranks, sizeof *B.ch);
	if (!hb || !tick || !old || !B.ch)
		return 1;
	char key[64], err[512], host[64];
	snprintf(key, sizeof key, "bench.%d", (int)getpid());
	for (int r = 0; B.node && r < B.ranks; r++) {
		snprintf(host, sizeof host, "n%05d", r / B.per_node);
		if (llmt_hbc_open(&B.ch[r], B.dir, host, key, r % B.per_node, r, err, sizeof err)) {
			fprintf(stderr, "bench_hbchan: %s\n", err);
			return 1;
		}
	}
	pthread_barrier_init(&B.bar, NULL, (unsigned)B.threads + 1);
	pthread_t th[64];
	for (int t = 0; t < B.threads; t++)
		pthread_create(&th[t], NULL, writer, (void *)(long)t);
	struct wr_hbread_ops ops = { 0, 0 };
	double wtime = 0;
	int found = 0, found_old = 0;
	double lag = 0;   /* steps the records read lag behind the step written */
	for (B.step = 0; B.step < B.steps; B.step++) {
		double a = mono();
		pthread_barrier_wait(&B.bar);
		pthread_barrier_wait(&B.bar);
		wtime += mono() - a;
		a = mono();
		wr_hb_read_dir(B.dir, hb, B.ranks, &ops);
		tick[B.step] = mono() - a;
		found = 0;
		lag = 0;
		for (int r = 0; r < B.ranks; r++)
			if (hb[r].valid) {
				found++;
				lag += (double)(B.step - hb[r].step);
			}
		if (!B.node) {
			a = mono();
			found_old = old_tick(hb);
			old[B.step] = mono() - a;
		}
	}
	B.step = -1;
	pthread_barrier_wait(&B.bar);
	for (int t = 0; t < B.threads; t++)
		pthread_join(th[t], NULL);
	long long now = B.t0 + (long long)(B.steps * B.step_s * 1e9);
	long closing = 0;
	for (int r = 0; B.node && r < B.ranks; r++) {
		long before = B.ch[r].flushes;
		llmt_hbc_close(&B.ch[r], now);
		closing += B.ch[r].flushes - before;
	}
	long opens = 0, renames = 0;
	for (int t = 0; t < B.threads; t++)
		opens += w_opens[t], renames += w_renames[t];
	qsort(tick, (size_t)B.steps, sizeof *tick, cmp);
	qsort(old, (size_t)B.steps, sizeof *old, cmp);
	double sim = B.steps * B.step_s;
	printf("mode=%s ranks=%d nodes=%d steps=%d step_s=%g\n", argv[2], B.ranks,
	       (B.ranks + B.per_node - 1) / B.per_node, B.steps, B.step_s);
	printf("  ranks: %ld creates+opens, %ld renames (%.0f/step, %.0f/s of training at %g s a step), "
	       "%ld more at the end; wall %.3f s\n", opens, renames, (double)(opens + renames) / B.steps,
	       (double)(opens + renames) / sim, B.step_s, closing * 2, wtime);
	printf("  wrapper tick: %.2f ms median, %.2f ms max, %.1f opens + %.1f listings a tick, "
	       "%d of %d ranks read, %.1f steps behind on average\n", tick[B.steps / 2] * 1e3,
	       tick[B.steps - 1] * 1e3, (double)ops.opens / B.steps, (double)ops.lists / B.steps, found, B.ranks,
	       found ? lag / found : 0);
	if (!B.node)
		printf("  old wrapper tick (one fopen per rank by name): %.2f ms median, %d ranks read\n",
		       old[B.steps / 2] * 1e3, found_old);
	return 0;
}

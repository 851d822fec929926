/* ckpt_bw.c: checkpoint save/load timing for tests/bench/ckpt_bw.sh.
 * R ranks simulated in one process (threads, like R ranks on one node)
 * each save MB megabytes of state (fp32 master, AdamW m and v of one big
 * tensor per rank, TP-split by rows) into DIR; then the checkpoint is loaded
 * back (checksums verified). Prints one line:
 *   bytes=N save_s=S stall_s=T load_s=L dd_bytes=N dd_write_s=S dd_read_s=S
 * The reference dd runs inside this process's life (same memory pressure):
 * R parallel `dd bs=8M conv=fsync` writes of the same size, then reads of
 * those files after evicting them (iflag=nocache count=0).
 * stall = time inside llmt_ckpt_save (the host snapshot the loop waits for).
 * The second of two saves is timed (the first allocates the snapshot).
 * usage: ckpt_bw MB R DIR [drop]   (drop: evict the files from the page
 * cache before loading, as the reference dd read does) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/ckpt.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
	llmt_param_info p;
	float *buf[3];
	llmt_ckpt_state st;
	llmt_ckpt_writer *w;
	llmt_ckpt *c;
	int rc;
	char err[1024];
} rank_t;

static llmt_config cfg;

static void *load_one(void *arg)
{
	rank_t *r = arg;
	r->rc = llmt_ckpt_load(r->c, &r->st, r->err, sizeof r->err);
	return NULL;
}

static void drop_cache(const char *pattern)
{
	glob_t g;

	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		int fd = open(g.gl_pathv[i], O_RDONLY);
		if (fd >= 0) {
			fdatasync(fd);
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
		}
	}
	globfree(&g);
}

/* R dd processes in parallel (the reference), timed. mode 'w': write
 * per bytes each with fsync; 'e': evict from the page cache; 'r': read */
static double run_dd(int mode, const char *dir, int R, size_t per)
{
	char cmd[8192] = "", one[1024];
	double t0;

	for (int r = 0; r < R; r++) {
		if (mode == 'w')
			snprintf(one, sizeof one, "dd if=/dev/zero of=%s/f%d bs=8M count=%zu conv=fsync status=none & ",
			         dir, r, (per + 8388607) / 8388608);
		else if (mode == 'e')
			snprintf(one, sizeof one, "dd if=%s/f%d iflag=nocache count=0 status=none & ", dir, r);
		else
			snprintf(one, sizeof one, "dd if=%s/f%d of=/dev/null bs=8M status=none & ", dir, r);
		strncat(cmd, one, sizeof cmd - strlen(cmd) - 1);
	}
	strncat(cmd, "wait", sizeof cmd - strlen(cmd) - 1);
	t0 = now();
	if (system(cmd) != 0)
		fprintf(stderr, "ckpt_bw: reference failed: %s\n", cmd);
	return now() - t0;
}

/* Rank r's share: one tensor split by rows, 3 buffers of n floats. */
static int setup_rank(rank_t *x, int r, int R, size_t n, const char *dir)
{
	char err[1024];

	snprintf(x->p.name, sizeof x->p.name, "model.big.weight");
	x->p.ndim = 2;
	x->p.shape[0] = (int64_t)(n / 1024) * R;
	x->p.shape[1] = 1024;
	x->p.split_dim = 0;
	x->p.split_off = (int64_t)(n / 1024) * r;
	x->p.split_len = (int64_t)(n / 1024);
	x->p.numel = n;
	for (int k = 0; k < 3; k++) {
		x->buf[k] = malloc(n * 4);
		for (size_t i = 0; i < n; i++)
			x->buf[k][i] = (float)(i % 1000) * 0.001f + (float)k + (float)r;
	}
	x->st = (llmt_ckpt_state){ .rank = r, .world = R, .tp = R, .pp = 1, .dp = 1, .tp_rank = r,
	                           .config = &cfg, .params = &x->p, .nparams = 1, .nflat = n, .nbufs = 3 };
	x->st.bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, x->buf[0], 0, n, 1, 0 };
	x->st.bufs[1] = (llmt_ckpt_buf){ "adam_m", LLMT_CKPT_F32, x->buf[1], 0, n, 0, 0 };
	x->st.bufs[2] = (llmt_ckpt_buf){ "adam_v", LLMT_CKPT_F32, x->buf[2], 0, n, 0, 0 };
	if (!(x->w = llmt_ckpt_writer_new(dir, 0, err, sizeof err)))
		return fprintf(stderr, "%s\n", err), 74;
	return 0;
}

/* The reference under the same memory conditions: dd of the same bytes
 * per rank, then the same files read back cold. */
static int dd_reference(const char *dir, int R, size_t n, double *dd_w, double *dd_r)
{
	char path[4200];

	snprintf(path, sizeof path, "rm -rf %s/step_00000001 %s/dd; mkdir -p %s/dd", dir, dir, dir);
	if (system(path) != 0)
		return 74;
	snprintf(path, sizeof path, "%s/dd", dir);
	*dd_w = run_dd('w', path, R, n * 12);
	run_dd('e', path, R, 0);
	*dd_r = run_dd('r', path, R, 0);
	snprintf(path, sizeof path, "rm -rf %s/dd", dir);
	return system(path) != 0 ? 74 : 0;
}

/* One save by every rank: the training threads' stall and the time to
 * the last rank's completed save. */
static int save_all(rank_t *rk, int R, long step, double *t_stall, double *t_save)
{
	char err[1024];
	double t0 = now();

	*t_stall = 0;
	for (int r = 0; r < R; r++) {
		double s0 = now();
		if (llmt_ckpt_save(rk[r].w, step, &rk[r].st, err, sizeof err))
			return fprintf(stderr, "save: %s\n", err), 74;
		*t_stall += now() - s0;
	}
	for (int r = R - 1; r >= 0; r--)
		if (llmt_ckpt_wait(rk[r].w, err, sizeof err))
			return fprintf(stderr, "save: %s\n", err), 74;
	*t_save = now() - t0;
	return 0;
}

/* Every rank loads its master share back in its own thread; checked. */
static int load_all(rank_t *rk, int R, size_t n, const char *dir, double *t_load)
{
	char err[1024], path[4200];
	pthread_t *th = calloc((size_t)R, sizeof *th);
	double t0 = now();
	int code;

	snprintf(path, sizeof path, "%s/step_00000002", dir);
	for (int r = 0; r < R; r++) {
		if (!(rk[r].c = llmt_ckpt_open(path, &code, err, sizeof err)))
			return fprintf(stderr, "open: %s\n", err), code;
		pthread_create(&th[r], NULL, load_one, &rk[r]);
	}
	for (int r = 0; r < R; r++) {
		pthread_join(th[r], NULL);
		if (rk[r].rc)
			return fprintf(stderr, "load: %s\n", rk[r].err), rk[r].rc;
	}
	*t_load = now() - t0;
	free(th);
	for (int r = 0; r < R; r++) {
		for (size_t i = 0; i < n; i += 4099)
			if (rk[r].buf[0][i] != (float)(i % 1000) * 0.001f + (float)r)
				return fprintf(stderr, "load: wrong value at %zu\n", i), 1;
		llmt_ckpt_close(rk[r].c);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: ckpt_bw MB R DIR [drop]\n");
		return 64;
	}
	size_t mb = (size_t)atol(argv[1]);
	int R = atoi(argv[2]);
	const char *dir = argv[3];
	int drop = argc > 4 && !strcmp(argv[4], "drop");
	/* per rank: 3 buffers of n floats = mb MB */
	size_t n = mb * 1024 * 1024 / 12 / 1024 * 1024;
	rank_t *rk = calloc((size_t)R, sizeof *rk);
	char path[4200];
	double t_stall = 0, t_save = 0, t_load = 0, dd_w = 0, dd_r = 0;
	int rc;

	llmt_config_defaults(&cfg);
	cfg.vocab_size = 256;
	cfg.d_model = 1024;
	cfg.n_layers = 1;
	cfg.n_heads = 8;
	cfg.n_kv_heads = 8;
	cfg.d_ff = 1024;
	cfg.max_seq = 64;
	setenv("LLMT_TEST_CKPT_TOKEN", "bench", 1);
	for (int r = 0; r < R; r++)
		if ((rc = setup_rank(&rk[r], r, R, n, dir)))
			return rc;
	for (long step = 1; step <= 2; step++) {   /* step 1 warms up the snapshot buffers */
		if (step == 2 && (rc = dd_reference(dir, R, n, &dd_w, &dd_r)))
			return rc;
		if ((rc = save_all(rk, R, step, &t_stall, &t_save)))
			return rc;
	}
	for (int r = 0; r < R; r++) {
		llmt_ckpt_writer_free(rk[r].w);
		memset(rk[r].buf[0], 0, n * 4);
	}
	snprintf(path, sizeof path, "%s/step_00000002/rank_*.bin", dir);
	if (drop)
		drop_cache(path);
	if ((rc = load_all(rk, R, n, dir, &t_load)))
		return rc;
	printf("bytes=%zu save_s=%.4f stall_s=%.4f load_s=%.4f dd_bytes=%zu dd_write_s=%.4f dd_read_s=%.4f\n",
	       (size_t)R * n * 12, t_save, t_stall, t_load, (size_t)R * ((n * 12 + 8388607) / 8388608) * 8388608,
	       dd_w, dd_r);
	return 0;
}

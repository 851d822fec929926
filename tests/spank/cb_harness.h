/* cb_harness.h: what the callback tests share: the plugin's entry file
 * included whole (the callbacks run exactly as Slurm calls them), a
 * temporary directory with a good policy, plugstack arguments, starting a
 * context. Included by test_callbacks.c, test_cb_remote.c, test_cb_script.c. */
#ifndef LLMT_CB_HARNESS_H
#define LLMT_CB_HARNESS_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fake_spank.h"
#include <slurm/slurm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The harness includes the plugin's entry file: the callbacks run exactly
 * as Slurm calls them, the context files come from libllmtglue. */
#include "spank/llm_train.c"
#include "health_io.h"

static char tmpdir[256];
static char policy_path[512];
static char *av_buf[8];
static int ac_n;

static __attribute__((unused)) void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static __attribute__((unused)) void set_args(const char *a0, const char *a1, const char *a2, const char *a3)
{
	for (int i = 0; i < 8; i++) {
		free(av_buf[i]);
		av_buf[i] = NULL;
	}
	ac_n = 0;
	const char *a[] = { a0, a1, a2, a3 };
	for (int i = 0; i < 4; i++)
		if (a[i])
			av_buf[ac_n++] = strdup(a[i]);
}

#define AC ac_n
#define AV av_buf

static const char *good_policy __attribute__((unused)) =
	"defaults:\n"
	"  tp: 1\n"
	"  pp: 1\n"
	"  dp: auto\n"
	"  ckpt_interval: 100\n"
	"  restarts: 2\n"
	"limits:\n"
	"  max_restarts: 5\n"
	"  ckpt_roots: [/tmp]\n"
	"node_types:\n"
	"  - name: cpu\n"
	"    nodes: n[1-4]\n"
	"    gpus_per_node: 0\n"
	"  - name: gpu\n"
	"    nodes: g[1-2]\n"
	"    gpus_per_node: 4\n"
	"    nics: [mlx5_0, mlx5_1]\n"
	"topology:\n"
	"  source: none\n"
	"nccl_profiles:\n"
	"  ib:\n"
	"    NCCL_IB_HCA: \"${nic}\"\n"
	"    NCCL_SOCKET_IFNAME: lo\n"
	"health:\n"
	"  xid_scan: {timeout: 5}\n"
	"  gpu_count: {timeout: 5}\n";

static __attribute__((unused)) int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/llmt-cb-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(policy_path, sizeof(policy_path), "%s/llm-train.yaml", tmpdir);
	write_file(policy_path, good_policy, 0644);
	return 0;
}

static __attribute__((unused)) int teardown(void **state)
{
	(void)state;
	fake_free();
	set_args(NULL, NULL, NULL, NULL);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Start a context the way Slurm does: init with the plugstack args. */
static __attribute__((unused)) void start(spank_context_t ctx)
{
	char pol[600];
	snprintf(pol, sizeof(pol), "policy=%s", policy_path);
	set_args(pol, NULL, NULL, NULL);
	llmt_remote_exit(NULL, 0, NULL);   /* each slurmstepd is a new process */
	llmt_raw_reset();
	fake_reset(ctx);
	assert_int_equal(slurm_spank_init(FAKE_SP, AC, AV), 0);
}

#endif

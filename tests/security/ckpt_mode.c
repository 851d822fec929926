/* ckpt_mode.c: creates a checkpoint directory (with missing parents) and
 * its heartbeat directory the way llm-train does (llmt_ckpt_writer_new,
 * llmt_hb_start), for ckpt_mode.sh, which runs it as the job's user and
 * checks the directories are 0700 and owned by that user.
 *   ckpt_mode CKPT_DIR */
#include <stdio.h>
#include "ckpt/ckpt.h"
#include "resilience/heartbeat.h"

int main(int argc, char **argv)
{
	char err[1024], hb[4200];

	if (argc != 2)
		return 64;
	llmt_ckpt_writer *w = llmt_ckpt_writer_new(argv[1], 0, err, sizeof err);
	if (!w) {
		fprintf(stderr, "ckpt_mode: %s\n", err);
		return 1;
	}
	snprintf(hb, sizeof hb, "%s/heartbeat", argv[1]);
	if (llmt_hb_start(hb, 0, 60.0) != 0)
		return 1;
	llmt_hb_stop(LLMT_HB_DONE);
	llmt_ckpt_writer_free(w);
	return 0;
}

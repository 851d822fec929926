/* unmark_cmd: the `ckpt-unmark RUN_DIR PATH...|--all` subcommand of
 * llm-train-wrap (lifts ckpt_bad marks through a ckpt_unmark ledger event). */
#ifndef LLMT_WRAP_UNMARK_CMD_H
#define LLMT_WRAP_UNMARK_CMD_H

/* argv[0] is "ckpt-unmark". Returns the exit code (64: bad RUN_DIR, a
 * PATH that is not marked, a ledger that is not a regular file). */
int wr_unmark_main(int argc, char **argv);

#endif

/* report_cmd: the `report RUN_DIR` subcommand of llm-train-wrap (the
 * end-of-job outputs rebuilt from a run dir alone). */
#ifndef LLMT_WRAP_REPORT_CMD_H
#define LLMT_WRAP_REPORT_CMD_H

/* argv[0] is "report". Returns the exit code (64 for a bad RUN_DIR). */
int wr_report_main(int argc, char **argv);

#endif

/* autoplan_main.h: llm-train-plan --auto (autoplan_main.c), called by
 * plan_main.c's main when --auto is among the arguments. */
#ifndef LLMT_AUTOPLAN_MAIN_H
#define LLMT_AUTOPLAN_MAIN_H
int llmt_autoplan_main(int argc, char **argv);
#endif

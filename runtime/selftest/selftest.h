/* selftest.h: `llm-train selftest` (st_cmd.c), dispatched from main.c:
 * a node's known answers, rates and links before a job trusts it. */
#ifndef LLMT_SELFTEST_H
#define LLMT_SELFTEST_H

/* argv[0] is "selftest". Exit 0 every node ok, 88 a bad node, 64 / 66. */
int llmt_selftest_main(int argc, char **argv);

#endif

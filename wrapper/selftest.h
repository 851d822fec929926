/* selftest: the self-test report (`llm-train selftest --json FILE`, its
 * form in doc/contracts.md) as the wrapper's preflight reads it, and which
 * of its nodes to keep out. Pure logic. */
#ifndef LLMT_WRAP_SELFTEST_H
#define LLMT_WRAP_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>

#include "classify.h"

struct wr_selftest_node {
	char node[WR_NODE_LEN];
	char verdict[16];          /* "ok", "wrong", "slow" */
	bool wrong;                /* answers wrong */
	bool slow;
	double gflops, membw_gbs, compute_s;
};

struct wr_selftest {
	double elapsed_s, median_gflops;
	int n;                     /* nodes in the report */
	struct wr_selftest_node node[WR_MAX_NODES];
	struct wr_nodes bad;       /* bad_nodes, and every node whose verdict is not ok */
	bool ok;                   /* verdict "ok" and no bad node */
};

/* Parses the report's text. 0, or -1 with one line in err (not JSON, not
 * version 1, a field of the wrong type). */
int wr_selftest_parse(const char *text, struct wr_selftest *r, char *err, size_t errlen);

/* The report's entry of node, or NULL */
const struct wr_selftest_node *wr_selftest_find(const struct wr_selftest *r, const char *node);

/* Whether the wrapper runs the self-test: --preflight (opt 1) or
 * --no-preflight (0) decide; by default (-1) when the job has spares or
 * the policy asks (LLM_TRAIN_PREFLIGHT=1). */
bool wr_preflight_wanted(int opt, double spares, bool policy);

#endif

/* Slurm topology.conf (tree: SwitchName=... Switches=... Nodes=...; block:
 * BlockName=... Nodes=...; LinkSpeed ignored) parsed by hand (libslurm's
 * topology structures changed ABI in 25.05) into, for each node, its leaf
 * switch, the switch above it (spine) and its block. */
#ifndef LLMT_TOPOLOGY_H
#define LLMT_TOPOLOGY_H

#include <stddef.h>
#include "llmt_limits.h"

#define LLMT_TOPO_MAX_SWITCHES 65536
#define LLMT_TOPO_MAX_BLOCKS   65536
#define LLMT_TOPO_MAX_BYTES    (8u << 20)   /* refuse larger files */

struct llmt_topo_node {
	char name[LLMT_HOST_MAX];
	int leaf;    /* index of the switch listing the node, -1 = none */
	int spine;   /* index of the leaf's parent switch, -1 = none */
	int block;   /* index of the block listing the node, -1 = none */
};

struct llmt_topo_switch {
	char name[LLMT_NAME_MAX];
	int parent;  /* switch index, -1 = top */
	int level;   /* 0 = leaf (lists nodes), 1 = above leaves, ... */
};

struct llmt_topology {
	unsigned nnodes;
	struct llmt_topo_node *nodes;     /* sorted by name (bsearch) */
	unsigned nswitches;
	struct llmt_topo_switch *switches;/* in file order */
	unsigned nblocks;
	char (*blocks)[LLMT_NAME_MAX];    /* in file order */
};

/* Parse topology.conf text. name is used in messages ("name:line: why").
 * Returns 0 with *out (free with llmt_topology_free) or -1 with err.
 * A node listed under two leaves or two blocks, a switch with two
 * parents, an unknown child switch or a cycle is an error. */
int llmt_topology_parse(const char *text, size_t len, const char *name,
			struct llmt_topology **out, char *err, size_t errlen);

/* Read and parse a file (at most LLMT_TOPO_MAX_BYTES). */
int llmt_topology_load(const char *path, struct llmt_topology **out,
		       char *err, size_t errlen);

/* An empty topology (every node unknown). */
struct llmt_topology *llmt_topology_empty(void);

void llmt_topology_free(struct llmt_topology *t);

/* The entry of host, or NULL when topology.conf does not list it. */
const struct llmt_topo_node *llmt_topology_find(const struct llmt_topology *t,
						const char *host);

#endif

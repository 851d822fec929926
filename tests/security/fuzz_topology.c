/* fuzz_topology.c: fuzz target for Slurm's topology.conf as the plugin
 * reads it (llmt_topology_parse, from memory) and for hostlist
 * expressions (llmt_hostlist_expand / _contains, which hand the text to
 * libslurm's hostlist code with our bounds). Input: topology.conf text;
 * after a "%%" line, one hostlist expression per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "hostlist.h"
#include "topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *a, *b;
	size_t alen, blen;
	struct llmt_topology *t = NULL;
	char err[1024];

	if (size > (1u << 20))
		return 0;
	fuzz_split(data, size, &a, &alen, &b, &blen);
	if (llmt_topology_parse((const char *)a, alen, "fuzz.conf", &t, err, sizeof err) == 0) {
		if (!t)
			abort();
		for (unsigned i = 0; i < t->nnodes; i++) {
			const struct llmt_topo_node *n = llmt_topology_find(t, t->nodes[i].name);
			if (!n)
				abort();   /* every listed node must be found again */
			if (n->leaf >= (int)t->nswitches || n->spine >= (int)t->nswitches ||
			    n->block >= (int)t->nblocks)
				abort();
		}
		llmt_topology_find(t, "node1");
		llmt_topology_free(t);
	} else if (t || !memchr(err, 0, sizeof err)) {
		abort();
	}
	if (!b || blen > 65536)
		return 0;
	char *text = malloc(blen + 1);
	if (!text)
		abort();
	memcpy(text, b, blen);
	text[blen] = 0;
	for (char *line = text, *next; line && *line; line = next) {
		char (*names)[LLMT_HOST_MAX] = NULL;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		int n = llmt_hostlist_expand(line, 4096, &names, err, sizeof err);
		if (n > 4096)
			abort();
		for (int i = 0; i < n && i < 16; i++)
			if (llmt_hostlist_contains(line, names[i]) != 1)
				abort();   /* a host of the expansion must be in the list */
		free(names);
	}
	free(text);
	return 0;
}

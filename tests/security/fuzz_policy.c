/* fuzz_policy.c: fuzz target for the admin policy YAML
 * (/etc/slurm/llm-train.yaml) through its from-memory entry point
 * llmt_policy_parse, then the lookups the plugin makes with a parsed
 * policy (node types, profiles, topology path, option defaults and
 * validation against it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "opts.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llmt_policy *p = NULL;
	char err[1024], path[LLMT_PATH_MAX + 64];
	int rc;

	if (size > (1u << 20) + 16)
		return 0;
	rc = llmt_policy_parse((const char *)data, size, "fuzz.yaml", &p, err, sizeof err);
	if (rc == LLMT_POLICY_ERROR) {
		if (p || !memchr(err, 0, sizeof err))
			abort();
		return 0;
	}
	if (!p)
		abort();
	for (unsigned i = 0; i < p->nnode_types; i++)
		llmt_policy_node_type(p, p->node_types[i].name);
	llmt_policy_node_type(p, "node001");
	llmt_policy_profile(p, p->defaults.nccl_profile);
	llmt_policy_topology_path(p, "/etc/slurm/slurm.conf", path, sizeof path);

	struct llmt_opts o;
	struct llmt_job_info job = { .ntasks = 8, .nnodes = 2, .partition = "gpu",
				     .account = "a", .nodelist = "node[001-002]" };
	llmt_opts_init(&o);
	o.enabled = 1;
	llmt_opts_apply_defaults(&o, p);
	llmt_opts_validate(&o, p, &job, err, sizeof err);
	llmt_policy_free(p);
	return 0;
}

/* subst.h: the ${...} substitution of NCCL profile values, apart from
 * the task environment (envgen.h) so that the policy loader checks
 * templates without depending on envgen (nor envgen on the policy's
 * loader). Pure. */
#ifndef LLMT_SUBST_H
#define LLMT_SUBST_H

#include <stddef.h>

/* The values one task substitutes. */
struct llmt_subst_vars {
	const char *nic;            /* NULL/"" = none */
	int gpu;
	unsigned local_rank, rank, local_world_size;
};

/* Substitute ${nic} ${gpu} ${local_rank} ${rank} ${local_world_size} in
 * tmpl into buf (len bytes). v NULL with buf NULL: check only. Unknown
 * names, an unterminated ${ and ${nic} for a task without a NIC (v->nic
 * NULL or "") are errors. 0 or -1 with err. */
int llmt_subst(const char *tmpl, const struct llmt_subst_vars *v, char *buf, size_t len,
	       char *err, size_t errlen);

/* Check a template's ${...} names without substituting (policy load). */
int llmt_subst_check(const char *tmpl, char *err, size_t errlen);

#endif

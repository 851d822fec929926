/* Hostlist expressions ("node[01-04,7],gpu3") expanded through libslurm's
 * slurm_hostlist_* (inside slurmd/slurmstepd/srun/sbatch those symbols
 * come from libslurmfull.so, which every host process links; elsewhere
 * link -lslurm). Bounded: never expands more than a given count. */
#ifndef LLMT_HOSTLIST_H
#define LLMT_HOSTLIST_H

#include <stddef.h>
#include "llmt_limits.h"

/* Call fn(name, arg) for each host of expr in order (no dedup). Stops
 * with -1 if fn returns non-zero (err left to fn), if expr is malformed,
 * a name is longer than LLMT_HOST_MAX-1, or more than max hosts. Returns
 * the count on success. */
int llmt_hostlist_foreach(const char *expr, unsigned max,
			  int (*fn)(const char *name, void *arg), void *arg,
			  char *err, size_t errlen);

/* Expand into a new array of n names (each LLMT_HOST_MAX bytes; free()).
 * Returns n >= 0, or -1 with err. */
int llmt_hostlist_expand(const char *expr, unsigned max,
			 char (**names)[LLMT_HOST_MAX], char *err, size_t errlen);

/* 1 if host is in expr, 0 if not, -1 if expr is malformed. */
int llmt_hostlist_contains(const char *expr, const char *host);

/* 1 with the first host of a that b also names copied into host (len
 * bytes), 0 when they share none, -1 when one is malformed or a names
 * more than max hosts. */
int llmt_hostlist_common(const char *a, const char *b, unsigned max, char *host, size_t len);

#endif

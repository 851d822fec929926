/* Hostlist expansion through libslurm's slurm_hostlist_* (the host
 * process provides them inside Slurm: srun, sbatch, slurmd and slurmstepd
 * all link libslurmfull.so, which exports them), bounded by a count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm.h>

#include "hostlist.h"

#include "llmt/err.h"

/* The parsed hostlist of expr when it names at most max hosts (their
 * number in *count); NULL with err otherwise. */
static hostlist_t open_bounded(const char *expr, unsigned max, int *count,
			       char *err, size_t errlen)
{
	if (!expr) {
		SET_ERR("empty hostlist");
		return NULL;
	}
	hostlist_t hl = slurm_hostlist_create(expr);
	if (!hl) {
		SET_ERR("bad hostlist '%.120s'", expr);
		return NULL;
	}
	*count = slurm_hostlist_count(hl);
	if (*count < 0 || (unsigned)*count > max) {
		SET_ERR("hostlist '%.120s' names %d hosts (most %u)", expr, *count, max);
		slurm_hostlist_destroy(hl);
		return NULL;
	}
	return hl;
}

int llmt_hostlist_foreach(const char *expr, unsigned max,
			  int (*fn)(const char *name, void *arg), void *arg,
			  char *err, size_t errlen)
{
	hostlist_t hl;
	char *h;
	int count;
	unsigned n = 0;

	if (expr && strlen(expr) >= LLMT_HOSTLIST_MAX * 8) {
		SET_ERR("hostlist longer than %d bytes", LLMT_HOSTLIST_MAX * 8);
		return -1;
	}
	if (!(hl = open_bounded(expr, max, &count, err, errlen)))
		return -1;
	while ((h = slurm_hostlist_shift(hl))) {
		size_t len = strlen(h);
		int rc = 0;
		if (len == 0 || len >= LLMT_HOST_MAX) {
			SET_ERR("host name '%.64s...' in hostlist is too long", h);
			rc = -1;
		} else if (strspn(h, "abcdefghijklmnopqrstuvwxyz"
				     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len) {
			SET_ERR("bad host name '%.64s' in hostlist '%.120s'", h, expr);
			rc = -1;
		} else if (fn) {
			rc = fn(h, arg) ? -1 : 0;
		}
		free(h);
		if (rc) {
			slurm_hostlist_destroy(hl);
			return -1;
		}
		n++;
	}
	slurm_hostlist_destroy(hl);
	return (int)n;
}

struct expand_ctx {
	char (*names)[LLMT_HOST_MAX];
	unsigned n, cap;
};

static int expand_one(const char *name, void *arg)
{
	struct expand_ctx *c = arg;
	if (c->n >= c->cap)
		return -1;
	snprintf(c->names[c->n++], LLMT_HOST_MAX, "%s", name);
	return 0;
}

int llmt_hostlist_expand(const char *expr, unsigned max,
			 char (**names)[LLMT_HOST_MAX], char *err, size_t errlen)
{
	struct expand_ctx c = { 0 };
	hostlist_t hl;
	int count, rc;

	*names = NULL;
	if (!(hl = open_bounded(expr, max, &count, err, errlen)))
		return -1;
	slurm_hostlist_destroy(hl);
	c.cap = (unsigned)count;
	c.names = calloc(c.cap ? c.cap : 1, LLMT_HOST_MAX);
	if (!c.names) {
		SET_ERR("out of memory for %u host names", c.cap);
		return -1;
	}
	rc = llmt_hostlist_foreach(expr, max, expand_one, &c, err, errlen);
	if (rc < 0) {
		free(c.names);
		return -1;
	}
	*names = c.names;
	return (int)c.n;
}

int llmt_hostlist_contains(const char *expr, const char *host)
{
	hostlist_t hl = slurm_hostlist_create(expr);
	int r;
	if (!hl)
		return -1;
	r = slurm_hostlist_find(hl, host) >= 0;
	slurm_hostlist_destroy(hl);
	return r;
}

struct common_ctx {
	hostlist_t other;
	char *host;
	size_t len;
	int found;
};

static int check_common(const char *name, void *arg)
{
	struct common_ctx *c = arg;
	if (slurm_hostlist_find(c->other, name) < 0)
		return 0;
	snprintf(c->host, c->len, "%s", name);
	c->found = 1;
	return 1;    /* stop */
}

int llmt_hostlist_common(const char *a, const char *b, unsigned max, char *host, size_t len)
{
	hostlist_t other = slurm_hostlist_create(b);
	if (!other)
		return -1;
	struct common_ctx c = { other, host, len, 0 };
	char err[64];
	int rc = llmt_hostlist_foreach(a, max, check_common, &c, err, sizeof(err));
	slurm_hostlist_destroy(other);
	if (c.found)
		return 1;
	return rc < 0 ? -1 : 0;
}

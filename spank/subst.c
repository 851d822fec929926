/* subst.c: ${nic} ${gpu} ${local_rank} ${rank} ${local_world_size} in an
 * NCCL profile value: checked when the policy is loaded, substituted per
 * task by envgen. Pure. */
#include <stdio.h>
#include <string.h>

#include "llmt_limits.h"
#include "subst.h"

#define SET_ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

static int subst_value(const char *name, size_t nlen, const struct llmt_subst_vars *in,
		       char *val, size_t vlen)
{
	if (nlen == 3 && !strncmp(name, "nic", 3)) {
		if (in && (!in->nic || !*in->nic))
			return -2;   /* no NIC for this task: no value to give */
		snprintf(val, vlen, "%s", in ? in->nic : "");
	} else if (nlen == 3 && !strncmp(name, "gpu", 3))
		snprintf(val, vlen, "%d", in ? in->gpu : 0);
	else if (nlen == 10 && !strncmp(name, "local_rank", 10))
		snprintf(val, vlen, "%u", in ? in->local_rank : 0);
	else if (nlen == 4 && !strncmp(name, "rank", 4))
		snprintf(val, vlen, "%u", in ? in->rank : 0);
	else if (nlen == 16 && !strncmp(name, "local_world_size", 16))
		snprintf(val, vlen, "%u", in ? in->local_world_size : 0);
	else
		return -1;
	return 0;
}

int llmt_subst(const char *tmpl, const struct llmt_subst_vars *in, char *buf, size_t len,
	       char *err, size_t errlen)
{
	size_t off = 0;
	char v[LLMT_NAME_MAX + 16];

	for (const char *p = tmpl; *p;) {
		const char *piece = p;
		size_t plen = 1;
		if (p[0] == '$' && p[1] == '{') {
			const char *e = strchr(p + 2, '}');
			if (!e) {
				SET_ERR("unterminated ${ in '%.100s'", tmpl);
				return -1;
			}
			int r = subst_value(p + 2, (size_t)(e - p - 2), in, v, sizeof(v));
			if (r == -2) {
				SET_ERR("${nic} in '%.100s', but this node has no NIC in the policy (no node type "
					"holds it, or its type lists no nics): use another --llm-nccl-profile", tmpl);
				return -1;
			}
			if (r) {
				SET_ERR("unknown ${%.*s} in '%.100s' (known: nic gpu local_rank rank local_world_size)",
					(int)(e - p - 2 > 32 ? 32 : e - p - 2), p + 2, tmpl);
				return -1;
			}
			piece = v;
			plen = strlen(v);
			p = e + 1;
		} else {
			p++;
		}
		if (buf) {
			if (off + plen >= len) {
				SET_ERR("value of '%.100s' too long after substitution", tmpl);
				return -1;
			}
			memcpy(buf + off, piece, plen);
		}
		off += plen;
	}
	if (buf)
		buf[off] = 0;
	return 0;
}

int llmt_subst_check(const char *tmpl, char *err, size_t errlen)
{
	return llmt_subst(tmpl, NULL, NULL, 0, err, errlen);
}

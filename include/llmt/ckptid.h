/* ckptid.h: the identity of a checkpoint step directory (its manifest's
 * inode and mtime), as the wrapper records it in a ckpt_bad mark and the
 * runtime's retention matches it against LLM_TRAIN_CKPT_BAD. A save of
 * the same step after a rollback is a new file, so a new identity. */
#ifndef LLMT_CKPTID_H
#define LLMT_CKPTID_H
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Without a manifest (a step directory that lost it), the directory's
 * own: a later save of that step is a new directory, so a mark of the
 * broken one never covers it. "" when neither can be stat'ed. No st_dev: a
 * requeue's batch host may number the same file system otherwise. */
static inline void llmt_ckpt_id(const char *stepdir, char *out, size_t len)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof p, "%s/manifest.json", stepdir);
	if (stat(p, &st) != 0 && stat(stepdir, &st) != 0)
		out[0] = '\0';
	else
		snprintf(out, len, "%llx:%lld.%09ld", (unsigned long long)st.st_ino, (long long)st.st_mtim.tv_sec,
		         (long)st.st_mtim.tv_nsec);
}

/* Whether s looks like an identity llmt_ckpt_id writes (hex, ':',
 * digits, '.', digits): what a ledger line may carry into the
 * environment. */
static inline int llmt_ckpt_id_ok(const char *s)
{
	size_t h = strspn(s, "0123456789abcdef"), d;

	if (h == 0 || h > 16 || s[h] != ':')
		return 0;
	s += h + 1;
	d = strspn(s, "0123456789");
	if (d == 0 || d > 20 || s[d] != '.')
		return 0;
	s += d + 1;
	d = strspn(s, "0123456789");
	return d == 9 && s[d] == '\0';
}

/* Whether id is one of the comma-separated ids of list (NULL: none). */
static inline int llmt_ckpt_id_in(const char *list, const char *id)
{
	size_t n = strlen(id);

	if (!list || !n)
		return 0;
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, id, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

#endif

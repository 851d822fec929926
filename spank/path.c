/* path.c: lexical path checks shared by the options (opts.c) and the
 * policy loader (policy.c). */
#include <string.h>

#include "path.h"

int llmt_path_has_dot(const char *path)
{
	for (const char *c = path; *c;) {
		while (*c == '/')
			c++;
		const char *e = strchr(c, '/');
		size_t len = e ? (size_t)(e - c) : strlen(c);
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return 1;
		c += len;
	}
	return 0;
}

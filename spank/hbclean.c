/* hbclean.c: a step's leftover heartbeat segments, removed at its end on
 * each node by slurmstepd (see hbclean.h). */
#include "hbclean.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llmt/heartbeat.h"

int llmt_hb_clean_step(const char *dir, unsigned uid, unsigned job, unsigned step)
{
	char prefix[96], path[4096];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(prefix, sizeof prefix, LLMT_HB_SHM_STEP_FMT, uid, job, step);
	if (!(d = opendir(dir)))
		return -1;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			n += unlink(path) == 0;
		}
	closedir(d);
	return n;
}

/* hbclean.h: removes a step's node heartbeat segments (the ranks' shared
 * memory, include/llmt/heartbeat.h) that its killed ranks left behind. */
#ifndef LLMT_HBCLEAN_H
#define LLMT_HBCLEAN_H

/* Unlinks every file of dir (/dev/shm) named for (uid, job, step).
 * Returns how many, or -1 if dir cannot be read. */
int llmt_hb_clean_step(const char *dir, unsigned uid, unsigned job, unsigned step);

#endif

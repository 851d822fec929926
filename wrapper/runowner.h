/* runowner: how the admin's commands (report, ckpt-unmark) touch a run dir
 * another user may have made with crafted files, and how they print the
 * user's text. */
#ifndef LLMT_WRAP_RUNOWNER_H
#define LLMT_WRAP_RUNOWNER_H

#include <stddef.h>

/* Root over another user's run dir becomes that user (setuid to the dir's
 * owner, setgid to the owner's primary group, no other groups; one line on
 * stderr; an owner without a passwd entry: refused), so nothing planted there (a
 * link at an output's or an input's name, texts gnuplot and the page get)
 * acts with root's rights. Another user's dir, for anyone else, and a dir
 * every user may write without the sticky bit are refused. Returns 0, or
 * the exit code after one line prefixed prog (64; 74 when the switch fails).
 * fd >= 0: the dir as the caller opened it (judged by fstat: what it then
 * reads through it is what was judged), else judged by its path. */
int wr_as_owner(const char *prog, const char *dir, int fd);

/* s for a terminal in buf: control bytes and bytes past ASCII as '?' (a
 * job id, node or checkpoint name from a ledger others wrote must not move
 * the admin's cursor, forge lines or send escape sequences). */
const char *wr_shown(const char *s, char *buf, size_t len);

#endif

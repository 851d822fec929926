/* path.h: lexical checks of absolute paths (checkpoint directories and
 * the policy's checkpoint roots): no "." or ".." component, which would
 * defeat a prefix check. Pure, no file system. */
#ifndef LLMT_PATH_H
#define LLMT_PATH_H

/* 1 when path has a "." or ".." component, else 0. */
int llmt_path_has_dot(const char *path);

#endif

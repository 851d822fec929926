/* err.h: error text, the same way in every part. SET_ERR: pure code
 * reports into the caller's buffer (err, errlen in scope; either may be
 * empty). LLMT_DIE_ERRNO: a failed system call a program cannot go on
 * from (llm.c's checked calls): one line naming the call, errno's text
 * and where in the source, then exit(code). */
#ifndef LLMT_ERR_H
#define LLMT_ERR_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SET_ERR
#define SET_ERR(...)                                                                             \
	do {                                                                                     \
		if (err && errlen)                                                               \
			snprintf(err, errlen, __VA_ARGS__);                                      \
	} while (0)
#endif

/* prog: "llm-train-wrap"; what: the failed call and its argument */
#define LLMT_DIE_ERRNO(prog, code, what) llmt_die_errno((prog), (code), (what), __FILE__, __LINE__)

__attribute__((noreturn)) static inline void llmt_die_errno(const char *prog, int code,
                                                            const char *what, const char *file,
                                                            int line)
{
	fprintf(stderr, "%s: %s: %s (%s:%d)\n", prog, what, strerror(errno), file, line);
	exit(code);
}

#endif

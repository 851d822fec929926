/* plot: the loss curve as a PNG through gnuplot, with nothing a run dir
 * holds (names, job ids, texts) able to reach gnuplot's command language
 * and no link at the picture's name followed. */
#ifndef LLMT_WRAP_PLOT_H
#define LLMT_WRAP_PLOT_H

#include <stddef.h>

/* s with every byte but letters, digits and ._- as '?' (a title gnuplot
 * cannot read as a command), cut to len-1 bytes */
void wr_plot_label(const char *s, char *out, size_t len);

/* Draws the n points (step[i], loss[i]) into png (a temporary name,
 * renamed). Returns 0, gnuplot's exit status (127: not runnable), or -1
 * with a line in err. */
int wr_plot_png(const char *gnuplot, const char *job, const long *step, const double *loss, int n,
                const char *png, char *err, size_t errlen);

#endif

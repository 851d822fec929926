/* cli.h: the command line's number parsers (cli.c): a value in range
 * into *out, else one message naming the option and the value and 64. */
#ifndef LLMT_CLI_H
#define LLMT_CLI_H

int llmt_cli_bad(const char *opt, const char *val, const char *want);   /* prints, returns 64 */
int llmt_cli_int(const char *opt, const char *s, long lo, long hi, long *out);
int llmt_cli_num(const char *opt, const char *s, double lo, double hi, double *out);

#endif

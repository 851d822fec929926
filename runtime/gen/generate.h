/* generate.h: the `llm-train generate` subcommand (gen_cmd.c) over the
 * generation model (gen_model.h) and the token choice (sample.h). */
#ifndef LLMT_GENERATE_H
#define LLMT_GENERATE_H

/* argv[0] is "generate". Returns an exit code. */
int llmt_generate_main(int argc, char **argv);

#endif

/* emu_main.c: llm-train's main() for llm-train-emu, the emulated-GPU
 * build of llm-train (runtime/main.c unchanged). */
#include "main.c"

/* emu_memplan.c: runtime/memplan.c (llm-train memory) for llm-train-emu. */
#include "memplan.c"

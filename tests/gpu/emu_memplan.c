/* emu_memplan.c: runtime/memory/memplan.c (llm-train memory) for llm-train-emu. */
#include "memory/memplan.c"

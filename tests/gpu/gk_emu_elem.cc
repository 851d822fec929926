/* gk_emu_elem.cc: runtime/gpu/dev_elem.cu built for CPU emulation (gk_emu.h). */
#include "gpu/dev_elem.cu"

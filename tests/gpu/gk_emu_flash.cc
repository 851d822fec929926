/* gk_emu_flash.cc: runtime/gpu/dev_flash.cu and dev_flash_mma.cu (the
 * fused attention on wmma and on mma.sync) built for CPU emulation
 * (gk_emu.h). */
#include "gpu/dev_flash.cu"
#include "gpu/dev_flash_mma.cu"

/* gmodel_emu.c: the GPU model sources (runtime/gpu/gmodel*.c) built into
 * the emulation test, linked against cuda_emu.c instead of the CUDA runtime. */
#include "gpu/gmodel.c"
#include "gpu/gmodel_host.c"
#include "gpu/gmodel_act.c"
#include "gpu/gmodel_step.c"
#include "gpu/gmodel_shard.c"

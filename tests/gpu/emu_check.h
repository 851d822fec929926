/* emu_check.h: the check line and the xorshift values of the emulation's
 * kernel tests (test_flash_emu, test_mma_emu), one copy. The includer
 * defines EMU_CHECK_SEED, its stream's start. */
#ifndef LLMT_EMU_CHECK_H
#define LLMT_EMU_CHECK_H
#include <cstdint>
#include <cstdio>

static int fails;
static void check(const char *what, bool ok)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", what);
	fails += !ok;
}

/* uniform in [-1, 1) */
static uint64_t rs = EMU_CHECK_SEED;
static float frand()
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (float)((rs >> 11) * (1.0 / 9007199254740992.0)) * 2.f - 1.f;
}
#endif

/* cpu.c: the choice of cpu.h, made once per process from LLMT_CPU and
 * cpuid (GCC's __builtin_cpu_supports). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

/* -1: LLMT_CPU is bad; 0: generic; 1: auto */
static int cpu_request(const char *e)
{
	if (!e || !*e || !strcmp(e, "auto"))
		return 1;
	if (!strcmp(e, "generic"))
		return 0;
	return -1;
}

static int cpu_has_avx512bf16(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

int llmt_cpu_avx512(void)
{
	static int chosen = -1;
	if (chosen < 0)
		chosen = cpu_request(getenv("LLMT_CPU")) != 0 && cpu_has_avx512bf16();
	return chosen;
}

int llmt_cpu_check(void)
{
	const char *e = getenv("LLMT_CPU");
	if (cpu_request(e) >= 0)
		return 0;
	fprintf(stderr, "llm-train: LLMT_CPU=%s: expected generic or auto\n", e);
	return -1;
}

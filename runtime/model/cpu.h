/* cpu.h: which copy of the model's CPU kernels runs. kernels.c, attn*.c
 * and tile.c are compiled twice: a portable copy (any x86-64) and an
 * AVX-512 BF16 copy whose entry points carry the suffix _avx512 (the
 * renames below, under LLMT_ISA_AVX512). The portable entry points hand
 * bf16 work to the AVX-512 copy when llmt_cpu_avx512() says so; fp32 work
 * always stays portable, so an fp32 run gives the same bits on every CPU.
 * LLMT_CPU=generic forces the portable copy; LLMT_CPU=auto (or unset) asks
 * cpuid. */
#ifndef LLMT_CPU_H
#define LLMT_CPU_H

/* 1 when the AVX-512 BF16 copy runs: built, the CPU has AVX-512
 * F/BW/VL/BF16, and LLMT_CPU is not "generic". Decided once. */
int llmt_cpu_avx512(void);
/* 0, or -1 with one line on stderr naming a bad LLMT_CPU value. */
int llmt_cpu_check(void);

#ifdef LLMT_ISA_AVX512
/* the AVX-512 copy: every entry point that both copies define */
#define k_rmsnorm_fwd k_rmsnorm_fwd_avx512
#define k_add_rmsnorm_fwd k_add_rmsnorm_fwd_avx512
#define k_rmsnorm_bwd k_rmsnorm_bwd_avx512
#define k_rmsnorm_bwd_act k_rmsnorm_bwd_act_avx512
#define k_attn_prep_fwd_at k_attn_prep_fwd_at_avx512
#define k_head_bwd k_head_bwd_avx512
#define k_attn_prep_bwd_at k_attn_prep_bwd_at_avx512
#define k_softmax_seg_fwd k_softmax_seg_fwd_avx512
#define k_softmax_causal_bwd k_softmax_causal_bwd_avx512
#define k_tokens_to_heads k_tokens_to_heads_avx512
#define k_swiglu_fwd k_swiglu_fwd_avx512
#define k_swiglu_bwd k_swiglu_bwd_avx512
#define k_to_act k_to_act_avx512
/* no forwarding inside the AVX-512 copy */
#define LLMT_AVX512_FORWARD(bf, f, args) ((void)0)
#else
/* the portable copy: bf16 work (bf != 0) goes to f_avx512 when it runs */
#define LLMT_AVX512_FORWARD(bf, f, args)                                                        \
    do {                                                                                        \
        if ((bf) && llmt_cpu_avx512()) {                                                        \
            f##_avx512 args;                                                                    \
            return;                                                                             \
        }                                                                                       \
    } while (0)
#endif

#endif

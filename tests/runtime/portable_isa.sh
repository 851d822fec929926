#!/bin/sh
# tests/runtime/portable_isa.sh: a plain build runs on any x86-64 node:
# no object of the runtime, the plugin or the wrapper uses AVX registers
# (ymm, zmm) or AVX-512 masks, except the AVX-512 BF16 copy of the
# kernels (runtime/.../libllmt_avx512_la-*.o), which runs only where
# cpuid finds it (runtime/model/cpu.h). Fails on the code before the
# run-time choice (everything was built with -march=native).
fail() { echo "FAIL: $*"; exit 1; }
command -v objdump >/dev/null 2>&1 || { echo "SKIP: objdump (binutils) not installed"; exit 77; }
grep -q '^#define LLMT_MARCH ' "$top_builddir/config.h" &&
	{ echo "SKIP: built with --with-march: native code on purpose"; exit 77; }
n=0 bad=
for d in runtime spank wrapper; do
	for o in $(find "$top_builddir/$d" -name '*.o' ! -name 'libllmt_avx512_la-*'); do
		n=$((n + 1))
		if objdump -d "$o" | grep -qE '%[yz]mm[0-9]|\{%k[1-7]\}'; then
			bad="$bad ${o#"$top_builddir"/}"
		fi
	done
done
[ $n -gt 20 ] || fail "only $n objects found under $top_builddir: not built?"
[ -z "$bad" ] || fail "AVX code outside the AVX-512 copy:$bad"
m=$(find "$top_builddir/runtime" -name 'libllmt_avx512_la-*.o' | head -n 1)
[ -n "$m" ] && objdump -d "$m" | grep -qE '%zmm[0-9]' || fail "the AVX-512 copy has no AVX-512 code"
echo "PASS: $n objects portable; the AVX-512 copy uses zmm"

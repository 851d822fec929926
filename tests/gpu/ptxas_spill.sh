#!/bin/sh
# ptxas_spill.sh: every kernel of runtime/gpu/*.cu keeps its state in
# registers. Compiles each file's device code with the build's nvcc flags
# (-O3 -std=c++17) for sm_90 and sm_80 (PTXAS_ARCHS overrides) with
# ptxas -v, prints each kernel's registers, spills and stack frame, and
# fails naming the kernel and its bytes when one spills or has a stack
# frame (local memory: off-chip traffic in the inner loop). No GPU
# needed. SKIP (77) without nvcc: NVCC, else the one configure found,
# else nvcc on PATH.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
nvcc=${NVCC:-}
if [ -z "$nvcc" ] && [ -f "$top_builddir/runtime/Makefile" ]; then
	nvcc=$(sed -n 's/^NVCC = *//p' "$top_builddir/runtime/Makefile")
fi
[ -n "$nvcc" ] || nvcc=$(command -v nvcc 2>/dev/null)
if [ -z "$nvcc" ] || ! [ -x "$nvcc" ]; then
	echo "SKIP: no nvcc (configure found no CUDA and none on PATH; NVCC=path sets one)"
	exit 77
fi
archs=${PTXAS_ARCHS:-"sm_90 sm_80"}
gencode=
for a in $archs; do
	gencode="$gencode -gencode arch=compute_${a#sm_},code=$a"
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
demangle="cat"
command -v c++filt >/dev/null 2>&1 && demangle=c++filt
src=$top_srcdir/runtime
rc=0 n=0
for cu in "$src"/gpu/*.cu; do
	# shellcheck disable=SC2086 # gencode: several words
	if ! "$nvcc" $gencode -O3 -std=c++17 -I"$src/gpu" -I"$src" -Xptxas -v --fatbin "$cu" \
		-o "$tmp/k.fatbin" >"$tmp/log" 2>&1; then
		echo "FAIL: $nvcc cannot compile ${cu#"$top_srcdir"/}:"
		tail -n 20 "$tmp/log"
		exit 1
	fi
	# a function's properties (stack, spills) come before its registers
	awk -v file="${cu##*/}" '
		/Compiling entry function/ { split($0, q, "'\''"); arch = q[4] }
		/Function properties for/ { fn = $NF }
		/bytes stack frame/ {
			st[fn] = $1; ss[fn] = $5; sl[fn] = $9
			if ($1 + $5 + $9 > 0)
				printf "BAD %s %s %s: %d bytes stack frame, %d bytes spill stores, " \
					"%d bytes spill loads\n", file, arch, fn, $1, $5, $9
		}
		/Used [0-9]+ registers/ {
			for (i = 1; i < NF; i++) if ($(i + 1) ~ /^registers,?$/) r = $i
			printf "OK %s %s %s: %d registers, %d bytes spill stores, %d bytes stack frame\n",
				file, arch, fn, r, ss[fn], st[fn]
		}' "$tmp/log" | $demangle |
		sed 's/^\([A-Z]* [^ ]* [^ ]* \)\(void \)\{0,1\}\([^(]*\)([^)]*)/\1\3/' >"$tmp/out"
	n=$((n + $(grep -c '^OK' "$tmp/out")))
	sed -n 's/^OK /  /p' "$tmp/out"
	if grep -q '^BAD' "$tmp/out"; then
		sed -n 's/^BAD /FAIL: /p' "$tmp/out"
		rc=1
	fi
done
if [ "$n" = 0 ]; then
	echo "FAIL: ptxas -v reported no kernel (its output format changed?)"
	exit 1
fi
[ $rc = 0 ] && echo "ok: $n kernels ($archs), none spills or has a stack frame"
exit $rc

#!/bin/sh
# tests/runtime/selftest_isa.sh: `llm-train selftest` on this node's own
# compute paths against their golden checksums (runtime/selftest/
# st_golden.c), each in a process of its own: oneDNN uncapped
# (ONEDNN_MAX_CPU_ISA=ALL: AMX tiles where the CPU has them, which the rest
# of the suite does not run, see tests/Makefile.am), capped at AVX-512 BF16,
# and the generic kernels; small and full sizes. Each path must answer
# right and match its golden (a golden mismatch is what the selftest
# drains a node for). A path with no golden line is a CPU this table has
# not met: skipped, naming the line to add.
set -u
fail() { echo "FAIL: $*"; exit 1; }
LT=$top_builddir/runtime/llm-train
[ -x "$LT" ] || fail "$LT is not built"
W=$(mktemp -d /tmp/llmt-stisa.XXXXXX) || fail "mktemp"
trap 'rm -rf "$W"' EXIT
py=/usr/bin/python3
missing=
n=0
for mode in ALL AVX512_CORE_BF16 generic; do
	for size in small full; do
		n=$((n + 1))
		if [ $mode = generic ]; then
			set -- env ONEDNN_MAX_CPU_ISA=ALL LLMT_CPU=generic
		else
			set -- env ONEDNN_MAX_CPU_ISA=$mode LLMT_CPU=auto
		fi
		"$@" OMP_NUM_THREADS=2 "$LT" selftest --size $size --json "$W/$n.json" >"$W/$n.out" 2>&1
		rc=$?
		[ $rc = 0 ] || { cat "$W/$n.out"; fail "$mode $size: selftest exit $rc"; }
		r=$($py - "$W/$n.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))["nodes"][0]
print(n["answers"], n["golden"], n["path"].replace(" ", "_"))
PY
) || fail "$mode $size: no report"
		set -- $r
		echo "$mode $size: answers $1, golden $2, path $(echo "$3" | tr _ ' ')"
		[ "$1" = ok ] || fail "$mode $size: answers $1"
		case $2 in
		match) ;;
		none) missing="$missing $3/$size";;
		*) fail "$mode $size: golden $2 (path $3)";;
		esac
	done
done
if [ -n "$missing" ]; then
	missing=$(echo "$missing" | tr _ ' ')
	echo "SKIP: no golden checksum for$missing: run llm-train selftest --print-golden [--size full] here and add the lines to runtime/selftest/st_golden.c"
	exit 77
fi
echo "PASS: every compute path of this CPU matches its golden checksums"

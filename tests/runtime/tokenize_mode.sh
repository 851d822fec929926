#!/bin/sh
# tests/runtime/tokenize_mode.sh: `llm-train tokenize` creates its output
# directory and OUTDIR/val 0755 less the umask: never group- or
# world-writable (anyone who can add a *.bin there chooses training data),
# even under umask 000; a private umask (077) keeps them 0700.
set -u
LT=${top_builddir:?}/runtime/llm-train
[ -x "$LT" ] || { echo "FAIL: $LT not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmt-tok.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
i=0
while [ $i -lt 200 ]; do echo "In the beginning was the word, line $i."; i=$((i + 1)); done >"$tmp/in.txt"
fail=0
for case in "000 755" "022 755" "077 700"; do
	set -- $case
	out=$tmp/out$1
	(umask "$1" && "$LT" tokenize "$tmp/in.txt" "$out" --val-fraction 0.1 >/dev/null) ||
		{ echo "FAIL: tokenize under umask $1"; fail=1; continue; }
	ls "$out"/*.bin >/dev/null 2>&1 || { echo "FAIL: umask $1: no shard written"; fail=1; }
	for d in "$out" "$out/val"; do
		got=$(stat -c %a "$d")
		if [ "$got" = "$2" ]; then echo "ok: umask $1: $d: $got"; else echo "FAIL: umask $1: $d: mode $got, want $2"; fail=1; fi
	done
done
exit $fail

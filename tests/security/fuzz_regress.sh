#!/bin/sh
# Runs every fuzz target's seed corpus and regression inputs (inputs that
# once crashed, leaked or tripped UBSan) through the plain-C drivers built
# by `make check` (security/regress_T). Fails on any crash or abort.
set -u
b=${top_builddir:?}/tests/security
s=${top_srcdir:?}/tests/security
fail=0
for t in opts policy topology shard config ckpt safetensors; do
	dirs=$s/corpus/$t
	[ -d "$s/regress/$t" ] && dirs="$dirs $s/regress/$t"
	# shellcheck disable=SC2086
	if out=$("$b/regress_$t" $dirs 2>&1); then
		echo "ok: $t: $(printf "%s\n" "$out" | tail -n 1)"
	else
		echo "FAIL: $t: $out"
		fail=1
	fi
done
exit $fail

#!/bin/sh
# The plugin's code (spank/: the part that runs as root inside Slurm's
# daemons) and its unit tests, rebuilt with AddressSanitizer +
# UndefinedBehaviorSanitizer and run: test_opts, test_policy,
# test_topology, test_rankmap, test_envgen, test_health, test_autolayout,
# test_callbacks, test_cb_remote and test_cb_script (every callback in
# every context through fake_spank) and the fuzz
# regression drivers of the plugin's parsers. Any sanitizer report fails.
# The whole suite (runtime, wrapper too) under sanitizers:
# scripts/sanitize-check (one command; about 4 min from scratch here).
# Compiles and tests run SANITIZE_JOBS (default 2: the CI machine's
# cores) at a time.
set -u
src=${top_srcdir:?}
bld=${top_builddir:?}
out=$bld/tests/security/sanitize-units
CC=${SANITIZE_CC:-gcc}
JOBS=${SANITIZE_JOBS:-2}
case $JOBS in ''|*[!0-9]*|0) echo "FAIL: SANITIZE_JOBS='$JOBS' is not a positive count"; exit 1;; esac
command -v "$CC" >/dev/null || { echo "SKIP: $CC not found"; exit 77; }
mkdir -p "$out" || exit 1
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-std=gnu11 -g -O1 -Wall -Wextra -Wno-unused-parameter $SAN -I$src/include -I$src -I$src/spank -I$src/runtime -I$bld -I$src/tests/spank -I$src/tests/security"
LIBS="-lyaml -lslurm -lcmocka -lm"
export CC CFLAGS
core="interval opts opts_check path policy policy_load yaml_walk subst hostlist topology rankmap cost envgen ports plan
	opts_auto autolayout model_read"
glue="plugin ctx_allocator ctx_local ctx_remote ctx_job_script health health_io health_selftest hbclean"
# the planner the automatic layout calls (runtime/'s libllmtplan.la)
plan="model/model_config memory/memest memory/autoplan gpu/attn_plan gpu/act_plan"
# "SOURCE OBJECT" pairs: every object, and the out-of-date ones compiled
pairs=$( for f in $core $glue; do echo "$src/spank/$f.c $out/$f.o"; done
	for f in $plan; do echo "$src/runtime/$f.c $out/$(echo "$f" | tr / _).o"; done )
echo "$pairs" | while read -r c o; do
	[ -f "$o" ] && [ ! "$c" -nt "$o" ] || echo "$c $o"
done | xargs -r -n 2 -P "$JOBS" sh -c \
	'$CC $CFLAGS -c -o "$2" "$1" || { echo "FAIL: compiling $1"; exit 255; }' sh ||
	{ echo "FAIL: compiling the plugin's sources under sanitizers"; exit 1; }
# archives: a test pulls in only the objects it uses
obj() { for f in "$@"; do echo "$out/$(echo "$f" | tr / _).o"; done; }
rm -f "$out/core.a" "$out/glue.a"
# shellcheck disable=SC2046
ar rcs "$out/core.a" $(obj $core $plan) && ar rcs "$out/glue.a" $(obj $glue) ||
	{ echo "FAIL: ar"; exit 1; }
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="suppressions=$src/tests/security/lsan.supp:print_suppressions=0"
# one test: link NAME from its sources, then run it with its arguments;
# a failure leaves NAME.fail (the tests run in background lanes)
one() {  # one NAME "SOURCES" ARGS...
	n=$1 s=$2; shift 2
	rm -f "$out/$n.fail"
	# shellcheck disable=SC2086
	if ! $CC $CFLAGS -o "$out/$n" $s "$out/glue.a" "$out/core.a" $LIBS 2>"$out/$n.build.log"; then
		{ echo "FAIL: building $n:"; cat "$out/$n.build.log"; } >"$out/$n.fail"
	elif "$out/$n" "$@" >"$out/$n.log" 2>&1; then
		echo "ok: $n under ASan+UBSan"
	else
		{ echo "FAIL: $n under ASan+UBSan:"; tail -40 "$out/$n.log"; } >"$out/$n.fail"
	fi
}
lanes=0 names=
go() {  # go NAME "SOURCES" ARGS...: at most JOBS at a time
	[ "$lanes" -ge "$JOBS" ] && { wait; lanes=0; }
	one "$@" &
	lanes=$((lanes + 1)) names="$names $1"
}
t=$src/tests/spank
for n in test_opts test_policy test_topology test_rankmap test_envgen test_health test_autolayout; do
	go "$n" "$t/$n.c"
done
for n in test_callbacks test_cb_remote test_cb_script; do
	go "$n" "$t/$n.c $t/fake_spank.c"
done
# the fuzz corpora and regression inputs, but libslurm-slow-2.6M-hosts:
# libslurm parses it in 0.5 s, then our bound refuses it; under ASan its
# millions of libslurm reallocs take 2-3 min of page faults (80 s of
# system time) and test nothing of ours the other inputs do not.
# fuzz_regress.sh runs it uninstrumented.
d=$src/tests/security
for n in opts policy topology; do
	go "regress_$n" "$d/fuzz_$n.c $d/fuzz_util.c $d/fuzz_driver.c" "$d/corpus/$n" \
		$(ls -d "$d/regress/$n"/* 2>/dev/null | grep -v '/libslurm-slow-2\.6M-hosts$')
done
wait
fail=0
for n in $names; do
	[ -f "$out/$n.fail" ] && { cat "$out/$n.fail"; fail=1; }
done
exit $fail

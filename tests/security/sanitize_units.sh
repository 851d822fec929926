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
set -u
src=${top_srcdir:?}
bld=${top_builddir:?}
out=$bld/tests/security/sanitize-units
CC=${SANITIZE_CC:-gcc}
command -v "$CC" >/dev/null || { echo "SKIP: $CC not found"; exit 77; }
mkdir -p "$out" || exit 1
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-std=gnu11 -g -O1 -Wall -Wextra -Wno-unused-parameter $SAN -I$src/include -I$src -I$src/spank -I$src/runtime -I$bld -I$src/tests/spank -I$src/tests/security"
LIBS="-lyaml -lslurm -lcmocka -lm"
core="interval opts opts_check path policy policy_load yaml_walk subst hostlist topology rankmap cost envgen ports plan
	opts_auto autolayout model_read"
glue="plugin ctx_allocator ctx_local ctx_remote ctx_job_script health health_io health_selftest hbclean"
# the planner the automatic layout calls (runtime/'s libllmtplan.la)
plan="model/model_config memory/memest memory/autoplan gpu/attn_plan gpu/act_plan"
objs=
for f in $core $glue; do
	o=$out/$f.o
	if [ ! -f "$o" ] || [ "$src/spank/$f.c" -nt "$o" ]; then
		# shellcheck disable=SC2086
		$CC $CFLAGS -c -o "$o" "$src/spank/$f.c" || { echo "FAIL: compiling spank/$f.c"; exit 1; }
	fi
	objs="$objs $o"
done
for f in $plan; do
	o=$out/$(echo "$f" | tr / _).o
	if [ ! -f "$o" ] || [ "$src/runtime/$f.c" -nt "$o" ]; then
		# shellcheck disable=SC2086
		$CC $CFLAGS -c -o "$o" "$src/runtime/$f.c" || { echo "FAIL: compiling runtime/$f.c"; exit 1; }
	fi
done
# archives: a test pulls in only the objects it uses
rm -f "$out/core.a" "$out/glue.a"
# shellcheck disable=SC2086
ar rcs "$out/core.a" $(for f in $core; do echo "$out/$f.o"; done) \
	$(for f in $plan; do echo "$out/$(echo "$f" | tr / _).o"; done) &&
	ar rcs "$out/glue.a" $(for f in $glue; do echo "$out/$f.o"; done) || { echo "FAIL: ar"; exit 1; }
objs="$out/glue.a $out/core.a"
fail=0
link() {  # link NAME SOURCES...
	n=$1; shift
	# shellcheck disable=SC2086
	$CC $CFLAGS -o "$out/$n" "$@" $objs $LIBS 2>"$out/$n.build.log" ||
		{ echo "FAIL: building $n:"; cat "$out/$n.build.log"; fail=1; return 1; }
}
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="suppressions=$src/tests/security/lsan.supp:print_suppressions=0"
run() {  # run NAME ARGS...
	n=$1; shift
	if "$out/$n" "$@" >"$out/$n.log" 2>&1; then
		echo "ok: $n under ASan+UBSan"
	else
		echo "FAIL: $n under ASan+UBSan:"; tail -40 "$out/$n.log"; fail=1
	fi
}
for t in test_opts test_policy test_topology test_rankmap test_envgen test_health test_autolayout; do
	link "$t" "$src/tests/spank/$t.c" && run "$t"
done
for t in test_callbacks test_cb_remote test_cb_script; do
	link "$t" "$src/tests/spank/$t.c" "$src/tests/spank/fake_spank.c" && run "$t"
done
for t in opts policy topology; do
	d=$src/tests/security
	link "regress_$t" "$d/fuzz_$t.c" "$d/fuzz_util.c" "$d/fuzz_driver.c" &&
		run "regress_$t" "$d/corpus/$t" $( [ -d "$d/regress/$t" ] && echo "$d/regress/$t")
done
exit $fail

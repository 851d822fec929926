#!/bin/sh
# The runtime's fuzz regressions (security/regress/{ckpt,safetensors,shard,
# config}: inputs that once leaked, overflowed or read out of bounds) and
# seed corpora through their fuzz targets rebuilt with ASan + UBSan (LSan
# on for the leak inputs), as fuzz_regress.sh's plain drivers cannot fail
# for those bug classes. A missing sanitizer runtime is a FAIL, not a skip.
set -u
src=${top_srcdir:?}
bld=${top_builddir:?}
out=$bld/tests/security/sanitize-regress
CC=${SANITIZE_CC:-gcc}
command -v "$CC" >/dev/null || { echo "FAIL: $CC not found (the sanitizer build)"; exit 1; }
mkdir -p "$out" || exit 1
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
MPI_CFLAGS=$(mpicc --showme:compile) MPI_LIBS=$(mpicc --showme:link)
CFLAGS="-std=gnu11 -g -O1 -Wall -Wextra -Wno-unused-parameter $SAN -D_GNU_SOURCE -I$src/include -I$src/runtime -I$bld -I$src/tests/security $MPI_CFLAGS"
R=$src/runtime
ckpt="$R/ckpt/ckpt_range.c $R/ckpt/ckpt_fs.c $R/ckpt/ckpt_source.c $R/ckpt/ckpt_cover.c $R/ckpt/ckpt_manifest.c
	$R/ckpt/ckpt_write.c $R/ckpt/ckpt_merge.c $R/ckpt/ckpt_retain.c $R/ckpt/ckpt_read.c $R/ckpt/safetensors.c $R/model/model_config.c $R/comm/comm_mpi.c
	$R/resilience/watchdog.c $R/resilience/watchdog_run.c"
fail=0
obj() {  # obj SOURCE: compile once (again when the source is newer), print the object
	_o=$out/$(echo "${1#"$src"/}" | tr / _).o
	if [ ! -f "$_o" ] || [ "$1" -nt "$_o" ]; then
		# shellcheck disable=SC2086
		$CC $CFLAGS -c -o "$_o" "$1" 2>>"$out/build.log" || { echo "FAIL: compiling $1:"; tail -20 "$out/build.log"; exit 1; }
	fi
	echo "$_o"
}
# target T SOURCES...: build fuzz_T with the driver, run corpus and regress
target() {
	t=$1; shift
	_objs=
	for f in "$src/tests/security/fuzz_$t.c" "$src/tests/security/fuzz_util.c" "$src/tests/security/fuzz_driver.c" "$@"; do
		_objs="$_objs $(obj "$f")" || exit 1
	done
	# shellcheck disable=SC2086
	$CC $SAN -o "$out/regress_$t" $_objs -ljansson -lxxhash -lyaml -lpthread -lm $MPI_LIBS 2>"$out/$t.link.log" ||
		{ echo "FAIL: linking regress_$t:"; tail -20 "$out/$t.link.log"; fail=1; return; }
	d=$src/tests/security
	# shellcheck disable=SC2046
	if "$out/regress_$t" "$d/corpus/$t" $( [ -d "$d/regress/$t" ] && echo "$d/regress/$t") >"$out/$t.log" 2>&1; then
		echo "ok: $t under ASan+UBSan+LSan: $(tail -n 1 "$out/$t.log")"
	else
		echo "FAIL: $t under ASan+UBSan+LSan:"; tail -40 "$out/$t.log"; fail=1
	fi
}
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$src/tests/security/lsan.supp:print_suppressions=0"
: >"$out/build.log"
# shellcheck disable=SC2086
target ckpt $ckpt
# shellcheck disable=SC2086
target safetensors $ckpt
target shard "$R/data/shard.c"
target config "$R/model/model_config.c"
exit $fail

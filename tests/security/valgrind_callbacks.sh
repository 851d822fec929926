#!/bin/sh
# Every llm_train.so callback in every context (tests/spank/test_callbacks,
# the fake_spank harness) under valgrind memcheck: no invalid read or
# write, no use of uninitialised memory, no definite leak.
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; exit 77; }
prog=${top_builddir:?}/tests/spank/test_callbacks
[ -x "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
log=$(mktemp /tmp/llmt-vg.XXXXXX) || exit 1
trap 'rm -f "$log"' EXIT
# libtool may wrap the program in a script: run the real binary
real=$prog
[ -x "$(dirname "$prog")/.libs/$(basename "$prog")" ] && real=$(dirname "$prog")/.libs/$(basename "$prog")
if ldd "$real" 2>/dev/null | grep -q libasan; then
	echo "SKIP: $real is an AddressSanitizer build (valgrind cannot run it)"; exit 77
fi
valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--show-leak-kinds=definite --track-origins=yes --log-file="$log" "$real" >/dev/null 2>&1
rc=$?
if [ $rc = 0 ] && [ ! -s "$log" ]; then
	echo "ok: test_callbacks under valgrind: clean"
	exit 0
fi
echo "FAIL: test_callbacks under valgrind: exit $rc"
cat "$log"
exit 1

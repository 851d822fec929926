# tests/runtime/expect_lib.sh: sourced by the runtime's bad-input tests:
# fail, $LT, a temporary $tmp removed at exit, the KJV check, and
# expect CODE PATTERN CMD... (exit CODE, one stderr line matching PATTERN).
fail() { echo "FAIL: $*"; exit 1; }
LT=${top_builddir:?}/runtime/llm-train
[ -x "$LT" ] || fail "$LT is not built"
command -v bible >/dev/null 2>&1 || fail "bible not found: install bible-kjv (scripts/install-deps)"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

expect() {
	_code=$1 _pat=$2; shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"; _rc=$?
	[ $_rc = "$_code" ] || { cat "$tmp/err"; fail "$*: exit $_rc, want $_code"; }
	grep -q -- "$_pat" "$tmp/err" || { cat "$tmp/err"; fail "$*: no message matching: $_pat"; }
	[ "$(grep -c . "$tmp/err")" = 1 ] || { cat "$tmp/err"; fail "$*: more than one line on stderr"; }
	echo "exit $_rc: $(cat "$tmp/err")"
}

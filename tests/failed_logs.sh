#!/bin/sh
# tests/failed_logs.sh: tests/run's report of failed tests (tests/failed-logs)
# on a log holding binary junk (NUL bytes, terminal escapes): the tails
# carry no control byte but tab and newline, the "why" line still finds
# the log's FAIL reason, a passed test is not reported. Fails on the inline
# loop of tests/run it replaced (raw bytes through; grep saw a binary file
# and the why line was lost).
set -u
fail() { echo "FAIL: $*"; exit 1; }
FL=$top_srcdir/tests/failed-logs
W=$(mktemp -d /tmp/llmt-failedlogs.XXXXXX)
trap 'rm -rf "$W"' EXIT
printf ':test-result: FAIL\n' >"$W/bin.trs"
printf ':test-result: PASS\n' >"$W/ok.trs"
{ printf 'start\000\001\n'; printf 'FAIL: the real reason\n'; printf '\033]0;title\007\033[2J\ttail\n'; } >"$W/bin.log"
echo "FAIL: not this one" >"$W/ok.log"
sh "$FL" tails "$W/bin.trs" "$W/ok.trs" >"$W/tails" || fail "tails: exit $?"
sh "$FL" why "$W/bin.trs" "$W/ok.trs" >"$W/why" || fail "why: exit $?"
cat "$W/tails" "$W/why"
[ "$(LC_ALL=C tr -d '\t\n -~\200-\377' <"$W/tails" | wc -c)" = 0 ] || fail "control bytes in the tails"
grep -q "^--- $W/bin.log" "$W/tails" && grep -q '?\[2J	tail' "$W/tails" || fail "tails lack the log's lines"
[ "$(cat "$W/why")" = "why $W/bin: FAIL: the real reason" ] || fail "why line: $(cat "$W/why")"
grep -q ok "$W/tails" && fail "a passed test reported"
echo "failed-logs: binary logs print as text"

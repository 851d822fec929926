#!/bin/sh
# tests/wrapper/dash_noeval.sh: dashboard.html's loss chart (rebuilt by
# `llm-train-wrap report RUN_DIR`, rendered by headless Chromium) has a
# legend entry for a series only when it has points: a run without
# --eval-interval (no eval.jsonl, as scripts/demo's job) shows "loss (5)"
# and no "val_loss (0)" (red before: an empty val_loss legend); with two
# eval records it shows "val_loss (2)".
set -u
: "${top_builddir:?}"
fail() { echo "FAIL: $*"; exit 1; }
WRAP=$top_builddir/wrapper/llm-train-wrap
[ -x "$WRAP" ] || fail "$WRAP not built"
command -v chromium >/dev/null 2>&1 || { echo "SKIP: chromium not installed (scripts/install-deps)"; exit 77; }
W=$(mktemp -d /tmp/llmt-dash.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$W" || echo "files kept in $W"; exit $rc' EXIT
R=$W/run
mkdir -p "$R"
echo '{"time":1.0,"event":"start","run":0,"job":"42","nodes":"node1","nnodes":1,"tasks_per_node":1,"command":"llm-train"}' \
	>"$R/ledger.jsonl"
for s in 1 2 3 4 5; do
	echo "{\"step\":$s,\"loss\":$((6 - s)).5,\"grad_norm\":1.0,\"lr\":0.001,\"tokens_per_s\":100,\"step_time_s\":0.1}"
done >"$R/metrics.jsonl"
legends() {  # the loss chart's legend entries of the rendered page
	"$WRAP" report "$R" >"$W/report.out" 2>&1 || { cat "$W/report.out"; fail "report exit $?"; }
	timeout 120 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 \
		--user-data-dir="$W/chrome" --dump-dom "file://$R/dashboard.html" >"$W/dom" 2>"$W/chrome.log" ||
		fail "chromium failed: $(tail -3 "$W/chrome.log")"
	grep -q 'data-chart="loss"' "$W/dom" || fail "the page has no loss chart (scripts did not run?)"
	grep -o '<span class="legend"[^>]*>[^<]*</span>' "$W/dom" | sed 's/<[^>]*>//g'
}
l=$(legends)
echo "without eval: $(echo "$l" | tr '\n' ',')"
echo "$l" | grep -qx 'loss (5)' || fail "no 'loss (5)' legend: $l"
echo "$l" | grep -q '^val_loss' && fail "a val_loss legend without eval records: $l"
printf '%s\n' '{"step":2,"val_loss":4.0}' '{"step":4,"val_loss":3.0}' >"$R/eval.jsonl"
l=$(legends)
echo "with eval: $(echo "$l" | tr '\n' ',')"
echo "$l" | grep -qx 'val_loss (2)' || fail "no 'val_loss (2)' legend with two eval records: $l"
echo PASS

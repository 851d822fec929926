#!/bin/sh
# tests/packaging/demo_show.sh: what scripts/demo shows of its job's output
# (scripts/demo --show-job), on a recorded demo job (demo-job.out: the
# crash at step 25, Open MPI's "failed to TCP connect" block with its
# indented "Local host:/PID:/Message:/Error:" lines, the restart, the
# summary): every 10th step, the fault, the wrapper's lines and all its
# summary lines, and none of Open MPI's or srun's text, which a new user
# takes for an error of the demo. Red before: the indented Open MPI lines
# showed (the filter took any line starting with two spaces).
set -u
: "${top_srcdir:?}"
fail() { echo "FAIL: $*"; exit 1; }
in=$top_srcdir/tests/packaging/demo-job.out
out=$(sh "$top_srcdir/scripts/demo" --show-job "$in") || fail "scripts/demo --show-job exit $?"
# the recording holds what must not show
grep -q '^  Local host:' "$in" && grep -q 'WARNING: Open MPI' "$in" || fail "$in lacks Open MPI's block"
bad=$(printf '%s\n' "$out" | grep -E 'Local host|PID:|Message:|Error:|Open MPI|srun:|slurmstepd|^\[vm' || true)
[ -z "$bad" ] || { printf '%s\n' "$out"; fail "shows: $bad"; }
for w in 'injected fault crash@25' 'attempt 0 ended: transient' 'attempt 1 ended: done' '^  goodput ' \
	'^  time lost:' '^  restarts: 1' '^  excluded nodes:' '^  loss curve:' '^  prometheus:' '^  dashboard:'; do
	printf '%s\n' "$out" | grep -q -- "$w" || { printf '%s\n' "$out"; fail "does not show '$w'"; }
done
n=$(printf '%s\n' "$out" | grep -c '^step [0-9]*0/60 ')
[ "$n" = 6 ] || fail "$n step lines, want 6 (steps 10..60)"
echo "ok: $(printf '%s\n' "$out" | wc -l) lines: 6 steps, the fault, the wrapper's lines, 7 summary lines, no Open MPI text"
echo PASS

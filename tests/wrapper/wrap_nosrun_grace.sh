#!/bin/sh
# tests/wrapper/wrap_nosrun_grace.sh: with --no-srun the preemption's
# SIGUSR1 goes to the command's process group, and a local launcher
# without a handler (sh, torchrun's agent) dies of it at once while its
# ranks save. Those ranks keep the preemption's grace (--preempt-grace,
# then --kill-grace), not the 5 s the wrapper gives the leftovers of an
# ended step: here a rank whose save takes 6 s writes it and exits 87
# (red before: SIGKILLed 5 s after the launcher died, nothing saved, yet
# the wrapper said 87), and the stop says there is no Slurm job to requeue
# (was "requeue is off" with no --no-requeue given), and the summary
# counts restarts apart from endings; a command of a wrapper killed by
# SIGKILL gets SIGTERM (it trained on). No torch, no Slurm; about 8 s.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-nosrun-grace.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
cat >"$T/rank.sh" <<'RANK'
#!/bin/sh
trap 'sleep 6; echo saved >"$D/saved"; exit 87' USR1
: >"$D/ready"
while :; do sleep 0.1; done
RANK
cat >"$T/launch.sh" <<'LAUNCH'
#!/bin/sh
sh "$D/rank.sh" & wait
LAUNCH
D=$T; export D
timeout -k 5 60 "$WRAP" --no-srun --ckpt-dir "$T/ck" --ckpt-tool none --tick 0.1 --preempt-grace 20 \
	--max-restarts 0 -- sh "$T/launch.sh" >"$T/out" 2>&1 &
tp=$!
wait_file "$T/ready" 30 || { cat "$T/out"; fail "the rank never started"; }
kill -USR1 "$(pgrep -P $tp)" || fail "no llm-train-wrap under timeout $tp"
wait $tp; rc=$?
[ -e "$T/saved" ] || { cat "$T/out"; fail "the rank was killed inside its 6 s save (wrapper exit $rc)"; }
[ $rc = 87 ] || { cat "$T/out"; fail "wrapper exit $rc, want 87"; }
# the stop says why there is no requeue: not "requeue is off" (no
# --no-requeue was given), but no Slurm job, and that the command resumes
grep -q 'action: stop: .*: no Slurm job to requeue .*: the same command resumes: stop' "$T/out" ||
	{ cat "$T/out"; fail "the stop line does not say why there is no requeue"; }
# the summary counts restarts apart from endings (was "restarts: 0 (preempted 1)")
grep -q '^  restarts: 0; attempts ended by: preempted 1; runs 1$' "$T/out" ||
	{ cat "$T/out"; fail "summary: $(grep restarts: "$T/out")"; }
echo "ok: the launcher died of SIGUSR1; its rank kept the grace, saved in 6 s and exited 87"

# the wrapper killed by SIGKILL (OOM killer, kill -9): its command, in a
# process group of its own and writing nothing to the wrapper's pipes,
# gets SIGTERM (was: trained on beside the next run in the same CKPT_DIR)
cat >"$T/quiet.sh" <<'QUIET'
#!/bin/sh
trap 'echo term >"$D/term"; exit 0' TERM
: >"$D/ready2"
while :; do sleep 0.1; done
QUIET
"$WRAP" --no-srun --ckpt-dir "$T/ck2" --ckpt-tool none --tick 0.1 -- sh "$T/quiet.sh" >"$T/out2" 2>&1 &
wp=$!
wait_file "$T/ready2" 30 || { cat "$T/out2"; fail "the quiet command never started"; }
kill -KILL $wp
wait $wp 2>/dev/null
wait_file "$T/term" 10 || fail "the command outlived the SIGKILLed wrapper without a SIGTERM"
echo "ok: the wrapper SIGKILLed, its command got SIGTERM"
echo PASS

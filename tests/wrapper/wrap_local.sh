#!/bin/sh
# tests/wrapper/wrap_local.sh: llm-train-wrap's loop run directly (no
# Slurm, --no-srun) with the test trainer: usage errors (a trainer's
# --ckpt-dir other than the wrapper's), a config error is
# never retried, the restart budget stops a crash loop, a crash resumes to
# bit-identical weights, a corrupt checkpoint is skipped (not deleted), a
# NaN or a loss spike rolls back and skips data, exit 75 names the stuck
# peer whatever the nodes' clocks say, a foreign trainer without heartbeats
# is restarted after an output hang, and the report's outputs exist (the
# Prometheus textfile with the last step, also from `report RUN_DIR`;
# report of a missing run dir exits 66; restarts_total leaves out the
# final stop).
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-local.XXXXXX) || exit 1
W=$T   # where ledger (lib-wrap.sh) finds the runs
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
export LLM_TRAIN_CKPT_INTERVAL=5
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW

# -- usage errors: exit 64 with one line naming the bad value
"$WRAP" >"$T/u1" 2>&1; [ $? = 64 ] || fail "no command: not exit 64"
[ "$(wc -l <"$T/u1")" = 1 ] || fail "no command: not one line: $(cat "$T/u1")"
"$WRAP" --ckpt-dir "$T/x" --max-restarts lots -- true >"$T/u2" 2>&1; [ $? = 64 ] || fail "bad --max-restarts: not 64"
grep -q "'lots'" "$T/u2" || fail "bad value not named: $(cat "$T/u2")"
env -u LLM_TRAIN_CKPT_DIR "$WRAP" -- true >"$T/u3" 2>&1; [ $? = 64 ] || fail "no ckpt dir: not 64"
"$WRAP" --ckpt-dir "$T/x" --bogus -- true >"$T/u4" 2>&1; [ $? = 64 ] || fail "unknown option: not 64"
# the trainer's own --ckpt-dir: a different one is refused naming both (the
# trainer saved where the wrapper did not list); alone, it is the wrapper's
"$WRAP" --ckpt-dir "$T/x" -- true --ckpt-dir "$T/y" >"$T/u5" 2>&1; [ $? = 64 ] || fail "two ckpt dirs: not 64"
grep -q "command's --ckpt-dir $T/y is not the checkpoint dir $T/x" "$T/u5" || fail "two ckpt dirs: $(cat "$T/u5")"
env -u LLM_TRAIN_CKPT_DIR "$WRAP" --no-srun $WRAP_FAST -- true --ckpt-dir="$T/own/" >"$T/u6" 2>&1 ||
	{ cat "$T/u6"; fail "the command's --ckpt-dir alone: exit $?"; }
[ -s "$T/own/ledger.jsonl" ] || fail "the command's --ckpt-dir alone: no ledger there"

# -- reference run: 20 steps, no fault
"$WRAP" --no-srun --ckpt-dir "$T/ref" $WRAP_FAST -- "$TRAINER" --steps 20 >"$T/ref.out" 2>&1 ||
	{ cat "$T/ref.out"; fail "reference run failed"; }
[ -s "$T/ref/final_weights" ] || fail "reference run wrote no final weights"
grep -q '^llm_train_goodput_ratio{job=""} 0\.[0-9]' "$T/ref/llm_train.prom" || fail "no goodput in the Prometheus file"
grep -q 'llm_train_restarts_total{job="",cause="transient"} 0' "$T/ref/llm_train.prom" || fail "no restarts_total"
# the final textfile has the last step, not that of the last tick (a job
# shorter than --metrics-every showed llm_train_step 1 after step 20)
grep -q '^llm_train_step{job=""} 20$' "$T/ref/llm_train.prom" ||
	fail "final textfile: $(grep '^llm_train_step{' "$T/ref/llm_train.prom"), not step 20"
# and `report RUN_DIR` rewrites it with that step (it dropped the series)
"$WRAP" report "$T/ref" >"$T/report.out" 2>&1 || { cat "$T/report.out"; fail "report: exit $?"; }
grep -q '^llm_train_step{job=""} 20$' "$T/ref/llm_train.prom" ||
	fail "textfile of report RUN_DIR: $(grep '^llm_train_step{' "$T/ref/llm_train.prom"), not step 20"
# a missing run dir is a missing input (66, was 64); a file, a usage error
"$WRAP" report "$T/nonexistent" >"$T/bad.out" 2>&1; rc=$?
[ $rc = 66 ] && [ "$(wc -l <"$T/bad.out")" = 1 ] && grep -q "$T/nonexistent" "$T/bad.out" ||
	fail "report of a missing run dir: exit $rc: $(cat "$T/bad.out")"
"$WRAP" report "$T/ref/ledger.jsonl" >"$T/bad.out" 2>&1; rc=$?
[ $rc = 64 ] && grep -q "ledger.jsonl' is not a directory" "$T/bad.out" ||
	fail "report of a file: exit $rc: $(cat "$T/bad.out")"
if [ -x /usr/bin/gnuplot ]; then
	[ -s "$T/ref/loss.png" ] || fail "no loss.png"
	head -c 8 "$T/ref/loss.png" | od -c | grep -q 'P   N   G' || fail "loss.png is not a PNG"
fi
grep -q 'goodput [0-9.]*%' "$T/ref.out" || fail "no goodput line in the summary"
ledger ref "launches=1 failures= restarts=0 requeues=0"

# -- config error: exit 64, launched once
"$WRAP" --no-srun --ckpt-dir "$T/cfg" $WRAP_FAST -- "$TRAINER" --bad-config >"$T/cfg.out" 2>&1
rc=$?; [ $rc = 64 ] || { cat "$T/cfg.out"; fail "config error: wrapper exit $rc, not 64"; }
[ "$(count launch "$T/cfg/ledger.jsonl")" = 1 ] || fail "config error was retried"
[ "$(count failure "$T/cfg/ledger.jsonl" user_error)" = 1 ] || fail "config error not classified user_error"
ledger cfg "launches=1 failures=user_error restarts=0 requeues=0"
# restarts_total counts what its HELP says, endings a restart or requeue
# followed: not the final stop (was 1 here, 3 in the crash loop below)
grep -q '^llm_train_restarts_total{job="",cause="user_error"} 0$' "$T/cfg/llm_train.prom" ||
	fail "config error: $(grep '^llm_train_restarts_total.*user_error' "$T/cfg/llm_train.prom"), not 0 restarts"

# -- crash loop: crashes every attempt; budget 2 restarts then stop (70)
LLM_TRAIN_FAULT='crash!@3' "$WRAP" --no-srun --ckpt-dir "$T/loop" $WRAP_FAST --max-restarts 2 \
	-- "$TRAINER" --steps 20 >"$T/loop.out" 2>&1
rc=$?; [ $rc = 70 ] || { cat "$T/loop.out"; fail "crash loop: exit $rc, not 70"; }
[ "$(count launch "$T/loop/ledger.jsonl")" = 3 ] || fail "crash loop: not 3 launches"
grep '"act":"stop"' "$T/loop/ledger.jsonl" | grep -q 'budget' || fail "crash loop: stop not for the budget"
ledger loop "launches=3 failures=transient,transient,transient restarts=2 requeues=0"
grep -q '^llm_train_restarts_total{job="",cause="transient"} 2$' "$T/loop/llm_train.prom" ||
	fail "crash loop: $(grep '^llm_train_restarts_total.*transient' "$T/loop/llm_train.prom"), not 2 restarts"
"$WRAP" report "$T/loop" >"$T/loop.report" 2>&1   # from the ledger alone: the same count
grep -q '^llm_train_restarts_total{job="",cause="transient"} 2$' "$T/loop/llm_train.prom" ||
	fail "report RUN_DIR: $(grep '^llm_train_restarts_total.*transient' "$T/loop/llm_train.prom"), not 2 restarts"

# -- crash at step 7 (SIGABRT): restart, resume from step 5, same final weights
LLM_TRAIN_FAULT=crash@7 "$WRAP" --no-srun --ckpt-dir "$T/crash" $WRAP_FAST -- "$TRAINER" --steps 20 \
	>"$T/crash.out" 2>&1 || { cat "$T/crash.out"; fail "crash run failed"; }
grep '"event":"launch"' "$T/crash/ledger.jsonl" | grep -q '"resume_step":5' || fail "crash: not resumed from step 5"
cmp -s "$T/ref/final_weights" "$T/crash/final_weights" || fail "crash: final weights differ from the reference"
ledger crash "launches=2 failures=transient restarts=1 requeues=0"

# -- exit 75 with a stuck peer: two ranks (one process each, on "nodes"
#    nA and nB); rank 1 freezes at step 3 while rank 0 waits "in
#    communication" until its watchdog (4 s) ends it with 75. Rank 1's
#    node clock is 20 s ahead: the wrapper judges the heartbeats' ages by
#    when it read them, so it names rank 1 on nB (by the times written in
#    them, rank 0 would look 16 s staler). The rerun completes.
cat >"$T/two.sh" <<'TWO'
#!/bin/sh
RANK=1 SLURMD_NODENAME=nB "$@" & p1=$!
RANK=0 SLURMD_NODENAME=nA "$@"; rc=$?
kill -9 $p1; wait $p1
exit $rc
TWO
chmod +x "$T/two.sh"
WORLD_SIZE=2 LLM_TRAIN_COMM_TIMEOUT=4 TEST_TRAINER_CLOCK_SKEW=1:20 LLM_TRAIN_FAULT=stuck@3:1 \
	"$WRAP" --no-srun --ckpt-dir "$T/stuck" $WRAP_FAST --hang-timeout-min 60 --hang-timeout-max 60 \
	-- "$T/two.sh" "$TRAINER" --steps 20 >"$T/stuck.out" 2>&1 || { cat "$T/stuck.out"; fail "stuck run failed"; }
grep '"event":"stuck"' "$T/stuck/ledger.jsonl" | grep -q '"rank":1,"node":"nB"' ||
	{ cat "$T/stuck.out"; fail "stuck: rank 1 on nB not named"; }
grep '"event":"failure"' "$T/stuck/ledger.jsonl" | grep -q 'nB' || fail "stuck: the failure does not name nB"
cmp -s "$T/ref/final_weights" "$T/stuck/final_weights" || fail "stuck: final weights differ from the reference"

# -- LLM_TRAIN_CKPT_INTERVAL=auto: after the crash the next attempt gets a
#    Young/Daly interval in steps from the measured checkpoint cost
LLM_TRAIN_CKPT_INTERVAL=auto LLM_TRAIN_FAULT=crash@8 "$WRAP" --no-srun --ckpt-dir "$T/auto" $WRAP_FAST --mtbf 100 \
	-- "$TRAINER" --steps 20 >"$T/auto.out" 2>&1 || { cat "$T/auto.out"; fail "auto interval run failed"; }
grep '"event":"launch"' "$T/auto/ledger.jsonl" | sed -n 2p | grep -q '"ckpt_interval":"[1-9][0-9]*"' ||
	fail "auto: no interval in steps for the second attempt"

# -- corrupt checkpoint: a 12-step run, its newest shard corrupted, then
#    20 steps: step 12 is skipped (kept on disk), resume at 10, same weights
"$WRAP" --no-srun --ckpt-dir "$T/cor" $WRAP_FAST -- "$TRAINER" --steps 12 >"$T/cor.out" 2>&1 || fail "cor: first run"
printf 'X' | dd of="$T/cor/step_00000012/rank_00000.bin" bs=1 seek=3 conv=notrunc 2>/dev/null
"$WRAP" --no-srun --ckpt-dir "$T/cor" $WRAP_FAST -- "$TRAINER" --steps 20 >>"$T/cor.out" 2>&1 ||
	{ cat "$T/cor.out"; fail "cor: second run failed"; }
[ -f "$T/cor/step_00000012/rank_00000.bin" ] || fail "corrupt checkpoint was deleted"
[ "$(count checkpoint_skipped "$T/cor/ledger.jsonl" step_00000012)" -ge 1 ] || fail "corrupt checkpoint not reported"
grep '"event":"launch"' "$T/cor/ledger.jsonl" | tail -1 | grep -q '"resume_step":10' || fail "cor: not resumed from 10"
cmp -s "$T/ref/final_weights" "$T/cor/final_weights" || fail "cor: final weights differ"

# -- NaN at step 17 (exit 85): roll back 5 steps (to <= 12: step 10), skip
#    data through step 17+3: 10 batches
LLM_TRAIN_FAULT=nan@17 "$WRAP" --no-srun --ckpt-dir "$T/nan" $WRAP_FAST --rollback-steps 5 --skip-batches 3 \
	-- "$TRAINER" --steps 20 >"$T/nan.out" 2>&1 || { cat "$T/nan.out"; fail "nan run failed"; }
[ "$(count failure "$T/nan/ledger.jsonl" numerical)" = 1 ] || fail "nan: not classified numerical"
grep '"event":"launch"' "$T/nan/ledger.jsonl" | tail -1 | grep '"resume_step":10' | grep -q '"skip_batches":10' ||
	fail "nan: not resumed at 10 skipping 10 batches"
cmp -s "$T/ref/final_weights" "$T/nan/final_weights" && fail "nan: weights equal the reference though data was skipped"

# -- a loss spike that persisted (exit 85, as after the runtime's own
#    in-memory skip failed): the same rollback
LLM_TRAIN_FAULT=spike@9 "$WRAP" --no-srun --ckpt-dir "$T/spike" $WRAP_FAST --rollback-steps 5 --skip-batches 2 \
	-- "$TRAINER" --steps 20 >"$T/spike.out" 2>&1 || { cat "$T/spike.out"; fail "spike run failed"; }
grep '"event":"launch"' "$T/spike/ledger.jsonl" | tail -1 | grep '"resume_step":0' | grep -q '"skip_batches":11' ||
	fail "spike: not resumed at 0 skipping 11 batches"

# -- foreign trainer, no heartbeats: output progress; attempt 0 goes silent
cat >"$T/foreign.sh" <<'SH'
#!/bin/sh
for i in 1 2 3; do echo "step $i"; sleep 0.1; done
[ "$LLM_TRAIN_ATTEMPT" = 0 ] && exec sleep 600
for i in 4 5 6; do echo "step $i"; sleep 0.1; done
SH
chmod +x "$T/foreign.sh"
"$WRAP" --no-srun --ckpt-dir "$T/for" --ckpt-tool none --progress-from-output --tick 0.1 \
	--hang-timeout-min 1 --hang-timeout-max 2 --backoff 0 -- "$T/foreign.sh" >"$T/for.out" 2>&1 ||
	{ cat "$T/for.out"; fail "foreign trainer run failed"; }
[ "$(count hang "$T/for/ledger.jsonl")" = 1 ] || fail "foreign: no output hang detected"
grep -q '^step 6$' "$T/for.out" || fail "foreign: second attempt did not finish"
echo PASS

#!/bin/sh
# tests/runtime/loop_faults.sh: the loop's answers to faults, as real MPI
# jobs (dp=2) on the emulated cluster:
# - SIGUSR1 (scancel --signal) => a checkpoint of the current step, exit 87;
# - NaN and loss-spike faults => those updates skipped (metrics say so);
#   K=3 bad steps in a row => exit 85;
# - a bit flipped in one DP replica after the update of a check step =>
#   exit 86, CKPT_DIR/sdc.json names both replicas, no checkpoint of the
#   bad step (under ZeRO-1 the next all-gather re-syncs the replicas, so
#   the check compares them right after the step's update);
# - hang => the heartbeat file stops changing (step, time) while the
#   process lives; crash => the job fails (SIGABRT);
# - bad config, bad layout, truncated shard, bad option => 64/65 with one
#   line, and the checkpoint dir unchanged.
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
W=$CLUSTER_WORK
py=/usr/bin/python3

# ---- SIGUSR1: checkpoint, then 87 -------------------------------------------
LLM_TRAIN_TP=1 LLM_TRAIN_PP=1 LLM_TRAIN_DP=2 timeout 120 srun -J llmt-usr1 --mpi=pmix -N 2 -n 2 \
	"$LT" --model "$MODEL" --data "$CORPUS" --seq 64 --micro-batch 2 --steps 1000000 \
	--ckpt-dir "$W/u" --ckpt-interval 0 --quiet >"$W/u.out" 2>&1 &
srun_pid=$!
i=0
until [ "$(hb_line "$W/u/heartbeat" 1 | cut -d' ' -f1)" -ge 3 ] 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 600 ] || { kill $srun_pid; fail "training did not reach step 3"; }
	sleep 0.1
done
jobid=$(squeue -h -n llmt-usr1 -o %i | head -n 1)
[ -n "$jobid" ] || fail "no job llmt-usr1"
scancel --signal=USR1 "$jobid" || fail "scancel --signal=USR1 failed"
wait $srun_pid
rc=$?
[ $rc = 87 ] || { cat "$W/u.out"; fail "SIGUSR1: want exit 87, got $rc"; }
last=$(tail -n 1 "$W/u/metrics.jsonl" | $py -c 'import json,sys; print(json.load(sys.stdin)["step"])')
newest=$("$LT" ckpt-list "$W/u" | head -n 1)
[ "$newest" = "$last $(printf '%s/step_%08d' "$W/u" "$last")" ] \
	|| fail "SIGUSR1: newest checkpoint '$newest', want the last step $last"
"$LT" ckpt-verify "$(printf '%s/step_%08d' "$W/u" "$last")" >/dev/null || fail "SIGUSR1 checkpoint does not verify"
grep -q "preempted: checkpoint of step $last written" "$W/u.out" || fail "no preemption message"
echo "SIGUSR1: checkpoint of step $last, exit 87"

# ---- NaN and spike: skipped updates, then 85 after K=3 in a row ------------
LLM_TRAIN_FAULT=nan@2:1,spike@4,nan@6:1,nan@7:0,nan@8:1 train 1 1 2 --steps 20 --micro-batch 2 \
	--max-bad-steps 3 --ckpt-dir "$W/n"
rc=$?
[ $rc = 85 ] || { cat "$W/last.out"; fail "NaN faults: want exit 85, got $rc"; }
skipped=$($py -c 'import json,sys
print(" ".join(str(o["step"]) for o in map(json.loads, open(sys.argv[1])) if o["skipped"]))' "$W/n/metrics.jsonl")
[ "$skipped" = "2 4 6 7 8" ] || fail "skipped steps '$skipped', want '2 4 6 7 8'"
[ "$(wc -l <"$W/n/metrics.jsonl")" = 8 ] || fail "the run must stop at step 8"
grep -q "3 bad steps in a row" "$W/last.out" || fail "no rollback message"
echo "NaN/spike: steps $skipped skipped, exit 85"

# ---- bitflip in one replica: 86 and sdc.json ---------------------------------
LLM_TRAIN_FAULT=bitflip@4:1 train 1 1 2 --steps 10 --micro-batch 2 --sdc-interval 2 \
	--ckpt-dir "$W/s" --ckpt-interval 2
rc=$?
[ $rc = 86 ] || { cat "$W/last.out"; fail "bitflip: want exit 86, got $rc"; }
[ -r "$W/s/sdc.json" ] || fail "no sdc.json"
$py - "$W/s/sdc.json" <<'PY' || fail "sdc.json content"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["step"] == 4 and o["dp"] == 2, o
assert len(o["checksums"]) == 2 and o["checksums"][0] != o["checksums"][1], o
assert sorted(s["dp_rank"] for s in o["suspects"]) == [0, 1], o
assert all(s["hosts"] for s in o["suspects"]), o
PY
[ "$("$LT" ckpt-list "$W/s" | cut -d' ' -f1 | tr '\n' ' ')" = "2 " ] || fail "a checkpoint after the bit flip was written"
echo "bitflip: exit 86, sdc.json $(cat "$W/s/sdc.json")"

# ---- masterflip: rank 1's fp32 master share corrupted at rest (after its
# step-2 update, before step 3's): the replicas still agree, the share's
# own check sees it before the update consumes it: 86, cause master_share,
# suspect dp rank 1 alone, no checkpoint after step 2 (the check runs every
# step: --sdc-interval only has to be on)
LLM_TRAIN_FAULT=masterflip@3:1 train 1 1 2 --steps 6 --micro-batch 2 --sdc-interval 100 \
	--ckpt-dir "$W/mf" --ckpt-interval 2
masterflip_check masterflip $? "$W/last.out" "$W/mf" "$LT"

# ---- hang: the heartbeat stops (the wrapper's hang detection), crash: abort
LLM_TRAIN_TP=1 LLM_TRAIN_PP=1 LLM_TRAIN_DP=2 LLM_TRAIN_FAULT=hang@3 timeout 120 srun -J llmt-hang \
	--mpi=pmix -N 2 -n 2 "$LT" --model "$MODEL" --data "$CORPUS" --seq 64 --micro-batch 2 --steps 100 \
	--ckpt-dir "$W/h" --quiet >"$W/h.out" 2>&1 &
srun_pid=$!
i=0
until grep -q "injected fault hang@3" "$W/h.out" 2>/dev/null && [ -n "$(hb_line "$W/h/heartbeat" 0)" ]; do
	i=$((i + 1)); [ $i -lt 600 ] || { kill $srun_pid; fail "the hang fault did not fire"; }
	sleep 0.1
done
# under srun the node's file is flushed up to half a second after a write
i=0
until case $(hb_line "$W/h/heartbeat" 0) in "2 "*) true ;; *) false ;; esac; do
	i=$((i + 1)); [ $i -lt 600 ] || { kill $srun_pid; fail "heartbeat '$(hb_line "$W/h/heartbeat" 0)': want step 2"; }
	sleep 0.1
done
beat=$(hb_line "$W/h/heartbeat" 0)
sleep 3 # longer than the heartbeat thread's period (2 s): it must stay quiet in phase train
[ "$(hb_line "$W/h/heartbeat" 0)" = "$beat" ] || fail "the heartbeat moved during a hang: $beat"
kill -0 $srun_pid 2>/dev/null || fail "the hung job ended by itself"
case $beat in "2 "*" train "*) ;; *) fail "heartbeat '$beat': want step 2, phase train";; esac
scancel -n llmt-hang
wait $srun_pid
echo "hang: heartbeat stayed at '$beat'"
crash() { rm -rf "$W/c"; LLM_TRAIN_FAULT=crash@2:1 train 1 1 2 --steps 5 --micro-batch 2 --ckpt-dir "$W/c"; }
crash
rc=$?
[ $rc != 0 ] || fail "crash fault: the job succeeded"
# the known Open MPI 4.1.4 wire-up crash (rtrain's one stated exception)
# can come before the injected one: then the case runs once more
if ! grep -q "injected fault crash@2" "$W/last.out" && ompi_null_crash "$W/last.out"; then
	LLMT_RETRIES=$((LLMT_RETRIES + 1))
	echo "RETRY $LLMT_RETRIES: launch failed (exit $rc) in Open MPI's wire-up (one frame at address (nil): the known 4.1.4 crash) before the injected crash; running again"
	crash
	rc=$?
	[ $rc != 0 ] || fail "crash fault: the job succeeded"
fi
grep -q "injected fault crash@2" "$W/last.out" || fail "crash fault did not fire"
echo "crash: job failed with $rc"

# ---- bad input: 64/65, one line, nothing saved changes --------------------------
# (heartbeat files are liveness, rewritten by every run: not compared)
snap() { (cd "$W/u" && find . -type f ! -path './heartbeat/*' | sort | xargs md5sum); }
snap >"$W/before"
printf 'vocab_size: 256\nd_model: [1, 2]\n' >"$W/bad.yaml"
expect() { # code what cmd...
	_want=$1 _what=$2; shift 2
	"$@" >"$W/bad.out" 2>&1
	_rc=$?
	[ $_rc = "$_want" ] || { cat "$W/bad.out"; fail "$_what: want exit $_want, got $_rc"; }
	grep -q 'llm-train' "$W/bad.out" || fail "$_what: no message"
	echo "$_what: exit $_rc: $(grep -m1 'llm-train' "$W/bad.out")"
}
LLM_TRAIN_RESUME="$W/u" expect 64 "malformed config" \
	"$LT" --model "$W/bad.yaml" --data "$CORPUS" --ckpt-dir "$W/u"
mkdir "$W/baddata"
cp "$CORPUS"/*.bin "$W/baddata/"
f=$(ls "$W/baddata"/*.bin | tail -n 1)
truncate -s 2000 "$f"
LLM_TRAIN_RESUME="$W/u" expect 65 "truncated shard" \
	"$LT" --model "$MODEL" --data "$W/baddata" --seq 64 --ckpt-dir "$W/u"
grep -q "$(basename "$f")" "$W/bad.out" || fail "the truncated shard is not named"
LLM_TRAIN_TP=3 expect 64 "layout not dividing the world" \
	srun --mpi=pmix -N 2 -n 2 "$LT" --model "$MODEL" --data "$CORPUS" --seq 64 --ckpt-dir "$W/u"
LLM_TRAIN_TP=3 LLM_TRAIN_RESUME="$W/u" expect 64 "layout not dividing the model" \
	srun --mpi=pmix -N 1 -n 3 "$LT" --model "$MODEL" --data "$CORPUS" --seq 64 --ckpt-dir "$W/u"
grep -q "heads" "$W/bad.out" || fail "the layout error does not say what does not divide"
expect 64 "bad option value" "$LT" --model "$MODEL" --data "$CORPUS" --steps x
snap >"$W/after"
cmp -s "$W/before" "$W/after" || { diff "$W/before" "$W/after"; fail "a failed run changed the checkpoint dir"; }
echo PASS

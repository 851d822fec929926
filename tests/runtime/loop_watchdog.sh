#!/bin/sh
# tests/runtime/loop_watchdog.sh: the communication watchdog in a real
# 4-rank MPI job (tp=1 pp=2 dp=2) on the emulated cluster, launched
# without --kill-on-bad-exit so that each rank ends on its own account.
# LLM_TRAIN_COMM_TIMEOUT=5; faults: rank 1 sleeps twice the deadline at
# the start of step 1 (the first step: exempt), rank 2 sleeps as long in
# the checkpoint save of step 2 (saves: exempt), rank 1 hangs for good at
# the start of step 4. Wanted: steps 1-3 complete (the exempt waits did
# not fire), then every other rank exits 75 with the watchdog's line
# naming the MPI operation, instead of waiting forever. Exit codes are
# asserted, never durations (the 120 s below only bounds a broken run).
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
W=$CLUSTER_WORK
D=$W/wd
mkdir -p "$D"

# a bad deadline is a usage error named before anything starts
LLM_TRAIN_COMM_TIMEOUT=5x "$LT" --model "$MODEL" --data "$CORPUS" >"$W/bad.out" 2>&1
rc=$?
[ $rc = 64 ] || { cat "$W/bad.out"; fail "LLM_TRAIN_COMM_TIMEOUT=5x: want exit 64, got $rc"; }
grep -q "LLM_TRAIN_COMM_TIMEOUT='5x'" "$W/bad.out" || { cat "$W/bad.out"; fail "the bad value is not named"; }

# one task: llm-train in the background, its pid and exit code recorded
# under the task's RANK (set by the plugin; SLURM_PROCID without it)
cat >"$W/task" <<'EOF'
#!/bin/sh
d=$1; shift
r=${RANK:-$SLURM_PROCID}
"$@" &
echo $! >"$d/pid.$r"
wait $!
echo $? >"$d/rc.$r"
EOF
chmod +x "$W/task"

if [ $LLMT_VIA_PLUGIN = 1 ]; then
	lay="--llm-train=tp=1,pp=2,dp=2"
else
	lay="--export=ALL,LLM_TRAIN_TP=1,LLM_TRAIN_PP=2,LLM_TRAIN_DP=2"
fi
LLM_TRAIN_COMM_TIMEOUT=5 LLM_TRAIN_FAULT=stall@1:1,slowsave@2:2,hang@4:1 \
	srun -J llmt-wd --mpi=pmix -N 2 -n 4 --ntasks-per-node=2 "$lay" "$W/task" "$D" \
	"$LT" --model "$MODEL" --data "$CORPUS" --seq 64 --micro-batch 2 --lr 1e-3 --steps 8 \
	--ckpt-dir "$D/ckpt" --ckpt-interval 2 --quiet >"$W/wd.out" 2>&1 &
srun_pid=$!

# the hung rank never ends by itself: killed (by its recorded pid) once
# the others have ended; on a broken run every rank this test started
stop_ranks() {
	for _p in "$D"/pid.$1; do
		[ -r "$_p" ] && kill -KILL "$(cat "$_p")" 2>/dev/null
	done
	wait $srun_pid 2>/dev/null
}
i=0
until [ -r "$D/rc.0" ] && [ -r "$D/rc.2" ] && [ -r "$D/rc.3" ]; do
	i=$((i + 1))
	if [ $i -gt 1200 ] || ! kill -0 $srun_pid 2>/dev/null; then
		stop_ranks '*'
		cat "$W/wd.out"
		fail "ranks 0, 2 and 3 did not all end (rc files: $(cd "$D" && echo rc.*))"
	fi
	sleep 0.1
done
[ -r "$D/rc.1" ] && { cat "$W/wd.out"; fail "the hung rank 1 ended by itself (exit $(cat "$D/rc.1"))"; }
stop_ranks 1

grep -q "injected fault stall@1" "$W/wd.out" || fail "the stall fault did not fire"
grep -q "injected fault slowsave@2" "$W/wd.out" || fail "the slowsave fault did not fire"
grep -q "injected fault hang@4" "$W/wd.out" || fail "the hang fault did not fire"
steps=$(/usr/bin/python3 -c 'import json,sys
print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1])))' "$D/ckpt/metrics.jsonl")
[ "$steps" = "1 2 3" ] || { cat "$W/wd.out"; fail "steps completed '$steps', want '1 2 3'"; }
"$LT" ckpt-verify "$D/ckpt/step_00000002" >/dev/null || fail "the slow checkpoint of step 2 does not verify"
for r in 0 2 3; do
	rc=$(cat "$D/rc.$r")
	[ "$rc" = 75 ] || { cat "$W/wd.out"; fail "rank $r: want exit 75, got $rc"; }
	line=$(grep "llm-train: rank $r: communication watchdog: MPI_" "$W/wd.out") ||
		{ cat "$W/wd.out"; fail "rank $r: no watchdog line"; }
	echo "rank $r: exit 75: $line"
done
echo PASS

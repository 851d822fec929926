#!/bin/sh
# tests/runtime/loop_watchdog.sh: the communication watchdog in a real
# 4-rank MPI job (tp=1 pp=2 dp=2) on the emulated cluster, launched
# without --kill-on-bad-exit so that each rank ends on its own account.
# Job A, LLM_TRAIN_COMM_TIMEOUT=5; faults: rank 1 sleeps twice the
# deadline at the start of step 1 (the first step: not armed), rank 2
# sleeps as long in the checkpoint save of step 2 (a save: the deadline
# is stretched by LLM_TRAIN_CKPT_TIMEOUT, 1800 s), rank 1 hangs for good
# at the start of step 4. Wanted: steps 1-3 complete (the exempt waits
# did not fire), then every other rank exits 75 with the watchdog's line
# naming the MPI operation, instead of waiting forever. Job B: a save is
# bounded too: LLM_TRAIN_COMM_TIMEOUT=4, LLM_TRAIN_CKPT_TIMEOUT=1, rank 1
# sleeps 8 s in the save of step 2: the others exit 75 past the save's
# 5 s deadline. Exit codes and messages are asserted, never durations
# (the 120 s below only bounds a broken run).
set -u
. "$top_srcdir/tests/runtime/loop_lib.sh"
W=$CLUSTER_WORK

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

# job NAME: run a 4-rank job in $W/NAME (environment: the caller's) until
# ranks 0, 2 and 3 have ended; rank 1, the one made slow or hung, must
# still be there: it is then ended by its recorded pid (on a broken run,
# every rank this test started)
job() {
	D=$W/$1
	mkdir -p "$D"
	srun -J "llmt-$1" --mpi=pmix -N 2 -n 4 --ntasks-per-node=2 "$lay" "$W/task" "$D" \
		"$LT" --model "$MODEL" --data "$CORPUS" --seq 64 --micro-batch 2 --lr 1e-3 --steps 8 \
		--ckpt-dir "$D/ckpt" --ckpt-interval 2 --quiet >"$D.out" 2>&1 &
	srun_pid=$!
	i=0
	until [ -r "$D/rc.0" ] && [ -r "$D/rc.2" ] && [ -r "$D/rc.3" ]; do
		i=$((i + 1))
		if [ $i -gt 1200 ] || ! kill -0 $srun_pid 2>/dev/null; then
			stop_ranks '*'
			cat "$D.out"
			fail "$1: ranks 0, 2 and 3 did not all end (rc files: $(cd "$D" && echo rc.*))"
		fi
		sleep 0.1
	done
	[ -r "$D/rc.1" ] && { cat "$D.out"; fail "$1: rank 1 ended by itself (exit $(cat "$D/rc.1"))"; }
	stop_ranks 1
}
stop_ranks() {
	for _p in "$D"/pid.$1; do
		[ -r "$_p" ] && kill -KILL "$(cat "$_p")" 2>/dev/null
	done
	wait $srun_pid 2>/dev/null
}
# exit75 NAME WHAT: ranks 0, 2 and 3 exited 75, each with its watchdog line
# saying WHAT
exit75() {
	for r in 0 2 3; do
		rc=$(cat "$W/$1/rc.$r")
		[ "$rc" = 75 ] || { cat "$W/$1.out"; fail "$1: rank $r: want exit 75, got $rc"; }
		line=$(grep "llm-train: rank $r: communication watchdog: MPI_.* $2" "$W/$1.out") ||
			{ cat "$W/$1.out"; fail "$1: rank $r: no watchdog line with '$2'"; }
		echo "$1: rank $r: exit 75: $line"
	done
}

# A: exempt waits pass (first step; a save within its deadline), then a
# peer hung in a training step: the others exit 75 after 5 s
LLM_TRAIN_COMM_TIMEOUT=5 LLM_TRAIN_FAULT=stall@1:1,slowsave@2:2,hang@4:1 job a
grep -q "injected fault stall@1" "$W/a.out" || fail "a: the stall fault did not fire"
grep -q "injected fault slowsave@2" "$W/a.out" || fail "a: the slowsave fault did not fire"
grep -q "injected fault hang@4" "$W/a.out" || fail "a: the hang fault did not fire"
steps=$(/usr/bin/python3 -c 'import json,sys
print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1])))' "$W/a/ckpt/metrics.jsonl")
[ "$steps" = "1 2 3" ] || { cat "$W/a.out"; fail "a: steps completed '$steps', want '1 2 3'"; }
"$LT" ckpt-verify "$W/a/ckpt/step_00000002" >/dev/null || fail "a: the slow checkpoint of step 2 does not verify"
exit75 a "more than LLM_TRAIN_COMM_TIMEOUT=5 s"

# B: a save is bounded too, by the stretched deadline: 4 s + 1 s of
# LLM_TRAIN_CKPT_TIMEOUT; rank 1 sleeps 8 s in the save of step 2
LLM_TRAIN_COMM_TIMEOUT=4 LLM_TRAIN_CKPT_TIMEOUT=1 LLM_TRAIN_FAULT=slowsave@2:1 job b
grep -q "injected fault slowsave@2" "$W/b.out" || fail "b: the slowsave fault did not fire"
exit75 b "more than the checkpoint deadline of 5 s"
echo PASS

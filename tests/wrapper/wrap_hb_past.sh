#!/bin/sh
# tests/wrapper/wrap_hb_past.sh: a rank whose node clock is 10 min behind
# the batch node's (NTP broken after a reboot). Before: the wrapper took
# a heartbeat whose content time was older than its launch for a
# leftover of an earlier attempt, so the rank was silent from the launch
# and a healthy rank was declared hung within the timeout. Now this
# attempt's heartbeats are told from the leftovers by content (what was
# there before the launch) and their age is the wrapper's own clock.
set -u
. "$top_srcdir/tests/wrapper/lib-wrap.sh"
T=$(mktemp -d /tmp/llmt-wrap-past.XXXXXX) || exit 1
trap 'rc=$?; [ $rc = 0 ] && rm -rf "$T" || echo "files kept in $T"; exit $rc' EXIT
unset LLM_TRAIN_FAULT SLURM_JOB_ID LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW LLM_TRAIN_CKPT_INTERVAL
# two ranks (one process each, "nodes" nA and nB); RANKS=0 starts rank 0 only
cat >"$T/two.sh" <<'TWO'
#!/bin/sh
p1=
[ "${RANKS:-}" = 0 ] || { RANK=1 SLURMD_NODENAME=nB "$@" & p1=$!; }
RANK=0 SLURMD_NODENAME=nA "$@"; rc=$?
[ -z "$p1" ] || { kill -9 $p1; wait $p1; }
exit $rc
TWO
chmod +x "$T/two.sh"
HANG="--tick 0.1 --hang-timeout-min 2 --hang-timeout-max 3 --max-restarts 0 --ckpt-tool $CKTOOL"

# -- rank 1 beats, 600 s behind: no hang, the run completes
WORLD_SIZE=2 TEST_TRAINER_CLOCK_SKEW=1:-600 timeout -k 5 120 "$WRAP" --no-srun --ckpt-dir "$T/beh" $HANG \
	-- "$T/two.sh" "$TRAINER" --steps 30 --step-time 0.2 >"$T/beh.out" 2>&1 ||
	{ cat "$T/beh.out"; fail "a rank 10 min behind: the run failed"; }
! grep -q '"event":"hang"' "$T/beh/ledger.jsonl" || { cat "$T/beh.out"; fail "a beating rank 10 min behind declared hung"; }

# -- the same rank hangs at step 10: found, named, its silence on our clock
WORLD_SIZE=2 TEST_TRAINER_CLOCK_SKEW=1:-600 LLM_TRAIN_FAULT=hang@10:1 timeout -k 5 120 "$WRAP" --no-srun \
	--ckpt-dir "$T/hung" $HANG -- "$T/two.sh" "$TRAINER" --steps 30 --step-time 0.2 >"$T/hung.out" 2>&1
grep '"event":"hang"' "$T/hung/ledger.jsonl" | grep -q '"rank":1,"node":"nB","silent_s":[2-9]\.' ||
	{ cat "$T/hung.out"; fail "a hung rank 10 min behind: not found as rank 1 on nB silent 2-10 s"; }

# -- a leftover of an earlier attempt (written on a clock 10 min ahead,
#    never rewritten: rank 1 does not run) is not this attempt's: rank 1
#    is silent from the launch and found
mkdir -p "$T/left/heartbeat"
echo "7 $(( $(date +%s) + 600 ))000000000 train 0.2 nB" >"$T/left/heartbeat/rank_00001"
WORLD_SIZE=2 RANKS=0 timeout -k 5 120 "$WRAP" --no-srun --ckpt-dir "$T/left" $HANG \
	-- "$T/two.sh" "$TRAINER" --steps 200 --step-time 0.2 >"$T/left.out" 2>&1
grep '"event":"hang"' "$T/left/ledger.jsonl" | grep -q '"rank":1,' ||
	{ cat "$T/left.out"; fail "a leftover heartbeat: rank 1 not found hung"; }
echo "PASS: a rank 10 min behind: beats kept, its hang found; a leftover heartbeat is silent from the launch"

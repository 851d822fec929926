#!/bin/sh
# tests/wrapper/wrap_torch_stop.sh: the llm_train module's stop on
# SIGUSR1/SIGTERM under attack, two local gloo ranks (tests/wrapper/torch-stop.py):
# - during init, on one rank only, twice: rank 1 gets SIGUSR1 and SIGTERM
#   before the process group exists, rank 0 none; both save the first step
#   (no interval set) and stop on it, exit 87 (red when only rank 1 saves:
#   the job hangs or fails);
# - during a save: rank 0 gets SIGTERM inside the save of step 4
#   (ckpt-interval=4); both stop on that save, no step 5 trained or saved
#   (red without stop_requested's agreement after a save: "5 4,5");
# - a handler of the script's own: its SIGUSR1 handler, installed before
#   Job(), is left in place (SIGTERM is the module's: a second Job()'s
#   when made twice) and runs; it calls job.request_stop(), and the job
#   saves step 3 and exits 87;
# - a script that never asks: SIGTERM's default action two steps after it
#   (red when the module swallowed it: the script ran to its end).
# - the wrapper's forwarding with --no-srun: SIGUSR1 to llm-train-wrap
#   while rank 0 waits after step 2 reaches both ranks of the local
#   launcher (two.sh, which dies of it): both save step 2 and stop, the
#   wrapper ends 87 (no Slurm to requeue; red when it signalled the
#   launcher alone: no rank saved).
# The requeue and the resume on Slurm are wrap_torch_preempt.sh's.
set -u
TAG=wrap-tstop
. "$top_srcdir/tests/wrapper/torch_lib.sh"
S=$top_srcdir/tests/wrapper/torch-stop.py
stop() {  # NAME MODE [INTERVAL]: run it (two ranks but for user); want exit 87
	LLM_TRAIN_CKPT_DIR=$T/$1; export LLM_TRAIN_CKPT_DIR
	if [ -n "${3:-}" ]; then LLM_TRAIN_CKPT_INTERVAL=$3; export LLM_TRAIN_CKPT_INTERVAL; fi
	if [ "$2" = user ]; then
		timeout -k 5 60 /usr/bin/python3 "$S" "$2" >"$T/$1.out" 2>&1
	else
		timeout -k 5 60 "$T/two.sh" /usr/bin/python3 "$S" "$2" >"$T/$1.out" 2>&1
	fi
	_rc=$?
	unset LLM_TRAIN_CKPT_INTERVAL
	[ $_rc = 87 ] || { cat "$T/$1.out"; fail "$1: exit $_rc, want 87"; }
}
want() {  # NAME RANK "STEP SAVES..."
	[ "$(cat "$T/$1/stop.$2" 2>/dev/null)" = "$3" ] ||
		{ cat "$T/$1.out"; fail "$1: rank $2 stopped '$(cat "$T/$1/stop.$2" 2>/dev/null)', want '$3'"; }
}

stop init init
want init 0 "1 1"; want init 1 "1 1"
grep -q "llm_train: SIGUSR1 on a rank after step 1: every rank saves it" "$T/init.out" || { cat "$T/init.out"; fail "init: no stop line"; }
echo "ok: SIGUSR1+SIGTERM on rank 1 before init_process_group: both ranks saved step 1 and stopped, exit 87"

stop save save 4
want save 0 "4 4"; want save 1 "4 4"
grep -q "SIGTERM on a rank during the save of step 4: every rank stops on it" "$T/save.out" || { cat "$T/save.out"; fail "save: no stop line"; }
echo "ok: SIGTERM on rank 0 inside the save of step 4: both ranks stopped on it, exit 87"

stop user user
want user 0 "3 3 handler"
grep -q "SIGUSR1: the script's own handler left in place" "$T/user.out" || { cat "$T/user.out"; fail "user: not told"; }
echo "ok: the script's own SIGUSR1 handler kept; its request_stop() saved step 3, exit 87"

LLM_TRAIN_CKPT_DIR=$T/never; export LLM_TRAIN_CKPT_DIR
mkdir -p "$T/never"
timeout -k 5 60 /usr/bin/python3 "$S" never >"$T/never.out" 2>&1; rc=$?
[ $rc = 143 ] && [ "$(cat "$T/never/last")" = 4 ] ||
	{ cat "$T/never.out"; fail "never: exit $rc after step $(cat "$T/never/last"), want 143 (SIGTERM) after step 4"; }
echo "ok: a script that never asks ckpt_due/stop_requested ends by SIGTERM two steps after it, not at SIGKILL"

LLM_TRAIN_CKPT_DIR=$T/wrap; export LLM_TRAIN_CKPT_DIR
timeout -k 5 60 "$WRAP" --no-srun --ckpt-dir "$T/wrap" --ckpt-tool "$CK" --tick 0.1 --hang-timeout-min 10 \
	--hang-timeout-max 30 --max-restarts 0 -- "$T/two.sh" /usr/bin/python3 "$S" wait >"$T/wrap.out" 2>&1 &
tp=$!
wait_file "$T/wrap/waiting" 60 || { cat "$T/wrap.out"; fail "wrap: rank 0 never reached step 2"; }
kill -USR1 "$(pgrep -P $tp)" || fail "wrap: no llm-train-wrap under timeout $tp"
wait $tp; rc=$?
[ $rc = 87 ] || { cat "$T/wrap.out"; fail "wrap: exit $rc, want 87"; }
want wrap 0 "2 2"; want wrap 1 "2 2"
[ "$("$CK" ckpt-list "$T/wrap" | head -n1)" = "2 $T/wrap/step_00000002" ] || fail "wrap: step 2 is not a complete checkpoint"
echo "ok: SIGUSR1 to llm-train-wrap --no-srun reached both ranks: step 2 saved, exit 87"
echo PASS

#!/bin/sh
# tests/wrapper/wrap_torch.sh: a real PyTorch DDP job (gloo, two local
# ranks, etc/examples/ddp_train.py) using the llm_train module under
# llm-train-wrap --no-srun with llm-train-ckpt-torch as --ckpt-tool: the
# ranks' heartbeats carry step timings (the wrapper's rank_times), rank 0
# writes metrics.jsonl, checkpoints carry the module's marker (a step
# directory without one, or with a file of another size, is not listed);
# kill -9 of rank 1 after step 12 (rank 0's gloo call fails): the job
# restarts from step 10 and ends with the same weights as a run without
# the fault; SIGSTOP of rank 1 after step 12, its last heartbeat written
# 1 s after rank 0's: rank 0 waits in DDP's all-reduce and ddp_hook keeps
# its heartbeat fresh, so the hang names rank 1 on its node (without the
# refresh rank 0 looks the older one and is named: seen red), the job
# restarts to the same weights; a NaN loss from step 12 on: the module exits 85 after three
# bad steps (no update made), the wrapper rolls back to step 10 and skips
# the data past the bad steps, the job finishes.
set -u
TAG=wrap-torch
. "$top_srcdir/tests/wrapper/torch_lib.sh"
run() {  # NAME [ENV=VALUE] [wrapper options...]
	_n=$1 _e=; shift
	case ${1:-} in *=*) _e=$1; shift ;; esac
	env WORLD_SIZE=2 $_e "$WRAP" "$@" --no-srun --ckpt-dir "$T/$_n" --ckpt-tool "$CK" --tick 0.2 --hang-timeout-min 5 \
		--hang-timeout-max 30 --backoff 0.2 -- "$T/two.sh" /usr/bin/python3 "$EX" --steps 20 \
		>"$T/$_n.out" 2>&1 || { cat "$T/$_n.out"; fail "$_n: the job failed"; }
}
run ref
[ -s "$T/ref/final_weights.sha256" ] || fail "ref: no final weights"
grep -q '"event":"rank_times","attempt":0,"ranks":2' "$T/ref/ledger.jsonl" || fail "ref: no rank_times of 2 ranks"
[ "$(wc -l <"$T/ref/metrics.jsonl")" = 20 ] || fail "ref: metrics.jsonl has $(wc -l <"$T/ref/metrics.jsonl") lines, not 20"
"$CK" ckpt-list "$T/ref" >"$T/list" 2>"$T/list.err" || fail "ckpt-list failed"
[ "$(head -n1 "$T/list")" = "20 $T/ref/step_00000020" ] || fail "ckpt-list: $(head -n1 "$T/list")"
mkdir "$T/ref/step_00000099"; echo x >"$T/ref/step_00000099/state.pt"     # no marker
echo x >>"$T/ref/step_00000015/state.pt"                                  # another size
"$CK" ckpt-list "$T/ref" >"$T/list" 2>"$T/list.err"
grep -q "step_00000099: no llm_train.complete" "$T/list.err" || fail "an unmarked dir is not refused: $(cat "$T/list.err")"
grep -q "step_00000015: state.pt is" "$T/list.err" || fail "a changed file is not refused"
grep -q "step_00000099\|step_00000015" "$T/list" && fail "ckpt-list lists an incomplete checkpoint"
"$CK" bogus >/dev/null 2>&1; [ $? = 64 ] || fail "ckpt-list usage: not 64"

run kill EXAMPLE_FAULT=kill@12:1
[ "$(count failure "$T/kill/ledger.jsonl")" = 1 ] || { cat "$T/kill.out"; fail "kill: not one failure"; }
grep '"event":"launch"' "$T/kill/ledger.jsonl" | grep -q '"resume_step":10' || fail "kill: not resumed from step 10"
cmp -s "$T/ref/final_weights.sha256" "$T/kill/final_weights.sha256" || fail "kill: final weights differ from the reference"
echo "ok: DDP job restarted from step 10 after kill -9, same final weights"

run stop EXAMPLE_FAULT=stop@12:1 --hang-timeout-min 6 --hang-timeout-max 6
grep '"event":"hang"' "$T/stop/ledger.jsonl" | grep -q '"rank":1,"node":"nB"' ||
	{ cat "$T/stop.out"; fail "stop: the hang of rank 1 on nB is not named"; }
grep '"event":"launch","attempt":1' "$T/stop/ledger.jsonl" | grep -q '"resume_step":10' || fail "stop: not resumed from step 10"
cmp -s "$T/ref/final_weights.sha256" "$T/stop/final_weights.sha256" || fail "stop: final weights differ from the reference"
grep '"event":"rank_times","attempt":0' "$T/ref/ledger.jsonl" | grep -q '"dp":0\.0*[1-9]' ||
	grep '"event":"rank_times","attempt":0' "$T/ref/ledger.jsonl" | grep -q '"dp":[1-9]' || fail "ref: no dp wait from ddp_hook"
echo "ok: SIGSTOP of rank 1: hang found from its heartbeat on nB, restarted from step 10, same final weights"

run nan EXAMPLE_FAULT=nan@12 --rollback-steps 3 --skip-batches 4
grep '"event":"failure"' "$T/nan/ledger.jsonl" | grep -q '"class":"numerical"' ||
	{ cat "$T/nan.out"; fail "nan: no numerical failure (exit 85)"; }
grep '"event":"launch","attempt":1' "$T/nan/ledger.jsonl" | grep -q '"resume_step":10,"skip_batches":[1-9]' ||
	{ grep '"event":"launch"' "$T/nan/ledger.jsonl"; fail "nan: not rolled back to step 10 with data skipped"; }
[ -s "$T/nan/final_weights.sha256" ] || fail "nan: the job did not finish"
cmp -s "$T/ref/final_weights.sha256" "$T/nan/final_weights.sha256" && fail "nan: data was skipped but the weights equal the reference"
echo "ok: NaN from step 12: exit 85, rolled back to step 10, data skipped, finished"

#!/bin/sh
# tests/wrapper/wrap_torch_ckpt.sh: job.ckpt_due acts on
# --llm-train=ckpt-interval (LLM_TRAIN_CKPT_INTERVAL) in a PyTorch script,
# two local gloo ranks under llm-train-wrap --no-srun. 3 (steps):
# etc/examples/ddp_train.py --steps 11 saves at steps 3, 6, 9 and its
# final 11, nothing else. 1s (time): every rank's answer is rank 0's,
# shared in ckpt_due's all-reduce; rank 1's clock starts 0.5 s before rank
# 0's (rank 0 is late to job.start()), so deciding on each rank's own clock
# makes rank 1 save steps earlier than rank 0 (seen red with each rank's
# own answer used: the ranks meet in different collectives, and the job
# fails). Before: no
# ckpt_due, the interval was ignored (red: AttributeError).
set -u
TAG=wrap-tckpt
. "$top_srcdir/tests/wrapper/torch_lib.sh"
wrap() {  # NAME INTERVAL COMMAND...
	_n=$1; shift
	LLM_TRAIN_CKPT_INTERVAL=$1; export LLM_TRAIN_CKPT_INTERVAL; shift
	timeout -k 5 120 "$WRAP" --no-srun --ckpt-dir "$T/$_n" --ckpt-tool "$CK" --tick 0.2 --hang-timeout-min 10 \
		--hang-timeout-max 30 --max-restarts 0 -- "$T/two.sh" "$@" >"$T/$_n.out" 2>&1 ||
		{ cat "$T/$_n.out"; fail "$_n: the job failed"; }
}

wrap steps 3 /usr/bin/python3 "$top_srcdir/etc/examples/ddp_train.py" --steps 11
got=$(cd "$T/steps" && ls -d step_* | tr '\n' ' ')
[ "$got" = "step_00000003 step_00000006 step_00000009 step_00000011 " ] ||
	fail "ckpt-interval=3: checkpoints $got, want steps 3 6 9 and the final 11"
[ "$("$CK" ckpt-list "$T/steps" | head -n1)" = "11 $T/steps/step_00000011" ] || fail "ckpt-list: not step 11 newest"
echo "ok: ckpt-interval=3 steps: saved at 3, 6, 9 (and the final 11)"

cat >"$T/timed.py" <<'PY'
import os, sys, time, torch, torch.distributed as dist, llm_train
job = llm_train.Job()
dist.init_process_group("gloo", rank=job.rank, world_size=job.world_size)
if job.rank == 0:
    time.sleep(0.5)      # rank 1's interval clock runs 0.5 s ahead of rank 0's
job.start()
due = []
for step in range(1, 25):
    dist.all_reduce(torch.ones(4))    # the step's gradient reduction
    time.sleep(0.15)
    job.step(step)
    if job.ckpt_due(step):
        due.append(step)
        job.phase("save", step)
        dist.barrier()
        job.ckpt_complete(step)
        job.phase("train", step)
with open(os.path.join(job.ckpt_dir, "due.%d" % job.rank), "w") as f:
    f.write(" ".join(map(str, due)) + "\n")
dist.destroy_process_group()
job.done()
PY
wrap timed 1s /usr/bin/python3 "$T/timed.py"
d0=$(cat "$T/timed/due.0") d1=$(cat "$T/timed/due.1")
[ "$d0" = "$d1" ] || fail "ckpt-interval=1s: rank 0 saved after steps '$d0', rank 1 after '$d1'"
[ "$(echo "$d0" | wc -w)" -ge 2 ] || fail "ckpt-interval=1s: saves after steps '$d0' only (want 2 or more in ~3.6 s)"
echo "ok: ckpt-interval=1s: both ranks saved after the same steps ($d0)"

# a malformed interval is a configuration error (64, never retried)
LLM_TRAIN_CKPT_INTERVAL=5x LLM_TRAIN_CKPT_DIR=$T/bad /usr/bin/python3 -c 'import llm_train; llm_train.Job()' 2>"$T/bad.err"
[ $? = 64 ] || fail "LLM_TRAIN_CKPT_INTERVAL=5x: not exit 64"
grep -q "5x is not N" "$T/bad.err" || fail "LLM_TRAIN_CKPT_INTERVAL=5x: $(cat "$T/bad.err")"
echo PASS

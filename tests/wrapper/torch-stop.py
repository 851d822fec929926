#!/usr/bin/python3
"""tests/wrapper/torch-stop.py MODE: a training loop with job.ckpt_due and
job.stop_requested that signals itself, for wrap_torch_stop.sh.
init: rank 1 gets SIGUSR1 then SIGTERM after Job(), before the process
group exists (rank 0 gets none); save: rank 0 gets SIGTERM inside the
save of an interval's step; user: one process without torch whose own
SIGUSR1 handler, installed before Job() (made twice), calls
job.request_stop(); wait:
rank 0 waits after step 2 until a signal reached it (from the wrapper);
never: one process without torch that never asks ckpt_due or
stop_requested gets SIGTERM after step 3 (it writes CKPT_DIR/last after
each step).
At the stop each rank writes CKPT_DIR/stop.RANK: "STEP SAVES [handler]",
then exits through job.exit_requeue()."""
import os, signal, sys, time
import llm_train

mode = sys.argv[1]
seen = []
if mode == "user":
    def mine(sig, frame):
        seen.append(sig)
        job.request_stop(sig)
    signal.signal(signal.SIGUSR1, mine)
job = llm_train.Job()
if mode == "never":
    dist = None
elif mode == "user":
    job = llm_train.Job()   # made again (a notebook's second run): SIGTERM is the new one's
    if signal.getsignal(signal.SIGUSR1) is not mine or signal.getsignal(signal.SIGTERM) != job._on_signal:
        sys.exit("the script's SIGUSR1 handler replaced, or SIGTERM not the last Job's")
    dist = None
else:
    import torch, torch.distributed as dist
    if mode == "init" and job.rank == 1:
        os.kill(os.getpid(), signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGTERM)
    dist.init_process_group("gloo", rank=job.rank, world_size=job.world_size)
job.start()
saves = []
for step in range(1, 11):
    if dist:
        dist.all_reduce(torch.ones(4))   # the step's gradient reduction
    job.step(step)
    if mode == "never":
        with open(os.path.join(job.ckpt_dir, "last"), "w") as f:
            f.write("%d\n" % step)
        if step == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        continue
    if mode == "user" and step == 3:
        os.kill(os.getpid(), signal.SIGUSR1)
    if mode == "wait" and step == 2 and job.rank == 0:
        open(os.path.join(job.ckpt_dir, "waiting"), "w").close()
        for _ in range(1200):   # at most 60 s; rank 1 waits in ckpt_due's collective
            if job.signal_received:
                break
            time.sleep(0.05)
    if job.ckpt_due(step):
        job.phase("save", step)
        d = job.ckpt_dir_for(step)
        if mode == "save" and job.rank == 0:
            os.kill(os.getpid(), signal.SIGTERM)
        with open(os.path.join(d, "rank_%d" % job.rank), "w") as f:
            f.write("state\n")
        if dist:
            dist.barrier()
        job.ckpt_complete(step)
        job.phase("train", step)
        saves.append(step)
    if job.stop_requested():
        with open(os.path.join(job.ckpt_dir, "stop.%d" % job.rank), "w") as f:
            f.write("%d %s%s\n" % (step, ",".join(map(str, saves)), " handler" if seen else ""))
        if dist:
            dist.destroy_process_group()
        job.exit_requeue()
job.done()

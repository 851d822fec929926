#!/usr/bin/python3
"""ddp_train.py: a PyTorch DDP job (gloo, CPU) under llm-train-wrap with the
llm_train module: resume point, data skip, heartbeat and metrics per step,
checkpoints the wrapper can pick, saved as --llm-train=ckpt-interval says
(job.ckpt_due: N steps, a time, or auto). A small regression model on synthetic
data, so it runs anywhere:

    #SBATCH -N 2 --ntasks-per-node=1 --llm-train=dp=auto --llm-ckpt-dir=/scratch/me/ddp
    exec llm-train-wrap --ckpt-tool llm-train-ckpt-torch -- python3 ddp_train.py --steps 200

The plugin (or torchrun) sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
(MASTER_PORT the step's last reserved port, else a hash of the job and
step ids: a fixed 29500 collides when two jobs share a node) and LLM_TRAIN_CKPT_DIR, which llm_train.Job() needs.
EXAMPLE_FAULT (first attempt only): kill@K:R kills rank R with SIGKILL after
step K (the wrapper restarts the job from its last checkpoint); stop@K:R
stops it (SIGSTOP: the wrapper finds the hang from its heartbeat and names
its node, the others' stay fresh while they wait for it); nan@K makes
the loss NaN from step K on (the module exits 85 after 3 such steps: the
wrapper rolls back and skips the data past them); hold@K holds rank 0
after step K until a stop signal reached it (at most 60 s), so a test can
preempt the job at a known step: every rank saves step K and exits 87,
the wrapper requeues the job and it resumes from step K; savehang@K
holds rank 0 in the save of step K (phase save, before anything is
written; at most 120 s) as a save stuck on the storage would: its
heartbeat beats on, the wrapper's save limit finds it.
"""
import argparse, hashlib, os, signal, sys, time
import torch
import torch.distributed as dist
import llm_train

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=100)
ap.add_argument("--ckpt-every", type=int, default=5,
                help="save every N steps when the job sets no --llm-train=ckpt-interval, and under "
                     "auto until a save has been timed (default 5)")
ap.add_argument("--lr", type=float, default=0.05)
a = ap.parse_args()

job = llm_train.Job()
dist.init_process_group("gloo", rank=job.rank, world_size=job.world_size)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
ddp = torch.nn.parallel.DistributedDataParallel(model)
job.ddp_hook(ddp)   # dp wait per step; a rank waiting for a stopped peer stays fresh
opt = torch.optim.SGD(ddp.parameters(), lr=a.lr)
start, skip = 0, job.skip_batches
if job.resume:
    job.phase("load", job.resume_step)
    st = torch.load(os.path.join(job.resume, "state.pt"))
    model.load_state_dict(st["model"])
    opt.load_state_dict(st["opt"])
    start, skip = st["step"], st["batches_skipped"] + job.skip_batches
fault = os.environ.get("EXAMPLE_FAULT", "") if job.attempt == 0 else ""

def batch(i):
    """Global batch i, this rank's half: the same data wherever a job resumes."""
    g = torch.Generator().manual_seed(1000 + i)
    x = torch.randn(8 * job.world_size, 16, generator=g)
    y = x.sum(dim=1, keepdim=True).sin()
    return x[job.rank::job.world_size], y[job.rank::job.world_size]

job.start()
for step in range(start + 1, a.steps + 1):
    x, y = batch(step - 1 + skip)
    loss = torch.nn.functional.mse_loss(ddp(x), y)
    if fault.startswith("nan@") and step >= int(fault[4:]):
        loss = loss * float("nan")
    opt.zero_grad()
    loss.backward()
    norm = float(torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1e9))
    if not job.bad(loss.item(), norm):
        opt.step()
    hit = fault[:5] in ("kill@", "stop@") and [step, job.rank] == [int(v) for v in fault[5:].split(":")]
    if hit and fault[:4] == "stop":
        time.sleep(1.0)   # its last heartbeat is newer than its peers': only their refresh tells it apart
    job.step(step, loss=loss.item(), grad_norm=norm, lr=a.lr, tokens=8 * job.world_size)
    if hit:
        os.kill(os.getpid(), signal.SIGKILL if fault[:4] == "kill" else signal.SIGSTOP)
    if fault == "hold@%d" % step and job.rank == 0:
        for _ in range(1200):   # its peer waits in ckpt_due's collective meanwhile
            if job.signal_received:
                break
            time.sleep(0.05)
    # ckpt_due on every rank at every step, a collective: a time interval is
    # rank 0's decision, a stop signal any rank's (ranks that disagreed
    # would deadlock in the save)
    due = job.ckpt_due(step, every=a.ckpt_every)
    if due or step == a.steps:
        job.phase("save", step)
        d = job.ckpt_dir_for(step)
        if fault == "savehang@%d" % step and job.rank == 0:
            time.sleep(120)
        if job.rank == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                        "batches_skipped": skip}, os.path.join(d, "state.pt"))
        dist.barrier()
        job.ckpt_complete(step)
        job.phase("train", step)
    if job.stop_requested() and step < a.steps:   # SIGUSR1/SIGTERM on any rank: saved above
        print("rank %d: stopped after the save of step %d" % (job.rank, step), flush=True)
        dist.destroy_process_group()
        job.exit_requeue()     # exit 87: the wrapper requeues the job, the next run resumes from this step
if job.rank == 0:
    h = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    with open(os.path.join(job.ckpt_dir, "final_weights.sha256"), "w") as f:
        f.write(h + "\n")
dist.destroy_process_group()
job.done()

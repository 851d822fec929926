#!/usr/bin/python3
"""tests/wrapper/torch-hang.py MODE: two gloo ranks for wrap_torch_hang.sh.
Each step all-reduces a tensor (a hand-written collective, no ddp_hook);
at step 3 rank 1 stops (sleeps, then exits 1 after 40 s if still alive)
before it, and rank 0 blocks in the all-reduce: bare, or inside
job.collective() (marked)."""
import os, sys, time
import torch, torch.distributed as dist
import llm_train

mode = sys.argv[1]
job = llm_train.Job()
dist.init_process_group("gloo", rank=job.rank, world_size=job.world_size)
job.start()
for step in range(1, 100):
    if step == 3 and job.rank == 1:
        time.sleep(40)   # the hung rank: the wrapper ends the step long before
        os._exit(1)
    t = torch.ones(4)
    if mode == "marked":
        with job.collective():
            dist.all_reduce(t)
    else:
        dist.all_reduce(t)
    job.step(step)
    time.sleep(0.2)

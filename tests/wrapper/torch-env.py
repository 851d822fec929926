#!/usr/bin/python3
"""tests/wrapper/torch-env.py OUT: one rank of a torchrun-style script:
env:// rendezvous (gloo), one all_reduce, then this rank's whole
environment as JSON in OUT/env.RANK.ATTEMPT. With TORCH_ENV_FAIL set,
rank 0 exits 75 (transient) on its first attempt (LLM_TRAIN_ATTEMPT 0), so
the wrapper restarts it."""
import json, os, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == dist.get_world_size()
# the attempt: llm-train-wrap's count, else torchrun's
n = os.environ.get("LLM_TRAIN_ATTEMPT", os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
r = dist.get_rank()
with open(os.path.join(sys.argv[1], "env.%d.%s" % (r, n)), "w") as f:
    json.dump(dict(os.environ), f)
dist.destroy_process_group()
if os.environ.get("TORCH_ENV_FAIL") and r == 0 and n == "0":
    sys.exit(75)

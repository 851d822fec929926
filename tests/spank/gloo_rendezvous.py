# tests/spank/gloo_rendezvous.py: one rank of a torch.distributed gloo
# rendezvous through init_method="env://" on the variables llm_train.so set
# (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); all_reduce of the rank and
# all_gather of SLURM_PROCID checked. Run by cluster_env.sh under srun.
# The variables are used as they come, as an unmodified torchrun-style
# script would (MASTER_ADDR is the rank-0 node's NodeAddr: the emulated
# nodes' names do not resolve).
import os, sys, datetime
import torch
import torch.distributed as dist
rank = int(os.environ['RANK']); ws = int(os.environ['WORLD_SIZE'])
dist.init_process_group('gloo', init_method='env://', timeout=datetime.timedelta(seconds=60))
t = torch.tensor([float(rank)])
dist.all_reduce(t)
g = [torch.zeros(1) for _ in range(ws)]
dist.all_gather(g, torch.tensor([float(os.environ['SLURM_PROCID'])]))
procs = sorted(int(x.item()) for x in g)
ok = dist.get_rank() == rank and t.item() == ws * (ws - 1) / 2 and procs == list(range(ws))
print(f"GLOO rank={rank} procid={os.environ['SLURM_PROCID']} sum={t.item():g} ok={int(ok)}")
dist.destroy_process_group()
sys.exit(0 if ok else 1)

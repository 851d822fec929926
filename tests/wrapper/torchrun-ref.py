#!/usr/bin/python3
"""tests/wrapper/torchrun-ref.py ARGS...: the real torchrun (torch.distributed.run
of Debian's torch 1.13) as the reference launcher. Under Python 3.11 its
Std.from_str("0") returns None (an IntFlag no longer iterates over its
0-valued NONE), and every launch fails in to_map with "'NoneType' object
has no attribute 'get'"; this maps that None back to Std.NONE and changes
nothing else."""
import sys
import torch.distributed.elastic.multiprocessing as mp
import torch.distributed.elastic.multiprocessing.api as api

_to_map = api.to_map


def to_map(v, n):
    return _to_map(api.Std.NONE if v is None else v, n)


api.to_map = mp.to_map = to_map
from torch.distributed.run import main  # noqa: E402 (after the patch)

sys.exit(main())

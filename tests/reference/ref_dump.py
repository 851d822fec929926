# ref_dump.py: reads the directory that tests/reference/ref_model and
# tests/gpu/gpu_test ref write (ref_dump.c): the parameter table, initial
# weights, gradients, tokens, targets, logits and the losses of each step.
import os
import numpy as np


def read_dump(d):
    params = []
    for line in open(os.path.join(d, 'params.txt')):
        n, nd, s0, s1, off, numel, nodecay = line.split()
        shape = (int(s0), int(s1)) if nd == '2' else (int(s0),)
        params.append((n, shape, int(off), int(numel), int(nodecay)))
    rd = lambda f, dt: np.fromfile(os.path.join(d, f), dtype=dt)
    return params, rd('params.bin', np.float32), rd('grads.bin', np.float32), \
        rd('tokens.bin', np.int32), rd('targets.bin', np.int32), rd('logits.bin', np.float32), \
        [float(x) for x in open(os.path.join(d, 'losses.txt'))]

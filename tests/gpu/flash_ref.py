#!/usr/bin/python3
# flash_ref.py: the fused attention kernels (runtime/gpu/dev_flash.cu; the
# forward at head dims 64 and 128 dev_flash_mma.cu's, on mma.sync; run
# through the emulation by `test_flash_emu dump`) against PyTorch: causal
# attention with GQA and segment masks in float64 autograd on the same
# bf16 inputs, every case of test_flash_emu. Limits: the output is bf16
# (rel <= 4e-3: half an ulp is 2^-9; measured 3.1e-3), lse rel <= 1e-5
# (an fp32 sum: measured 8.2e-8), dq, dk and dv rel <= 8e-3 (bf16:
# tensor-core products of bf16 P and dS, as FlashAttention-2 rounds them,
# and D = rowsum(dO o) from the bf16 output: measured 5.1e-3). SKIP (77)
# without CUDA in the build (no emulation).
import os, subprocess, sys, tempfile
top_builddir = os.environ.get('top_builddir', os.path.join(os.path.dirname(__file__), '..', '..'))
drv = os.path.join(top_builddir, 'tests', 'gpu', 'test_flash_emu')
if not os.access(drv, os.X_OK):
    print('SKIP: built without CUDA (configure found no CUDA + NCCL): no GPU emulation')
    sys.exit(77)
try:
    import numpy as np
    import torch
except ImportError as e:
    print('SKIP: %s (install python3-torch and python3-numpy: scripts/install-deps)' % e)
    sys.exit(77)


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def load(d, name, shape):
    return torch.from_numpy(np.fromfile(os.path.join(d, name), dtype=np.float32)
                            .astype(np.float64).reshape(shape))


failures = 0
for case in range(5):
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([drv, 'dump', d, str(case)], capture_output=True, text=True)
        if r.returncode != 0:
            print('FAIL test_flash_emu dump %d: %s' % (case, r.stdout + r.stderr))
            sys.exit(1)
        B, T, H, KV, hd = map(int, open(os.path.join(d, 'shape')).read().split())
        q = load(d, 'q', (B, T, H, hd)).requires_grad_()
        k = load(d, 'k', (B, T, KV, hd)).requires_grad_()
        v = load(d, 'v', (B, T, KV, hd)).requires_grad_()
        dO = load(d, 'dO', (B, T, H, hd))
        mask = torch.ones(T, T, dtype=torch.bool).tril()[None].expand(B, T, T)
        if os.path.exists(os.path.join(d, 'seg')):
            seg = torch.from_numpy(np.fromfile(os.path.join(d, 'seg'), dtype=np.int32)
                                   .reshape(B, T))
            mask = mask & (seg[:, :, None] == seg[:, None, :])
        G = H // KV
        kr = k.repeat_interleave(G, dim=2).transpose(1, 2)    # [B][H][T][hd]
        vr = v.repeat_interleave(G, dim=2).transpose(1, 2)
        s = q.transpose(1, 2) @ kr.transpose(2, 3) / hd ** 0.5
        s = s.masked_fill(~mask[:, None], float('-inf'))
        lse = torch.logsumexp(s, dim=-1)
        o = (torch.softmax(s, dim=-1) @ vr).transpose(1, 2)
        o.backward(dO)
        errs = {
            'o': rel(load(d, 'o', (B, T, H, hd)), o.detach()),
            'lse': rel(load(d, 'lse', (B, H, T)), lse.detach()),
            'dq': rel(load(d, 'dq', (B, T, H, hd)), q.grad),
            'dk': rel(load(d, 'dk', (B, T, KV, hd)), k.grad),
            'dv': rel(load(d, 'dv', (B, T, KV, hd)), v.grad),
        }
        lim = {'o': 4e-3, 'lse': 1e-5, 'dv': 8e-3, 'dq': 8e-3, 'dk': 8e-3}
        bad = [n for n, e in errs.items() if not e <= lim[n]]
        print('%s case %d (B=%d T=%d H=%d KV=%d hd=%d%s): %s' % (
            'FAIL' if bad else 'ok', case, B, T, H, KV, hd,
            ' segments' if os.path.exists(os.path.join(d, 'seg')) else '',
            ' '.join('%s %.2g' % kv for kv in errs.items())))
        failures += bool(bad)
sys.exit(1 if failures else 0)

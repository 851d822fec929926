# gpu_ref.py: the GPU model against PyTorch (tests/reference/llama_ref.py)
# on the same weights and tokens, and against our CPU model. The truth is
# PyTorch in float64 on the CPU; the bf16 yardstick is PyTorch's bf16
# autocast on the CPU and, where this PyTorch has CUDA (2.x), on the GPU
# too (Debian's python3-torch is CPU-only). Same thresholds as tests/reference/ref_model.py
# for bf16: logits rel <= min(0.05, 2x torch autocast error + 0.01), every
# gradient rel <= min(0.08, 2x + 0.01), loss within 1% of float64; plus the
# losses of 5 AdamW steps within 1% of torch.optim.AdamW in float32.
# SKIP (77) without CUDA in the build or without a GPU.
import os, subprocess, sys, tempfile
top_srcdir = os.environ.get('top_srcdir', os.path.join(os.path.dirname(__file__), '..', '..'))
top_builddir = os.environ.get('top_builddir', top_srcdir)
drv = os.path.join(top_builddir, 'tests', 'gpu', 'gpu_test')
if not os.access(drv, os.X_OK):
    print('SKIP: built without CUDA (configure found no CUDA + NCCL)')
    sys.exit(77)
r = subprocess.run([drv, 'probe'], capture_output=True, text=True)
if r.returncode != 0:
    print(r.stdout.strip() or 'SKIP: no NVIDIA GPU')
    sys.exit(77 if r.returncode == 77 else 1)
try:
    import numpy as np
    import torch
except ImportError as e:
    print('SKIP: %s (install python3-torch and python3-numpy: scripts/install-deps)' % e)
    sys.exit(77)
sys.path.insert(0, os.path.join(top_srcdir, 'tests', 'reference'))
import llama_ref
from ref_dump import read_dump

TEXT = os.environ.get('LLMT_GPU_TEXT', '/usr/share/common-licenses/GPL-3')
B, T, STEPS = 2, 32, 5
torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
failures = []


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def check(name, value, limit):
    if not value <= limit:
        failures.append('%s: %.3g > %.3g' % (name, value, limit))


def run(cfgpath, d):
    r = subprocess.run([drv, 'ref', cfgpath, 'bf16', str(B), str(T), str(STEPS), TEXT, d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        sys.exit(1)
    return read_dump(d)


def train_losses(cfg, params, flat, text):
    P = {n: torch.tensor(flat[off:off + k].reshape(s), requires_grad=True)
         for n, s, off, k, _ in params}
    opt = torch.optim.AdamW(
        [{'params': [P[n] for n, _, _, _, nd in params if not nd], 'weight_decay': 0.1},
         {'params': [P[n] for n, _, _, _, nd in params if nd], 'weight_decay': 0.0}],
        lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    out, M = [], B * T
    for s in range(STEPS + 1):
        chunk = torch.tensor(list(text[s * M:s * M + M + 1]), dtype=torch.int64)
        opt.zero_grad()
        _, loss = llama_ref.forward(cfg, P, chunk[:M].view(B, T), chunk[1:].view(B, T))
        loss.backward()
        out.append(loss.item())
        opt.step()
    return out


text = open(TEXT, 'rb').read()
# LLMT_GPU_TEST_CFGS: other configs (tests/gpu/check --emulate: a smaller one)
cfgs = os.environ.get('LLMT_GPU_TEST_CFGS', '').split() or \
    [os.path.join(top_srcdir, 'configs', 'tiny.yaml'),
     os.path.join(top_srcdir, 'tests', 'reference', 'ref-gqa.yaml')]
for cfgpath in cfgs:
    cfg = llama_ref.load_config(cfgpath)
    tag = os.path.basename(cfgpath)
    with tempfile.TemporaryDirectory() as d:
        params, flat, g, tok, tgt, logits, losses = run(cfgpath, d)
    tok = torch.tensor(tok, dtype=torch.int64).view(B, T)
    tgt = torch.tensor(tgt, dtype=torch.int64).view(B, T)
    ours = torch.tensor(logits).view(B, T, -1)
    l64, loss64, g64 = llama_ref.grads(cfg, params, flat, tok, tgt, torch.float64)
    lb, _, gb = llama_ref.grads(cfg, params, flat, tok, tgt, torch.float32, True)
    ro, rt = rel(ours, l64), rel(lb, l64)
    check('%s gpu logits' % tag, ro, min(0.05, 2 * rt + 0.01))
    check('%s gpu loss' % tag, abs(losses[0] - loss64) / loss64, 0.01)
    worst, worst_t = 0.0, 0.0
    for n, shape, off, k, _ in params:
        r_, t_ = rel(torch.tensor(g[off:off + k]).view(shape), g64[n]), rel(gb[n], g64[n])
        worst, worst_t = max(worst, r_), max(worst_t, t_)
        check('%s gpu grad %s' % (tag, n), r_, min(0.08, 2 * t_ + 0.01))
    if torch.cuda.is_available() and hasattr(torch, 'set_default_device'):
        # PyTorch on this GPU (bf16 autocast) against the same float64 truth
        try:
            lc, lossc, gc = llama_ref.grads(cfg, params, flat, tok, tgt, torch.float32, True,
                                            'cuda')
        except Exception as e:          # noqa: BLE001 - reported, counted as a failure
            failures.append('%s: PyTorch on CUDA failed: %r' % (tag, e))
        else:
            rc_ = rel(lc, l64)
            wc = max(rel(gc[n], g64[n]) for n, _, _, _, _ in params)
            check('%s gpu logits vs torch cuda' % tag, ro, min(0.05, 2 * max(rt, rc_) + 0.01))
            check('%s gpu worst grad vs torch cuda' % tag, worst, min(0.08, 2 * max(worst_t, wc) + 0.01))
            print('%s GPU vs PyTorch %s on CUDA (bf16 autocast): logits rel to f64 ours %.2e, '
                  'torch %.2e; ours vs torch %.2e; loss ours %.5f torch %.5f; worst grad rel '
                  'ours %.2e, torch %.2e' % (tag, torch.__version__, ro, rc_, rel(ours, lc),
                                             losses[0], lossc, worst, wc))
    tl = train_losses(cfg, params, flat, text)
    lr_ = max(abs(a - b) / b for a, b in zip(losses, tl))
    check('%s gpu AdamW losses' % tag, lr_, 0.01)
    print('%s GPU vs PyTorch (CPU): logits rel %.2e (torch autocast %.2e), loss %.5f vs f64 '
          '%.5f, worst grad rel %.2e (torch autocast %.2e), %d AdamW losses max rel %.2e'
          % (tag, ro, rt, losses[0], loss64, worst, worst_t, STEPS, lr_))
if failures:
    print('FAIL:\n  ' + '\n  '.join(failures))
    sys.exit(1)
print('PASS')

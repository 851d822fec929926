# torch_bench.py: tokens/s of the same model (tests/reference/llama_ref.py)
# trained by PyTorch eager: fp32 master weights, bf16 autocast,
# torch.optim.AdamW, for the benchmark pairs of tests/gpu/check. Measures
# two attentions in one process: naive (scores, mask, softmax) and
# torch.nn.functional.scaled_dot_product_attention(is_causal=True); one line
# each. An out-of-memory is reported on its line and the next goes on; SDPA
# missing (PyTorch < 2.0) is said so. --device cpu: on the CPU (check
# --emulate). Exit 0 when each attention gave a line, 77 when this PyTorch
# has no CUDA (Debian's python3-torch) and the device is cuda.
# usage: torch_bench.py CONFIG B T STEPS [--device cuda|cpu]
import argparse, math, os, sys, time
import torch
import torch.nn.functional as F
ap = argparse.ArgumentParser()
ap.add_argument('config')
ap.add_argument('B', type=int)
ap.add_argument('T', type=int)
ap.add_argument('steps', type=int)
ap.add_argument('--device', choices=('cuda', 'cpu'), default='cuda')
opt_ = ap.parse_args()
dev = opt_.device
if dev == 'cuda':
    if not torch.cuda.is_available():
        print('SKIP: PyTorch %s has no CUDA device (CPU-only build)' % torch.__version__)
        sys.exit(77)
    if not hasattr(torch, 'set_default_device'):
        print('SKIP: PyTorch %s is older than 2.0 (no set_default_device)' % torch.__version__)
        sys.exit(77)
    torch.set_default_device('cuda')
top_srcdir = os.environ.get('top_srcdir', os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(top_srcdir, 'tests', 'reference'))
import llama_ref

cfgpath, B, T, steps = opt_.config, opt_.B, opt_.T, opt_.steps
cfg = llama_ref.load_config(cfgpath)
name = os.path.basename(cfgpath)


def sync():
    if dev == 'cuda':
        torch.cuda.synchronize()


def is_oom(e):
    oom = getattr(torch.cuda, 'OutOfMemoryError', None)
    return (oom is not None and isinstance(e, oom)) or 'out of memory' in str(e)


def params():
    d, V, F_, L = cfg['d_model'], cfg['vocab_size'], cfg['d_ff'], cfg['n_layers']
    hd, KV = d // cfg['n_heads'], cfg['n_kv_heads']
    r = lambda *s: torch.randn(*s, device=dev) * 0.02
    one = lambda n: torch.ones(n, device=dev)
    P = {'model.embed_tokens.weight': r(V, d), 'model.norm.weight': one(d)}
    for l in range(L):
        p = 'model.layers.%d.' % l
        P[p + 'input_layernorm.weight'] = one(d)
        P[p + 'post_attention_layernorm.weight'] = one(d)
        P[p + 'self_attn.q_proj.weight'] = r(d, d)
        P[p + 'self_attn.k_proj.weight'] = r(KV * hd, d)
        P[p + 'self_attn.v_proj.weight'] = r(KV * hd, d)
        P[p + 'self_attn.o_proj.weight'] = r(d, d) / math.sqrt(2 * L)
        P[p + 'mlp.gate_proj.weight'] = r(F_, d)
        P[p + 'mlp.up_proj.weight'] = r(F_, d)
        P[p + 'mlp.down_proj.weight'] = r(d, F_) / math.sqrt(2 * L)
        if cfg['qk_norm']:
            P[p + 'self_attn.q_norm.weight'] = one(hd)
            P[p + 'self_attn.k_norm.weight'] = one(hd)
    if not cfg['tie']:
        P['lm_head.weight'] = r(V, d)
    for v in P.values():
        v.requires_grad_(True)
    return P


def bench(attn):
    P = params()
    opt = torch.optim.AdamW(list(P.values()), lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    tok = torch.randint(0, cfg['vocab_size'], (B, T), device=dev)
    tgt = torch.randint(0, cfg['vocab_size'], (B, T), device=dev)
    total = 0.0
    for s in range(steps + 1):          # step 0 warms up
        sync()
        t0 = time.time()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=torch.bfloat16):
            _, loss = llama_ref.forward(cfg, P, tok, tgt, attn=attn)
        loss.backward()
        opt.step()
        sync()
        if s:
            total += time.time() - t0
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev == 'cuda' else 0
    return B * T * steps / total, peak


label = {'naive': 'naive attention', 'sdpa': 'SDPA is_causal'}
for attn in ('naive', 'sdpa'):
    head = 'torch %s eager bf16 autocast %s, %s, %s B=%d T=%d:' % (
        torch.__version__, dev, label[attn], name, B, T)
    if attn == 'sdpa' and not hasattr(F, 'scaled_dot_product_attention'):
        print('%s not measured: PyTorch %s has no scaled_dot_product_attention (2.0+)'
              % (head, torch.__version__))
        continue
    try:
        if dev == 'cuda':
            torch.cuda.reset_peak_memory_stats()
        tps, peak = bench(attn)
        mem = ', peak memory %.1f GiB' % peak if dev == 'cuda' else ''
        print('%s %.0f tokens/s%s' % (head, tps, mem), flush=True)
    except Exception as e:
        if not is_oom(e):
            raise
        print('%s out of memory (%s)' % (head, str(e).splitlines()[0][:120]), flush=True)
    if dev == 'cuda':
        torch.cuda.empty_cache()

# torch_bench.py: tokens/s of the same model (tests/reference/llama_ref.py)
# trained by PyTorch eager on the GPU: fp32 master weights, bf16 autocast,
# torch.optim.AdamW, for the comparison in tests/gpu/check. Prints one
# line; exit 77 when this PyTorch has no CUDA (Debian's python3-torch).
# usage: torch_bench.py CONFIG B T STEPS
import math, os, sys, time
import torch
if not torch.cuda.is_available():
    print('SKIP: PyTorch %s has no CUDA device (CPU-only build)' % torch.__version__)
    sys.exit(77)
if not hasattr(torch, 'set_default_device'):
    print('SKIP: PyTorch %s is older than 2.0 (no set_default_device)' % torch.__version__)
    sys.exit(77)
top_srcdir = os.environ.get('top_srcdir', os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(top_srcdir, 'tests', 'reference'))
import llama_ref

cfgpath, B, T, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cfg = llama_ref.load_config(cfgpath)
torch.set_default_device('cuda')
d, V, F_, L = cfg['d_model'], cfg['vocab_size'], cfg['d_ff'], cfg['n_layers']
hd, KV = d // cfg['n_heads'], cfg['n_kv_heads']
P = {'model.embed_tokens.weight': torch.randn(V, d) * 0.02, 'model.norm.weight': torch.ones(d)}
for l in range(L):
    p = 'model.layers.%d.' % l
    P[p + 'input_layernorm.weight'] = torch.ones(d)
    P[p + 'post_attention_layernorm.weight'] = torch.ones(d)
    P[p + 'self_attn.q_proj.weight'] = torch.randn(d, d) * 0.02
    P[p + 'self_attn.k_proj.weight'] = torch.randn(KV * hd, d) * 0.02
    P[p + 'self_attn.v_proj.weight'] = torch.randn(KV * hd, d) * 0.02
    P[p + 'self_attn.o_proj.weight'] = torch.randn(d, d) * 0.02 / math.sqrt(2 * L)
    P[p + 'mlp.gate_proj.weight'] = torch.randn(F_, d) * 0.02
    P[p + 'mlp.up_proj.weight'] = torch.randn(F_, d) * 0.02
    P[p + 'mlp.down_proj.weight'] = torch.randn(d, F_) * 0.02 / math.sqrt(2 * L)
if not cfg['tie']:
    P['lm_head.weight'] = torch.randn(V, d) * 0.02
for v in P.values():
    v.requires_grad_(True)
opt = torch.optim.AdamW(list(P.values()), lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                        weight_decay=0.1)
tok = torch.randint(0, V, (B, T))
tgt = torch.randint(0, V, (B, T))
total = 0.0
for s in range(steps + 1):
    torch.cuda.synchronize()
    t0 = time.time()
    opt.zero_grad(set_to_none=True)
    with torch.autocast('cuda', dtype=torch.bfloat16):
        _, loss = llama_ref.forward(cfg, P, tok, tgt)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if s:
        total += time.time() - t0
print('torch %s eager bf16 autocast %s B=%d T=%d: %.0f tokens/s'
      % (torch.__version__, os.path.basename(cfgpath), B, T, B * T * steps / total))

# bench_torch.py: the same model (tests/reference/llama_ref.py) trained in
# PyTorch with AdamW on the same text: prints "tokens_per_s X" for
# fp32 (argv[2] == 'fp32') or bf16 autocast ('bf16'); first step untimed;
# also cpu_tokens_per_s (from process CPU time / threads), as bench_model.
# usage: bench_torch.py CONFIG fp32|bf16 B T STEPS TEXTFILE
import os, sys, time
import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reference'))
import llama_ref

cfgpath, prec, B, T, steps, textpath = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '2')))
torch.manual_seed(0)
# BENCH_FLUSH_DENORMAL=1: flush denormals to zero (PyTorch's fp32 CPU path
# can slow down badly on denormal values; off by default = PyTorch as is)
if os.environ.get('BENCH_FLUSH_DENORMAL') == '1':
    torch.set_flush_denormal(True)
cfg = llama_ref.load_config(cfgpath)
d, V, F, L = cfg['d_model'], cfg['vocab_size'], cfg['d_ff'], cfg['n_layers']
hd = d // cfg['n_heads']
kv = cfg['n_kv_heads'] * hd
P = {'model.embed_tokens.weight': torch.randn(V, d) * 0.02, 'model.norm.weight': torch.ones(d)}
if not cfg['tie']:
    P['lm_head.weight'] = torch.randn(V, d) * 0.02
for l in range(L):
    p = 'model.layers.%d.' % l
    P[p + 'input_layernorm.weight'] = torch.ones(d)
    P[p + 'post_attention_layernorm.weight'] = torch.ones(d)
    P[p + 'self_attn.q_proj.weight'] = torch.randn(d, d) * 0.02
    P[p + 'self_attn.k_proj.weight'] = torch.randn(kv, d) * 0.02
    P[p + 'self_attn.v_proj.weight'] = torch.randn(kv, d) * 0.02
    P[p + 'self_attn.o_proj.weight'] = torch.randn(d, d) * 0.02
    P[p + 'mlp.gate_proj.weight'] = torch.randn(F, d) * 0.02
    P[p + 'mlp.up_proj.weight'] = torch.randn(F, d) * 0.02
    P[p + 'mlp.down_proj.weight'] = torch.randn(d, F) * 0.02
    if cfg['qk_norm']:
        P[p + 'self_attn.q_norm.weight'] = torch.ones(hd)
        P[p + 'self_attn.k_norm.weight'] = torch.ones(hd)
for t in P.values():
    t.requires_grad_(True)
opt = torch.optim.AdamW(list(P.values()), lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                        weight_decay=0.1)
text = open(textpath, 'rb').read()
M = B * T
t0 = None
for s in range(steps + 1):
    if s == 1:
        t0, c0 = time.time(), time.process_time()
    base = (s * M) % (len(text) - M - 1)
    chunk = torch.tensor(list(text[base:base + M + 1]), dtype=torch.int64)
    tok, tgt = chunk[:M].view(B, T), chunk[1:].view(B, T)
    opt.zero_grad()
    if prec == 'bf16':
        with torch.autocast('cpu', dtype=torch.bfloat16):
            _, loss = llama_ref.forward(cfg, P, tok, tgt)
    else:
        _, loss = llama_ref.forward(cfg, P, tok, tgt)
    loss.backward()
    opt.step()
nt = torch.get_num_threads()
print('tokens_per_s %.1f cpu_tokens_per_s %.1f loss %.4f'
      % (M * steps / (time.time() - t0), M * steps / ((time.process_time() - c0) / nt), loss.item()))

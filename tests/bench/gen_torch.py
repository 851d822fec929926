# gen_torch.py HFDIR PROMPT N: a PyTorch greedy decode of an exported model
# (fp32, a KV cache, the HF Llama computation of tests/reference/llama_ref.py
# written incrementally) on torch.get_num_threads() threads. Prints the new
# token ids on one line, then "tokens_per_s X" (decode only, prompt
# excluded, as llm-train generate reports it).
import math, os, sys, time
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reference'))
import llama_ref


def lin(x, W):
    # torch.mv: Torch 1.13's F.linear on a vector is ~10x slower than its
    # BLAS matrix-vector product, so the reference uses the fast path
    return torch.mv(W, x)


def step(cfg, P, cache, tok, pos):
    d, H, KV = cfg['d_model'], cfg['n_heads'], cfg['n_kv_heads']
    hd, eps = d // H, cfg['norm_eps']
    inv = cfg['rope_theta'] ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2.0 / hd)
    ang = pos * inv
    cos, sin = torch.cos(ang).float(), torch.sin(ang).float()

    def rope(x):
        a, b = x[..., :hd // 2], x[..., hd // 2:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
    x = P['model.embed_tokens.weight'][tok]
    for l in range(cfg['n_layers']):
        p = lambda s: P['model.layers.%d.%s' % (l, s)]
        h = llama_ref.rmsnorm(x, p('input_layernorm.weight'), eps)
        q = lin(h, p('self_attn.q_proj.weight')).view(H, hd)
        k = lin(h, p('self_attn.k_proj.weight')).view(KV, hd)
        v = lin(h, p('self_attn.v_proj.weight')).view(KV, hd)
        if cfg['qk_norm']:
            q = llama_ref.rmsnorm(q, p('self_attn.q_norm.weight'), eps)
            k = llama_ref.rmsnorm(k, p('self_attn.k_norm.weight'), eps)
        q, k = rope(q), rope(k)
        kc, vc = cache[l]
        kc[pos], vc[pos] = k, v
        K = kc[:pos + 1].repeat_interleave(H // KV, dim=1).transpose(0, 1)   # H, t, hd
        V = vc[:pos + 1].repeat_interleave(H // KV, dim=1).transpose(0, 1)
        s = (K @ q.unsqueeze(-1)).squeeze(-1) / math.sqrt(hd)
        a = (torch.softmax(s, dim=-1).unsqueeze(1) @ V).reshape(H * hd)
        x = x + lin(a, p('self_attn.o_proj.weight'))
        h = llama_ref.rmsnorm(x, p('post_attention_layernorm.weight'), eps)
        x = x + lin(F.silu(lin(h, p('mlp.gate_proj.weight'))) * lin(h, p('mlp.up_proj.weight')),
                         p('mlp.down_proj.weight'))
    h = llama_ref.rmsnorm(x, P['model.norm.weight'], eps)
    return lin(h, P['model.embed_tokens.weight'] if cfg['tie'] else P['lm_head.weight'])


def main():
    hf, prompt, n = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
    torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '2')))
    cfg = llama_ref.config_from_hf(os.path.join(hf, 'config.json'))
    P = llama_ref.load_safetensors(os.path.join(hf, 'model.safetensors'))
    T, kv = len(prompt) + n, cfg['n_kv_heads'] * (cfg['d_model'] // cfg['n_heads'])
    cache = [(torch.zeros(T, cfg['n_kv_heads'], kv // cfg['n_kv_heads']),
              torch.zeros(T, cfg['n_kv_heads'], kv // cfg['n_kv_heads'])) for _ in range(cfg['n_layers'])]
    out = []
    with torch.no_grad():
        for i, b in enumerate(prompt):
            lg = step(cfg, P, cache, b, i)
        t0 = time.perf_counter()
        for i in range(n):
            nxt = int(lg.argmax())
            out.append(nxt)
            if i + 1 < n:
                lg = step(cfg, P, cache, nxt, len(prompt) + i)
        dt = time.perf_counter() - t0
    print(' '.join(map(str, out)))
    print('tokens_per_s %.2f' % (n / dt))


main()

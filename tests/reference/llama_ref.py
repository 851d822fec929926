# llama_ref.py: the same Llama-family model as runtime/model/model.c written in
# plain PyTorch (functional, HF tensor names), used by the reference checks.
import math
import torch
import torch.nn.functional as F


def load_config(path):
    """Parse the flat key: value config (the subset of YAML our configs use)."""
    c = {}
    for line in open(path):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        k, v = [s.strip() for s in line.split(':', 1)]
        c[k] = v
    out = dict(vocab_size=int(c['vocab_size']), d_model=int(c['d_model']),
               n_layers=int(c['n_layers']), n_heads=int(c['n_heads']),
               d_ff=int(c['d_ff']), rope_theta=float(c.get('rope_theta', 10000)),
               norm_eps=float(c.get('norm_eps', 1e-5)),
               qk_norm=c.get('qk_norm', 'false') in ('true', '1', 'yes'),
               tie=c.get('tie_embeddings', 'true') in ('true', '1', 'yes'),
               z_loss=float(c.get('z_loss', 0)))
    out['n_kv_heads'] = int(c.get('n_kv_heads', out['n_heads']))
    return out


def rmsnorm(x, w, eps):
    xf = x.float() if x.dtype == torch.bfloat16 else x
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * r * w).to(x.dtype) if x.dtype == torch.bfloat16 else xf * r * w


def rope(x, theta, pos=None):
    # x: [B, H, T, hd]; HF rotate_half convention; pos: [B, T] positions
    # (None: 0 .. T-1)
    T, hd = x.shape[2], x.shape[3]
    inv = theta ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2.0 / hd)
    if pos is None:
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    else:
        ang = (pos.double()[..., None] * inv)[:, None]   # [B, 1, T, hd/2]
    cos = torch.cos(ang).to(x.dtype)
    sin = torch.sin(ang).to(x.dtype)
    a, b = x[..., :hd // 2], x[..., hd // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def forward(cfg, P, tokens, targets, seg=None, attn='naive'):
    """tokens, targets: [B, T] int64. Returns (logits, loss). seg: [B, T]
    sample ids of packed samples (None: one per sequence): attention only
    within a sample, positions restarting per sample, and the loss over the
    targets >= 0 (cross_entropy's ignore_index=-1). attn: 'naive' (scores,
    mask, softmax: the reference) or 'sdpa' (PyTorch 2's
    scaled_dot_product_attention, causal; tests/gpu/torch_bench.py)."""
    B, T = tokens.shape
    d, H, KV = cfg['d_model'], cfg['n_heads'], cfg['n_kv_heads']
    hd = d // H
    eps = cfg['norm_eps']
    x = P['model.embed_tokens.weight'][tokens]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    pos = None
    if seg is not None:
        mask = (mask & (seg[:, :, None] == seg[:, None, :]))[:, None]   # [B, 1, T, T]
        start = torch.zeros_like(seg)
        for t in range(1, T):
            start[:, t] = torch.where(seg[:, t] == seg[:, t - 1], start[:, t - 1], t)
        pos = torch.arange(T)[None, :] - start
    for l in range(cfg['n_layers']):
        p = lambda s: P['model.layers.%d.%s' % (l, s)]
        h = rmsnorm(x, p('input_layernorm.weight'), eps)
        q = F.linear(h, p('self_attn.q_proj.weight')).view(B, T, H, hd).transpose(1, 2)
        k = F.linear(h, p('self_attn.k_proj.weight')).view(B, T, KV, hd).transpose(1, 2)
        v = F.linear(h, p('self_attn.v_proj.weight')).view(B, T, KV, hd).transpose(1, 2)
        if cfg['qk_norm']:
            q = rmsnorm(q, p('self_attn.q_norm.weight'), eps)
            k = rmsnorm(k, p('self_attn.k_norm.weight'), eps)
        q, k = rope(q, cfg['rope_theta'], pos), rope(k, cfg['rope_theta'], pos)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        if attn == 'sdpa' and seg is None:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif attn == 'sdpa':
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            s = s.masked_fill(~mask, float('-inf'))
            a = torch.softmax(s.float(), dim=-1).to(v.dtype) @ v
        a = a.transpose(1, 2).reshape(B, T, H * hd)
        x = x + F.linear(a, p('self_attn.o_proj.weight'))
        h = rmsnorm(x, p('post_attention_layernorm.weight'), eps)
        g = F.linear(h, p('mlp.gate_proj.weight'))
        u = F.linear(h, p('mlp.up_proj.weight'))
        x = x + F.linear(F.silu(g) * u, p('mlp.down_proj.weight'))
    h = rmsnorm(x, P['model.norm.weight'], eps)
    W = P['model.embed_tokens.weight'] if cfg['tie'] else P['lm_head.weight']
    logits = F.linear(h, W).float()
    lf = logits.view(B * T, -1)
    lse = torch.logsumexp(lf, dim=-1)
    tg = targets.reshape(-1)
    loss = F.cross_entropy(lf, tg, ignore_index=-1) + cfg['z_loss'] * (lse[tg >= 0] ** 2).mean()
    return logits, loss


def grads(cfg, params, flat, tok, tgt, dtype, autocast=False, device='cpu', seg=None):
    """Logits, loss and every gradient of one forward and backward from the
    flat weights (params: the table of ref_dump.read_dump) in dtype;
    autocast: under bf16 autocast. device: where PyTorch computes ('cuda'
    needs PyTorch 2); the results come back on the CPU."""
    if device == 'cpu':
        return _grads(cfg, params, flat, tok, tgt, dtype, autocast, device, seg)
    with torch.device(device):     # factory calls inside forward land there too
        return _grads(cfg, params, flat, tok, tgt, dtype, autocast, device, seg)


def _grads(cfg, params, flat, tok, tgt, dtype, autocast, device, seg=None):
    P = {n: torch.tensor(flat[off:off + k].reshape(s), dtype=dtype, device=device,
                         requires_grad=True)
         for n, s, off, k, _ in params}
    tok, tgt = tok.to(device), tgt.to(device)
    if autocast:
        with torch.autocast(device, dtype=torch.bfloat16):
            logits, loss = forward(cfg, P, tok, tgt, seg)
    else:
        logits, loss = forward(cfg, P, tok, tgt, seg)
    loss.backward()
    return logits.detach().cpu(), loss.item(), {n: P[n].grad.cpu() for n in P}


def load_safetensors(path):
    """name -> float32 tensor of a safetensors file (F32, BF16, F16), read
    with json + struct (Debian's torch 1.13 has no safetensors package)."""
    import json, struct
    dt = {'F32': torch.float32, 'BF16': torch.bfloat16, 'F16': torch.float16}
    data = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', data[:8])
    out = {}
    for name, e in json.loads(data[8:8 + n]).items():
        if name == '__metadata__':
            continue
        b, f = e['data_offsets']
        out[name] = torch.frombuffer(bytearray(data[8 + n + b:8 + n + f]), dtype=dt[e['dtype']]).reshape(e['shape']).float()
    return out


def config_from_hf(path):
    """llama_ref's config dict from a Hugging Face config.json."""
    import json
    h = json.load(open(path))
    return dict(vocab_size=h['vocab_size'], d_model=h['hidden_size'], n_layers=h['num_hidden_layers'],
                n_heads=h['num_attention_heads'], n_kv_heads=h.get('num_key_value_heads', h['num_attention_heads']),
                d_ff=h['intermediate_size'], rope_theta=h.get('rope_theta', 10000.0), norm_eps=h['rms_norm_eps'],
                qk_norm=h['model_type'] == 'qwen3', tie=h.get('tie_word_embeddings', False), z_loss=0.0)

# hf_finetune.py: fine-tuning a Hugging Face model here equals
# fine-tuning it with transformers (4.46.3 on Debian's torch 1.13, fp32):
# a LlamaForCausalLM (GQA, untied head) written by save_pretrained is
# imported (`llm-train import`), trained K steps on the import
# (--precision fp32, AdamW at a constant lr, no weight decay, no clipping)
# on a data set of exactly one global batch (every step sees the same B
# samples), and the same K AdamW steps (torch.optim.AdamW, same betas/eps)
# run on transformers' model from the same directory with its own forward
# and cross-entropy. Checked: every step's loss (metrics.jsonl) against
# transformers' (rel <= 1e-5; measured 1.4e-7), the export's tensors
# against transformers' trained weights (rel <= 1e-5; measured 7.3e-7),
# and 32 greedy tokens of generate --ckpt against transformers' greedy
# decode of its trained model (equal). eps 1e-3, not 1e-8: with 1e-8 the
# first AdamW steps move every element by about lr whatever its gradient's
# size (m/sqrt(v) is its sign), so an element whose gradient is float
# noise in both (here in layers.1.mlp.down_proj) goes either way: weights
# then differ by 8e-4 while the losses still agree to 1e-6.
# Fails on the old code: nothing; it guards the whole fine-tuning path
# (import, loss, backward, AdamW, export, generate) against the library
# users compare with.
import json, os, struct, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refcli
refcli.need_venv('transformers')
import transformers
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from refcli import expect, finish, lt
transformers.logging.set_verbosity_error()
torch.set_num_threads(2)

TEXT = '/usr/share/common-licenses/GPL-3'
B, T, K, LR, N, EPS = 4, 32, 6, 3e-3, 32, '1e-3'
PROMPT = 'This License'


def must(tag, rc, out, err):
    if rc:
        print('FAIL: %s: exit %d: %s' % (tag, rc, err.strip()))
        sys.exit(1)
    return out


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def shard(path, toks):
    """llm.c's token shard: 256 x int32 header (magic, version, count), uint16 tokens"""
    hdr = [20240520, 1, len(toks)] + [0] * 253
    open(path, 'wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % len(toks), *toks))


def safetensors(d):
    data = open(os.path.join(d, 'model.safetensors'), 'rb').read()
    (n,) = struct.unpack('<Q', data[:8])
    out = {}
    for k, e in json.loads(data[8:8 + n]).items():
        if k != '__metadata__':
            b, f = e['data_offsets']
            assert e['dtype'] == 'F32', e['dtype']
            out[k] = torch.frombuffer(bytearray(data[8 + n + b:8 + n + f]), dtype=torch.float32).view(e['shape'])
    return out


def greedy(m):
    ids = list(PROMPT.encode())
    with torch.no_grad():
        for _ in range(N):
            ids.append(int(m(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[len(PROMPT.encode()):]


with tempfile.TemporaryDirectory() as W:
    hf, ck, data, out = (os.path.join(W, s) for s in ('hf', 'ck', 'data', 'out'))
    torch.manual_seed(11)
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      rms_norm_eps=1e-5, rope_theta=10000.0, initializer_range=0.2, hidden_act='silu',
                      tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
    LlamaForCausalLM(cfg).save_pretrained(hf, safe_serialization=True)
    must('import', *lt('import', hf, ck))
    toks = list(open(TEXT, 'rb').read()[:B * T + 1])   # exactly B samples of T+1 tokens
    os.mkdir(data)
    shard(os.path.join(data, 'gpl_train_000000.bin'), toks)
    must('train', *lt('--model', os.path.join(ck, 'model.yaml'), '--data', data, '--ckpt-dir', ck,
                      '--steps', str(K), '--micro-batch', str(B), '--seq', str(T), '--precision', 'fp32',
                      '--lr', str(LR), '--min-lr', str(LR), '--warmup', '0', '--weight-decay', '0',
                      '--beta1', '0.9', '--beta2', '0.95', '--eps', EPS, '--grad-clip', '1e30',
                      '--ckpt-interval', str(K), '--quiet'))
    ours = [json.loads(l) for l in open(os.path.join(ck, 'metrics.jsonl')) if '"loss"' in l]
    ours = {r['step']: r['loss'] for r in ours}
    must('export', *lt('export', '--dtype', 'fp32', ck, out))

    # the same with transformers
    m = LlamaForCausalLM.from_pretrained(hf, torch_dtype=torch.float32)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=LR, betas=(0.9, 0.95), eps=float(EPS), weight_decay=0.0)
    t = torch.tensor(toks)
    x = torch.stack([t[i * T:i * T + T] for i in range(B)])
    y = torch.stack([t[i * T + 1:i * T + T + 1] for i in range(B)])
    ref = {}
    for s in range(1, K + 1):
        lg = m(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref[s] = loss.item()
    worst = max(abs(ours.get(s, float('nan')) - ref[s]) / abs(ref[s]) for s in ref)
    expect('losses of %d steps == transformers (rel %.3g, limit 1e-5)' % (K, worst), worst <= 1e-5,
           '(ours %s, transformers %s)' % ([ours.get(s) for s in ref], [ref[s] for s in ref]))
    expect('the loss fell (%.4f -> %.4f)' % (ref[1], ref[K]), ref[K] < ref[1] - 0.1)
    got, want = safetensors(out), {k: v.detach() for k, v in m.state_dict().items()}
    worst_w = max(rel(got[k], want[k]) for k in want)
    moved = min(rel(want[k], safetensors(hf)[k]) for k in want)
    expect('exported weights == transformers\' trained ones (rel %.3g, limit 1e-5)' % worst_w,
           set(got) == set(want) and worst_w <= 1e-5, '(%d tensors, least moved %.3g)' % (len(want), moved))
    m.eval()
    rc, gen, err = lt('generate', '--ckpt', ck, '--ids', '--prompt', PROMPT, '--max-new', str(N))
    g = [int(v) for v in gen.split()] if rc == 0 else []
    h = greedy(m)
    expect('generate --ckpt == transformers greedy (%d tokens)' % N, g == h,
           '(%d equal; ours %s, transformers %s)' % (sum(a == b for a, b in zip(g, h)), g[:8], h[:8]))
finish()

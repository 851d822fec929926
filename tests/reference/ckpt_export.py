# ckpt_export.py: a PyTorch user loads our export. ckpt_export_drv (C)
# saves a checkpoint and exports it (fp32 and bf16 safetensors + HF
# config.json); here plain Python reads the files (json + struct +
# torch.frombuffer: Debian's torch 1.13 has no safetensors package),
# builds the model from config.json alone and compares the logits with
# ours. Limits: fp32 logits rel <= 1e-5 (max norm); bf16 file = the fp32
# weights rounded to nearest even, bit for bit; bf16 logits rel <= 0.05.
import json, os, struct, subprocess, sys, tempfile
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref

top_srcdir = os.environ.get('top_srcdir', os.path.join(os.path.dirname(__file__), '..', '..'))
top_builddir = os.environ.get('top_builddir', top_srcdir)
driver = os.path.join(top_builddir, 'tests', 'reference', 'ckpt_export_drv')
TEXT = '/usr/share/common-licenses/GPL-3'
CONFIGS = [os.path.join(top_srcdir, 'configs', 'tiny.yaml'),
           os.path.join(top_srcdir, 'tests', 'reference', 'ref-gqa.yaml')]
torch.set_num_threads(2)
failures = []
DT = {'F32': torch.float32, 'BF16': torch.bfloat16}


def read_safetensors(path):
    data = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', data[:8])
    if (8 + n) % 8:
        failures.append('%s: data does not start 8-byte aligned' % path)
    hdr = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out, end = {}, 0
    for name, e in hdr.items():
        if name == '__metadata__':
            continue
        b, f = e['data_offsets']
        t = torch.frombuffer(bytearray(body[b:f]), dtype=DT[e['dtype']]).reshape(e['shape'])
        out[name] = t
        end = max(end, f)
    if end != len(body):
        failures.append('%s: %d data bytes, offsets end at %d' % (path, len(body), end))
    return out


def cfg_from_hf(path):
    h = json.load(open(path))
    if h['architectures'][0] not in ('LlamaForCausalLM', 'Qwen3ForCausalLM'):
        failures.append('%s: architectures %s' % (path, h['architectures']))
    return dict(vocab_size=h['vocab_size'], d_model=h['hidden_size'], n_layers=h['num_hidden_layers'],
                n_heads=h['num_attention_heads'], n_kv_heads=h['num_key_value_heads'],
                d_ff=h['intermediate_size'], rope_theta=h['rope_theta'], norm_eps=h['rms_norm_eps'],
                qk_norm=h['model_type'] == 'qwen3', tie=h['tie_word_embeddings'], z_loss=0.0)


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def check(name, value, limit):
    print('%-48s %.3g (limit %.3g)' % (name, value, limit))
    if not value <= limit:
        failures.append('%s: %.3g > %.3g' % (name, value, limit))


for cfgpath in CONFIGS:
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([driver, cfgpath, TEXT, out], capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS='2'))
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            print(r.stderr)
            print('FAIL: driver exit %d' % r.returncode)
            sys.exit(1)
        tag = os.path.basename(cfgpath)
        tok = torch.frombuffer(bytearray(open(os.path.join(out, 'tokens.bin'), 'rb').read()), dtype=torch.int32)
        ours = torch.frombuffer(bytearray(open(os.path.join(out, 'logits.bin'), 'rb').read()), dtype=torch.float32)
        tok = tok.long().view(1, -1)
        P32 = read_safetensors(os.path.join(out, 'hf32', 'model.safetensors'))
        P16 = read_safetensors(os.path.join(out, 'hf16', 'model.safetensors'))
        cfg = cfg_from_hf(os.path.join(out, 'hf32', 'config.json'))
        if cfg['tie'] == ('lm_head.weight' in P32):
            failures.append('%s: tie_word_embeddings and lm_head.weight disagree' % tag)
        for n, t in P32.items():
            if t.dtype != torch.float32 or P16[n].dtype != torch.bfloat16:
                failures.append('%s: %s dtypes %s/%s' % (tag, n, t.dtype, P16[n].dtype))
            elif not torch.equal(t.to(torch.bfloat16).view(torch.int16), P16[n].view(torch.int16)):
                failures.append('%s: %s bf16 export is not the rounded fp32 weights' % (tag, n))
        with torch.no_grad():
            lg, _ = llama_ref.forward(cfg, P32, tok, tok)
            check('%s fp32 export: logits rel' % tag, rel(ours.view_as(lg), lg), 1e-5)
            P = {n: t.float() for n, t in P16.items()}
            lg16, _ = llama_ref.forward(cfg, P, tok, tok)
            check('%s bf16 export: logits rel' % tag, rel(lg16, ours.view_as(lg16)), 0.05)

if failures:
    print('FAIL:\n  ' + '\n  '.join(failures))
    sys.exit(1)
print('PASS')

# ckpt_export.py: a PyTorch user loads our export. ckpt_export_drv (C)
# saves a checkpoint and exports it (fp32 and bf16 safetensors + HF
# config.json); here plain Python reads the files (json + struct +
# torch.frombuffer: Debian's torch 1.13 has no safetensors package),
# builds the model from config.json alone and compares the logits with
# ours. Limits: fp32 logits rel <= 1e-5 (max norm); bf16 file = the fp32
# weights rounded to nearest even, bit for bit; bf16 logits rel <= 1e-2
# (measured: fp32 <= 5.9e-7, fp32 sums in another order; bf16 <= 3.7e-3,
# the weights' bf16 rounding).
# Then the other way: a Hugging Face style sharded F16 model written here
# (two files + model.safetensors.index.json) goes through `llm-train
# import` and `llm-train export --dtype fp32`: the weights come back equal
# to the F16 values, bit for bit; a file with an I8 tensor is refused (65).
import json, os, struct, subprocess, sys, tempfile
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref

top_srcdir = os.environ.get('top_srcdir', os.path.join(os.path.dirname(__file__), '..', '..'))
top_builddir = os.environ.get('top_builddir', top_srcdir)
driver = os.path.join(top_builddir, 'tests', 'reference', 'ckpt_export_drv')
llm_train = os.path.join(top_builddir, 'runtime', 'llm-train')
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


def write_safetensors(path, tensors, dtype='F16'):
    tt = {torch.float16: 'F16', torch.float32: 'F32', torch.bfloat16: 'BF16', torch.int8: 'I8'}
    hdr, blobs, off = {'__metadata__': {'format': 'pt'}}, [], 0
    for n, t in tensors.items():
        b = t.contiguous().view(torch.uint8).numpy().tobytes() if t.dtype != torch.int8 else t.numpy().tobytes()
        hdr[n] = {'dtype': tt[t.dtype], 'shape': list(t.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))


def run(args):
    r = subprocess.run([llm_train] + args, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


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
            # the weights rounded to bf16 (forward in fp32): measured <= 3.7e-3
            check('%s bf16 export: logits rel' % tag, rel(lg16, ours.view_as(lg16)), 1e-2)

        # import of a sharded F16 model written by another writer
        hf = os.path.join(out, 'hf_f16')
        os.mkdir(hf)
        names = sorted(P32)
        half = {n: P32[n].to(torch.float16) for n in names}
        parts = [names[:len(names) // 2], names[len(names) // 2:]]
        wmap = {}
        for i, part in enumerate(parts):
            fn = 'model-%05d-of-00002.safetensors' % (i + 1)
            write_safetensors(os.path.join(hf, fn), {n: half[n] for n in part})
            wmap.update({n: fn for n in part})
        json.dump({'metadata': {}, 'weight_map': wmap}, open(os.path.join(hf, 'model.safetensors.index.json'), 'w'))
        h = json.load(open(os.path.join(out, 'hf32', 'config.json')))
        h['torch_dtype'] = 'float16'
        json.dump(h, open(os.path.join(hf, 'config.json'), 'w'))
        rc, msg = run(['import', hf, os.path.join(out, 'ck16')])
        if rc != 0:
            failures.append('%s: import of the sharded F16 model: exit %d: %s' % (tag, rc, msg))
            continue
        rc, msg = run(['export', '--dtype', 'fp32', os.path.join(out, 'ck16'), os.path.join(out, 'back')])
        if rc != 0:
            failures.append('%s: export of the imported model: exit %d: %s' % (tag, rc, msg))
            continue
        back = read_safetensors(os.path.join(out, 'back', 'model.safetensors'))
        same = sorted(back) == names and all(torch.equal(back[n], half[n].float()) for n in names)
        print('%-48s %s' % (tag + ' F16 sharded import -> export', 'bit-identical' if same else 'DIFFERENT'))
        if not same:
            failures.append('%s: F16 import/export round trip differs' % tag)
        write_safetensors(os.path.join(hf, 'model-00001-of-00002.safetensors'),
                          {n: torch.zeros(P32[n].shape, dtype=torch.int8) for n in parts[0]})
        rc, msg = run(['import', hf, os.path.join(out, 'ck8')])
        print('%-48s exit %d: %s' % (tag + ' I8 tensor refused', rc, msg.strip()))
        if rc != 65 or 'not supported' not in msg:
            failures.append('%s: import of an I8 tensor: exit %d, want 65' % tag)

if failures:
    print('FAIL:\n  ' + '\n  '.join(failures))
    sys.exit(1)
print('PASS')

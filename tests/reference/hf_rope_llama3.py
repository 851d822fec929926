# hf_rope_llama3.py: Llama 3.1-style rope_scaling ("rope_type": "llama3")
# against Hugging Face's own code (transformers from the venv): a tiny
# LlamaForCausalLM (head_dim 16, GQA, untied) with rope_scaling factor 8,
# low_freq_factor 1, high_freq_factor 2, original_max_position_embeddings
# 32 (its 8 frequencies fall in all three bands: kept, smoothed, divided)
# written by save_pretrained (fp32):
# - `llm-train import` takes it; model.yaml says rope_scaling: llama3;
# - over 64 tokens the logits of our KV-cache forward (gen_model.c) and of
#   the training model (model.c) equal LlamaForCausalLM's (rel <= 2e-5)
#   and differ from the same weights without rope_scaling (rel > 1e-2:
#   the scaling matters at this length);
# - `llm-train export` writes rope_scaling back into config.json; the
#   export loads with AutoModelForCausalLM to the same logits, and
#   generate's --hf path (rope_logits_drv hf) reads it the same way;
# - one training step from the import; resuming it or --init-from with a
#   model.yaml without the scaling (or factor 32) is refused naming it;
# - the older key name "type" imports the same.
# Fails on the old code: import refused rope_scaling (exit 64); with the
# scaling disabled in llmt_rope_inv_freq the logits rel is 1.33 (both
# forwards and the --hf path).
import json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refcli
refcli.need_venv('transformers')
import transformers
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
from refcli import expect, failures, finish, lt, top_builddir
transformers.logging.set_verbosity_error()
torch.set_num_threads(2)

DRV = os.path.join(top_builddir, 'tests', 'reference', 'rope_logits_drv')
T, LIM = 64, 2e-5
RS = dict(rope_type='llama3', factor=8.0, low_freq_factor=1.0, high_freq_factor=2.0,
          original_max_position_embeddings=32)
CFG = dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
           initializer_range=0.2, tie_word_embeddings=False, hidden_act='silu', attention_bias=False,
           mlp_bias=False)


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def ours(kind, d, out):
    os.makedirs(out)
    r = subprocess.run([DRV, kind, d, out] + [str(i) for i in IDS], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS='2'))
    if r.returncode:
        failures.append('rope_logits_drv %s %s: exit %d: %s' % (kind, d, r.returncode, r.stderr.strip()))
        return None
    return [torch.frombuffer(bytearray(open(os.path.join(out, f), 'rb').read()), dtype=torch.float32).view(T, -1)
            for f in ('step.bin', 'full.bin')]


def hf_logits(m):
    with torch.no_grad():
        return m(torch.tensor([IDS])).logits[0]


torch.manual_seed(3)
IDS = torch.randint(0, 256, (T,)).tolist()
with tempfile.TemporaryDirectory() as W:
    m = LlamaForCausalLM(LlamaConfig(rope_scaling=RS, **CFG)).eval()
    hf, ck, back = (os.path.join(W, s) for s in ('hf', 'ck', 'back'))
    m.save_pretrained(hf, safe_serialization=True)
    ref = hf_logits(m)
    plain = LlamaForCausalLM(LlamaConfig(**CFG)).eval()
    plain.load_state_dict(m.state_dict())
    gap = rel(hf_logits(plain), ref)
    expect('without rope_scaling transformers differs (rel %.3g > 1e-2)' % gap, gap > 1e-2)

    rc, out, err = lt('import', hf, ck)
    expect('import of a llama3 rope_scaling model', rc == 0, 'exit %d: %s' % (rc, err.strip()))
    if rc:
        finish()
    yml = open(os.path.join(ck, 'model.yaml')).read()
    expect('model.yaml: rope_scaling: llama3, factor 8, original 32',
           'rope_scaling: llama3\n' in yml and 'rope_factor: 8\n' in yml and
           'rope_original_max_position_embeddings: 32\n' in yml, '' if 'rope_factor: 8\n' in yml else yml)
    got = ours('ckpt', ck, os.path.join(W, 'o.ck'))
    for name, lg in zip(('KV-cache forward', 'training-model forward'), got or ()):
        v = rel(lg, ref)
        expect('import: %s logits rel %.3g (limit %.0e)' % (name, v, LIM), v <= LIM)

    rc, out, err = lt('export', '--dtype', 'fp32', ck, back)
    expect('export', rc == 0, 'exit %d: %s' % (rc, err.strip()))
    rs = json.load(open(os.path.join(back, 'config.json'))).get('rope_scaling')
    expect('export config.json rope_scaling == the original', rs == RS, str(rs))
    mb = AutoModelForCausalLM.from_pretrained(back, torch_dtype=torch.float32).eval()
    v = rel(hf_logits(mb), ref)
    expect('export reloaded by transformers: logits rel %.3g (limit %.0e)' % (v, LIM), v <= LIM)
    got = ours('hf', back, os.path.join(W, 'o.hf'))
    if got:
        v = rel(got[0], ref)
        expect('export read by our --hf path: logits rel %.3g (limit %.0e)' % (v, LIM), v <= LIM)

    # the import trains as --model CKPT_DIR/model.yaml; the manifest keeps
    # the scaling: a model without it (or another factor) is refused
    open(os.path.join(W, 't.txt'), 'w').write(open('/usr/share/common-licenses/GPL-3').read()[:20000])
    data = os.path.join(W, 'data')
    lt('tokenize', os.path.join(W, 't.txt'), data)
    train = ('--data', data, '--steps', '1', '--seq', str(T), '--micro-batch', '1', '--quiet')
    rc, out, err = lt('--model', os.path.join(ck, 'model.yaml'), '--ckpt-dir', ck, *train)
    expect('one training step from the import', rc == 0, 'exit %d: %s' % (rc, err.strip()))
    for tag, edit, why in (('no rope_scaling', lambda l: not l.startswith('rope_') or l.startswith('rope_theta'),
                            'rope_scaling: stored llama3, this run none'),
                           ('factor 32', None, 'rope_factor: stored 8, this run 32')):
        y = os.path.join(W, tag.replace(' ', '_') + '.yaml')
        open(y, 'w').write(''.join(l for l in yml.splitlines(True) if edit(l)) if edit else
                           yml.replace('rope_factor: 8\n', 'rope_factor: 32\n'))
        for how in (('--ckpt-dir', ck, '--steps', '2'), ('--init-from', hf)):
            rc, out, err = lt('--model', y, *(train + how))
            expect('%s %s: refused naming it' % (how[0], tag), rc == 64 and why in err, 'exit %d: %s' % (rc, err.strip()))

    old = os.path.join(W, 'old')
    shutil.copytree(hf, old)
    c = json.load(open(os.path.join(old, 'config.json')))
    c['rope_scaling'] = dict(RS, type=c['rope_scaling'].pop('rope_type'))
    del c['rope_scaling']['rope_type']
    json.dump(c, open(os.path.join(old, 'config.json'), 'w'))
    rc, out, err = lt('import', old, os.path.join(W, 'ck_old'))
    expect('import with the older key "type": llama3', rc == 0 and 'rope_scaling: llama3\n' in
           open(os.path.join(W, 'ck_old', 'model.yaml')).read(), 'exit %d: %s' % (rc, err.strip()))
finish()

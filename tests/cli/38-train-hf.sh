# mgpu-train --export-hf DIR writes a gpt as Hugging Face GPT-2
# (DIR/model.safetensors with GPT-2's names and transposed Conv1D weights,
# DIR/config.json): a numpy forward written the way transformers'
# GPT2LMHeadModel computes (x @ W + b, the head tied to wte) reproduces the
# validation loss mgpu-train reported, and so does transformers itself
# where a Python has it; --init FILE starts from such a file (and from one
# transformers saved itself, and from an mgpu checkpoint) with a fresh
# optimizer, so a zero-lr step
# exports the very same bytes; bad starts are refused.
. tests/cli/lib.sh
need_numpy
S=$BIN/mgpu-shard C=$BIN/mgpu-cache TR=$BIN/mgpu-train

"$PY" - <<'PY'
import array, random
r = random.Random(3)
ids = array.array("H", [(i * 5 + r.randrange(4)) % 300 for i in range(16 * 200 + 1)])
open("t.bin", "wb").write(ids.tobytes())
PY
"$S" -q --tokens --context 16 --val-fraction 0.2 -o s/manifest.tsv t.bin
"$C" -q -o c s/manifest.tsv >/dev/null
M=gpt:layers=2,heads=2,dim=16,ctx=16,vocab=300,padded_vocab=320
"$TR" -q --data c --model $M --optimizer adamw --lr 0.01 --max-steps 20 --batch-size 8 \
	--save-dir ck --export-hf hf >run.tsv
[ -s hf/model.safetensors ] && [ -s hf/config.json ] || fail "no export in hf/"
val=$(awk -F '\t' '$1 == "summary" { print $9 }' run.tsv)
"$PY" - "$val" <<'PY' || fail "numpy GPT-2 forward of the export disagrees with val_loss $val"
import ast, json, struct, sys, tarfile
import numpy as np
want = float(sys.argv[1])
raw = open("hf/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
W = {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                      dtype=np.float32).reshape(v["shape"]).astype(np.float64)
     for k, v in hdr.items() if k != "__metadata__"}
cfg = json.load(open("hf/config.json"))
assert cfg["model_type"] == "gpt2" and cfg["vocab_size"] == 300 and cfg["n_embd"] == 16, cfg
assert cfg["n_layer"] == 2 and cfg["n_head"] == 2 and cfg["n_positions"] == 16, cfg
assert W["wte.weight"].shape == (300, 16) and W["wpe.weight"].shape == (16, 16)
assert W["h.0.attn.c_attn.weight"].shape == (16, 48), W["h.0.attn.c_attn.weight"].shape
assert W["h.1.mlp.c_fc.weight"].shape == (16, 64) and W["h.1.mlp.c_proj.weight"].shape == (64, 16)
assert not any(k.startswith("lm_head") for k in W), "untied head"
assert len(W) == 2 + 12 * 2 + 2, sorted(W)
rows = []
for line in list(open("s/manifest.tsv"))[1:]:
    split, path = line.split("\t")[:2]
    if split != "val":
        continue
    t = tarfile.open("s/" + path)
    for m in t.getmembers():
        if m.name.endswith(".npy"):
            d = t.extractfile(m).read()
            hl = int.from_bytes(d[8:10], "little")
            rows.append(np.frombuffer(d[10 + hl:], dtype="<u2").astype(np.int64))
x = np.stack(rows)
def ln(v, g, b):
    m = v.mean(-1, keepdims=True)
    s = ((v - m) ** 2).mean(-1, keepdims=True)
    return (v - m) / np.sqrt(s + cfg["layer_norm_epsilon"]) * g + b
def gelu(v):  # transformers' "gelu": the exact erf form
    from math import erf
    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))
inp, tgt = x[:, :-1], x[:, 1:]
B, T = inp.shape
D, H = cfg["n_embd"], cfg["n_head"]
h = W["wte.weight"][inp] + W["wpe.weight"][:T]
mask = np.tril(np.ones((T, T), dtype=bool))
for l in range(cfg["n_layer"]):
    p = lambda s: W[f"h.{l}.{s}"]
    a = ln(h, p("ln_1.weight"), p("ln_1.bias"))
    qkv = a @ p("attn.c_attn.weight") + p("attn.c_attn.bias")  # Conv1D
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, H, D // H).transpose(0, 2, 1, 3)
               for i in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    s = np.where(mask, s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    y = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    h = h + y @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
    a = ln(h, p("ln_2.weight"), p("ln_2.bias"))
    h = h + gelu(a @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias")) @ p("mlp.c_proj.weight") \
        + p("mlp.c_proj.bias")
logits = ln(h, W["ln_f.weight"], W["ln_f.bias"]) @ W["wte.weight"].T
logits -= logits.max(-1, keepdims=True)
lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
got = -np.take_along_axis(lp, tgt[..., None], -1).mean()
print(f"numpy GPT-2 val loss {got:.6f}, mgpu-train {want:.6f}")
sys.exit(0 if abs(got - want) <= 1e-4 * max(1.0, abs(want)) else 1)
PY

# transformers itself, where a Python has it (make bench-torch's venv, or
# MGPU_PYTHON): GPT2LMHeadModel.from_pretrained loads the export and gives
# the same validation loss
TPY=
for p in ${MGPU_PYTHON:-} "$SRC/${MGPU_BUILD:-build}/torch-venv/bin/python"; do
	[ -x "$p" ] && "$p" -c 'import torch, transformers' >/dev/null 2>&1 && { TPY=$p; break; }
done
if [ -n "$TPY" ]; then
	"$TPY" - "$val" <<'PY' || fail "transformers' GPT2LMHeadModel disagrees with val_loss $val"
import sys, tarfile
import numpy as np, torch
from transformers import GPT2LMHeadModel
want = float(sys.argv[1])
m = GPT2LMHeadModel.from_pretrained("hf").eval()
rows = []
for line in list(open("s/manifest.tsv"))[1:]:
    split, path = line.split("\t")[:2]
    if split == "val":
        t = tarfile.open("s/" + path)
        for mem in t.getmembers():
            if mem.name.endswith(".npy"):
                d = t.extractfile(mem).read()
                hl = int.from_bytes(d[8:10], "little")
                rows.append(np.frombuffer(d[10 + hl:], dtype="<u2").astype(np.int64))
x = torch.tensor(np.stack(rows))
with torch.no_grad():
    lp = torch.log_softmax(m(x[:, :-1]).logits.double(), -1)
got = -lp.gather(-1, x[:, 1:, None]).mean().item()
print(f"transformers GPT2LMHeadModel val loss {got:.6f}, mgpu-train {want:.6f}")
sys.exit(0 if abs(got - want) <= 1e-4 * max(1.0, abs(want)) else 1)
PY
	# and back: a GPT2LMHeadModel of transformers' own making (its
	# save_pretrained, a wpe of 32 positions for ctx 16) starts an mgpu run
	# whose first validation loss (at lr 0) is transformers' loss
	"$TPY" - <<'PY' >hfloss.txt || fail "transformers could not make a GPT-2"
import tarfile
import numpy as np, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(5)
cfg = GPT2Config(vocab_size=300, n_positions=32, n_embd=16, n_layer=2, n_head=2,
                 activation_function="gelu", resid_pdrop=0, embd_pdrop=0, attn_pdrop=0,
                 bos_token_id=299, eos_token_id=299)
m = GPT2LMHeadModel(cfg).eval()
m.save_pretrained("hfsrc", safe_serialization=True)
rows = []
for line in list(open("s/manifest.tsv"))[1:]:
    split, path = line.split("\t")[:2]
    if split == "val":
        t = tarfile.open("s/" + path)
        for mem in t.getmembers():
            if mem.name.endswith(".npy"):
                d = t.extractfile(mem).read()
                hl = int.from_bytes(d[8:10], "little")
                rows.append(np.frombuffer(d[10 + hl:], dtype="<u2").astype(np.int64))
x = torch.tensor(np.stack(rows))
with torch.no_grad():
    lp = torch.log_softmax(m(x[:, :-1]).logits.double(), -1)
print(-lp.gather(-1, x[:, 1:, None]).mean().item())
PY
	"$TR" -q --data c --model $M --optimizer adamw --lr 0 --max-steps 1 --batch-size 8 \
		--init hfsrc/model.safetensors >init.tsv || fail "--init of transformers' file"
	python3 - "$(cat hfloss.txt)" "$(awk -F '\t' '$1 == "summary" { print $9 }' init.tsv)" <<'PY' ||
import sys
want, got = float(sys.argv[1]), float(sys.argv[2])
print(f"transformers' GPT-2 val loss {want:.6f}, mgpu-train --init {got:.6f}")
sys.exit(0 if abs(got - want) <= 1e-4 * max(1.0, abs(want)) else 1)
PY
		fail "--init of transformers' GPT-2 gives another loss"
else
	echo "38-train-hf: no Python with torch and transformers; checked with numpy only" >&2
fi

# --init: weights only; a step at lr 0 leaves them as they were
"$TR" -q --data c --model $M --optimizer adamw --lr 0 --max-steps 1 --batch-size 8 \
	--init hf/model.safetensors --export-hf hf2 >/dev/null
cmp -s hf/model.safetensors hf2/model.safetensors || fail "--init of an export, re-exported, differs"
"$TR" -q --data c --model $M --optimizer adamw --lr 0 --max-steps 1 --batch-size 8 \
	--init "ck/$(cat ck/latest)/model.safetensors" --export-hf hf3 >/dev/null
cmp -s hf/model.safetensors hf3/model.safetensors || fail "--init of a checkpoint differs"
# HF's names with the "transformer." prefix, and F16 (a model saved in half)
"$PY" - <<'PY'
import json, struct
import numpy as np
raw = open("hf/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
out, blobs, off = {}, [], 0
for k, v in hdr.items():
    if k == "__metadata__":
        continue
    a = np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dtype="<f4")
    b = a.astype("<f2").tobytes()
    out["transformer." + k] = {"dtype": "F16", "shape": v["shape"], "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
h = json.dumps(out).encode()
h += b" " * (-len(h) % 8)
open("half.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
"$TR" -q --data c --model $M --max-steps 1 --batch-size 8 --lr 0 --init half.safetensors \
	--export-hf hf4 >/dev/null || fail "--init of F16 'transformer.' names"

expect 1 "'hf/model.safetensors': tensor 'wte.weight' is 300x16, the model wants 300x32" \
	"$TR" -q --data c --model gpt:layers=2,heads=2,dim=32,ctx=16,vocab=300 --max-steps 1 \
	--batch-size 8 --init hf/model.safetensors
expect 1 "no tensor 'h.2.ln_1.weight'" \
	"$TR" -q --data c --model gpt:layers=3,heads=2,dim=16,ctx=16,vocab=300 --max-steps 1 \
	--batch-size 8 --init hf/model.safetensors
expect 2 "--init needs a gpt model" "$TR" --model mlp:4-2 --init hf/model.safetensors
expect 2 "--init starts from weights, --resume from a whole checkpoint" \
	"$TR" --data c --model $M --init hf/model.safetensors --resume ck
exit 0

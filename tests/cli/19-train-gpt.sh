# mgpu-train with a gpt: model on byte samples of T+1 bytes (inputs 0..T-1,
# next-byte targets 1..T): it learns, its checkpoint holds GPT-2-style
# tensor names whose test loss an independent numpy forward reproduces,
# 2 CPU ranks x 8 (ddp or dp) and 2 accumulation steps x 8 match 1 rank x
# 16, a resumed run is bit-identical (and on 2 ranks within 1e-4), so is
# one resumed after SIGINT, the spec file under models/ loads, and samples
# of the wrong width are refused.
. tests/cli/lib.sh
"$BIN/mgpu-train" --help | grep -q "gpt:layers=L,heads=H,dim=D,ctx=T" ||
	fail "--help does not give the gpt: spec"
text_idx d 1200 64 17 3
model=gpt:layers=2,heads=2,dim=32,ctx=16,vocab=128
run() { "$BIN/mgpu-train" --data d --model $model --optimizer adamw --lr 0.01 \
	--warmup-steps 5 --log-every 1 -q "$@"; }

# It learns: the loss of the last steps is well below the first's (log 128 = 4.85).
run --epochs 2 --batch-size 16 --save-dir ck >train.tsv
awk -F '\t' '$1 == "step" { if (!first) first = $4; last = $4 }
	END { if (!(first > 4.5 && last < 2.0)) { print first, last; exit 1 } }' train.tsv ||
	fail "did not learn: $(grep '^step' train.tsv | sed -n '1p;$p')"

# The checkpoint: tied head (no separate output tensor), GPT-2 names; a numpy
# forward of those weights gives the test loss mgpu-train reported.
need_numpy
test_loss=$(awk -F '\t' '$1 == "summary" { print $11 }' train.tsv)
"$PY" - "ck/$(cat ck/latest)/model.safetensors" d/t10k-images-idx3-ubyte "$test_loss" <<'PY' ||
import json, struct, sys
import numpy as np
path, data, want = sys.argv[1], sys.argv[2], float(sys.argv[3])
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
W = {}
for k, v in hdr.items():
    if k == "__metadata__":
        continue
    a, b = v["data_offsets"]
    W[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(v["shape"]).astype(np.float64)
names = set(W)
assert "wte.weight" in names and "wpe.weight" in names and "ln_f.bias" in names, sorted(names)
assert "blocks.1.attn.qkv.weight" in names and "blocks.1.mlp.proj.bias" in names, sorted(names)
assert not any("head" in k or "lm_" in k for k in names), "untied head tensor"
assert len(names) == 4 + 2 * 12, len(names)
img = open(data, "rb").read()
cnt, rows, cols = struct.unpack(">III", img[4:16])
x = np.frombuffer(img[16:], dtype=np.uint8).reshape(cnt, cols).astype(np.int64)
L, H = 2, 2
def ln(v, g, b):
    m = v.mean(-1, keepdims=True)
    s = ((v - m) ** 2).mean(-1, keepdims=True)
    return (v - m) / np.sqrt(s + 1e-5) * g + b
def gelu(v):
    from math import erf
    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))
inp, tgt = x[:, :-1], x[:, 1:]
B, T = inp.shape
D = W["wte.weight"].shape[1]
h = W["wte.weight"][inp] + W["wpe.weight"][:T]
mask = np.tril(np.ones((T, T), dtype=bool))
for l in range(L):
    p = lambda s: W[f"blocks.{l}.{s}"]
    a = ln(h, p("ln1.weight"), p("ln1.bias"))
    qkv = a @ p("attn.qkv.weight").T + p("attn.qkv.bias")
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, H, D // H).transpose(0, 2, 1, 3) for i in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    s = np.where(mask, s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    y = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    h = h + y @ p("attn.proj.weight").T + p("attn.proj.bias")
    a = ln(h, p("ln2.weight"), p("ln2.bias"))
    h = h + gelu(a @ p("mlp.fc.weight").T + p("mlp.fc.bias")) @ p("mlp.proj.weight").T + p("mlp.proj.bias")
logits = ln(h, W["ln_f.weight"], W["ln_f.bias"]) @ W["wte.weight"].T
logits -= logits.max(-1, keepdims=True)
lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
got = -np.take_along_axis(lp, tgt[..., None], -1).mean()
print(f"numpy test loss {got:.6f}, mgpu-train {want:.6f}")
sys.exit(0 if abs(got - want) <= 1e-4 * max(1.0, abs(want)) else 1)
PY
	fail "numpy forward of the checkpoint disagrees with test_loss $test_loss"

# World-size invariance, with dropout: 2 ranks x 8 (ddp, and dp's threads)
# and 2 accumulation steps x 8 match 1 rank x 16.
model=$model,dropout=0.1
run --max-steps 20 --batch-size 16 >one.tsv
run --max-steps 20 --batch-size 8 --cpu-ranks 2 >ddp.tsv
run --max-steps 20 --global-batch-size 16 --cpu-ranks 2 --mode dp >dp.tsv
run --max-steps 20 --batch-size 8 --grad-accum-steps 2 >acc.tsv
losses() { awk -F '\t' '$1 == "step" { print $2, $4 }' "$1"; }
for f in ddp dp acc; do
	[ "$(losses $f.tsv | wc -l)" = 20 ] || fail "$f: $(losses $f.tsv | wc -l) steps"
	paste -d ' ' <(losses one.tsv) <(losses $f.tsv) | awk '
		{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4 * $2) { print; bad = 1 } }
		END { exit bad }' || fail "$f differs from 1 rank x 16"
done

# Resume: 10 + 10 steps end where 20 do, bit for bit (the schedule spans
# --max-steps, so the first 10 are the checkpoint of the 20-step run).
run --max-steps 20 --batch-size 16 --save-dir full --save-every 10 --keep 0 >full.tsv
mkdir part part2
cp -r full/step-00000010 part/
cp -r full/step-00000010 part2/
run --resume part/step-00000010 --save-dir part >/dev/null
cmp full/step-00000020/model.safetensors part/step-00000020/model.safetensors ||
	fail "resumed gpt weights differ"
# ... and resumed on another world size (2 ranks x 8, the same global batch)
# it goes on as the 1-rank run does, within 1e-4.
run --resume part2/step-00000010 --save-dir part2 --cpu-ranks 2 --batch-size 8 >res2.tsv
[ "$(losses res2.tsv | wc -l)" = 10 ] || fail "resumed on 2 ranks: $(losses res2.tsv | wc -l) steps"
awk 'NR == FNR { want[$1] = $2; next }
	{ d = want[$1] - $2; if (d < 0) d = -d; if (!($1 in want) || d > 1e-4 * $2) { print; bad = 1 } }
	END { exit bad }' <(losses full.tsv) <(losses res2.tsv) ||
	fail "resumed on 2 ranks differs from 1 rank"

# SIGINT on 2 ranks: both stop after the same step, rank 0 saves, exit 130;
# resumed, the run ends where an uninterrupted one does, bit for bit.
sig="--epochs 400 --max-steps 1000 --batch-size 8 --cpu-ranks 2"
run $sig --save-dir sfull --keep 0 >/dev/null
# (mgpu-train itself in the background: kill must reach it, not a subshell)
"$BIN/mgpu-train" --data d --model $model --optimizer adamw --lr 0.01 --warmup-steps 5 \
	--log-every 1 -q $sig --save-dir spart >spart.tsv 2>spart.err &
L=$!
wait_for_step spart.tsv
kill -INT $L
set +e
wait $L
rc=$?
set -e
[ "$rc" = 130 ] || fail "interrupted gpt run exited $rc: $(cat spart.err)"
ck=$(cat spart/latest)
[ -n "$ck" ] && [ "$ck" != step-00001000 ] || fail "no mid-run gpt checkpoint ($ck)"
run $sig --save-dir spart --resume spart >/dev/null
cmp sfull/step-00001000/model.safetensors spart/step-00001000/model.safetensors ||
	fail "gpt resumed after SIGINT at $ck differs from the uninterrupted run"

# The example spec file (ctx 32) and a sample width that does not fit.
text_idx d33 64 16 33 3
"$BIN/mgpu-train" --data d33 --model "$SRC/models/gpt-tiny.spec" --max-steps 2 \
	--batch-size 4 -q >tiny.tsv || fail "models/gpt-tiny.spec did not train"
grep -q '^summary	2	' tiny.tsv || fail "tiny: $(grep summary tiny.tsv)"
expect 1 "samples have 33 features but the model takes 17 (a gpt's ctx + 1): write --model gpt:" \
	"$BIN/mgpu-train" --data d33 --model "$model" --max-steps 1
# A byte beyond the vocabulary: the error names the data it came from.
expect 1 "'d': train sample 0, position 0: token 99 is not below vocab 2" "$BIN/mgpu-train" -q --data d --max-steps 1 \
	--model gpt:layers=1,heads=2,dim=8,ctx=16,vocab=2
expect 2 "dim 30 is not a multiple of heads 4" \
	"$BIN/mgpu-train" --data d --model gpt:layers=1,heads=4,dim=30,ctx=16
exit 0

# mgpu-train: a run resumed after one epoch ends bit-identical to an
# uninterrupted one; a finished run resumes to nothing, or extends with more
# epochs; checkpoints are valid safetensors; settings that shape the run
# cannot change on resume.
. tests/cli/lib.sh
mkidx d 1000 200 8 4
run() { "$BIN/mgpu-train" --data d --model mlp:64-32-16-4,act=gelu,layernorm,dropout=0.1 \
	--epochs 2 --batch-size 16 --optimizer adamw --lr 0.003 --weight-decay 0.01 \
	--warmup-steps 10 --clip-grad-norm 1 -q "$@"; }
run --save-dir full --keep 0 >full.tsv
[ -d full/step-00000056 ] || fail "no checkpoint after epoch 1: $(ls full)"
# the run's checkpoint after epoch 1, resumed (a --max-steps 56 run would
# be another run: its schedule ends at step 56)
mkdir part
cp -r full/step-00000056 part/
run --save-dir part --resume part/step-00000056 >part2.tsv
cmp full/step-00000112/model.safetensors part/step-00000112/model.safetensors ||
	fail "resumed weights differ from the uninterrupted run"
cmp full/step-00000112/optim.safetensors part/step-00000112/optim.safetensors ||
	fail "resumed optimizer state differs"
a=$(grep '^summary' full.tsv | cut -f 11,12) b=$(grep '^summary' part2.tsv | cut -f 11,12)
[ "$a" = "$b" ] || fail "summary differs: '$a' vs '$b'"
# Step records of epoch 2 match too.
diff <(grep '^step' full.tsv | awk '$2 > 56' | cut -f 1-5) \
	<(grep '^step' part2.tsv | cut -f 1-5) || fail "epoch-2 losses differ"
# Resuming the finished run: nothing to train, said on stderr, exit 0, and
# the summary's throughput is NA, not 0.
"$BIN/mgpu-train" --resume full >fin.tsv 2>fin.err || fail "resuming a finished run: $(cat fin.err)"
grep -q "the checkpoint is already at the last step (112): nothing to train" fin.err ||
	fail "finished run: $(cat fin.err)"
[ "$(grep -v '^kind' fin.tsv | cut -f 1,2,6)" = "$(printf 'summary\t112\tNA')" ] ||
	fail "finished run printed: $(cat fin.tsv)"
# Extending it with --epochs 3 trains a third epoch, on a schedule for 3
# epochs (said on stderr), and the new checkpoints remember 3.
cp -r full ext
"$BIN/mgpu-train" --resume ext --save-dir ext --epochs 3 >ext.tsv 2>ext.err ||
	fail "extending the run: $(cat ext.err)"
grep -q "the learning-rate schedule now spans 3 epochs from step 112 on" ext.err ||
	fail "extension not announced: $(cat ext.err)"
grep -q '^eval	168	3	' ext.tsv && grep -q '^summary	168	3	' ext.tsv ||
	fail "no third epoch: $(cat ext.tsv)"
! cmp -s ext/step-00000112/model.safetensors ext/step-00000168/model.safetensors ||
	fail "the third epoch did not change the weights"
"$BIN/mgpu-train" --resume ext >/dev/null 2>fin.err && grep -q "already at the last step (168)" fin.err ||
	fail "the extended checkpoint does not remember --epochs 3: $(cat fin.err)"
# Not below where the checkpoint is, though.
expect 2 "--epochs 1 ends before the checkpoint's step 112: give at least --epochs 2" \
	run --resume full --epochs 1
expect 2 "--max-steps 50 ends before the checkpoint's step 56" \
	run --resume full/step-00000056 --max-steps 50
# The checkpoint layout: model and optimizer safetensors, JSON state.
python3 - full/step-00000112 <<'PY'
import json, struct, sys
d = sys.argv[1]
for name, want in (("model", {"layers.0.weight": [32, 64], "layers.0.bias": [32],
                              "layers.0.norm.weight": [32], "layers.0.norm.bias": [32],
                              "layers.2.weight": [4, 16], "layers.2.bias": [4]}),
                   ("optim", {"layers.0.weight.exp_avg": [32, 64],
                              "layers.2.bias.exp_avg_sq": [4]})):
    raw = open(f"{d}/{name}.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    assert (8 + n) % 8 == 0, "header not padded to 8"
    h = json.loads(raw[8:8 + n])
    end = 0
    for k, v in sorted(((k, v) for k, v in h.items() if k != "__metadata__"),
                       key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = v["data_offsets"]
        assert v["dtype"] == "F32", (k, v)
        cnt = 1
        for s in v["shape"]: cnt *= s
        assert e - b == 4 * cnt and b == end, (k, v, end)
        end = e
    assert 8 + n + end == len(raw), "data section size"
    for k, shape in want.items():
        assert h[k]["shape"] == shape, (k, h[k]["shape"], shape)
st = json.load(open(f"{d}/state.json"))
assert st["step"] == 112 and st["epoch"] == 2 and st["epoch_pos"] == 0, st
PY
# Changing a setting that shapes the run is refused; others are fine.
expect 2 "--lr 0.01 differs from the checkpoint's 0.003:" \
	run --save-dir part --resume part/step-00000056 --lr 0.01
expect 2 "the checkpoint ran with a global batch of 16 samples on 1 rank; this run's is 32" \
	run --resume part/step-00000056 --batch-size 32
expect 2 "the checkpoint ran with a global batch of 16 samples on 1 rank; this run's is 32" \
	run --resume part/step-00000056 --cpu-ranks 2
ls part | grep -q '^\.' && fail "temporary files left in the save dir: $(ls -a part)"
# --save-every counts steps across epoch ends, and the last step is saved.
run --save-dir every --save-every 28 --keep 0 --max-steps 100 >/dev/null
[ "$(ls every | grep step- | tr '\n' ' ')" = "step-00000028 step-00000056 step-00000084 step-00000100 " ] ||
	fail "--save-every 28: $(ls every)"
# Pruning keeps what latest names, even when older than what is there.
run --save-dir every --keep 1 --max-steps 10 >/dev/null
[ "$(cat every/latest)" = step-00000010 ] && [ -d every/step-00000010 ] ||
	fail "prune removed the latest checkpoint: $(ls every)"
# A checkpoint of another format version is refused, naming the file.
cp -r full/step-00000056 v2
sed -i 's/"version": 1/"version": 2/' v2/state.json
expect 1 "'v2/state.json': checkpoint format version 2 is not supported (this build reads version 1)" \
	run --resume v2
# A checkpoint resumed on other data is refused, not trusted.
mkidx small 500 50 8 4
expect 1 "the checkpoint was made on other data" "$BIN/mgpu-train" --data small \
	--resume full/step-00000056 --save-dir other -q
exit 0

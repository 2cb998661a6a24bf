# mgpu-train with a cnn: model (man/mgpu-model.7): a small ResNet learns
# 8x8 images; its checkpoint holds torch.nn.Sequential's names and layouts
# (BatchNorm running statistics included) and an independent numpy reading
# of the recorded spec and tensors reproduces the test loss; a 1-D net
# learns series read from a UEA/UCR .ts directory and its checkpoint
# forwards the same way; resume is bit-identical (running statistics too);
# a net without BatchNorm on 2 ranks x 8 matches 1 rank x 16, and so does
# a ResNet with --sync-bn (not without); the spec
# files under models/ load; bad specs and --dtype fp16 are refused (bf16:
# 19i-train-cnn-bf16.sh).
. tests/cli/lib.sh
need_numpy
mkidx d 600 120 8 4
res="cnn:conv 8 k=3 p=1; bn; relu; res 8; res 12 s=2; maxpool 2; gap; dropout 0.1; linear auto"
run() { "$BIN/mgpu-train" --data d --optimizer sgd --momentum 0.9 --lr 0.05 --log-every 5 \
	-q "$@"; }

# It learns.
run --model "$res" --epochs 3 --batch-size 32 --save-dir ck >train.tsv || fail "train"
acc=$(awk -F '\t' '$1 == "summary" { print $12 }' train.tsv)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "test accuracy $acc: $(cat train.tsv)"

# numpy forward of a checkpoint (tests/cli/cnn_fwd.py): the spec it
# records (metadata mgpu_spec), read line by line; evaluation-mode
# BatchNorm with the saved running statistics; the inputs normalised as
# its metadata says.
gunzip -k d/t10k-images-idx3-ubyte.gz d/t10k-labels-idx1-ubyte.gz
test_loss=$(awk -F '\t' '$1 == "summary" { print $11 }' train.tsv)
steps=$(awk -F '\t' '$1 == "summary" { print $2 }' train.tsv)
"$PY" "$SRC/tests/cli/cnn_fwd.py" "ck/$(cat ck/latest)/model.safetensors" \
	d/t10k-images-idx3-ubyte "$test_loss" "$steps" --labels d/t10k-labels-idx1-ubyte \
	>fwd.txt 2>&1 || fail "numpy forward: $(cat fwd.txt)"

# Names and layouts as torch.nn: conv (out, in/groups, kh, kw), torchvision
# BasicBlock's names, the running statistics beside the weights, no
# optimizer state for them.
"$PY" - ck/"$(cat ck/latest)" <<'PY' || fail "checkpoint tensors"
import json, struct, sys
def names(p):
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
    return {k: v["shape"] for k, v in h.items()}
m, o = names(sys.argv[1] + "/model.safetensors"), names(sys.argv[1] + "/optim.safetensors")
assert m["0.weight"] == [8, 1, 3, 3] and "0.bias" not in m, m
assert m["1.running_var"] == [8] and m["1.num_batches_tracked"] == [], m
assert m["3.conv1.weight"] == [8, 8, 3, 3] and "3.downsample.0.weight" not in m, m
assert m["4.downsample.0.weight"] == [12, 8, 1, 1] and m["4.downsample.1.running_mean"] == [12], m
assert m["8.weight"] == [4, 12] and m["8.bias"] == [4], m
assert "1.running_mean.momentum" not in o and "1.weight.momentum" in o, sorted(o)
PY

# Resume: 10 + 10 steps end where 20 do, bit for bit, statistics included.
run --model "$res" --max-steps 20 --batch-size 16 --save-dir full --save-every 10 --keep 0 \
	>/dev/null || fail "20 steps"
mkdir part
cp -r full/step-00000010 part/
run --model "$res" --max-steps 20 --batch-size 16 --resume part/step-00000010 --save-dir part \
	>/dev/null || fail "resume"
cmp full/step-00000020/model.safetensors part/step-00000020/model.safetensors ||
	fail "resumed weights or running statistics differ"

# No BatchNorm (GroupNorm is per sample): 2 ranks x 8 match 1 rank x 16.
gn="cnn:conv 6 k=3 p=1 bias; gn 2; silu; avgpool 2; conv 8 k=3 p=1; relu; gap; linear auto"
run --model "$gn" --max-steps 12 --batch-size 16 --log-every 1 >one.tsv || fail "gn 1 rank"
run --model "$gn" --max-steps 12 --batch-size 8 --cpu-ranks 2 --log-every 1 >two.tsv ||
	fail "gn 2 ranks"
[ "$(losses one.tsv | wc -l)" = 12 ] || fail "$(losses one.tsv | wc -l) steps"
same_losses one.tsv two.tsv || fail "2 ranks x 8 differ from 1 rank x 16"
# With BatchNorm each rank normalises its own 8, as torch DDP: not the
# 1-rank run; with --sync-bn the statistics are the 16 samples' on both
# ranks, as torch's SyncBatchNorm: 2 ranks x 8 match 1 rank x 16 (the
# counts per channel summed too, so the moments are the whole batch's).
run --model "$res" --max-steps 12 --batch-size 16 --log-every 1 >bn1.tsv || fail "bn 1 rank"
run --model "$res" --max-steps 12 --batch-size 8 --cpu-ranks 2 --log-every 1 >bn2.tsv ||
	fail "bn 2 ranks"
run --model "$res" --max-steps 12 --batch-size 8 --cpu-ranks 2 --log-every 1 --sync-bn \
	>bn2s.tsv || fail "bn 2 ranks --sync-bn"
same_losses bn1.tsv bn2s.tsv || fail "--sync-bn: 2 ranks x 8 differ from 1 rank x 16"
[ "$(losses bn1.tsv)" != "$(losses bn2.tsv)" ] ||
	fail "without --sync-bn 2 ranks x 8 normalised as 1 rank x 16"

# 1-D: a UEA/UCR directory of 3-channel series, 2 classes (a sine or a
# ramp on channel 1); the spec file under models/ trains on it.
"$PY" - <<'PY'
import numpy as np
r = np.random.default_rng(4)
for split, n in (("TRAIN", 48), ("TEST", 24)):
    xs, ys = [], []
    with open(f"Waves_{split}.ts", "w") as f:
        f.write("@problemName Waves\n@timeStamps false\n@univariate false\n@dimensions 3\n"
                "@equalLength true\n@seriesLength 40\n@classLabel true ramp sine\n@data\n")
        for i in range(n):
            y = i % 2
            x = r.normal(0, 0.3, (3, 40))
            t = np.arange(40)
            x[1] += np.sin(t / 3.0) if y else t / 20.0 - 1
            f.write(":".join(",".join(f"{v:.5f}" for v in row) for row in x) + f":{['ramp', 'sine'][y]}\n")
            xs.append(np.array([[float(f"{v:.5f}") for v in row] for row in x], np.float32)); ys.append(y)
    if split == "TEST":
        np.savez("waves_test.npz", x=np.array(xs), y=np.array(ys))
PY
mkdir ts && mv Waves_TRAIN.ts Waves_TEST.ts ts/
"$BIN/mgpu-train" --data ts --model "$SRC/models/har-cnn1d.spec" --epochs 8 --batch-size 8 \
	--lr 0.05 -q --save-dir ck1 >ts.tsv || fail "1-D net"
acc=$(awk -F '\t' '$1 == "summary" { print $12 }' ts.tsv)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "1-D test accuracy $acc: $(cat ts.tsv)"
"$BIN/mgpu-train" --data ts --model "$SRC/models/har-cnn1d.spec" --max-steps 1 --batch-size 8 \
	2>info.txt >/dev/null || fail "1-D info run"
grep -q "model cnn:input 3 40; conv 32 k=7 s=1 p=3; bn; relu; " info.txt ||
	fail "1-D spec line: $(cat info.txt)"
test_loss=$(awk -F '\t' '$1 == "summary" { print $11 }' ts.tsv)
steps=$(awk -F '\t' '$1 == "summary" { print $2 }' ts.tsv)
"$PY" "$SRC/tests/cli/cnn_fwd.py" "ck1/$(cat ck1/latest)/model.safetensors" waves_test.npz "$test_loss" "$steps" \
	>fwd1.txt 2>&1 || fail "numpy forward of the 1-D net: $(cat fwd1.txt)"

# The ResNet spec file loads and runs on 28x28 images.
mkidx_big big 64
"$BIN/mgpu-train" --data big --model "$SRC/models/resnet-fmnist.spec" --max-steps 2 \
	--batch-size 8 -q >big.tsv || fail "models/resnet-fmnist.spec"

# Refused, naming the problem.
expect 1 "'d': samples are 1 x 8 x 8 but the model's input line says 3 x 8 x 8" \
	"$BIN/mgpu-train" --data d --model "cnn:input 3 8 8; conv 4 k=3; linear auto" -q
expect 1 "line 2 (maxpool) gets 4 x 2 x 2: its output would be empty" \
	"$BIN/mgpu-train" --data d --model "cnn:conv 4 k=7; maxpool 3; linear auto" -q
expect 2 "a conv net ends with a 'linear' line" \
	"$BIN/mgpu-train" --data d --model "cnn:conv 4 k=3; relu" -q
expect 2 "--dtype fp16: a cnn trains in fp32 or bf16" \
	"$BIN/mgpu-train" --data d --model "$res" --dtype fp16 -q
exit 0

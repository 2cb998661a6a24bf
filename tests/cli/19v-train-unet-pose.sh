# A U-Net on keypoint targets (examples/make_pose_data.py's frames,
# resized to 24x24): two levels of skips (save, cat), nearest upsampling
# and a transposed conv, ending in `conv auto k=1` (one map per part) at
# output stride 2; its loss falls, and an independent numpy forward of its
# checkpoint (tests/cli/cnn_fwd.py) reproduces every map of --predict and
# the test loss, the MSE against the keypoints' Gaussian maps;
# models/unet-pose.spec trains on the frames at their full 96x96.
. tests/cli/lib.sh
need_pose_python
TR=$BIN/mgpu-train
"$PY" "$SRC/examples/make_pose_data.py" -o pose.tar --count 200 2>err.txt ||
	fail "make_pose_data: $(cat err.txt)"
"$BIN/mgpu-shard" -q --val-fraction 0.1 --test-fraction 0.1 --resize 24x24 -d s -o s/m.tsv \
	pose.tar 2>err.txt || fail "shard: $(cat err.txt)"
"$BIN/mgpu-cache" -q -o c s/m.tsv >/dev/null 2>err.txt || fail "cache: $(cat err.txt)"

# 24 -> 12 (save a) -> 6 (save b) -> 3, back up to 6 (cat b) and 12 (cat a)
NET="cnn:conv 8 k=3 s=2 p=1; bn; relu; save a; maxpool 2; conv 12 k=3 p=1; bn; relu; \
save b; maxpool 2; conv 16 k=3 p=1; relu; up 2; cat b; conv 12 k=3 p=1; relu; \
tconv 8 k=2 s=2 bias; cat a; conv 8 k=3 p=1; relu; conv auto k=1 bias"
"$TR" -q --data c --model "$NET" --output-stride 2 --sigma 1 --optimizer adamw --lr 0.003 \
	--epochs 3 --batch-size 16 --log-every 1 --save-dir ck --predict maps.npy >run.tsv \
	2>err.txt || fail "train: $(cat err.txt)"
awk -F '\t' '$1 == "step" { if (!f) f = $4; l = $4 } END { exit !(l < 0.7 * f) }' run.tsv ||
	fail "the loss did not fall: $(awk -F '\t' '$1 == "step"' run.tsv | cut -f 2,4)"
grep -q "^summary" run.tsv || fail "no summary: $(cat run.tsv)"
test_loss=$(awk -F '\t' '$1 == "summary" { print $11 }' run.tsv)
steps=$(awk -F '\t' '$1 == "summary" { print $2 }' run.tsv)
"$PY" "$SRC/tests/cli/cnn_fwd.py" "ck/$(cat ck/latest)/model.safetensors" s/m.tsv "$test_loss" \
	"$steps" --stride 2 --sigma 1 --predict maps.npy >fwd.txt 2>&1 ||
	fail "numpy forward: $(cat fwd.txt)"
grep -q "^--predict: (20, 2, 12, 12) " fwd.txt || fail "maps: $(cat fwd.txt)"

# The spec under models/ at 96x96: 24x24 maps at output stride 4.
"$BIN/mgpu-shard" -q --test-fraction 0.1 -d s96 -o s96/m.tsv pose.tar 2>err.txt ||
	fail "shard 96x96: $(cat err.txt)"
"$TR" -q --data s96/m.tsv --model "$SRC/models/unet-pose.spec" --output-stride 4 --sigma 1 \
	--max-steps 2 --batch-size 8 --predict m96.npy >u.tsv 2>err.txt ||
	fail "models/unet-pose.spec: $(cat err.txt)"
"$PY" -c 'import numpy as np, sys; a = np.load("m96.npy"); sys.exit(a.shape != (20, 2, 24, 24))' ||
	fail "unet-pose maps: $("$PY" -c 'import numpy as np; print(np.load("m96.npy").shape)')"
exit 0

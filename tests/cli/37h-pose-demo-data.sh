# mk/pose-data.sh, the data step of make demo-pose: FRAMES frames of
# examples/make_pose_data.py split with seed 42 (10% validation, 10% test)
# and cached, the cache's path printed; a second run keeps what is there
# (the same tar, "already holds this shard set", the cache up to date);
# another frame count gets its own tar, shards and cache beside the first;
# and the U-Net of models/unet-pose.spec trains a step on that cache with
# the demo's flags (its 24x24 maps fit the 96x96 frames at stride 4).
. tests/cli/lib.sh
need_pose_python
cd "$SRC"
out=$(PYTHON=$PY B=${MGPU_BUILD:-build} sh mk/pose-data.sh "$T/d" 100 2>"$T/err.txt") ||
	fail "pose-data: $(cat "$T/err.txt")"
[ "$out" = "$T/d/pose-100.cache" ] || fail "printed '$out', not the cache"
"$BIN/mgpu-cache" --info "$out" >"$T/info.txt" 2>&1 || fail "cache info: $(cat "$T/info.txt")"
grep -q '^train	80	1x96x96	u8	.*keypoints 2x2$' "$T/info.txt" || fail "train split: $(cat "$T/info.txt")"
grep -q '^val	10	' "$T/info.txt" && grep -q '^test	10	' "$T/info.txt" ||
	fail "splits: $(cat "$T/info.txt")"
stamp=$(stat -c %Y.%s "$T/d/pose-100.tar")
PYTHON=$PY B=${MGPU_BUILD:-build} sh mk/pose-data.sh "$T/d" 100 >/dev/null 2>"$T/err2.txt" ||
	fail "second run: $(cat "$T/err2.txt")"
[ "$(stat -c %Y.%s "$T/d/pose-100.tar")" = "$stamp" ] || fail "the second run drew the frames again"
grep -q "already holds this shard set" "$T/err2.txt" && grep -q "up to date" "$T/err2.txt" ||
	fail "the second run redid work: $(cat "$T/err2.txt")"
PYTHON=$PY B=${MGPU_BUILD:-build} sh mk/pose-data.sh "$T/d" 50 >/dev/null 2>"$T/err3.txt" ||
	fail "another count: $(cat "$T/err3.txt")"
[ -s "$T/d/pose-50.cache" ] && [ -s "$T/d/pose-100.cache" ] || fail "the counts' caches are not side by side"
"$BIN/mgpu-train" -q --json --data "$out" --model models/unet-pose.spec --output-stride 4 --sigma 1 \
	--max-steps 1 --batch-size 8 --optimizer adamw --lr 0.003 >"$T/train.json" 2>"$T/err4.txt" ||
	fail "unet-pose on the demo data: $(cat "$T/err4.txt")"
grep -q '"test_kp_err_px":' "$T/train.json" || fail "no keypoint error: $(tail -n 1 "$T/train.json")"

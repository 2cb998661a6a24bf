# mgpu-train: every bad input gives one line naming the problem, exit 1.
. tests/cli/lib.sh
mkidx good 300 50 8 4
expect 1 "'missing': does not exist; want a cache" "$BIN/mgpu-train" --data missing
mkidx trunc 300 50 8 4 truncate
expect 1 "trunc/train-images-idx3-ubyte.gz" "$BIN/mgpu-train" --data trunc --model mlp:64-4
grep -q "truncated" err.txt || fail "truncated IDX: $(cat err.txt)"
mkidx magic 300 50 8 4 magic
expect 1 "magic" "$BIN/mgpu-train" --data magic --model mlp:64-4
grep -q "magic/train-images-idx3-ubyte.gz" err.txt || fail "magic: no file name: $(cat err.txt)"
mkidx label 300 50 8 4 label
expect 1 "labels go up to 6 but the model has 4 classes: write --model mlp:64-7" \
	"$BIN/mgpu-train" --data label --model mlp:64-4
expect 1 "samples have 64 features but the model takes 784: write --model mlp:64-10" \
	"$BIN/mgpu-train" --data good --model mlp:784-10
expect 2 "bad layer size" "$BIN/mgpu-train" --data good --model mlp:64-x-4
printf 'mlp:64-8-4\nact=softplus\n' >bad.spec
expect 2 "'bad.spec': act 'softplus' is not relu|gelu|tanh" "$BIN/mgpu-train" --data good --model bad.spec
touch afile
expect 1 "--save-dir: 'afile/ck': cannot create directory" "$BIN/mgpu-train" --data good --model mlp:64-4 --save-dir afile/ck
[ ! -e afile/ck ] || fail "left a save dir behind"
expect 1 "'nock': no such checkpoint directory" "$BIN/mgpu-train" --data good --model mlp:64-4 --resume nock
expect 1 "the global batch of 1000 samples (1000 per device x 1 accumulation steps x 1 ranks) is larger than the 270 training samples" "$BIN/mgpu-train" --data good --model mlp:64-4 --batch-size 1000
# A diverging run (the loss overflows to NaN after a few steps) stops at
# the step that went non-finite, exit 1, before saving it: latest stays the
# last good checkpoint, with valid JSON. Two ranks stop together.
diverge() { "$BIN/mgpu-train" --data good --model mlp:64-16-4 --batch-size 16 --lr 1e6 \
	--save-every 1 --keep 0 -q "$@"; }
for ranks in 1 2; do
	set +e
	diverge --cpu-ranks $ranks --save-dir div$ranks >div.tsv 2>div.err
	rc=$?
	set -e
	[ $rc = 1 ] || fail "diverging run ($ranks ranks) exited $rc: $(cat div.err)"
	n=$(sed -n 's/.*error: step \([0-9]*\): the loss is NaN: training diverged.*/\1/p' div.err | head -n 1)
	[ -n "$n" ] || fail "diverging run ($ranks ranks): $(cat div.err)"
	[ "$(cat div$ranks/latest)" = "$(printf 'step-%08d' $((n - 1)))" ] ||
		fail "latest is $(cat div$ranks/latest) after step $n diverged"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(c))' \
		"div$ranks/$(cat div$ranks/latest)/state.json" || fail "latest state.json is not JSON"
done
exit 0

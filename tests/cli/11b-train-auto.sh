# mgpu-train takes the input width and the class count from the data where
# the spec says auto (mlp:auto-16-auto), and the default model does so; the
# checkpoint records the sizes the data gave; a spec the data does not fit
# is an error that names the spec to write.
. tests/cli/lib.sh
mkidx d 300 50 8 4
# the default model: 64 inputs, 4 classes from the data
"$BIN/mgpu-train" --data d --epochs 1 --batch-size 32 >def.tsv 2>def.err ||
	fail "default model: $(cat def.err)"
grep -q "model mlp:64-512-256-4,act=relu;" def.err || fail "default model: $(cat def.err)"
grep -q '^summary	' def.tsv || fail "default model: no summary: $(cat def.tsv)"

"$BIN/mgpu-train" --data d --model mlp:auto-16-auto --epochs 1 --batch-size 32 -q \
	--save-dir ck >auto.tsv 2>auto.err || fail "auto: $(cat auto.err)"
grep -q '"spec": "mlp:64-16-4,act=relu"' ck/latest/state.json 2>/dev/null ||
	grep -q '"spec": "mlp:64-16-4,act=relu"' "ck/$(cat ck/latest)/state.json" ||
	fail "checkpoint spec: $(cat "ck/$(cat ck/latest)/state.json")"
"$BIN/mgpu-train" --resume ck --epochs 2 -q >res.tsv 2>res.err || fail "resume: $(cat res.err)"
grep -q '^summary	' res.tsv || fail "resume: $(cat res.tsv)"
# a CSV of 5 features and 3 classes through mgpu-shard
python3 -c '
import random
r = random.Random(1)
print("a,b,c,d,e,label")
for i in range(120):
    y = i % 3
    print(",".join(str(r.random() + (j == y)) for j in range(5)) + ",%d" % y)' >t.csv
"$BIN/mgpu-shard" -q -o sh/manifest.tsv t.csv 2>sh.err || fail "shard: $(cat sh.err)"
"$BIN/mgpu-train" --data sh --model mlp:auto-8-auto --epochs 1 --batch-size 8 >csv.tsv 2>csv.err ||
	fail "csv: $(cat csv.err)"
grep -q "model mlp:5-8-3,act=relu;" csv.err || fail "csv: $(cat csv.err)"

expect 1 "'d': samples have 64 features but the model takes 6: write --model mlp:64-4,act=relu" \
	"$BIN/mgpu-train" --data d --model mlp:6-4
expect 1 "'d': labels go up to 3 but the model has 2 classes: write --model mlp:64-8-4,act=relu" \
	"$BIN/mgpu-train" --data d --model mlp:auto-8-2
expect 2 "a hidden size cannot be auto" "$BIN/mgpu-train" --data d --model mlp:auto-auto-4
exit 0

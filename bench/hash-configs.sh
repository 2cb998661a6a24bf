#!/bin/bash
# hash-configs.sh OLD_BUILD NEW_BUILD - a refactoring's bit-identity check:
# ~15 short training runs (mlp on 1, 2 and 4 CPU ranks, ddp and dp,
# accumulation, clipping, AdamW, the ref backend, dropout; a gpt in fp32 and
# bf16 on 1 and 2 ranks; token ids) with both builds, each saving its last
# step, and the sha256 of the checkpoints' tensor bytes (model and
# optimizer safetensors past their JSON headers) compared. Prints one
# "config old-hash new-hash" line per run; exits 1 when any pair differs.
# Needs two builds, so it is not part of tests/run.sh; run it before merging
# a change that must not move the numbers.
set -eu
[ $# = 2 ] || { echo "usage: $0 OLD_BUILD NEW_BUILD" >&2; exit 2; }
OLD=$(cd "$1" && pwd) NEW=$(cd "$2" && pwd)
MGPU_BUILD=$OLD
. tests/cli/lib.sh # cd's into a fresh temporary directory, removed on exit

mkidx d 600 64 8 4
text_idx t 400 32 17 3
python3 - <<'PY'
import array, random
r = random.Random(7)
ids = array.array("H", [(i * 7 + r.randrange(3)) % 300 for i in range(16 * 60 + 1 + 5)])
h = array.array("i", [0] * 256); h[0] = 20240520; h[1] = 1; h[2] = len(ids)
open("a.bin", "wb").write(h.tobytes() + ids.tobytes())
PY
"$OLD/bin/mgpu-shard" -q --tokens --context 16 --val-fraction 0.1 -o tok/manifest.tsv a.bin

# tensors FILE: the bytes past a safetensors file's 8-byte length and header
tensors() {
	n=$(od -An -tu8 -N8 "$1" | tr -d ' ')
	tail -c +$((9 + n)) "$1"
}

# hash BUILD NAME ARGS...: train with BUILD, hash the last checkpoint
hash() {
	b=$1 name=$2
	shift 2
	rm -rf "ck-$name"
	"$b/bin/mgpu-train" -q --save-dir "ck-$name" --keep 1 "$@" >/dev/null ||
		fail "$name: mgpu-train of $b failed"
	step=ck-$name/$(cat "ck-$name/latest")
	{ tensors "$step/model.safetensors"; tensors "$step/optim.safetensors"; } |
		sha256sum | cut -c 1-16
}

mlp="--data d --model mlp:64-48-32-4,act=gelu --epochs 1 --max-steps 12 --seed 3"
gpt="--data t --model gpt:layers=2,heads=2,dim=32,ctx=16,vocab=128 --max-steps 8 --seed 3"
tok="--data tok --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=300,padded_vocab=320 --max-steps 6"
bad=0
while IFS='|' read -r name args; do
	[ -n "$name" ] || continue
	a=$(hash "$OLD" "$name" $args)
	b=$(hash "$NEW" "$name" $args)
	echo "$name $a $b"
	[ "$a" = "$b" ] || { echo "DIFFERS: $name" >&2; bad=1; }
done <<EOF
mlp-1|$mlp --batch-size 32
mlp-sgd-nesterov|$mlp --batch-size 32 --nesterov --momentum 0.9
mlp-adamw|$mlp --batch-size 32 --optimizer adamw --lr 0.002 --weight-decay 0.01
mlp-ddp2|$mlp --batch-size 16 --cpu-ranks 2 --optimizer adamw --lr 0.002
mlp-dp2|$mlp --global-batch-size 32 --cpu-ranks 2 --mode dp
mlp-ddp4-clip|$mlp --batch-size 8 --cpu-ranks 4 --clip-grad-norm 0.3
mlp-accum|$mlp --batch-size 16 --grad-accum-steps 2 --optimizer adamw
mlp-clip|$mlp --batch-size 32 --clip-grad-norm 0.3
mlp-ref|$mlp --batch-size 32 --backend ref
mlp-dropout-ln|--data d --model mlp:64-48-32-4,dropout=0.2,layernorm --epochs 1 --max-steps 12 --seed 3 --batch-size 32 --cpu-ranks 2
mlp-bf16|$mlp --batch-size 32 --dtype bf16
gpt-fp32|$gpt --batch-size 8 --optimizer adamw --lr 0.01 --warmup-steps 2
gpt-bf16|$gpt --batch-size 8 --optimizer adamw --lr 0.01 --dtype bf16
gpt-ddp2|$gpt --batch-size 4 --cpu-ranks 2 --optimizer adamw --lr 0.01 --clip-grad-norm 1
gpt-dropout-accum|--data t --model gpt:layers=1,heads=2,dim=16,ctx=16,dropout=0.1 --max-steps 6 --batch-size 4 --grad-accum-steps 2
gpt-tokens|$tok --batch-size 8 --optimizer adamw
gpt-tokens-bf16-2|$tok --batch-size 4 --cpu-ranks 2 --dtype bf16
EOF
exit $bad

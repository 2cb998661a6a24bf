# bench/torch_resnet.py builds PyTorch's network from an mgpu conv-net spec
# file itself (so the benchmark of bench/cnn.sh always compares the same
# network): for models/resnet-fmnist.spec and an
# inline spec of every layer kind, its state_dict has exactly the tensor
# names and shapes of the model.safetensors mgpu-train writes (its
# --check), and a spec it cannot read is an error naming the line.
# PyTorch: BUILD/torch-venv (make bench-torch, bench-cnn install it) or
# the python3 on PATH; without one the test is skipped.
. tests/cli/lib.sh
PY=
for p in "$(dirname "$BIN")/torch-venv/bin/python" python3; do
	if "$p" -c 'import torch' >/dev/null 2>&1; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "no Python with torch (make bench-cnn installs one)"; exit 77; }
TR=$SRC/bench/torch_resnet.py
mkidx d 64 16 8 4
# names SPEC INPUT CLASSES: torch_resnet.py's tensors against a 1-step
# mgpu-train checkpoint's, "name<TAB>shape" sorted
names() {
	spec=$1 input=$2 classes=$3
	"$PY" "$TR" --spec "$spec" --input "$input" --classes "$classes" --check | sort >torch.txt ||
		fail "$spec: torch_resnet.py --check failed"
	rm -rf ck
	"$BIN/mgpu-train" --data "$4" --model "$spec" --max-steps 1 --batch-size 4 -q \
		--save-dir ck >/dev/null 2>err.txt || fail "$spec: mgpu-train: $(cat err.txt)"
	python3 - ck >mgpu.txt <<'PY'
import json, struct, sys
d = sys.argv[1]
step = open(d + "/latest").read().strip()
b = open(f"{d}/{step}/model.safetensors", "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
for k, v in sorted(h.items()):
    if k != "__metadata__":
        print(f"{k}\t{'x'.join(map(str, v['shape'])) or 'scalar'}")
PY
	sort -o mgpu.txt mgpu.txt
	diff torch.txt mgpu.txt >diff.txt || fail "$spec: torch (<) and mgpu (>) differ: $(cat diff.txt)"
}
names "$SRC/models/resnet-fmnist.spec" 1,8,8 4 d
printf 'cnn\nconv 6 k=3 s=1 p=1 bias\ngn 2\nsilu\nmaxpool 2\nres 6\nres 8 s=2\navgpool 2 p=1\ndropout 0.1\nconv 4 k=1 g=2\nbn\nrelu\nflatten\nlinear 5\nlinear auto\n' >all.spec
names all.spec 1,8,8 4 d
printf 'cnn\nconv 4 k=7 p=3 fused\n' >bad.spec
if "$PY" "$TR" --spec bad.spec --check >out.txt 2>err.txt; then fail "bad.spec accepted"; fi
grep -q "bad.spec: line 2: unknown key 'fused'\|bad.spec: line 2: unexpected 'fused'" err.txt ||
	fail "bad.spec: $(cat err.txt)"
exit 0

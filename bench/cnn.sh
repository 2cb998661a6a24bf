#!/bin/sh
# cnn.sh BUILD - the conv net of models/resnet-fmnist.spec on CPU ranks, mgpu
# (mgpu-bench train) against PyTorch's own implementation of the same spec
# (bench/torch_resnet.py parses the spec file, so both always train one
# network), in one run: 1 and 2 ranks (PyTorch: DDP over gloo), one thread
# per rank for both, fp32 and bf16 (PyTorch: autocast), the same per-rank
# batch of Fashion-MNIST-shaped samples (1x28x28, 10 classes), SGD with
# momentum. One table: samples/s (median of CNN_REPEAT runs, the warm-up
# steps left out), speedup and efficiency against 1 rank, each rank's peak
# resident set (mgpu-train's rss_bytes; PyTorch's ru_maxrss), and mgpu's
# throughput and memory against PyTorch's in the same configuration.
# `make bench-cnn` runs it.
#
# mgpu trains on Fashion-MNIST itself (`make deps`), its first 6000
# training and 500 test images (so that the evaluation at the end of each
# run, which is not timed, stays short); PyTorch on random batches of that
# shape, which time the same.
# PyTorch comes from BUILD/torch-venv (bench/torch_venv.sh: installed from
# PyPI when missing; without a network its rows are skipped, saying why).
#
# Environment: CNN_SPEC, CNN_BATCH (per rank), CNN_STEPS, CNN_WARMUP,
# CNN_REPEAT, CNN_RANKS, CNN_DTYPES.
set -eu
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
SPEC=${CNN_SPEC:-$SRC/models/resnet-fmnist.spec}
BATCH=${CNN_BATCH:-64}
STEPS=${CNN_STEPS:-40}
WARMUP=${CNN_WARMUP:-10}
REPEAT=${CNN_REPEAT:-3}
RANKS=${CNN_RANKS:-1,2}
DTYPES=${CNN_DTYPES:-fp32,bf16}
VENV=$B/torch-venv
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

. "$SRC/bench/torch_venv.sh" # torch_python

[ -r "$SPEC" ] || { echo "cnn.sh: '$SPEC': no such spec file" >&2; exit 1; }
FM=/usr/share/datasets/fashion-mnist
[ -r "$FM/train-images-idx3-ubyte.gz" ] ||
	{ echo "cnn.sh: '$FM' lacks Fashion-MNIST: run make deps" >&2; exit 1; }
python3 - "$FM" "$W/fmnist" <<'PY'
import gzip, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
for split, n in (("train", 6000), ("t10k", 500)):
    for kind, item in (("images-idx3", 784), ("labels-idx1", 1)):
        with gzip.open(f"{src}/{split}-{kind}-ubyte.gz") as f:
            b = f.read()
        ndim = b[3]
        head = b[:4] + struct.pack(">I", n) + b[8:4 + 4 * ndim]
        with gzip.open(f"{dst}/{split}-{kind}-ubyte.gz", "wb") as f:
            f.write(head + b[4 + 4 * ndim:4 + 4 * ndim + n * item])
PY
echo "# $(basename "$SPEC"), batch $BATCH per rank, SGD, $STEPS steps ($WARMUP left out), median of $REPEAT, 1 thread per rank"
"$B/bin/mgpu-bench" train -q --cpu-ranks "$RANKS" --modes ddp --dtypes "$DTYPES" \
	--repeat "$REPEAT" --warmup-steps "$WARMUP" --format tsv -- --data "$W/fmnist" --model "$SPEC" \
	--batch-size "$BATCH" --max-steps "$STEPS" --epochs 100 >"$W/mgpu.tsv" ||
	[ -s "$W/mgpu.tsv" ] || exit 1 # a configuration that failed is a row saying why
PYT=$(torch_python) || PYT=
for r in $(seq "$REPEAT"); do
	[ -n "$PYT" ] || break
	"$PYT" "$SRC/bench/torch_resnet.py" --spec "$SPEC" --batch-size "$BATCH" --steps "$STEPS" \
		--warmup-steps "$WARMUP" --ranks "$RANKS" --dtypes "$DTYPES" >"$W/torch$r.tsv" \
		2>"$W/torch.err" || { cat "$W/torch.err" >&2; exit 1; }
done
# one table: mgpu's rows as mgpu-bench gave them, PyTorch's the median of
# its runs per configuration (rss: the run with that median)
python3 - "$W/mgpu.tsv" "$W"/torch*.tsv <<'PY'
import csv, sys

def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))

def mib(lst):
    return [int(v) / 2**20 for v in lst.split(",") if v not in ("", "NA")]

out = []
for r in rows(sys.argv[1]):
    if r["status"] != "ok":
        out.append(("mgpu " + r["config"], int(r["devices"]), r["dtype"], None, None, None,
                    r["error"]))
        continue
    out.append(("mgpu " + r["config"], int(r["devices"]), r["dtype"], float(r["samples_per_s"]),
                float(r["speedup"]), float(r["efficiency"]), mib(r["rss_bytes"])))
mg = rows(sys.argv[1])
core = next((r["blas_core"] for r in mg if r["blas_core"] != "NA"), "unknown")
runs = [rows(p) for p in sys.argv[2:]]
for i, r in enumerate(runs[0] if runs else []):
    same = sorted((float(run[i]["samples_per_s"]), run[i]) for run in runs)
    med = same[(len(same) - 1) // 2][1]
    out.append((med["config"], int(med["ranks"]), med["dtype"], float(med["samples_per_s"]),
                float(med["speedup"]), float(med["efficiency"]), mib(med["rss_bytes"])))
torch = {(n, d): (s, max(m)) for c, n, d, s, _, _, m in out if c.startswith("PyTorch") and s}
print("| Configuration | Throughput (samples/s) | Speedup | Efficiency "
      "| Peak RSS per rank (MiB) | Samples/s vs PyTorch | Peak RSS vs PyTorch |")
print("|---|---:|---:|---:|---:|---:|---:|")
for c, n, d, s, sp, ef, m in out:
    if s is None:
        print(f"| {c} | failed: {m} | | | | | |")
        continue
    t = torch.get((n, d)) if c.startswith("mgpu") else None
    vs = f"{s / t[0]:.2f}x" if t else ""
    mem = f"{max(m) / t[1]:.2f}x" if t and m else ""
    print(f"| {c} | {s:.0f} | {sp:.2f}x | {100 * ef:.0f}% | {', '.join(f'{v:.0f}' for v in m)} "
          f"| {vs} | {mem} |")
print(f"\nmgpu: OpenBLAS kernels {core}, oneDNN for convolutions, 1 thread per CPU rank.")
PY
[ -z "$PYT" ] || tail -n 1 "$W/torch.err"

#!/usr/bin/env python3
"""torch_mlp.py - PyTorch eager on mgpu-train's default job, the MLP on
Fashion-MNIST, with the training set resident on the device: the reference
of issue 11's large-batch comparison (`make bench-gpu`, bench/gpu.sh).

The model is mgpu's default, mlp:784-512-256-10 with ReLU, SGD with
momentum 0.9 and lr 0.05 (mgpu-train's defaults); the 60000 training images
go to the device once as uint8, every step gathers its rows from a
per-epoch permutation made on the device and normalises them there (mgpu
normalises by the training set's mean and standard deviation, one scalar
each, as here). Nothing crosses to the host inside the timed steps unless
--item-every N asks for the loss every N steps (mgpu-train reads its loss
every step).

Output: TSV (default) or --format markdown, one row per batch size:
batch_size, samples_per_s, step_ms.
"""
import argparse
import gzip
import os
import struct
import sys
import time


def read_idx(path):
    """The array of an IDX file (gzip or not) as bytes and its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise SystemExit(f"torch_mlp.py: error: '{path}': not an unsigned-byte IDX file")
    ndim = data[3]
    shape = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = data[4 + 4 * ndim:]
    count = 1
    for s in shape:
        count *= s
    if len(body) < count:
        raise SystemExit(f"torch_mlp.py: error: '{path}': {len(body)} bytes, the header "
                         f"says {count}")
    return body[:count], shape


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise SystemExit(f"torch_mlp.py: error: '{data_dir}': no {stem}[.gz] (make deps installs "
                     "dataset-fashion-mnist)")


def load(torch, data_dir, device):
    xb, xs = read_idx(find(data_dir, "train-images-idx3-ubyte"))
    yb, _ = read_idx(find(data_dir, "train-labels-idx1-ubyte"))
    x = torch.frombuffer(bytearray(xb), dtype=torch.uint8).view(xs[0], -1)
    y = torch.frombuffer(bytearray(yb), dtype=torch.uint8).long()
    xf = x.double()
    mean, std = xf.mean().item(), xf.std(unbiased=False).item()
    return x.to(device), y.to(device), 1.0 / std, -mean / std


def run(torch, a, bs, x, y, scale, shift):
    nn = torch.nn
    torch.manual_seed(a.seed)
    dev = x.device
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    n = x.shape[0]
    per_epoch = n // bs
    perm, pos = None, per_epoch
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    t0 = None
    for s in range(a.steps):
        if s == a.warmup_steps:
            sync()
            t0 = time.perf_counter()
        if pos == per_epoch:
            perm, pos = torch.randperm(n, device=dev), 0
        rows = perm[pos * bs:(pos + 1) * bs]
        pos += 1
        xb = x[rows].float() * scale + shift
        loss = lossf(model(xb), y[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if a.item_every and (s + 1) % a.item_every == 0:
            loss.item()
    sync()
    wall = time.perf_counter() - t0
    timed = a.steps - a.warmup_steps
    return bs * timed / wall, 1000.0 * wall / timed


def main():
    p = argparse.ArgumentParser(description="PyTorch eager on mgpu's default MLP job, the "
                                "data resident on the device")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--batch-sizes", default="512,1024,2048,4096")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup-steps", type=int, default=50)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--item-every", type=int, default=0,
                   help="read the loss on the host every N steps (0: never)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--format", choices=["tsv", "markdown"], default="tsv")
    a = p.parse_args()
    if a.steps <= a.warmup_steps:
        raise SystemExit("torch_mlp.py: error: --steps must exceed --warmup-steps")
    try:
        sizes = [int(v) for v in a.batch_sizes.split(",")]
    except ValueError:
        raise SystemExit(f"torch_mlp.py: error: --batch-sizes '{a.batch_sizes}': not a "
                         "list of integers")
    import torch
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("torch_mlp.py: error: no CUDA device (give --device cpu)")
    x, y, scale, shift = load(torch, a.data, torch.device(a.device))
    rows = [(bs,) + run(torch, a, bs, x, y, scale, shift) for bs in sizes]
    if a.format == "markdown":
        print("| Batch size | Samples/s | Step (ms) |")
        print("|---:|---:|---:|")
        for bs, sps, ms in rows:
            print(f"| {bs} | {sps:.0f} | {ms:.3f} |")
    else:
        print("batch_size\tsamples_per_s\tstep_ms")
        for bs, sps, ms in rows:
            print(f"{bs}\t{sps:.1f}\t{ms:.4f}")
    name = torch.cuda.get_device_name(x.device) if x.device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__}, {name}, eager, data resident, "
          f"{a.steps - a.warmup_steps} timed steps, loss read every "
          f"{a.item_every or 'never'}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""torch_resnet.py - PyTorch's own implementation of a conv net spec of
mgpu-model(7) (models/resnet-fmnist.spec by default), timed the way
`mgpu-bench train` times mgpu-train, for a side-by-side table (bench/cnn.sh).

The spec file is parsed here with the grammar of mgpu-model(7), so both
sides always train the same network: one torch.nn module per line in a
Sequential (names as mgpu's checkpoints: "3.conv1.weight"), conv (no bias
unless `bias`), bn (BatchNorm, eps 1e-5, momentum 0.1), gn, relu, silu,
max/avg pooling, gap, dropout, torchvision's BasicBlock for `res` (a 1x1
conv + bn projection when the shape changes), flatten and a linear head
that flattens its input; 1-D layers when the input is C,L. Input shape
and class count are Fashion-MNIST's (1,28,28 and 10) unless the spec's
`input` line or --input / --classes say otherwise. Data are random
batches of that shape made once per rank, since the timing does not
depend on them; SGD with momentum 0.9 (mgpu-train's default optimizer),
cross-entropy.

Configurations: --ranks 1,2 CPU ranks, each with --threads intra-op
threads (1: as mgpu's CPU rank, one thread), started as torchrun would;
several ranks train under DistributedDataParallel over gloo (its default
broadcast of BatchNorm's buffers included), one rank the bare model; each
once per --dtypes entry: fp32, or bf16 under torch.autocast("cpu").
Throughput: the steps after --warmup-steps, timed on rank 0 between
barriers. Memory: each rank's peak resident set (getrusage's ru_maxrss,
the high-water mark of the whole process: PyTorch's allocations and its
libraries), as mgpu-train reports rss_bytes.

Output: TSV (default) or --format markdown, one row per configuration:
config, dtype, ranks, samples_per_s, step_ms, speedup and efficiency
against the 1-rank row of the same dtype, cpu_s_per_step (all ranks, all
threads), rss_bytes (per rank, comma-separated) and rss_max_mib.
"""
import argparse
import math
import os
import resource
import socket
import sys
import time

ME = "torch_resnet.py"


def die(msg):
    raise SystemExit(f"{ME}: error: {msg}")


# --- the spec grammar of mgpu-model(7) ------------------------------------

def spec_lines(text, where):
    """The layer lines of a spec (file text or inline `cnn:a; b; c`), as
    (line number, words); the `cnn` header checked and dropped."""
    if text.startswith("cnn:"):
        raw = [(0, "cnn")] + [(i + 1, p) for i, p in enumerate(text[4:].split(";"))]
    else:
        raw = list(enumerate(text.split("\n"), 1))
    lines = []
    for no, line in raw:
        words = line.split("#", 1)[0].split()
        if words:
            lines.append((no, words))
    if not lines or lines[0][1] != ["cnn"]:
        die(f"{where}: not a conv-net spec (its first line must be 'cnn')")
    return lines[1:]


def keys(words, where, allowed, positional=()):
    """key=value arguments (ints, or floats for p of dropout) and bare
    positional numbers, named by `positional` in order; flags are words."""
    out, pos = {}, list(positional)
    for w in words:
        if "=" in w:
            k, v = w.split("=", 1)
            if k not in allowed:
                die(f"{where}: unknown key '{k}'")
        elif w in allowed:
            out[w] = True
            continue
        elif pos:
            k, v = pos.pop(0), w
        else:
            die(f"{where}: unexpected '{w}'")
        try:
            out[k] = int(v)
        except ValueError:
            die(f"{where}: '{w}': not an integer")
    return out


def build(torch, text, where, input_shape, classes):
    """The torch.nn.Sequential of the spec, and the input shape it takes."""
    nn = torch.nn
    lines = spec_lines(text, where)
    if lines and lines[0][1][0] == "input":
        try:
            input_shape = tuple(int(v) for v in lines[0][1][1:])
        except ValueError:
            die(f"{where}: line {lines[0][0]}: bad input shape")
        lines = lines[1:]
    if len(input_shape) not in (2, 3):
        die(f"{where}: input shape {input_shape}: want C,H,W or C,L")
    one_d = len(input_shape) == 2
    Conv, BN = (nn.Conv1d, nn.BatchNorm1d) if one_d else (nn.Conv2d, nn.BatchNorm2d)
    MaxP, AvgP = (nn.MaxPool1d, nn.AvgPool1d) if one_d else (nn.MaxPool2d, nn.AvgPool2d)
    Gap = nn.AdaptiveAvgPool1d if one_d else nn.AdaptiveAvgPool2d

    class BasicBlock(nn.Module):
        """torchvision's BasicBlock, with its parameter names."""

        def __init__(self, cin, k, s):
            super().__init__()
            self.conv1 = Conv(cin, k, 3, stride=s, padding=1, bias=False)
            self.bn1 = BN(k)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = Conv(k, k, 3, padding=1, bias=False)
            self.bn2 = BN(k)
            self.downsample = None
            if s != 1 or cin != k:
                self.downsample = nn.Sequential(Conv(cin, k, 1, stride=s, bias=False), BN(k))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (self.downsample(x) if self.downsample is not None else x))

    class FlatLinear(nn.Linear):
        """mgpu's linear flattens its input itself (names stay "i.weight")."""

        def forward(self, x):
            return super().forward(x.flatten(1))

    mods = []
    shape = (1,) + tuple(input_shape)

    def out_shape():
        """The shape the layers so far make of one sample (in eval mode, so
        no running statistic moves and a norm after gap takes one value)."""
        if not mods:
            return shape
        seq = nn.Sequential(*mods).eval()
        with torch.no_grad():
            out = tuple(seq(torch.zeros(shape)).shape)
        seq.train()
        return out

    for i, (no, words) in enumerate(lines):
        at = f"{where}: line {no}"
        op, args = words[0], words[1:]
        cur = out_shape()
        cin = cur[1]
        if op == "conv":
            a = keys(args, at, {"k", "s", "p", "g", "d", "bias"}, ("K",))
            if "K" not in a or "k" not in a:
                die(f"{at}: conv needs K and k=")
            m = Conv(cin, a["K"], a["k"], stride=a.get("s", 1), padding=a.get("p", 0),
                     dilation=a.get("d", 1), groups=a.get("g", 1), bias="bias" in a)
        elif op == "bn":
            keys(args, at, set())
            m = BN(cin)
        elif op == "gn":
            a = keys(args, at, set(), ("G",))
            m = nn.GroupNorm(a["G"], cin)
        elif op in ("relu", "silu"):
            keys(args, at, set())
            m = nn.ReLU() if op == "relu" else nn.SiLU()
        elif op in ("maxpool", "avgpool"):
            a = keys(args, at, {"k", "s", "p"}, ("k", "s"))
            if "k" not in a:
                die(f"{at}: {op} needs its window k")
            P = MaxP if op == "maxpool" else AvgP
            m = P(a["k"], stride=a.get("s", a["k"]), padding=a.get("p", 0))
        elif op == "gap":
            keys(args, at, set())
            m = Gap(1)
        elif op == "dropout":
            if len(args) != 1:
                die(f"{at}: dropout needs its probability")
            m = nn.Dropout(float(args[0]))
        elif op == "res":
            a = keys(args, at, {"s"}, ("K",))
            m = BasicBlock(cin, a["K"], a.get("s", 1))
        elif op == "flatten":
            m = nn.Flatten()
        elif op == "linear":
            if len(args) != 1:
                die(f"{at}: linear needs N or auto")
            if args[0] == "auto" and i != len(lines) - 1:
                die(f"{at}: linear auto is for the last line only")
            n = classes if args[0] == "auto" else int(args[0])
            m = FlatLinear(math.prod(cur[1:]), n)
        else:
            die(f"{at}: unknown layer '{op}'")
        mods.append(m)
    if not lines or lines[-1][1][0] != "linear":
        die(f"{where}: the last line must be a linear")
    return nn.Sequential(*mods), tuple(input_shape)


# --- timing -----------------------------------------------------------------

def timed_steps(torch, model, opt, data, a, sync, autocast):
    """Wall seconds of the steps after the warm-up (between barriers) and
    this process's CPU seconds in them."""
    F = torch.nn.functional
    x, y = data
    t0 = c0 = None
    for s in range(a.steps):
        if s == a.warmup_steps:
            sync()
            t0, c0 = time.perf_counter(), time.process_time()
        with autocast():
            loss = F.cross_entropy(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    sync()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not math.isfinite(loss.item()):
        die("the loss is not finite")
    return wall, cpu


def cpu_rank(rank, world, port, a, dtype, q):
    import torch
    import torch.distributed as dist
    from contextlib import nullcontext

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.spec) as f:
        model, shape = build(torch, f.read(), a.spec, a.input, a.classes)
    sync = lambda: None  # noqa: E731
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = torch.nn.parallel.DistributedDataParallel(model)
        sync = dist.barrier
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, foreach=False)
    g = torch.Generator().manual_seed(a.seed + rank)
    data = (torch.randn((a.batch_size,) + shape, generator=g),
            torch.randint(0, a.classes, (a.batch_size,), generator=g))
    autocast = nullcontext
    if dtype == "bf16":
        autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    wall, cpu = timed_steps(torch, model, opt, data, a, sync, autocast)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    got = torch.tensor([[cpu, rss]], dtype=torch.float64)
    if world > 1:
        every = [torch.zeros_like(got) for _ in range(world)]
        dist.all_gather(every, got)
        got = torch.cat(every)
    if rank == 0:
        q.put((wall, got[:, 0].sum().item(), [int(v) for v in got[:, 1].tolist()]))
    if world > 1:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cpu(a, world, dtype):
    """Every rank in a fresh process, so each one's peak RSS is its own."""
    import torch.multiprocessing as mp

    q = mp.get_context("spawn").Queue()
    mp.start_processes(cpu_rank, args=(world, free_port(), a, dtype, q), nprocs=world,
                       start_method="spawn", join=True)
    return q.get()


def row(a, world, dtype, got):
    wall, cpu, rss = got
    steps = a.steps - a.warmup_steps
    label = (f"PyTorch {world} CPU ranks (DDP, gloo, {dtype})" if world > 1 else
             f"PyTorch 1 CPU rank ({dtype})")
    return {"config": label, "dtype": dtype, "ranks": world,
            "samples_per_s": steps * a.batch_size * world / wall,
            "step_ms": 1e3 * wall / steps, "cpu_s_per_step": cpu / steps, "rss": rss}


COLS = ["config", "dtype", "ranks", "samples_per_s", "step_ms", "speedup", "efficiency",
        "cpu_s_per_step", "rss_bytes", "rss_max_mib"]


def show(rows, fmt, out):
    for r in rows:
        base = next((b for b in rows if b["dtype"] == r["dtype"] and b["ranks"] == 1), None)
        r["speedup"] = r["samples_per_s"] / base["samples_per_s"] if base else float("nan")
        r["efficiency"] = r["speedup"] / r["ranks"]
        r["rss_bytes"] = ",".join(str(v) for v in r["rss"])
        r["rss_max_mib"] = max(r["rss"]) / 2**20

    def cell(v):
        if isinstance(v, float):
            return "NA" if math.isnan(v) else f"{v:.6g}"
        return str(v)
    if fmt == "tsv":
        out.write("\t".join(COLS) + "\n")
        for r in rows:
            out.write("\t".join(cell(r[c]) for c in COLS) + "\n")
        return
    out.write("| Configuration | Throughput (samples/s) | Step (ms) | Speedup | Efficiency "
              "| CPU s/step | Peak RSS per rank (MiB) |\n"
              "|---|---:|---:|---:|---:|---:|---:|\n")
    for r in rows:
        sp = "" if math.isnan(r["speedup"]) else f"{r['speedup']:.2f}x"
        ef = "" if math.isnan(r["efficiency"]) else f"{100 * r['efficiency']:.0f}%"
        mib = ", ".join(f"{v / 2**20:.0f}" for v in r["rss"])
        out.write(f"| {r['config']} | {r['samples_per_s']:.0f} | {r['step_ms']:.1f} | {sp} "
                  f"| {ef} | {r['cpu_s_per_step']:.4f} | {mib} |\n")


def shape_arg(text):
    try:
        v = tuple(int(x) for x in text.split(","))
    except ValueError:
        v = ()
    if len(v) not in (2, 3) or min(v) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': want C,H,W or C,L")
    return v


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spec", default=os.path.join(here, "..", "models", "resnet-fmnist.spec"),
                   help="a conv-net spec file of mgpu-model(7)")
    p.add_argument("--input", type=shape_arg, default=(1, 28, 28),
                   help="sample shape C,H,W or C,L unless the spec fixes it [1,28,28]")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64, help="samples per rank and step")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--ranks", default="1,2", help="CPU rank counts")
    p.add_argument("--dtypes", default="fp32,bf16", help="of fp32,bf16")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per CPU rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--format", choices=["tsv", "markdown"], default="tsv")
    p.add_argument("--check", action="store_true",
                   help="print the network the spec makes (parameter names and shapes) "
                   "and exit, without timing anything")
    a = p.parse_args()
    if a.steps <= a.warmup_steps or a.batch_size < 1 or a.classes < 1:
        p.error("--steps must exceed --warmup-steps, --batch-size and --classes be at least 1")
    dtypes = [d for d in a.dtypes.split(",") if d]
    if not dtypes or any(d not in ("fp32", "bf16") for d in dtypes):
        p.error(f"--dtypes '{a.dtypes}': a list of fp32, bf16")
    try:
        ranks = [int(x) for x in a.ranks.split(",") if x]
    except ValueError:
        ranks = []
    if not ranks or min(ranks) < 1:
        p.error(f"--ranks '{a.ranks}': a list of positive integers")
    try:
        import torch
    except ImportError as e:
        die(f"PyTorch is not importable: {e}")
    try:
        with open(a.spec) as f:
            model, shape = build(torch, f.read(), a.spec, a.input, a.classes)
    except OSError as e:
        die(f"'{a.spec}': {e.strerror}")
    if a.check:
        for name, t in model.state_dict().items():
            print(f"{name}\t{'x'.join(str(d) for d in t.shape) or 'scalar'}")
        return
    rows = [row(a, w, d, run_cpu(a, w, d)) for d in dtypes for w in ranks]
    show(rows, a.format, sys.stdout)
    print(f"torch {torch.__version__}, {a.threads} thread(s) per CPU rank, "
          f"{os.path.basename(a.spec)} on {'x'.join(map(str, shape))} inputs, batch "
          f"{a.batch_size} per rank, {a.steps - a.warmup_steps} timed steps", file=sys.stderr)


if __name__ == "__main__":
    main()

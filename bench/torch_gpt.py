#!/usr/bin/env python3
"""torch_gpt.py - PyTorch's own implementation of mgpu's gpt model, timed the
way `mgpu-bench train` times mgpu-train, for a side-by-side table.

The model is the one of lib/model/gpt.h: token and position embeddings,
pre-LayerNorm blocks (causal multi-head self-attention through
F.scaled_dot_product_attention, a 4*D GELU MLP, residuals), a final
LayerNorm and an output head tied to the token embedding, cross-entropy
over the next byte; AdamW (torch's fused-free default), no dropout. Shapes,
optimizer and per-rank batch are mgpu's; the init is GPT-2's, which does not
change the speed. Data are random bytes made once per rank, as the timing
does not depend on them.

Configurations:
  cpu: --ranks 1,2 DDP ranks over gloo (torch.multiprocessing), each with
       --threads intra-op threads (1: mgpu's CPU rank computes with one
       OpenBLAS thread), started like torchrun would.
  gpu: one GPU, eager fp32, eager with bf16 autocast, and torch.compile of the
       bf16 model (--gpu-modes picks which).
Throughput: the steps after --warmup-steps, timed on rank 0 between
barriers. Output: TSV (default) or --format markdown, one row per
configuration: config, samples_per_s, tokens_per_s (samples/s x ctx),
step_ms, for CPU ranks speedup and efficiency against the 1-rank row, and
cpu_s_per_step / tokens_per_cpu_s: the CPU seconds of all ranks (every
thread) per timed step, which a machine shared with other work does not
inflate the way it inflates wall time.
"""
import argparse
import math
import os
import socket
import sys
import time


def parse_spec(text):
    if not text.startswith("gpt:"):
        raise SystemExit(f"torch_gpt.py: error: --model '{text}': only gpt: specs")
    kv = dict(item.split("=", 1) for item in text[4:].split(","))
    spec = {"layers": int(kv["layers"]), "heads": int(kv["heads"]), "dim": int(kv["dim"]),
            "ctx": int(kv["ctx"]), "vocab": int(kv.get("vocab", 256))}
    if spec["dim"] % spec["heads"]:
        raise SystemExit(f"torch_gpt.py: error: dim {spec['dim']} is not a multiple of heads")
    return spec


def build_model(torch, spec):
    nn = torch.nn
    F = torch.nn.functional
    D, H, T, V, L = spec["dim"], spec["heads"], spec["ctx"], spec["vocab"], spec["layers"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D)
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D)
            self.fc = nn.Linear(D, 4 * D)
            self.mproj = nn.Linear(4 * D, D)
            self.gelu = nn.GELU()  # exact erf form, as mgpu's

        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
            q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, D))
            return x + self.mproj(self.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, D)
            self.wpe = nn.Embedding(T, D)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(D)
            for p in self.parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=0.02)

        def forward(self, idx, tgt):
            x = self.wte(idx) + self.wpe.weight[None, :idx.shape[1]]
            for b in self.blocks:
                x = b(x)
            logits = self.ln_f(x) @ self.wte.weight.t()  # the tied head
            return F.cross_entropy(logits.view(-1, V).float(), tgt.reshape(-1))

    return GPT()


def timed_steps(torch, model, opt, data, steps, warmup, sync, autocast):
    """Wall seconds of the steps after warmup (rank 0's clock, between
    barriers) and the CPU seconds this process spent in them (all its
    threads: intra-op, gloo's)."""
    idx, tgt = data
    t0 = c0 = None
    for s in range(steps):
        if s == warmup:
            sync()
            t0, c0 = time.perf_counter(), time.process_time()
        with autocast():
            loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    sync()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not math.isfinite(loss.item()):
        raise SystemExit("torch_gpt.py: error: the loss is not finite")
    return wall, cpu


def make_data(torch, spec, batch, seed, device):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, spec["vocab"], (batch, spec["ctx"] + 1), generator=g)
    return x[:, :-1].contiguous().to(device), x[:, 1:].contiguous().to(device)


def cpu_rank(rank, world, port, a, q):
    import torch
    import torch.distributed as dist
    from contextlib import nullcontext

    torch.set_num_threads(a.threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(a.seed)
    spec = parse_spec(a.model)
    model = torch.nn.parallel.DistributedDataParallel(build_model(torch, spec))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, foreach=False)
    data = make_data(torch, spec, a.batch_size, a.seed + rank, "cpu")
    wall, cpu = timed_steps(torch, model, opt, data, a.steps, a.warmup_steps, dist.barrier,
                            nullcontext)
    cpu_all = torch.tensor([cpu], dtype=torch.float64)
    dist.all_reduce(cpu_all)  # the CPU seconds of every rank
    if rank == 0:
        q.put((wall, cpu_all.item()))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cpu(a, world):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    mp.start_processes(cpu_rank, args=(world, free_port(), a, q), nprocs=world,
                       start_method="spawn", join=True)
    return q.get()


def run_gpu(a, mode):
    import torch
    from contextlib import nullcontext

    torch.manual_seed(a.seed)
    spec = parse_spec(a.model)
    model = build_model(torch, spec).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    data = make_data(torch, spec, a.batch_size, a.seed, "cuda")
    autocast = nullcontext
    if mode in ("bf16", "compile"):
        autocast = lambda: torch.autocast("cuda", dtype=torch.bfloat16)  # noqa: E731
    if mode == "compile":
        model = torch.compile(model)
    return timed_steps(torch, model, opt, data, a.steps, a.warmup_steps,
                       torch.cuda.synchronize, autocast)  # cpu: the host's share


def row(config, kind, devices, times, a, spec):
    secs, cpu = times
    steps = a.steps - a.warmup_steps
    samples = steps * a.batch_size * devices / secs
    return {"config": config, "kind": kind, "devices": devices,
            "samples_per_s": samples, "tokens_per_s": samples * spec["ctx"],
            "step_ms": 1e3 * secs / steps, "cpu_s_per_step": cpu / steps,
            "tokens_per_cpu_s": steps * a.batch_size * devices * spec["ctx"] / cpu}


def finish(rows):
    for r in rows:
        base = next((b for b in rows if b["kind"] == "cpu" == r["kind"] and
                     b["devices"] == 1), None)
        r["speedup"] = r["samples_per_s"] / base["samples_per_s"] if base else float("nan")
        r["efficiency"] = r["speedup"] / r["devices"]


COLS = ["config", "samples_per_s", "tokens_per_s", "step_ms", "speedup", "efficiency",
        "cpu_s_per_step", "tokens_per_cpu_s"]


def show(rows, fmt, out):
    def cell(v):
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    if fmt == "tsv":
        out.write("\t".join(COLS) + "\n")
        for r in rows:
            out.write("\t".join("NA" if isinstance(r[c], float) and math.isnan(r[c])
                                else cell(r[c]) for c in COLS) + "\n")
        return
    out.write("| Configuration | Throughput (samples/s) | Tokens/s | Step (ms) | Speedup "
              "| Efficiency | CPU s/step | Tokens per CPU s |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|\n")
    for r in rows:
        sp = "" if math.isnan(r["speedup"]) else f"{r['speedup']:.2f}x"
        ef = "" if math.isnan(r["efficiency"]) else f"{100 * r['efficiency']:.0f}%"
        out.write(f"| {r['config']} | {r['samples_per_s']:.0f} | {r['tokens_per_s']:.0f} "
                  f"| {r['step_ms']:.1f} | {sp} | {ef} | {r['cpu_s_per_step']:.4f} "
                  f"| {r['tokens_per_cpu_s']:.0f} |\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="gpt:layers=2,heads=4,dim=128,ctx=64")
    p.add_argument("--batch-size", type=int, default=8, help="samples per rank and step")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--ranks", default="1,2", help="CPU rank counts ('' for none)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per CPU rank")
    p.add_argument("--gpu-modes", default="", help="of fp32,bf16,compile ('' for none)")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--format", choices=["tsv", "markdown"], default="tsv")
    a = p.parse_args()
    if a.steps <= a.warmup_steps or a.batch_size < 1:
        p.error("--steps must exceed --warmup-steps, --batch-size be at least 1")
    spec = parse_spec(a.model)
    try:
        import torch
    except ImportError as e:
        raise SystemExit(f"torch_gpt.py: error: PyTorch is not importable: {e}")
    rows = []
    for w in [int(x) for x in a.ranks.split(",") if x]:
        label = f"PyTorch {w} CPU rank" + ("s (DDP, gloo)" if w > 1 else "")
        rows.append(row(label, "cpu", w, run_cpu(a, w), a, spec))
    modes = [m for m in a.gpu_modes.split(",") if m]
    if modes and not torch.cuda.is_available():
        print("torch_gpt.py: no CUDA device: GPU modes skipped", file=sys.stderr)
        modes = []
    names = {"fp32": "eager fp32", "bf16": "eager bf16 autocast", "compile": "torch.compile bf16"}
    for m in modes:
        rows.append(row(f"PyTorch 1 GPU, {names[m]}", "gpu", 1, run_gpu(a, m), a, spec))
    finish(rows)
    show(rows, a.format, sys.stdout)
    print(f"torch {torch.__version__}, {a.threads} thread(s) per CPU rank, model {a.model}, "
          f"batch {a.batch_size} per rank, {a.steps - a.warmup_steps} timed steps",
          file=sys.stderr)


if __name__ == "__main__":
    main()

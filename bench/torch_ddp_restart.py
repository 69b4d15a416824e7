#!/usr/bin/env python3
"""PyTorch DDP twin of sample_configs/mnist_cnn_collective.yaml for
bench/bench_restart.py, run by `torchrun --nproc-per-node W --max-restarts N`:
each rank trains its shard (batch 32 per worker, Adam, Gloo), rank 0 saves a
checkpoint (model, optimizer, step) every --save-steps, and a (re)started
rank resumes from the latest one, as torchrun's elastic recipe does. Prints
"step N" to stderr after every step (flushed) for the benchmark to time."""
import argparse
import faulthandler
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import load_sample, model_for  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="the dtrain checkout (its sample MNIST)")
    ap.add_argument("--dir", required=True, help="checkpoint directory")
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--save-steps", type=int, default=20)
    a = ap.parse_args()
    faulthandler.register(signal.SIGUSR2)  # kill -USR2 prints every thread's stack
    torch.set_num_threads(1)
    t0 = time.monotonic()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}: process group of {world} in {time.monotonic() - t0:.2f} s (restart "
          f"{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')})", file=sys.stderr, flush=True)
    torch.manual_seed(42)
    model = nn.parallel.DistributedDataParallel(model_for("mnist_cnn"))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    path = os.path.join(a.dir, "ckpt.pt")
    step = 0
    if os.path.exists(path):
        state = torch.load(path, weights_only=True)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        print(f"rank {rank}: resuming at step {step}", file=sys.stderr, flush=True)
    x, y = load_sample(a.root)
    x, y = x[:9000], y[:9000]
    per = 32
    loss_fn = nn.CrossEntropyLoss()
    while step < a.steps:
        g = torch.Generator().manual_seed(step // (9000 // (per * world)))
        order = torch.randperm(9000, generator=g)
        i = (step % (9000 // (per * world))) * per * world + rank * per
        idx = order[i:i + per]
        opt.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        step += 1
        print(f"rank {rank}: step {step} loss {loss.item():.4f}", file=sys.stderr, flush=True)
        if rank == 0 and step % a.save_steps == 0:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path + ".tmp")
            os.replace(path + ".tmp", path)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch anchor for `tapevm train mlp` (issue 20's MLP row): the same 2-64-64-1 tanh MLP
regressing sin(2 x1) cos(1.5 x2) on [-1, 1]^2 from fresh random batches of 1,024 points, Adam
(lr 3e-3, linear warm-up over 50 steps, cosine decay to lr / 30 at the last step), PyTorch's
default Linear initialisation; prints steps per second and the validation mean squared error on
4,096 fixed points as one JSON line.

The batches are drawn on the device (torch.rand), which favours PyTorch: tapevm draws them on
the host and uploads them every step. The loss is read back every --log-interval steps (250, as
tapevm's eval interval), where a training loop would print it; timing starts after --warmup
steps and ends with a synchronisation.

    python3 bench/mlp_torch.py --device cuda --steps 2000
    python3 bench/mlp_torch.py --device cpu --threads 16 --steps 2000
"""
import argparse
import json
import math
import time

import torch


def lr_at(step, steps, lr, warmup=50):
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    progress = (step - warmup) / max(1, steps - warmup)
    low = lr / 30
    return low + 0.5 * (lr - low) * (1 + math.cos(math.pi * min(1.0, progress)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    parser.add_argument("--log-interval", type=int, default=250)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    h = args.hidden
    model = torch.nn.Sequential(torch.nn.Linear(2, h), torch.nn.Tanh(), torch.nn.Linear(h, h), torch.nn.Tanh(),
                                torch.nn.Linear(h, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    def target(x):
        return torch.sin(2 * x[:, :1]) * torch.cos(1.5 * x[:, 1:])

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    validation = torch.rand(4096, 2, device=device) * 2 - 1
    total = args.warmup + args.steps
    start = None
    last_loss = float("nan")
    for step in range(total):
        if step == args.warmup:
            sync()
            start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, total, args.lr)
        x = torch.rand(args.batch, 2, device=device) * 2 - 1
        loss = torch.nn.functional.mse_loss(model(x), target(x))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if (step + 1) % args.log_interval == 0:
            last_loss = loss.item()
    sync()
    seconds = time.perf_counter() - start
    with torch.no_grad():
        mse = torch.nn.functional.mse_loss(model(validation), target(validation)).item()
    name = torch.cuda.get_device_name() if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print(json.dumps({"tool": "pytorch " + torch.__version__, "device": name, "steps": args.steps,
                      "seconds": seconds, "steps_per_s": args.steps / seconds, "loss": last_loss,
                      "validation_mse": mse}))


if __name__ == "__main__":
    main()

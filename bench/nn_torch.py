#!/usr/bin/env python3
"""PyTorch anchors for the nn kernels (issue 19's targets), on the same shapes as bench_nn_gpu.

    python3 bench/nn_torch.py [--quick] [--json FILE]

Measured on the current CUDA device with CUDA events: a warm-up call, then the median of 5 runs
of N calls each. TF32 is off (torch.backends.cuda.matmul.allow_tf32 = False), so f32 matmul is
true f32 as tapevm's. Cases: matmul f32 4096^3 and 8192^3, fp16-in f32-accumulate 4096^3, the
GPT shapes (tokens 16384, d 384, K,N in {384, 1152, 1536}; NN, NT and TN), causal attention
fwd+bwd (batch 64, 6 heads, T 256, head_dim 64; f32 and fp16), layer_norm, softmax,
cross-entropy and AdamW on GPT-sized tensors, and a device copy (bandwidth yardstick).
One JSON line per case with --json.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def timed(call, inner, reps=5):
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / inner)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    rows = []

    def report(name, seconds, flops=0.0, nbytes=0.0):
        line = f"{name:<48} {seconds * 1e3:10.4f} ms"
        if flops:
            line += f"  {flops / seconds * 1e-12:8.2f} TFLOP/s"
        if nbytes:
            line += f"  {nbytes / seconds * 1e-9:8.1f} GB/s"
        print(line, flush=True)
        rows.append({"case": name, "ms": seconds * 1e3, "tflops": flops / seconds * 1e-12 if flops else 0.0,
                     "gbps": nbytes / seconds * 1e-9 if nbytes else 0.0, "source": "torch"})

    def matmul(m, n, k, ta, tb, dtype, label):
        a = torch.randn((k, m) if ta else (m, k), device=device, dtype=dtype)
        b = torch.randn((n, k) if tb else (k, n), device=device, dtype=dtype)
        opa, opb = (a.t() if ta else a), (b.t() if tb else b)
        flops = 2.0 * m * n * k
        seconds = timed(lambda: torch.mm(opa, opb), max(1, min(50, int(2e11 / flops))))
        name = f"matmul {label} {str(dtype).replace('torch.', '')} {m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'}"
        report(name, seconds, flops)

    cubes = [1024] if args.quick else [4096, 8192]
    for s in cubes:
        matmul(s, s, s, False, False, torch.float32, "cube")
    for s in cubes[:1]:
        matmul(s, s, s, False, False, torch.float16, "cube")  # fp16 in, f32 accumulate (cuBLAS default)
    tokens = 1024 if args.quick else 16384
    for k, n in [(384, 1152), (384, 384), (384, 1536), (1536, 384)]:
        matmul(tokens, n, k, False, False, torch.float32, "gpt")
        matmul(tokens, k, n, False, True, torch.float32, "gpt")
        matmul(k, n, tokens, True, False, torch.float32, "gpt")

    # Causal attention forward + backward (scaled_dot_product_attention).
    batch = 8 if args.quick else 64
    for dtype in (torch.float32, torch.float16):
        q, k, v = (torch.randn(batch, 6, 256, 64, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
        grad = torch.randn(batch, 6, 256, 64, device=device, dtype=dtype)

        def attention():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.backward(grad)

        flops = 4.0 * batch * 6 * 256 * 256 * 64 / 2 * 3.5  # fwd (2 matmuls) + bwd (5), causal half
        report(f"attention fwd+bwd causal {str(dtype).replace('torch.', '')} B{batch} H6 T256 D64",
               timed(attention, 10), flops)

    # Memory-bound kernels on GPT-sized activations [tokens][384] and logits [tokens][V].
    x = torch.randn(tokens, 384, device=device)
    gamma, beta = torch.ones(384, device=device), torch.zeros(384, device=device)
    report("layer_norm f32 [tokens][384]", timed(lambda: F.layer_norm(x, (384,), gamma, beta), 20),
           nbytes=2.0 * x.numel() * 4)
    report("softmax f32 [tokens][384]", timed(lambda: torch.softmax(x, -1), 20), nbytes=2.0 * x.numel() * 4)
    vocab = 4096 if args.quick else 50304
    logits = torch.randn(tokens if args.quick else 4096, vocab, device=device)
    targets = torch.randint(0, vocab, (logits.shape[0],), device=device)
    report(f"cross_entropy f32 [{logits.shape[0]}][{vocab}]", timed(lambda: F.cross_entropy(logits, targets), 10),
           nbytes=logits.numel() * 4.0)
    params = [torch.randn(1 << 22, device=device, requires_grad=True) for _ in range(4)]
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer = torch.optim.AdamW(params, lr=1e-3, fused=True)
    report("adamw fused f32 4 x 4M", timed(optimizer.step, 10), nbytes=4 * (1 << 22) * 4 * 7.0)
    big = torch.empty(1 << (20 if args.quick else 28), device=device)
    other = torch.empty_like(big)
    report(f"copy f32 {big.numel() * 4 >> 20} MiB", timed(lambda: other.copy_(big), 10), nbytes=big.numel() * 8.0)

    if args.json:
        with open(args.json, "w") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

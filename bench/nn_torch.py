#!/usr/bin/env python3
"""PyTorch anchors for `tapevm bench-nn`: the same kernels on the same shapes, on CUDA.

    python3 bench/nn_torch.py [--json FILE] [--dtype f32,f16] [--repeats 7] [--quick] [--only GROUPS]

Records carry the same group, kernel, shape and dtype strings as tapevm bench-nn's JSON, so
bench/nn_gpu.sh joins them. f32 matmuls run without TF32 (torch.backends.cuda.matmul.
allow_tf32 = False, cuDNN too): true f32, as tapevm's. Each record is the median over --repeats
measurements, each timed with CUDA events around enough calls to run a few milliseconds.
Inputs are uniform random, as tapevm bench-nn's (a GPU's clocks depend on the data).
Differences from tapevm's kernels, stated in the records' "note": f16 matmuls write f16 C
(tapevm's benchmark writes f32 C); attention is scaled_dot_product_attention(is_causal=True) on
[B, H, T, D] (tapevm's layout is [B, T, H, D]); "attention_backward" is (forward + backward) -
forward; norms' backward come from autograd (layer_norm: dx, dgamma, dbeta).
(This replaces an earlier version keyed to tests/nn/gpu/bench_nn_gpu's case names.)
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--dtype", default="f32,f16", help="f32, f16, bf16 (comma-separated)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small shapes (a smoke test)")
    parser.add_argument("--only", default="", help="groups: copy,dispatch,matmul,gpt,attention,rows,ce,adamw,gelu")
    parser.add_argument("--device", default="cuda", help="cuda (cpu only to try the script)")
    return parser.parse_args()


ARGS = parse()
DEVICE = torch.device(ARGS.device)
CUDA = DEVICE.type == "cuda"
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
RECORDS = []
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")


def sync():
    if CUDA:
        torch.cuda.synchronize()


def time_calls(call):
    """Median seconds per call: CUDA events around `calls` calls, --repeats times."""
    call()
    sync()
    start = time.perf_counter()
    call()
    sync()
    once = max(time.perf_counter() - start, 1e-7)
    calls = int(min(max(0.005 / once, 1), 1000))
    samples = []
    for _ in range(ARGS.repeats):
        if CUDA:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(calls):
                call()
            end.record()
            end.synchronize()
            samples.append(begin.elapsed_time(end) / 1e3 / calls)
        else:
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples)


def record(group, kernel, shape, dtype, seconds, flops=0.0, bytes_=0.0, note=""):
    RECORDS.append({"device": "torch " + (torch.cuda.get_device_name() if CUDA else "cpu"), "group": group,
                    "kernel": kernel, "shape": shape, "dtype": dtype, "seconds": seconds, "flops": flops,
                    "bytes": bytes_, "tflops": flops / seconds / 1e12 if flops else 0,
                    "gbps": bytes_ / seconds / 1e9 if bytes_ else 0, "note": note})
    extra = f" {flops / seconds / 1e12:8.2f} TFLOP/s" if flops else (f" {bytes_ / seconds / 1e9:8.1f} GB/s" if bytes_ else "")
    print(f"  {kernel:28} {shape:28} {dtype:5} {seconds * 1e3:10.4f} ms{extra}", file=sys.stderr, flush=True)


def full(shape, dtype):
    """Uniform values in [-1, 1)."""
    return torch.rand(shape, dtype=torch.float32, device=DEVICE).mul_(2).sub_(1).to(dtype)


def want(group):
    return not ARGS.only or group in ARGS.only.split(",")


def copy_bandwidth():
    n = (16 << 20) // 4 if ARGS.quick else (256 << 20) // 4
    src, dst = full((n,), torch.float32), full((n,), torch.float32)
    record("copy", "copy", f"[{n}]", "f32", time_calls(lambda: dst.copy_(src)), 0, 2.0 * 4 * n)


def small_dispatch():
    x, y = full((64,), torch.float32), full((64,), torch.float32)

    def call():
        for _ in range(250):
            x.add_(y, alpha=1e-3)

    record("dispatch", "add_assign x250 (per kernel)", "[64]", "f32", time_calls(call) / 250)


def matmul_one(group, m, n, k, ta, tb, name, dtype):
    a = full((k, m) if ta else (m, k), dtype)
    b = full((n, k) if tb else (k, n), dtype)
    a_op = a.t() if ta else a
    b_op = b.t() if tb else b
    out = torch.empty((m, n), dtype=dtype, device=DEVICE)
    layout = ("T" if ta else "N") + ("T" if tb else "N")
    seconds = time_calls(lambda: torch.matmul(a_op, b_op, out=out))
    note = "" if name == "f32" else "C in the inputs' dtype"
    record(group, "matmul", f"{layout} {m}x{n}x{k}", name, seconds, 2.0 * m * n * k, 0, note)


def gpt_matmuls(name, dtype):
    tokens = 1024 if ARGS.quick else 16384
    for k, n in [(384, 384), (384, 1152), (384, 1536), (1536, 384)]:
        matmul_one("gpt", tokens, n, k, False, False, name, dtype)
        matmul_one("gpt", tokens, k, n, False, True, name, dtype)
        matmul_one("gpt", k, n, tokens, True, False, name, dtype)


def square_matmuls(name, dtype):
    for n in [512] if ARGS.quick else [4096, 8192]:
        matmul_one("matmul", n, n, n, False, False, name, dtype)


def attention_pair(name, dtype):
    b, h, t, d = (2 if ARGS.quick else 64), 6, 256, 64
    shape = f"B{b} H6 T256 D64 causal"
    q, k, v = (full((b, h, t, d), dtype).requires_grad_() for _ in range(3))
    dout = full((b, h, t, d), dtype)
    half = 0.5 * b * h * t * t * d
    with torch.no_grad():
        forward = time_calls(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))

    def both():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(out, (q, k, v), dout)

    total = time_calls(both)
    record("attention", "attention", shape, name, forward, 4 * half, 0, "sdpa is_causal")
    record("attention", "attention_backward", shape, name, max(total - forward, 1e-9), 10 * half, 0,
           "(fwd+bwd) - fwd")
    record("attention", "attention fwd+bwd", shape, name, total, 14 * half, 0, "sdpa is_causal")


def timed_backward(forward, inputs, dy):
    """Seconds of forward + autograd backward."""
    def both():
        out = forward()
        torch.autograd.grad(out, inputs, dy)
    return time_calls(both)


def rows(name, dtype):
    r, n = (1024 if ARGS.quick else 16384), 384
    size = r * n * torch.finfo(dtype).bits / 8
    shape = f"[{r}, 384]"
    x = full((r, n), dtype).requires_grad_()
    gamma = full((n,), dtype).requires_grad_()
    beta = full((n,), dtype).requires_grad_()
    dy = full((r, n), dtype)
    with torch.no_grad():
        t = time_calls(lambda: F.layer_norm(x, (n,), gamma, beta))
    record("rows", "layer_norm", shape, name, t, 0, 2 * size)
    both = timed_backward(lambda: F.layer_norm(x, (n,), gamma, beta), (x, gamma, beta), dy)
    record("rows", "layer_norm_backward", shape, name, max(both - t, 1e-9), 0, 4 * size, "(fwd+bwd) - fwd")
    with torch.no_grad():
        t = time_calls(lambda: F.rms_norm(x, (n,), gamma))
    record("rows", "rms_norm", shape, name, t, 0, 2 * size)
    both = timed_backward(lambda: F.rms_norm(x, (n,), gamma), (x, gamma), dy)
    record("rows", "rms_norm_backward", shape, name, max(both - t, 1e-9), 0, 4 * size, "(fwd+bwd) - fwd")
    with torch.no_grad():
        y = torch.softmax(x, -1)
        t = time_calls(lambda: torch.softmax(x, -1))
    record("rows", "softmax", shape, name, t, 0, 2 * size)
    t = time_calls(lambda: torch._softmax_backward_data(dy, y, -1, dtype))
    record("rows", "softmax_backward", shape, name, t, 0, 4 * size, "aten _softmax_backward_data (writes dx)")


def cross_entropy_rows(name, dtype):
    r, v = (1024 if ARGS.quick else 16384), 65
    logits = full((r, v), dtype).requires_grad_()
    targets = torch.arange(r, device=DEVICE) % v
    size = r * v * torch.finfo(dtype).bits / 8

    def both():
        loss = F.cross_entropy(logits, targets)
        torch.autograd.grad(loss, (logits,))

    record("ce", "cross_entropy (+dlogits)", f"[{r}, 65]", name, time_calls(both), 0, 2 * size,
           "F.cross_entropy forward + backward")


def gelu(name, dtype):
    r, n = (1024 if ARGS.quick else 16384), 1536
    size = r * n * torch.finfo(dtype).bits / 8
    shape = f"[{r}, 1536]"
    x, dy = full((r, n), dtype), full((r, n), dtype)
    record("gelu", "gelu (elementwise tape)", shape, name, time_calls(lambda: F.gelu(x, approximate="tanh")), 0, 2 * size)
    record("gelu", "gelu backward (tape vjp)", shape, name,
           time_calls(lambda: torch.ops.aten.gelu_backward(dy, x, approximate="tanh")), 0, 4 * size)


def adamw():
    n = (1 << 20) if ARGS.quick else (16 << 20)
    p = torch.nn.Parameter(full((n,), torch.float32))
    p.grad = full((n,), torch.float32)
    kwargs = {"fused": True} if CUDA else {}
    optimizer = torch.optim.AdamW([p], lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1, **kwargs)
    record("adamw", "adamw (elementwise tape)", f"[{n}]", "f32", time_calls(optimizer.step), 0, 7.0 * 4 * n,
           "torch.optim.AdamW(fused=True)")


def main():
    print(f"nn_torch: torch {torch.__version__} on {torch.cuda.get_device_name() if CUDA else 'cpu'}", file=sys.stderr)
    steps = []
    if want("copy"):
        steps.append(("copy", copy_bandwidth))
    if want("dispatch"):
        steps.append(("dispatch", small_dispatch))
    for name in ARGS.dtype.split(","):
        dtype = DTYPES[name]
        for group, fn in [("matmul", square_matmuls), ("gpt", gpt_matmuls), ("attention", attention_pair),
                          ("rows", rows), ("ce", cross_entropy_rows), ("gelu", gelu)]:
            if want(group):
                steps.append((f"{group} {name}", lambda fn=fn, name=name, dtype=dtype: fn(name, dtype)))
    if want("adamw"):
        steps.append(("adamw", adamw))
    for label, step in steps:
        try:
            step()
        except Exception as error:  # one failing anchor must not lose the others
            print(f"  {label}: failed: {error}", file=sys.stderr)
    if ARGS.json:
        with open(ARGS.json, "w") as out:
            json.dump(RECORDS, out, indent=1)


if __name__ == "__main__":
    main()

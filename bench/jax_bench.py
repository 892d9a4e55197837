#!/usr/bin/env python3
"""JAX, the GPU peer of `tapevm bench`: the same workloads on the same points, timed the way
JAX users run them (jax.jit(jax.vmap(...)) on device-resident arrays, block_until_ready),
checked against tapevm's reference VM before timing, printed as tapevm bench's JSON records
(backend "jax").

The points come from tapevm itself, so both sides see identical numbers:

    tapevm bench --workload ba --points 4194304 --write-inputs ba.bin
    python3 bench/jax_bench.py --inputs ba.bin --points 65536,1048576,4194304 --json jax_ba.json

The file (format in bench/inputs_file.hpp) holds the workload's name and mode, its points
(inputs and per-point parameters), the constants of the MLP (mlp and mlp16, whose hidden widths
follow from their count), and the reference VM's results at 64 points among the first 65,536.
A batch of n points is the file's first n points.
Compile time (tracing, lowering and XLA's compile, or with --compilation-cache a hit in JAX's
persistent cache) is reported separately (setup_seconds); each size is a warm-up run, the check,
then --repeats timed runs whose median is ns_per_point.
"""

import argparse
import json
import math
import statistics
import struct
import sys
import time

import numpy as np

MODES = ("forward", "gradient", "jacobian")
TOLERANCE = {"f64": 1e-9, "f32": 1e-2}  # as bench/check.hpp


def read_inputs(path):
    """The inputs file as a dict of header fields and numpy arrays (memory-mapped)."""
    with open(path, "rb") as f:
        head = f.read(8 + 16 + 4 * 5 + 8)
        if len(head) < 52 or head[:8] != b"TVBENCH1":
            sys.exit(f"jax_bench: {path}: not a tapevm bench inputs file (no TVBENCH1 magic)")
        name = head[8:24].split(b"\0", 1)[0].decode()
        mode, n_in, n_par, n_out, instructions = struct.unpack_from("<5I", head, 24)
        (points,) = struct.unpack_from("<Q", head, 44)
        offset = 52
    raw = np.memmap(path, dtype=np.uint8, mode="r")

    def take(dtype, count):
        nonlocal offset
        size = np.dtype(dtype).itemsize * count
        if offset + size > raw.size:
            sys.exit(f"jax_bench: {path}: truncated at byte {offset}")
        array = raw[offset:offset + size].view(dtype)
        offset += size
        return array

    (n_constants,) = take("<u8", 1)
    constants = np.array(take("<f8", int(n_constants)))
    inputs = take("<f8", points * n_in).reshape(points, n_in)
    params = take("<f8", points * n_par).reshape(points, n_par)
    (sample_count,) = take("<u8", 1)
    sample = np.array(take("<u8", int(sample_count)), dtype=np.int64)
    (width,) = take("<u8", 1)
    reference = np.array(take("<f8", int(sample_count) * int(width))).reshape(int(sample_count), int(width))
    if mode >= len(MODES):
        sys.exit(f"jax_bench: {path}: unknown mode {mode}")
    return dict(workload=name, mode=MODES[mode], n_inputs=n_in, n_params=n_par, n_outputs=n_out,
                instructions=instructions, points=points, constants=constants, inputs=inputs,
                params=params, sample=sample, reference=reference)


def mlp_layers(constants, n_inputs):
    """bench/mlp.hpp's network from the file's constants: w1 [h][n_inputs], b1 [h], w2 [h][h],
    b2 [h], w3 [h] and b3, the hidden width h solved from their count h^2 + (n_inputs + 3) h + 1."""
    count, linear = constants.size, n_inputs + 3
    h = (math.isqrt(linear * linear + 4 * max(count - 1, 0)) - linear) // 2
    if h < 1 or h * h + linear * h + 1 != count:
        sys.exit(f"jax_bench: {count} MLP constants fit no hidden width for {n_inputs} inputs")
    parts = np.split(constants, np.cumsum([h * n_inputs, h, h * h, h, h]))
    return (parts[0].reshape(h, n_inputs), parts[1], parts[2].reshape(h, h), parts[3], parts[4],
            parts[5][0])


def functions(jnp, data):
    """f(x, p) for one point, as tapevm/examples.hpp and bench/mlp.hpp write it."""
    name = data["workload"]
    if name == "ba":
        def f(x, feature):
            # ADBench's reprojection error; the benchmark's points never have r = 0 (the
            # template's other branch), as in ADBench's own JAX port.
            rot, center, point = x[0:3], x[3:6], x[11:14]
            xo = point - center
            theta = jnp.sqrt(jnp.sum(rot * rot))
            costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
            w = rot * (1.0 / theta)
            cross = jnp.cross(w, xo)
            tmp = jnp.dot(w, xo) * (1.0 - costheta)
            xc = xo * costheta + cross * sintheta + w * tmp
            q = xc[:2] / xc[2]
            rsq = jnp.sum(q * q)
            distortion = 1.0 + x[9] * rsq + x[10] * rsq * rsq
            return x[14] * (q * distortion * x[6] + x[7:9] - feature)
        return f
    if name == "rosenbrock16":
        return lambda x, p: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    if name == "trig16":
        return lambda x, p: jnp.sum(jnp.sin(x) * jnp.exp(jnp.cos(jnp.roll(x, 1))) +
                                    jnp.tanh(x * x) / (1.0 + x * x))
    if name in ("mlp", "mlp16"):
        w1, b1, w2, b2, w3, b3 = mlp_layers(data["constants"], data["n_inputs"])
        dtype = jnp.float64 if data["x64"] else jnp.float32
        # Arrays of the run's precision: a numpy float64 would promote float32 work to float64.
        w1, b1, w2, b2, w3, b3 = (jnp.asarray(a, dtype=dtype) for a in (w1, b1, w2, b2, w3, b3))

        def f(x, p):
            first = jnp.tanh(w1 @ x + b1)
            second = jnp.tanh(w2 @ first + b2)
            return w3 @ second + b3
        return f
    sys.exit(f"jax_bench: unknown workload '{name}'")


def max_error(values, reference):
    """bench/check.cpp's measure: |v - r| / max(|r|, 1e-3 * max|r|), NaN and inf exact."""
    values, reference = np.asarray(values, np.float64), np.asarray(reference, np.float64)
    if values.shape != reference.shape:
        return float("inf")
    nan_v, nan_r = np.isnan(values), np.isnan(reference)
    if np.any(nan_v != nan_r):
        return float("inf")
    inf_any = np.isinf(values) | np.isinf(reference)
    if np.any(values[inf_any & ~nan_r] != reference[inf_any & ~nan_r]):
        return float("inf")
    finite = ~(nan_r | inf_any)
    if not np.any(finite):
        return 0.0
    scale = np.max(np.abs(reference[finite]))
    floor = max(1e-3 * scale, np.finfo(np.float64).tiny)
    return float(np.max(np.abs(values[finite] - reference[finite]) /
                        np.maximum(np.abs(reference[finite]), floor)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", required=True, help="a file from tapevm bench --write-inputs")
    parser.add_argument("--points", default="65536,1048576,4194304", help="batch sizes (default 2^16,2^20,2^22)")
    parser.add_argument("--precision", default="f32", choices=("f32", "f64", "all"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the records here (default: standard output)")
    parser.add_argument("--compilation-cache", metavar="DIR",
                        help="JAX's persistent compilation cache in DIR, every executable kept (a second "
                             "process then compiles from it: the counterpart of tapevm's disk cache)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    try:
        sizes = [int(s) for s in args.points.split(",")]
    except ValueError:
        parser.error(f"--points: '{args.points}' is not a list of whole numbers")
    if any(s < 1 for s in sizes):
        parser.error("--points: sizes must be at least 1")

    import jax
    precisions = ["f32", "f64"] if args.precision == "all" else [args.precision]
    if "f64" in precisions:
        jax.config.update("jax_enable_x64", True)
    # float32 matrix products in full float32, not TF32 (XLA's default on NVIDIA GPUs), so the
    # MLP is computed to the precision tapevm computes it and passes the same check.
    jax.config.update("jax_default_matmul_precision", "highest")
    if args.compilation_cache:
        jax.config.update("jax_compilation_cache_dir", args.compilation_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    import jax.numpy as jnp

    data = read_inputs(args.inputs)
    device = jax.devices()[0]
    records, failed = [], False
    for precision in precisions:
        data["x64"] = precision == "f64"
        dtype = np.float64 if data["x64"] else np.float32
        f = functions(jnp, data)
        one = {"forward": f, "gradient": jax.grad(f), "jacobian": jax.jacrev(f)}[data["mode"]]
        batched = jax.jit(jax.vmap(one, in_axes=(0, 0 if data["n_params"] else None)))
        for n in sizes:
            if n > data["points"]:
                print(f"skipped: {n} points: {args.inputs} holds {data['points']}", file=sys.stderr)
                continue
            x = jax.device_put(np.asarray(data["inputs"][:n], dtype=dtype), device)
            p = (jax.device_put(np.asarray(data["params"][:n], dtype=dtype), device) if data["n_params"]
                 else jnp.zeros((), dtype=dtype))
            start = time.perf_counter()
            compiled = batched.lower(x, p).compile()
            compile_seconds = time.perf_counter() - start
            out = compiled(x, p)
            out.block_until_ready()
            chosen = data["sample"] < n
            values = np.asarray(out).reshape(n, -1)[data["sample"][chosen]]
            error = max_error(values, data["reference"][chosen])
            tolerance = TOLERANCE[precision]
            label = f"{data['workload']} {data['mode']} jax {precision}, {n} points"
            if not error <= tolerance:
                print(f"error: check failed: {label}: max error {error:.3g} (tolerance {tolerance:g}) "
                      "against the reference VM", file=sys.stderr)
                failed = True
                continue
            runs = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                compiled(x, p).block_until_ready()
                runs.append((time.perf_counter() - start) * 1e9 / n)
            median = statistics.median(runs)
            print(f"{label}: {median:.4g} ns/point (max error {error:.1e}, compile {compile_seconds:.4f} s)",
                  file=sys.stderr)
            records.append({
                "workload": data["workload"], "mode": data["mode"], "backend": "jax", "precision": precision,
                "threads": 1, "points": n, "ns_per_point": median, "median_ns_per_point": median,
                "min_ns_per_point": min(runs), "runs": runs, "instructions": data["instructions"],
                "ns_per_instruction_lane": median / data["instructions"], "ratio_to_native_simd": None,
                "isa": "xla", "device": f"{device.platform}: {device.device_kind}", "checked": True,
                "max_error": error, "tolerance": tolerance, "checked_points": int(np.count_nonzero(chosen)),
                "setup_seconds": compile_seconds})
    text = json.dumps(records, indent=1) + "\n"
    if args.json:
        with open(args.json, "w") as out_file:
            out_file.write(text)
    else:
        sys.stdout.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

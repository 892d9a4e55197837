#!/usr/bin/env python3
"""JAX's side of issue 22's GMM row: jit(grad) of ADBench's GMM objective (the same formula as
src/tape/tapevm/gmm.hpp: logsumexp over components of alpha + sum(q) - |Q (x - mu)|^2 / 2, minus
n logsumexp(alpha), plus the Wishart prior with gamma 1, m 0) on the default JAX device, the
data drawn from the same distributions (alphas, icf and x standard normal, means uniform).

    python3 bench/gmm_jax.py --d 64 --k 200 --n 10000 [--f64] [--repeats 10]

Prints one line per measurement: the median seconds of the objective and of the gradient
(after a compiling call and a warm-up), and their ratio.
"""

import argparse
import statistics
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--k", type=int, default=200)
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--f64", action="store_true")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    import jax

    jax.config.update("jax_enable_x64", args.f64)
    import jax.numpy as jnp
    import numpy as np

    d, k, n = args.d, args.k, args.n
    dtype = jnp.float64 if args.f64 else jnp.float32
    rng = np.random.default_rng(1)
    alphas = jnp.asarray(rng.standard_normal(k), dtype)
    means = jnp.asarray(rng.uniform(size=(k, d)), dtype)
    icf = jnp.asarray(rng.standard_normal((k, d + d * (d - 1) // 2)), dtype)
    x = jnp.asarray(rng.standard_normal((n, d)), dtype)
    rows, cols = np.tril_indices(d, -1)
    order = np.lexsort((rows, cols))  # column by column, as ADBench stores the lower triangle
    rows, cols = rows[order], cols[order]

    def objective(alphas, means, icf):
        q = icf[:, :d]
        lower = jnp.zeros((k, d, d), dtype).at[:, rows, cols].set(icf[:, d:])
        big_q = lower + jax.vmap(jnp.diag)(jnp.exp(q))
        centred = x[:, None, :] - means[None, :, :]  # n k d
        y = jnp.einsum("kij,nkj->nki", big_q, centred)
        beta = alphas[None, :] + q.sum(axis=1)[None, :] - 0.5 * (y * y).sum(axis=2)
        main = jax.scipy.special.logsumexp(beta, axis=1).sum()
        prior = 0.5 * (jnp.exp(2 * q).sum() + (icf[:, d:] ** 2).sum())
        return main - n * jax.scipy.special.logsumexp(alphas) + prior

    value = jax.jit(objective)
    gradient = jax.jit(jax.grad(objective, argnums=(0, 1, 2)))

    def timed(f):
        jax.block_until_ready(f(alphas, means, icf))  # compile
        for _ in range(3):
            jax.block_until_ready(f(alphas, means, icf))
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            jax.block_until_ready(f(alphas, means, icf))
            seconds.append(time.perf_counter() - start)
        return statistics.median(seconds)

    objective_s, gradient_s = timed(value), timed(gradient)
    print(f"jax {jax.devices()[0].platform} {'f64' if args.f64 else 'f32'} gmm d={d} K={k} n={n}: "
          f"objective {objective_s * 1e3:.3f} ms, gradient {gradient_s * 1e3:.3f} ms, "
          f"gradient/objective {gradient_s / objective_s:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

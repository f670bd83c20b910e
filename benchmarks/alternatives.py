#!/usr/bin/env python3
"""Candidate faster kernels, benchmarked against the library's (not used by the library).

    .venv/bin/python benchmarks/alternatives.py        # prints a table, writes alternatives.json

1. ``pool_matmul``: the rank-one head pooling of ``attnclust._numerics.rank_one_softmax_pool``
   with a hand-written VJP whose reductions over the L x L weights are matrix products.
   With e_qk = exp(lam Pq_q (Pk_k - ext_q)) (the same exact shift as the library's),
   Z = E 1 and the first two moments of Pk - ext under the weights (one product
   E @ [1, Pk - max, (Pk - max)^2, Pk - min, (Pk - min)^2]; moments about the extremal
   key, so the variance does not cancel when the weights concentrate), out = ext + m1:

       d out_q / d Pq_q = lam Var_q,  Var_q = m2_q - m1_q^2
       d out_q / d Pk_k = p_qk (1 + lam Pq_q (Pk_k - out_q))
       d out_q / d lam  = Pq_q Var_q

   so for a cotangent g the key gradient is E^T a + Pk * (E^T b) with
   a = g (1 - lam Pq out) / Z and b = g lam Pq / Z: one product E^T @ [a, b]. The shift
   ext cancels from out and from every derivative, so it carries no gradient. Values and
   gradients are checked against the library's at random inputs before timing.
2. ``fit``'s step run without ``vmap`` (one seed, plain lax.scan), to isolate what the
   seed axis of ``fit`` (``fit`` is ``fit_many`` with S = 1) costs on the CPU.
3. ``identity_fused``: identity attention with the softmax denominator folded into the
   value product (E @ [X, 1]) instead of a separate row sum.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import attnclust as ac
from attnclust._numerics import rank_one_softmax_pool
from attnclust.risk import _risk_from_outputs

HERE = Path(__file__).resolve().parent


@jax.custom_vjp
def pool_matmul(lam, Pq, Pk):
    return _pool_fwd(lam, Pq, Pk)[0]


def _pool_fwd(lam, Pq, Pk):
    pos = (Pq >= 0)[..., None]  # (..., Q, 1)
    hi, lo = jnp.max(Pk, -1, keepdims=True), jnp.min(Pk, -1, keepdims=True)  # (..., 1)
    ext = jnp.where(pos[..., 0], hi, lo)  # (..., Q): the library's exact shift
    E = jnp.exp(lam * Pq[..., :, None] * (Pk[..., None, :] - ext[..., :, None]))  # (..., Q, K)
    # moments about the extremal key (small when the weights concentrate there, so the
    # variance below does not cancel catastrophically): one product E @ V
    dh, dl = Pk - hi, Pk - lo
    V = jnp.stack([jnp.ones_like(Pk), dh, dh * dh, dl, dl * dl], axis=-1)  # (..., K, 5)
    M = E @ V  # (..., Q, 5)
    Z = M[..., 0]
    m1 = jnp.where(pos[..., 0], M[..., 1], M[..., 3]) / Z  # mean of Pk - ext
    m2 = jnp.where(pos[..., 0], M[..., 2], M[..., 4]) / Z
    out = ext + m1
    var = jnp.maximum(m2 - m1 * m1, 0.0)
    return out, (lam, Pq, Pk, E, Z, out, var)


def _pool_bwd(res, g):
    lam, Pq, Pk, E, Z, out, var = res
    d_q = g * lam * var
    d_lam = jnp.sum(g * Pq * var)
    ab = jnp.stack([g * (1.0 - lam * Pq * out) / Z, g * lam * Pq / Z], axis=-1)  # (..., Q, 2)
    Et_ab = jnp.swapaxes(E, -1, -2) @ ab  # (..., K, 2)
    d_k = Et_ab[..., 0] + Pk * Et_ab[..., 1]
    return jnp.reshape(d_lam, jnp.shape(lam)).astype(jnp.result_type(lam)), d_q, d_k


pool_matmul.defvjp(_pool_fwd, _pool_bwd)


def two_head(theta, X, lam, pool):
    P = jnp.swapaxes(X @ theta.T, -1, -2)  # (..., H, L)
    return jnp.swapaxes(pool(lam, P, P), -1, -2) @ theta


def check_pool() -> float:
    """Largest relative difference of values and gradients (theta, lam) between the library's
    pooling and pool_matmul at random inputs, including a large lam."""
    worst = 0.0
    key = jax.random.PRNGKey(0)
    for lam in (0.3, 1.0, 30.0):
        k1, k2, key = jax.random.split(key, 3)
        X = jax.random.normal(k1, (3, 40, 5))
        theta = jax.random.normal(k2, (2, 5))
        for f in (
            lambda t, l, p: jnp.sum(jnp.sin(two_head(t, X, l, p))),
        ):
            a = jax.value_and_grad(f, argnums=(0, 1))(theta, lam, rank_one_softmax_pool)
            b = jax.value_and_grad(f, argnums=(0, 1))(theta, lam, pool_matmul)
            for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
                err = float(jnp.max(jnp.abs(x - y)) / (jnp.max(jnp.abs(x)) + 1e-12))
                worst = max(worst, err)
    return worst


def median_time(f, *args, reps=None):
    jax.block_until_ready(f(*args))
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    one = time.perf_counter() - t0
    reps = reps or max(3, min(30, int(1.0 / max(one, 1e-4))))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def bench_steps(Ls=(50, 256, 1024), batch=32):
    m = ac.orthogonal_mixture(K=2, d=5, r=2.0, sigma=0.5)
    opt = optax.adam(1e-2)
    rows = []
    for L in Ls:
        X, _ = ac.sample(jax.random.PRNGKey(1), m, batch, L)
        theta = ac.init_theta(jax.random.PRNGKey(2), m, kind="near")
        st = opt.init(theta)
        row = {"L": L, "batch": batch, "load": os.getloadavg()[0]}
        for name, pool in (("library", rank_one_softmax_pool), ("matmul_vjp", pool_matmul)):
            def step(theta, st, X, pool=pool):
                loss, g = jax.value_and_grad(lambda t: _risk_from_outputs(X, two_head(t, X, 1.0, pool)))(theta)
                u, st = opt.update(g, st, theta)
                return optax.apply_updates(theta, u), st, loss

            row[f"{name}_ms"] = 1e3 * median_time(jax.jit(step), theta, st, X)
        row["speedup"] = row["library_ms"] / row["matmul_vjp_ms"]
        print(f"two-head training step L={L}, batch {batch}: library {row['library_ms']:.2f} ms, "
              f"matmul VJP {row['matmul_vjp_ms']:.2f} ms, speedup {row['speedup']:.2f}x (load {row['load']:.1f})", flush=True)
        rows.append(row)
    return rows


def bench_fit_vmap(steps=400, batch=32, L=50):
    """Seconds per step: fit (vmapped over S = 1) against the same scan without vmap."""
    from attnclust.attention import _two_head

    m = ac.orthogonal_mixture(K=2, d=5, r=2.0, sigma=0.5)
    opt = optax.adam(1e-2)

    def run(theta, keys, lam):
        def body(carry, key):
            th, st = carry
            X, _ = ac.sample(key, m, batch, L)
            loss, g = jax.value_and_grad(lambda t: _risk_from_outputs(X, _two_head(t, X, lam)))(th)
            u, st = opt.update(g, st, th)
            return (optax.apply_updates(th, u), st), loss

        return jax.lax.scan(body, (theta, opt.init(theta)), keys)[1]

    theta = ac.init_theta(jax.random.PRNGKey(2), m)
    keys = jax.random.split(jax.random.PRNGKey(3), steps)
    plain = median_time(jax.jit(run), theta, keys, jnp.float32(1.0), reps=3) / steps
    vmapped = median_time(jax.jit(jax.vmap(run)), theta[None], keys[None], jnp.ones(1), reps=3) / steps
    key = jax.random.PRNGKey(0)
    ac.fit(key, m, steps=steps, progress=False)
    t0 = time.perf_counter()
    ac.fit(key, m, steps=steps, progress=False)
    fit = (time.perf_counter() - t0) / steps
    row = {"scan_ms": plain * 1e3, "vmap1_scan_ms": vmapped * 1e3, "fit_ms": fit * 1e3, "load": os.getloadavg()[0]}
    print(f"one seed, L={L}, batch {batch}: plain lax.scan {row['scan_ms']:.2f} ms/step, "
          f"vmap(S=1) lax.scan {row['vmap1_scan_ms']:.2f} ms/step, ac.fit {row['fit_ms']:.2f} ms/step "
          f"(load {row['load']:.1f})", flush=True)
    return row


@jax.jit
def identity_fused(X, lam):
    s = lam * (X @ jnp.swapaxes(X, -1, -2))
    E = jnp.exp(s - jnp.max(s, -1, keepdims=True))
    Xe = jnp.concatenate([X, jnp.ones(X.shape[:-1] + (1,), X.dtype)], -1)
    num = E @ Xe
    return num[..., :-1] / num[..., -1:]


def bench_identity(Ls=(2000, 8000)):
    from attnclust.attention import _identity_full

    rows = []
    for L in Ls:
        X = ac.sample_in_context(jax.random.PRNGKey(7), 2, 32, 4.0, 0.5, 1, L)[0][0]
        a = median_time(_identity_full, X, 0.25)
        b = median_time(identity_fused, X, 0.25)
        err = float(jnp.max(jnp.abs(_identity_full(X, 0.25) - identity_fused(X, 0.25))))
        row = {"L": L, "library_s": a, "fused_s": b, "speedup": a / b, "max_abs_diff": err, "load": os.getloadavg()[0]}
        print(f"identity attention (unblocked) L={L}: library {a:.3f} s, fused {b:.3f} s, speedup {a / b:.2f}x, "
              f"max diff {err:.1e} (load {row['load']:.1f})", flush=True)
        rows.append(row)
    return rows


def main() -> int:
    err = check_pool()
    print(f"pool_matmul vs library: largest relative difference of values and gradients {err:.1e}")
    if err > 1e-4:
        print("pool_matmul disagrees with the library; not timing it")
        return 1
    out = {"pool_check_rel_err": err, "steps": bench_steps(), "fit_vmap": bench_fit_vmap(),
           "identity": bench_identity()}
    (HERE / "alternatives.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

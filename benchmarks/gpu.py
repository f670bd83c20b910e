#!/usr/bin/env python3
"""The GPU run (``bash benchmarks/gpu.sh OUT``): the library on an accelerator, in one go.

    python benchmarks/gpu.py OUT            # on a machine whose JAX sees a GPU
    python benchmarks/gpu.py OUT --check    # only the library checks (any device; seconds)

Steps, each recorded in OUT/gpu.json (written after every step, so a run cut short keeps
what it measured):

1. ``check``: the library on this JAX version: versions, devices, one two-head layer,
   identity attention (full and blocked) and a gradient through the pooling against the
   float64 formula, a 20-step ``fit``.
2. ``roofline``: the device's exp throughput and memory (HBM) bandwidth, as in
   ``make bench`` (benchmarks/roofline.py), larger arrays.
3. ``steps``: the training step at L = 256, 1024, 4096 (32 prompts, 2 heads) as a
   fraction of the exp roofline.
4. ``identity``: identity attention at d = 32, L = 30k, 100k, 300k (blocked), as a
   fraction of the exp roofline, after timing a few tiles at L = 30k.
5. ``fit_many``: 256 seeds, sharded over every device (``jax.sharding``), 2000 steps.

The unit tests and the figures are run by gpu.sh itself (pytest, ``python -m attnclust
reproduce``). Nothing here is needed by the tests or the book.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from roofline import bandwidth, exp_roofline, load1, step_exps, time_step, timings, with_fractions  # noqa: E402


def check() -> dict:
    """The library works on this JAX: values against references, a short training run."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import attnclust as ac
    from attnclust._kernels import rank_one_softmax_pool

    out: dict = {"jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
                 "platform": jax.devices()[0].platform}
    m = ac.orthogonal_mixture()
    X, _ = ac.sample(jax.random.PRNGKey(0), m, 4, 64)
    theta = ac.init_theta(jax.random.PRNGKey(1), m, init="near")
    T = ac.two_head_layer(theta, X, 2.0)
    out["two_head_finite"] = bool(jnp.all(jnp.isfinite(T)))
    Z = ac.identity_attention(X[0], 0.5)
    Zb = ac.identity_attention(X[0], 0.5, block=16)
    out["identity_blocked_max_diff"] = float(jnp.max(jnp.abs(Z - Zb)))
    rng = np.random.default_rng(0)
    Pq, Pk, w = rng.normal(size=(2, 30)), rng.normal(size=(2, 40)), rng.normal(size=(2, 30))

    def ref(lam, Pq, Pk):
        p = jax.nn.softmax(lam * Pq[..., :, None] * Pk[..., None, :], axis=-1)
        return jnp.sum(p * Pk[..., None, :], axis=-1)

    loss = lambda pool: (lambda Pk: jnp.sum(w * pool(3.0, Pq, Pk)))
    g = jax.grad(loss(rank_one_softmax_pool))(jnp.asarray(Pk, jnp.float32))
    with jax.enable_x64(True):
        g_ref = np.asarray(jax.grad(loss(ref))(Pk))
    out["pool_grad_rel_err"] = float(np.max(np.abs(np.asarray(g) - g_ref)) / np.abs(g_ref).max())
    t0 = time.perf_counter()
    res = ac.fit(jax.random.PRNGKey(2), m, steps=20, progress=False)
    out["fit_20_steps_s"] = time.perf_counter() - t0
    out["fit_risk_finite"] = bool(np.all(np.isfinite(res.risk)))
    out["ok"] = (out["two_head_finite"] and out["fit_risk_finite"] and out["identity_blocked_max_diff"] < 1e-4
                 and out["pool_grad_rel_err"] < 1e-3)
    return out


def identity(Ls, exp_rate: float, reps: int) -> dict:
    import jax

    import attnclust as ac
    from attnclust import _kernels as kernels

    def runner(L, block, key_block):
        X = ac.sample_in_context(jax.random.PRNGKey(7), 2, 32, 4.0, 0.5, 1, L)[0][0]
        f = kernels.identity_blocked.lower(X, 0.25, min(block, L), key_block).compile()
        return lambda: f(X, 0.25).block_until_ready()

    tiles = []
    for block in (1024, 4096, 8192):
        for key_block in (2048, 8192):
            t = timings(runner(30000, block, key_block), reps)
            tiles.append({"L": 30000, "block": block, "key_block": key_block, **t})
    best = min(tiles, key=lambda t: t["median_s"])
    rows = []
    for L in Ls:
        t = timings(runner(L, best["block"], best["key_block"]), reps)
        rows.append({"L": L, "d": 32, "block": best["block"], "key_block": best["key_block"], **t,
                     "exp_roofline_s": L * L / exp_rate, "frac_exp_roofline": L * L / exp_rate / t["median_s"]})
        print(f"identity L={L}: {t['median_s']:.3f} s, {rows[-1]['frac_exp_roofline']:.3f} of the exp roofline", flush=True)
    return {"tiles": tiles, "rows": rows}


def fit_many(S: int, steps: int, reps: int) -> dict:
    import jax

    import attnclust as ac

    m = ac.orthogonal_mixture()
    keys = jax.random.split(jax.random.PRNGKey(0), S)
    run = dict(steps=steps, batch=32, L=ac.DEFAULT.L, progress=False)
    t0 = time.perf_counter()
    ac.fit_many(keys, m, **run)
    first = time.perf_counter() - t0
    t = timings(lambda: ac.fit_many(keys, m, **run), reps)
    return {"S": S, "steps": steps, "devices": len(jax.devices()), "first_call_s": first, **t,
            "seed_steps_per_s": S * steps / t["median_s"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="folder for gpu.json")
    p.add_argument("--check", action="store_true", help="only the library checks")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "gpu.json"
    results: dict = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "command": "bash benchmarks/gpu.sh OUT", "python": platform.python_version(), "load_start": load1()}

    def save():
        path.write_text(json.dumps(results, indent=1) + "\n")

    results["check"] = check()
    save()
    print(f"check: {results['check']}", flush=True)
    if not results["check"]["ok"]:
        print("the library checks FAILED on this JAX; not measuring", file=sys.stderr)
        return 1
    if a.check:
        return 0
    if results["check"]["platform"] == "cpu":
        print("JAX sees no accelerator; run with --check on a CPU", file=sys.stderr)
        return 1
    exp = exp_roofline(32768, 32768, a.reps)
    results["roofline"] = {"exp": exp, "bandwidth": bandwidth(8 * 2**30, a.reps)}
    save()
    rate = exp["best_per_s"]
    print(f"roofline: {rate / 1e9:.1f} G exp/s, {results['roofline']['bandwidth']['best_per_s'] / 1e9:.0f} GB/s", flush=True)
    results["steps"] = []
    for L in (256, 1024, 4096):
        results["steps"].append(with_fractions(time_step(L, 32, reps=a.reps, target_exps=2e10), step_exps(32, 2, L), rate))
        save()
        print(f"step L={L}: {results['steps'][-1]['median_s'] * 1e3:.3f} ms, {results['steps'][-1]['frac_roofline']:.3f} of the roofline", flush=True)
    results["identity"] = identity((30000, 100000, 300000), rate, a.reps)
    save()
    results["fit_many"] = fit_many(256, 2000, a.reps)
    results["load_end"] = load1()
    save()
    print(f"fit_many: {results['fit_many']['seed_steps_per_s']:.0f} seed-steps/s; wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch peers of the training step (``make bench``; benchmarks/requirements.txt installs
PyTorch's CPU build).

The same layer (the two-head layer with the same exact rank-one shift), the same loss and
Adam, on the same fixed batch as ``roofline.step_runner``, in three forms:

- ``eager``: PyTorch as most people write it: autograd and ``torch.optim.Adam``, one step
  after the other;
- ``compile``: the loss and its gradient through ``torch.compile`` (TorchInductor's C++
  code on the CPU), compiled once for every L (``dynamic=True``: on a 2-core machine each
  compilation takes minutes), Adam eager (two (2, 5) tensors: negligible);
- ``vmap``: S seeds at once, ``torch.func.vmap`` of ``torch.func.grad`` of the loss with the
  Adam update written on the stacked parameters: the peer of ``jax.vmap`` over seeds
  (``fit_many``).

Each form is checked to give the library's loss on the same inputs before it is timed, and
timed with one thread and with PyTorch's default (one per core): its intra-op threads spin,
so on a loaded machine one thread can be faster, and the faster is the peer's number.
"""

from __future__ import annotations

import time

from roofline import REPEATS, timings

LR, BETAS, EPS = 1e-2, (0.9, 0.999), 1e-8


def torch_layer(theta, X, lam):
    """The two-head layer in PyTorch, written as attnclust writes it (exact rank-one shift)."""
    import torch

    P = torch.swapaxes(X @ theta.T, -1, -2)  # (n, H, L)
    mx = P.max(dim=-1).values[..., None, None]
    mn = P.min(dim=-1).values[..., None, None]
    ext = torch.where(P[..., :, None] >= 0, mx, mn)
    e = torch.exp(lam * P[..., :, None] * (P[..., None, :] - ext))
    pooled = (e * P[..., None, :]).sum(-1) / e.sum(-1)
    return torch.swapaxes(pooled, -1, -2) @ theta


def torch_loss(theta, X, lam=1.0):
    return ((X - torch_layer(theta, X, lam)) ** 2).sum(-1).mean()


def _inputs(L: int, batch: int, seeds: int | None = None):
    """The batch and heads of ``roofline.step_runner`` (same keys), as NumPy arrays; with
    ``seeds``, S copies of them (each seed its own copy of the same inputs)."""
    import jax
    import numpy as np

    import attnclust as ac

    m = ac.orthogonal_mixture(**ac.DEFAULT.mixture_args())
    X = np.asarray(ac.sample(jax.random.PRNGKey(4), m, batch, L)[0])
    theta = np.asarray(ac.init_theta(jax.random.PRNGKey(5), m, init="near"))
    if seeds is not None:
        X, theta = np.repeat(X[None], seeds, 0), np.repeat(theta[None], seeds, 0)
    return X, theta


def best_of_threads(measure) -> dict:
    """``measure()`` with 1 thread and with the default number: the faster (lower median),
    with both medians recorded."""
    import torch

    default = torch.get_num_threads()
    runs = {}
    try:
        for n in sorted({1, default}):
            torch.set_num_threads(n)
            runs[n] = measure()
    finally:
        torch.set_num_threads(default)
    best = min(runs, key=lambda n: runs[n]["median_s"])
    return {**runs[best], "threads": best, "median_s_by_threads": {str(n): r["median_s"] for n, r in runs.items()}}


def _time(step, n: int, reps: int) -> dict:
    """Seconds per step: ``reps`` repeats of ``n`` steps."""
    return {**timings(step, reps, number=n), "steps_per_repeat": n}


def _check(loss_value: float, L: int, batch: int) -> float:
    """Relative difference between a PyTorch loss and the library's on the same inputs."""
    import attnclust as ac

    X, theta = _inputs(L, batch)
    ref = float(ac.risk_loss(theta, X, ac.DEFAULT.lam))
    err = abs(loss_value - ref) / abs(ref)
    if err > 1e-4:
        raise AssertionError(f"PyTorch loss {loss_value} differs from attnclust's {ref} (L={L})")
    return err


_COMPILED = {}


def _compiled_loss():
    """``torch_loss`` through ``torch.compile`` with dynamic shapes, compiled once."""
    import torch

    if "loss" not in _COMPILED:
        _COMPILED["loss"] = torch.compile(torch_loss, dynamic=True)
    return _COMPILED["loss"]


def step_eager_or_compiled(L: int, batch: int, n: int, compiled: bool, reps: int = REPEATS) -> dict:
    """Seconds per training step of the PyTorch layer, eager or through ``torch.compile``."""
    import torch

    X, theta0 = (torch.tensor(a) for a in _inputs(L, batch))
    theta = theta0.clone().requires_grad_()
    opt = torch.optim.Adam([theta], lr=LR, betas=BETAS, eps=EPS)
    loss_fn = _compiled_loss() if compiled else torch_loss
    err = _check(float(loss_fn(theta, X).detach()), L, batch)
    t0 = time.perf_counter()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(theta, X)
        loss.backward()
        opt.step()

    step()  # compiles the backward too
    first = time.perf_counter() - t0
    return {**best_of_threads(lambda: _time(step, n, reps)), "first_call_s": first, "loss_rel_err": err}


def step_vmap(L: int, batch: int, S: int, n: int, reps: int = REPEATS) -> dict:
    """Seconds per step of S seeds at once: ``torch.func.vmap(torch.func.grad(loss))`` and
    Adam on the stacked (S, H, d) heads."""
    import torch
    from torch.func import grad, vmap

    X, theta = (torch.tensor(a) for a in _inputs(L, batch, seeds=S))
    err = _check(float(torch_loss(theta[0], X[0])), L, batch)
    g_fn = vmap(grad(torch_loss))
    state = {"theta": theta, "m": torch.zeros_like(theta), "v": torch.zeros_like(theta), "t": 0}
    b1, b2 = BETAS

    def step():
        s = state
        g = g_fn(s["theta"], X)
        s["t"] += 1
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        mh, vh = s["m"] / (1 - b1 ** s["t"]), s["v"] / (1 - b2 ** s["t"])
        s["theta"] = s["theta"] - LR * mh / (vh.sqrt() + EPS)

    with torch.no_grad():
        out = best_of_threads(lambda: _time(step, n, reps))
    return {**out, "S": S, "loss_rel_err": err}


def jax_step_vmap(L: int, batch: int, S: int, n: int, reps: int = REPEATS) -> dict:
    """The library's step (``make_step``) vmapped over S seeds on the same inputs, as a scan
    of n steps: seconds per step of all S seeds."""
    import jax
    import optax

    import attnclust as ac

    X, theta = _inputs(L, batch, seeds=S)
    opt = optax.adam(LR)
    step = ac.make_step(opt, ac.DEFAULT.lam)
    vstep = jax.vmap(step)
    run = jax.jit(lambda t, st, X: jax.lax.scan(lambda c, _: vstep(c, X), (t, st), None, length=n)[0][0])
    st = jax.vmap(opt.init)(theta)
    t = timings(lambda: run(theta, st, X).block_until_ready(), reps)
    return {**t, **{k: t[k] / n for k in ("min_s", "median_s", "max_s")}, "S": S, "steps_per_repeat": n}

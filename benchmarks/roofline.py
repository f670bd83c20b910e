"""What this machine can do at best, and the library's kernels measured against it.

Shared by ``benchmarks/run.py`` (``make bench``, the CPU) and ``benchmarks/gpu.py`` (the GPU
run): the same code measures the roofline and the kernels in the same run, on whatever
device JAX uses.

- ``exp_roofline``: exps per second of ``sum(exp(a_i b_j))`` over a rank-one grid, jitted:
  what XLA reaches on an exp-bound kernel that reads almost no memory (the training step's
  scores have the same rank-one form), both cores / the whole device.
- ``bandwidth``: bytes per second of ``x + 1`` over an array far larger than the caches
  (read and written, both counted).
- ``step_times``: one training step of the two-head layer (forward, backward, Adam) on a
  fixed batch, run as a ``lax.scan`` of several steps so that dispatch is not timed; its
  roofline is 2 B H L^2 exps (one exp per score in each of the two passes).
- ``exp_rooflines``: ``exp_roofline`` by XLA and by the C++ loop, their repeats interleaved.

Every timing is a list of repeats: min, median and max, with the 1-minute load average
(on a shared machine other processes slow some repeats; the min is the least disturbed).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

REPEATS = 7
"""Repeats of every timing (the issue asks for at least 5)."""


def load1() -> float:
    return os.getloadavg()[0]


def timings(f: Callable[[], object], reps: int = REPEATS, number: int = 1) -> dict:
    """Seconds per call of ``f`` (which blocks until its result is ready): ``reps`` repeats of
    ``number`` calls each, after one warm-up call; min, median and max per call."""
    import numpy as np

    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        ts.append((time.perf_counter() - t0) / number)
    return {"min_s": float(np.min(ts)), "median_s": float(np.median(ts)), "max_s": float(np.max(ts)),
            "reps": reps, "load": load1()}


def interleaved_timings(fs: dict[str, Callable[[], object]], reps: int = REPEATS) -> dict[str, dict]:
    """``timings`` of several functions, their repeats interleaved after one warm-up call
    each, so that a change of load during the run weighs on all of them alike and their
    ratios are paired. The order rotates from one repeat to the next (a, b, c, then b, c, a,
    then c, a, b, ...), so that no function always runs right after the same other one
    (whose threads may still be spinning, or whose data fills the caches)."""
    import numpy as np

    for f in fs.values():
        f()
    ts: dict[str, list[float]] = {k: [] for k in fs}
    names = list(fs)
    for i in range(reps):
        for k in names[i % len(names):] + names[:i % len(names)]:
            t0 = time.perf_counter()
            fs[k]()
            ts[k].append(time.perf_counter() - t0)
    return {k: {"min_s": float(np.min(v)), "median_s": float(np.median(v)), "max_s": float(np.max(v)),
                "per_rep_s": v, "reps": reps, "load": load1()} for k, v in ts.items()}


def exp_roofline(rows: int = 8192, cols: int = 8192, reps: int = REPEATS, exp_sum=None) -> dict:
    """Exp throughput: ``sum(exp(a_i b_j))`` over a rows x cols grid (logits in [-8, 0]),
    jitted; exps per second at the fastest, median and slowest repeat. ``exp_sum`` (a, b)
    -> scalar replaces JAX's sum by another implementation of it (the C++ loop of
    ``benchmarks/kernel``)."""
    return exp_rooflines(rows, cols, reps, {"exp": exp_sum})["exp"]


def exp_rooflines(rows: int = 8192, cols: int = 8192, reps: int = REPEATS, exp_sums=None) -> dict[str, dict]:
    """``exp_roofline`` of several implementations of the same sum (name -> ``exp_sum``, None
    JAX's own), on the same grid, their repeats interleaved (``interleaved_timings``), so that
    a change of load weighs on all of them alike and the faster of them (the roofline) is
    not the one that happened to run while the machine was quieter."""
    import jax
    import jax.numpy as jnp

    a = jax.random.uniform(jax.random.PRNGKey(0), (rows,), minval=0.0, maxval=2.0)
    b = jax.random.uniform(jax.random.PRNGKey(1), (cols,), minval=-4.0, maxval=0.0)
    fs = {name: jax.jit(exp_sum or (lambda a, b: jnp.sum(jnp.exp(a[:, None] * b[None, :]))))
          for name, exp_sum in (exp_sums or {"xla": None}).items()}
    ts = interleaved_timings({name: (lambda f=f: f(a, b).block_until_ready()) for name, f in fs.items()}, reps)
    n = rows * cols
    return {name: {"exps": n, **t, "best_per_s": n / t["min_s"], "median_per_s": n / t["median_s"],
                   "worst_per_s": n / t["max_s"], "interleaved_with": sorted(set(ts) - {name})}
            for name, t in ts.items()}


def bandwidth(nbytes: int = 512 * 2**20, reps: int = REPEATS) -> dict:
    """Memory bandwidth: ``x + 1`` on a float32 array of ``nbytes`` (read once, written once:
    2 nbytes moved), jitted, the output buffer donated back each time."""
    import jax
    import jax.numpy as jnp

    x = jnp.zeros((nbytes // 4,), jnp.float32)
    f = jax.jit(lambda x: x + 1.0, donate_argnums=0)
    state = {"x": f(x)}

    def call():
        state["x"] = f(state["x"])
        state["x"].block_until_ready()

    t = timings(call, reps)
    moved = 2 * nbytes
    return {"bytes": moved, **t, "best_per_s": moved / t["min_s"], "median_per_s": moved / t["median_s"],
            "worst_per_s": moved / t["max_s"]}


def step_exps(batch: int, H: int, L: int) -> int:
    """Exps of one training step by design: one per score (B H L^2) in each of two passes."""
    return 2 * batch * H * L * L


def step_runner(L: int, batch: int, n: int, pool=None, K: int | None = None, d: int | None = None,
                lam: float | None = None):
    """A function () -> None running ``n`` training steps (forward, backward, Adam) on one
    fixed batch of ``batch`` prompts of L tokens from the book's default mixture, as one
    jitted ``lax.scan``. ``pool`` None is the library (``attnclust.make_step``); otherwise a
    pooling with the signature of ``rank_one_softmax_pool``, put in the same layer and loss."""
    import jax
    import jax.numpy as jnp
    import optax

    import attnclust as ac

    # K, d, lam: the default setting's (attnclust.DEFAULT) unless given
    s = ac.DEFAULT.replace(**{k: x for k, x in dict(K=K, d=d, lam=lam).items() if x is not None})
    K, d, lam = s.K, s.d, s.lam
    m = ac.orthogonal_mixture(**s.mixture_args())
    X, _ = ac.sample(jax.random.PRNGKey(4), m, batch, L)
    theta = ac.init_theta(jax.random.PRNGKey(5), m, init="near")
    opt = optax.adam(1e-2)
    if pool is None:
        step = ac.make_step(opt, lam)
    else:
        def loss(t, X):
            P = jnp.swapaxes(X @ t.T, -1, -2)
            return ac.distortion(jnp.swapaxes(pool(lam, P, P), -1, -2) @ t, X)

        def step(carry, X):
            t, st = carry
            value, g = jax.value_and_grad(loss)(t, X)
            u, st = opt.update(g, st, t)
            return (optax.apply_updates(t, u), st), value

    run = jax.jit(lambda t, st, X: jax.lax.scan(lambda c, _: step(c, X), (t, st), None, length=n)[0][0])
    st = opt.init(theta)
    return lambda: run(theta, st, X).block_until_ready()


def steps_per_repeat(L: int, batch: int, target_exps: float = 2e8) -> int:
    """Steps in one timed repeat: about ``target_exps`` exps (0.05-0.1 s on a 2-core CPU),
    at least 2."""
    return max(2, int(target_exps / step_exps(batch, 2, L)))


def time_step(L: int, batch: int, pool=None, reps: int = REPEATS, target_exps: float = 2e8) -> dict:
    """Seconds per training step: min, median and max over ``reps`` repeats of a scan of
    several steps (``with_fractions`` adds its fractions of a roofline)."""
    return time_steps(L, batch, {"step": pool}, reps, target_exps)["step"]


def time_steps(L: int, batch: int, pools: dict, reps: int = REPEATS, target_exps: float = 2e8) -> dict[str, dict]:
    """``time_step`` for several poolings (name -> pooling, None the library's step) on the
    same batch, their repeats interleaved (``interleaved_timings``)."""
    n = steps_per_repeat(L, batch, target_exps)
    ts = interleaved_timings({k: step_runner(L, batch, n, pool) for k, pool in pools.items()}, reps)
    return {k: {"L": L, "batch": batch, "steps_per_repeat": n, "reps": t["reps"], "load": t["load"],
                "per_rep_s": [x / n for x in t["per_rep_s"]],
                **{q: t[q] / n for q in ("min_s", "median_s", "max_s")}} for k, t in ts.items()}


def with_fractions(t: dict, exps: int, exp_rate: float) -> dict:
    """``t`` (a timing: min_s, median_s, max_s) with its roofline ``exps / exp_rate`` and the
    fractions roofline / time at the median, fastest and slowest repeat."""
    roof = exps / exp_rate
    return {**t, "roofline_s": roof, "frac_roofline": roof / t["median_s"],
            "frac_roofline_best": roof / t["min_s"], "frac_roofline_worst": roof / t["max_s"]}


def step_hlo(L: int, batch: int) -> dict:
    """What XLA made of the library's training step at L: its temporary memory, and each
    fusion that computes exps (``exp_fusions``), read from the compiled HLO."""
    import jax
    import optax

    import attnclust as ac

    m = ac.orthogonal_mixture()
    X = jax.ShapeDtypeStruct((batch, L, m.d), "float32")
    theta = jax.ShapeDtypeStruct((2, m.d), "float32")
    opt = optax.adam(1e-2)
    step = ac.make_step(opt, ac.DEFAULT.lam)
    compiled = jax.jit(lambda t, X: step((t, opt.init(t)), X)).lower(theta, X).compile()
    text = compiled.as_text()
    loops = [line for line in text.splitlines() if " while(" in line]
    return {"L": L, "batch": batch, "temp_bytes": compiled.memory_analysis().temp_size_in_bytes,
            "exp_fusions": exp_fusions(text), "while_loops": len(loops),
            "while_trip_counts": [while_trip_count(line) for line in loops]}


def while_trip_count(line: str) -> int | None:
    """The trip count XLA proved for a ``while`` instruction of a compiled program (its
    ``known_trip_count`` backend config; the forward pass's ``lax.map`` over tiles compiles
    to one such loop, its trip count the number of tiles), or None when it has none."""
    import re

    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line)
    return int(m.group(1)) if m else None


def exp_fusions(text: str) -> list[dict]:
    """Each fusion of a compiled program (``compiled.as_text()``) that computes exps: its
    kind (XLA's own loop or reduction emitter, or a YNNPACK kernel) and its output shape."""
    import re

    bodies = {}
    for block in re.split(r"\n(?=%|ENTRY)", text):
        head = block.split(" ", 1)[0].lstrip("%")
        bodies[head] = block
    with_exp = {name for name, body in bodies.items() if " exponential(" in body}
    fusions = []
    for line in text.splitlines():
        call = re.search(r"calls=%([\w.\-]+)", line)
        if " fusion(" in line and call and call.group(1) in with_exp:
            shape = re.search(r"= (\S+) fusion\(", line)
            fusions.append({"kind": "YNNPACK" if "__ynn_fusion" in line else re.search(r"kind=(\w+)", line).group(1),
                            "output": shape.group(1) if shape else "?"})
    return fusions


def exp_paths(rows: int = 1024, cols: int = 1024, reps: int = REPEATS) -> dict:
    """Exps per second on one rows x cols tile (in cache) by the two code paths XLA's CPU
    backend has for them: a loop fusion that writes the exps (what a kernel needs when one
    exp feeds several sums, as in the step's forward pass) and a YNNPACK reduction that
    sums them as it computes them (one sum per exp, as in the backward pass). Also
    "forward": scores per second of the library's forward pass (``rank_one_softmax_pool``)
    on two such tiles (two pairs of rows queries and cols keys: more than one tile, so it
    takes the tiled path), where the written exps are then reduced by the product against
    the keys' powers; and "sums": the same three moments written as three sums over the
    keys of one expression's exps (scores per second), and the exp fusions XLA compiled them
    into ("sums_exp_fusions": a loop fusion whose output is every exp, read back by the
    sums, where one reduction would have to feed all three)."""
    import jax
    import jax.numpy as jnp

    from attnclust._kernels import rank_one_softmax_pool

    a = jax.random.uniform(jax.random.PRNGKey(0), (rows,), minval=0.0, maxval=2.0)
    b = jax.random.uniform(jax.random.PRNGKey(1), (cols,), minval=-4.0, maxval=0.0)
    written = jax.jit(lambda a, b: jnp.exp(a[:, None] * b[None, :]))
    summed = jax.jit(lambda a, b: jnp.sum(jnp.exp(a[:, None] * b[None, :]), axis=-1))
    Pq = jax.random.normal(jax.random.PRNGKey(2), (2, rows))
    Pk = jax.random.normal(jax.random.PRNGKey(3), (2, cols))
    forward = jax.jit(lambda Pq, Pk: rank_one_softmax_pool(1.0, Pq, Pk))

    def three_sums(Pq, Pk):
        D = Pk[:, None, :] - jnp.max(Pk, axis=-1)[:, None, None]
        e = jnp.exp(Pq[:, :, None] * D)
        return jnp.sum(e, -1), jnp.sum(e * D, -1), jnp.sum(e * D * D, -1)

    sums = jax.jit(three_sums)
    out = {"shape": [rows, cols], "sums_exp_fusions": exp_fusions(sums.lower(Pq, Pk).compile().as_text())}
    for name, f, args, n in (("written", written, (a, b), rows * cols), ("summed", summed, (a, b), rows * cols),
                             ("forward", forward, (Pq, Pk), 2 * rows * cols), ("sums", sums, (Pq, Pk), 2 * rows * cols)):
        t = timings(lambda f=f, args=args: jax.block_until_ready(f(*args)), reps)
        out[name] = {**t, "best_per_s": n / t["min_s"], "median_per_s": n / t["median_s"]}
    return out

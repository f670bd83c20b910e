#!/usr/bin/env python3
"""One benchmark run of attnclust: prints the goal table and writes benchmarks/results.json.

    make bench                                   # = python benchmarks/run.py
    python benchmarks/run.py --quick             # tiny sizes, a smoke test of this script
    python benchmarks/run.py --size full         # accelerator sizes (benchmarks/gpu.sh)

Sections (the issue "Performance and scale"):

1. Training. Steps per second of one ``fit`` (one jit-compiled lax.scan) and of
   ``fit_many`` over S seeds (seed-steps per second), against (a) the same layer, sampling
   and Adam step in PyTorch eager on the CPU, one seed, same batch; (b) a Python loop of
   per-step jitted calls of the same step; (c) S sequential ``fit`` runs. Also ``fit_many``
   with the seeds sharded over one CPU device per core (JAX_NUM_CPU_DEVICES, in a child
   process): how the library is meant to use a multi-core CPU, and the configuration the
   goals are judged on, since the PyTorch peer also gets every core (the faster of 1 and 2
   threads). Then the achieved GFLOP/s of one training step of the attention
   layer (forward, backward, Adam) at L = 256 and 1024, FLOPs as counted by XLA's
   cost analysis of the compiled step, against the float32 matrix-multiply peak measured
   in the same run (best of JAX, PyTorch and NumPy at n = 1024, 2048).
2. Identity attention, d = 32, L = 1k..200k: time and peak resident memory of the blocked
   evaluation (``identity_attention(X, lam, block=B)``) and of the unblocked one where its
   L x L matrix fits in 2 GB, each size in its own child process (peak RSS = VmHWM of the
   child, whose resident memory just before the evaluation is recorded as the baseline);
   GFLOP/s with the model count 4 L^2 d (the two products; the softmax is not counted);
   distortion D = mean ||Q(x) - mu_c(x)||^2 and time against scikit-learn's KMeans
   (``attnclust.baselines.kmeans_per_prompt``) on the same tokens.
3. Widget callbacks: p50 and p95 latency over a scripted sequence of slider moves
   (``bench_widgets``), the first call and redraws at the defaults.
4. Book build: read from benchmarks/book.json, written by ``make bench-book``.

Every number is recorded with the 1-minute load average when it was measured: on a shared
machine a load above the core count means the numbers are slowed by other processes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

SIZES = {
    # CPU scale: the whole run takes about 10 minutes on 2 cores.
    "small": dict(
        steps=400, S=16, torch_steps=200, loop_steps=400, flop_L=(256, 1024), flop_batch=32,
        identity_L=(1000, 3000, 10000, 30000, 100000, 200000), block=1024,
        full_max_bytes=2 * 2**30, widget_calls=15, matmul_n=(1024, 2048),
    ),
    # smoke test of the script itself (seconds)
    "quick": dict(
        steps=40, S=4, torch_steps=20, loop_steps=40, flop_L=(256,), flop_batch=4,
        identity_L=(1000, 3000), block=512, full_max_bytes=2 * 2**30, widget_calls=3,
        matmul_n=(512,),
    ),
    # accelerator scale (benchmarks/gpu.sh)
    "full": dict(
        steps=2000, S=256, torch_steps=300, loop_steps=1000, flop_L=(256, 1024, 4096),
        flop_batch=32, identity_L=(1000, 10000, 100000, 200000, 1000000), block=8192,
        full_max_bytes=16 * 2**30, widget_calls=30, matmul_n=(4096, 8192),
    ),
}

# Training setting: the book's defaults (K=2, d=5, r=2, sigma=0.5, lam=1, batch 32, L 50).
K, D, R, SIGMA, LAM, BATCH, L_TRAIN, LR = 2, 5, 2.0, 0.5, 1.0, 32, 50, 1e-2
# Identity attention setting: d = 32, two orthogonal centroids of norm 4, sigma 0.5.
ID_K, ID_D, ID_R, ID_SIGMA, ID_LAM = 2, 32, 4.0, 0.5, 0.25


def load1() -> float:
    return os.getloadavg()[0]


def rss_mb() -> float:
    """Current resident memory of this process (MB)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def maxrss_mb() -> float:
    """Peak resident memory of this process (MB): VmHWM of /proc/self/status, the
    high-water mark of this address space. (ru_maxrss is not used: on Linux a child keeps
    the parent's value across fork and exec, so it would report the parent's memory.)"""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load1():.1f}] {msg}", flush=True)


# --------------------------------------------------------------------------- machine


def machine_info() -> dict:
    import jax

    cpu = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    versions = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "numpy", "scikit-learn", "torch", "optax"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:  # noqa: BLE001 - a missing optional package is recorded as such
            versions[name] = None
    devices = jax.devices()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_gb, 1),
        "platform": platform.platform(),
        "hostname_kind": "shared 2-core CPU" if os.cpu_count() == 2 else "",
        "versions": versions,
        "backend": devices[0].platform,
        "devices": len(devices),
        "device_kind": devices[0].device_kind,
    }


# --------------------------------------------------------------------------- matmul peak


def matmul_peak(ns) -> dict:
    """Best float32 GFLOP/s of an n x n matrix product (2 n^3 FLOPs), best of 20 (the best
    run is the one least disturbed by other processes), over JAX,
    PyTorch and NumPy."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    out = {}

    def best(f, reps=20):
        f()
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        return min(ts)

    for n in ns:
        a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
        mm = jax.jit(lambda x, y: x @ y)
        out[f"jax_{n}"] = 2 * n**3 / best(lambda: mm(a, a).block_until_ready()) / 1e9
        an = np.asarray(a)
        out[f"numpy_{n}"] = 2 * n**3 / best(lambda: an @ an) / 1e9
        try:
            import torch

            at = torch.from_numpy(an.copy())
            out[f"torch_{n}"] = 2 * n**3 / best(lambda: at @ at) / 1e9
        except ImportError:
            pass
    import jax as _jax

    on_cpu = _jax.devices()[0].platform == "cpu"
    # on an accelerator the peak is the device's (JAX); host libraries are listed only
    peak = max(v for k, v in out.items() if on_cpu or k.startswith("jax_"))
    return {"peak_gflops": peak, "by_library": out}


# --------------------------------------------------------------------------- training


def _mixture():
    import attnclust as ac

    return ac.orthogonal_mixture(K=K, d=D, r=R, sigma=SIGMA)


def _timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def bench_fit(steps: int, S: int) -> dict:
    """fit (one seed) and fit_many (S seeds): second call, so compilation is excluded."""
    import jax

    import attnclust as ac

    m = _mixture()
    key = jax.random.PRNGKey(0)
    keys = jax.random.split(key, S)
    res = {}
    run = dict(lam=LAM, steps=steps, batch=BATCH, L=L_TRAIN, lr=LR, progress=False)
    _, res["fit_compile_and_run_s"] = _timed(lambda: ac.fit(key, m, **run))
    _, t = _timed(lambda: ac.fit(key, m, **run))
    res["fit_s"] = t
    res["fit_steps_per_s"] = steps / t
    res["fit_load"] = load1()
    _, res["fit_many_compile_and_run_s"] = _timed(
        lambda: ac.fit_many(keys, m, **run)
    )
    many, t = _timed(lambda: ac.fit_many(keys, m, **run))
    res["fit_many_theta_sum"] = float(abs(many.theta).sum())  # compared with the sharded run's
    res["fit_many_s"] = t
    res["fit_many_steps_per_s"] = S * steps / t
    res["fit_many_load"] = load1()
    # (c) S sequential fit runs (already compiled above)
    t0 = time.perf_counter()
    for s in range(S):
        ac.fit(keys[s], m, **run)
    t = time.perf_counter() - t0
    res["sequential_s"] = t
    res["sequential_steps_per_s"] = S * steps / t
    res["sequential_load"] = load1()
    return res


def _jax_step():
    """The step fit takes (``attnclust.train.make_step`` on a batch from
    ``draw_from_mixture``), as one jitted function of (theta, opt_state, key)."""
    import jax
    import optax

    import attnclust as ac
    from attnclust.train import make_step

    m = _mixture()
    opt = optax.adam(LR)
    train_step = make_step(opt, LAM)

    @jax.jit
    def step(theta, opt_state, key):
        (theta, opt_state), loss = train_step((theta, opt_state), ac.draw_from_mixture(key, m, BATCH, L_TRAIN))
        return theta, opt_state, loss

    return step, opt, m


def bench_python_loop(steps: int) -> dict:
    """(b) a Python loop of per-step jitted calls (one seed)."""
    import jax

    import attnclust as ac

    step, opt, m = _jax_step()
    theta = ac.init_theta(jax.random.PRNGKey(1), m)
    opt_state = opt.init(theta)
    keys = jax.random.split(jax.random.PRNGKey(2), steps)
    theta, opt_state, loss = step(theta, opt_state, keys[0])  # compile
    loss.block_until_ready()
    t0 = time.perf_counter()
    for i in range(steps):
        theta, opt_state, loss = step(theta, opt_state, keys[i])
        loss.block_until_ready()  # as a loop that logs the loss each step would
    t = time.perf_counter() - t0
    res = {"loop_s": t, "loop_steps_per_s": steps / t, "loop_load": load1()}
    # the same steps as one lax.scan without vmap: what fit (fit_many with S = 1) would
    # take without its seed axis
    scan = jax.jit(lambda th, st, ks: jax.lax.scan(
        lambda c, k: (step(*c, k)[:2], None), (th, st), ks)[0])
    jax.block_until_ready(scan(theta, opt_state, keys))
    t0 = time.perf_counter()
    jax.block_until_ready(scan(theta, opt_state, keys))
    t = time.perf_counter() - t0
    res.update(scan_s=t, scan_steps_per_s=steps / t, scan_load=load1())
    return res


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


def bench_torch(steps: int) -> dict:
    """(a) the same sampling, layer, risk and Adam step in PyTorch eager on the CPU."""
    import numpy as np
    import torch

    import attnclust as ac

    m = _mixture()
    weights = torch.tensor(np.asarray(m.weights), dtype=torch.float32)
    centroids = torch.tensor(np.asarray(m.centroids), dtype=torch.float32)
    # correctness: the torch layer equals attnclust's on the same inputs
    X0, _ = ac.sample(__import__("jax").random.PRNGKey(3), m, 4, L_TRAIN)
    th0 = np.random.default_rng(0).normal(size=(K, D)).astype(np.float32)
    ref = np.asarray(ac.two_head_layer(th0, X0, LAM))
    got = torch_layer(torch.tensor(th0), torch.tensor(np.asarray(X0)), LAM).numpy()
    max_err = float(np.max(np.abs(ref - got)))
    if not np.allclose(ref, got, atol=1e-4, rtol=1e-4):
        raise AssertionError(f"torch layer differs from attnclust's: max error {max_err}")

    def run(threads: int) -> float:
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        theta = (1e-2 * torch.randn(K, D)).requires_grad_()
        opt = torch.optim.Adam([theta], lr=LR)

        def step():
            labels = torch.multinomial(weights, BATCH * L_TRAIN, replacement=True).view(BATCH, L_TRAIN)
            X = centroids[labels] + SIGMA * torch.randn(BATCH, L_TRAIN, D)
            opt.zero_grad(set_to_none=True)
            loss = ((X - torch_layer(theta, X, LAM)) ** 2).sum(-1).mean()
            loss.backward()
            opt.step()
            return loss

        for _ in range(10):
            step()
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = step()
        float(loss.detach())
        return time.perf_counter() - t0

    # PyTorch's intra-op threads spin; on a shared machine one thread can be faster than
    # two, so both are measured and the faster one is PyTorch's number.
    default_threads = torch.get_num_threads()
    by_threads = {n: steps / run(n) for n in sorted({1, default_threads})}
    torch.set_num_threads(default_threads)
    best = max(by_threads, key=by_threads.get)
    return {
        "torch_steps_per_s": by_threads[best], "torch_threads": best,
        "torch_steps_per_s_by_threads": {str(k): v for k, v in by_threads.items()},
        "torch_max_abs_diff": max_err, "torch_load": load1(),
    }


def bench_attention_flops(Ls, batch: int, peak: float) -> list[dict]:
    """GFLOP/s of one training step of the two-head layer (forward, backward, Adam; no
    sampling: X is fixed) at each L, FLOPs from XLA's cost analysis of the compiled step."""
    import jax
    import optax

    import attnclust as ac
    from attnclust.train import make_step

    m = _mixture()
    opt = optax.adam(LR)
    train_step = make_step(opt, LAM)

    def step(theta, opt_state, X):
        (theta, opt_state), loss = train_step((theta, opt_state), X)
        return theta, opt_state, loss

    out = []
    for L in Ls:
        X, _ = ac.sample(jax.random.PRNGKey(4), m, batch, L)
        theta = ac.init_theta(jax.random.PRNGKey(5), m, init="near")
        st = opt.init(theta)
        compiled = jax.jit(step).lower(theta, st, X).compile()
        ca = compiled.cost_analysis()
        ca = ca[0] if isinstance(ca, list) else ca
        flops = float(ca.get("flops", float("nan")))
        jax.block_until_ready(compiled(theta, st, X))
        reps = max(3, min(50, int(2e8 / max(flops, 1))))
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(theta, st, X))
            ts.append(time.perf_counter() - t0)
        t = sorted(ts)[len(ts) // 2]
        out.append({
            "L": L, "batch": batch, "step_s": t, "flops": flops,
            "transcendentals": float(ca.get("transcendentals", 0.0)),
            "gflops": flops / t / 1e9, "frac_peak": flops / t / 1e9 / peak, "load": load1(),
        })
        log(f"attention step L={L}: {t * 1e3:.1f} ms, {flops / t / 1e9:.2f} GFLOP/s")
    return out


def _child(args: list[str], env: dict | None = None, timeout: float = 1800) -> dict:
    """Run this script as a child with ``args``; its last stdout line is a JSON object."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_fit_sharded(S: int, steps: int) -> dict:
    """fit_many with the seeds sharded over all devices (run with JAX_NUM_CPU_DEVICES set)."""
    import jax

    import attnclust as ac

    m = _mixture()
    keys = jax.random.split(jax.random.PRNGKey(0), S)
    run = dict(lam=LAM, steps=steps, batch=BATCH, L=L_TRAIN, lr=LR, progress=False)
    ac.fit_many(keys, m, **run)
    res, t = _timed(lambda: ac.fit_many(keys, m, **run))
    return {"devices": len(jax.devices()), "s": t, "steps_per_s": S * steps / t, "load": load1(),
            "theta_sum": float(abs(res.theta).sum())}


# --------------------------------------------------------------------------- identity attention


def child_identity(L: int, block: int | None, with_kmeans: bool) -> dict:
    """Time and peak memory of one identity-attention evaluation at length L (this process
    does nothing else), then scikit-learn's KMeans on the same tokens."""
    import jax

    import attnclust as ac
    from attnclust import attention as att
    from attnclust.baselines import kmeans_per_prompt

    X, labels, mus = ac.sample_in_context(jax.random.PRNGKey(7), ID_K, ID_D, ID_R, ID_SIGMA, 1, L)
    X = X[0]
    jax.block_until_ready(X)
    # compile first (identical to what identity_attention runs), then time one evaluation
    if block is None:
        fn = att._identity_full.lower(X, ID_LAM).compile()
    else:
        fn = att._identity_blocked.lower(X, ID_LAM, min(block, L)).compile()
    base = rss_mb()
    t0 = time.perf_counter()
    out = fn(X, ID_LAM)
    out.block_until_ready()
    t = time.perf_counter() - t0
    peak = maxrss_mb()
    dev = jax.devices()[0]
    device_peak = None
    if dev.platform != "cpu":
        stats = dev.memory_stats() or {}
        device_peak = stats.get("peak_bytes_in_use", 0) / 2**20
    targets = mus[0][labels[0]]
    res = {
        "L": L, "block": block, "time_s": t, "peak_rss_mb": peak, "base_rss_mb": base,
        "D": float(ac.distortion(out, targets)), "load": load1(), "device_peak_mb": device_peak,
    }
    if block is not None:  # the public entry point gives the same values
        ref = ac.identity_attention(X[:2000], ID_LAM, block=min(block, 2000))
        res["matches_public"] = bool(abs(float((ref - ac.identity_attention(X[:2000], ID_LAM)).max())) < 1e-4)
    if with_kmeans:
        import numpy as np

        t0 = time.perf_counter()
        km_labels, centres = kmeans_per_prompt(jax.random.PRNGKey(0), np.asarray(X)[None], ID_K)
        res["kmeans_s"] = time.perf_counter() - t0
        # each token quantized to its k-means centre
        res["D_kmeans"] = float(ac.distortion(centres[0][km_labels[0]], targets))
    return res


def bench_identity(Ls, block: int, full_max_bytes: int, peak: float) -> list[dict]:
    rows = []
    for L in Ls:
        row = {"L": L, "d": ID_D, "block": block, "lam": ID_LAM}
        b = _child(["--child", "identity", str(L), str(block), "1"])
        if "error" in b:
            row["blocked_error"] = b["error"]
        else:
            row.update(
                blocked_s=b["time_s"], blocked_rss_mb=b["peak_rss_mb"], base_rss_mb=b["base_rss_mb"],
                D_attention=b["D"], kmeans_s=b["kmeans_s"], D_kmeans=b["D_kmeans"],
                blocked_gflops=4 * L * L * ID_D / b["time_s"] / 1e9, load=b["load"],
                matches_public=b.get("matches_public"),
            )
            row["blocked_frac_peak"] = row["blocked_gflops"] / peak
        if 4 * L * L <= full_max_bytes:
            f = _child(["--child", "identity", str(L), "none", "0"])
            if "error" in f:
                row["full_error"] = f["error"]
            else:
                row.update(full_s=f["time_s"], full_rss_mb=f["peak_rss_mb"],
                           full_gflops=4 * L * L * ID_D / f["time_s"] / 1e9)
        log(f"identity L={L}: " + ", ".join(f"{k}={v:.3g}" for k, v in row.items() if isinstance(v, float)))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- widgets


WIDGET_CALLBACKS = (
    # (module, candidate callback names, slider moves: (argument, values) tried one at a
    # time from the defaults, as a reader dragging one slider would; every value differs
    # from the defaults and from the values before it, so no move finds its answer cached)
    ("mixture", ("draw_mixture", "mixture_figure"),
     (("K", (3, 4)), ("r_over_sigma", (2.0, 6.0)), ("weight", (0.3, 0.7)),
      ("d", (6, 10)), ("seed", (1, 2, 3)))),
    ("training", ("draw_training", "training_figure"),
     (("lam", (0.5, 2.0, 4.0)), ("seed", (1, 2, 3)), ("r_over_sigma", (2.0, 3.0, 6.0, 8.0)),
      ("init", ("near", "large", "close")), ("L", (20, 100)), ("d", (2, 10)))),
    ("quantization", ("draw_quantization", "quantization_figure"),
     (("lam", (0.25, 0.5, 2.0, 4.0)), ("r_over_sigma", (2.0, 6.0)), ("K", (3, 4)),
      ("L", (200, 400)), ("seed", (1, 2, 3)))),
)


def bench_widgets(calls: int) -> list[dict]:
    """Latency of each widget callback: the module's ``prepare()`` when it has one (the
    compilation its explorer starts in the background when it opens), the first call at the
    defaults, then
    ``calls`` redraws at the defaults, then a scripted sequence of slider moves (one slider
    at a time, every value new: what a reader waits for). p50 and p95 of the moves are the
    widget's latency; every figure is closed."""
    import importlib
    import inspect

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    def render(fig) -> float:
        """Seconds to draw ``fig`` as the PNG the explorer shows (then closed): what the
        reader waits for after the callback returns."""
        import io

        t0 = time.perf_counter()
        fig.savefig(io.BytesIO(), format="png")
        t = time.perf_counter() - t0
        close(fig)
        return t

    def close(fig):
        try:
            plt.close(fig)
        except Exception:  # noqa: BLE001 - a figure not managed by pyplot needs no closing
            pass

    out = []
    for module, names, moves in WIDGET_CALLBACKS:
        row = {"module": f"attnclust.widgets.{module}"}
        try:
            mod = importlib.import_module(f"attnclust.widgets.{module}")
        except Exception as err:  # noqa: BLE001 - report a missing module, measure the rest
            row["error"] = f"{type(err).__name__}: {err}"
            out.append(row)
            log(f"widget {row}")
            continue
        fn_name = next((n for n in names if hasattr(mod, n)), None)
        if fn_name is None:
            row["error"] = f"no callback among {names}"
            out.append(row)
            log(f"widget {row}")
            continue
        fn = getattr(mod, fn_name)
        row["callback"] = fn_name
        params = inspect.signature(fn).parameters
        try:
            if hasattr(mod, "prepare"):  # what the explorer compiles while the reader reads
                t0 = time.perf_counter()
                mod.prepare()
                row["prepare_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            close(fn())
            row["first_call_s"] = time.perf_counter() - t0
            ts = []
            for _ in range(calls):
                t0 = time.perf_counter()
                close(fn())
                ts.append(time.perf_counter() - t0)
            row.update(redraw_p50_s=float(np.percentile(ts, 50)), redraw_p95_s=float(np.percentile(ts, 95)))
            move_ts, render_ts, errors, state = [], [], [], {}
            for arg, values in moves:
                if arg not in params:
                    errors.append(f"no argument {arg!r}")
                    continue
                for value in values:
                    state[arg] = value
                    t0 = time.perf_counter()
                    try:
                        fig = fn(**state)
                    except Exception as err:  # noqa: BLE001 - recorded, not fatal
                        errors.append(f"{arg}={value!r}: {type(err).__name__}: {err}")
                        state.pop(arg)
                        continue
                    move_ts.append(time.perf_counter() - t0)
                    render_ts.append(render(fig))
                state.pop(arg, None)
            row.update(render_p95_s=float(np.percentile(render_ts, 95)))
            row.update(p50_s=float(np.percentile(move_ts, 50)), p95_s=float(np.percentile(move_ts, 95)),
                       max_s=float(max(move_ts)), moves=len(move_ts), move_errors=errors,
                       calls=calls, load=load1())
        except Exception as err:  # noqa: BLE001
            row["error"] = f"{type(err).__name__}: {err}"
        out.append(row)
        log(f"widget {row}")
    return out


# --------------------------------------------------------------------------- assemble


def metric(id_, section, label, value, unit, load=None, note="", goal="auto"):
    from attnclust.perf import GOALS

    return {
        "id": id_, "section": section, "label": label,
        "value": None if value is None else float(value), "unit": unit,
        "goal": GOALS.get(id_) if goal == "auto" else goal, "load": load, "note": note,
    }


def build_metrics(r: dict, cfg: dict) -> list[dict]:
    S = cfg["S"]
    tr, pk = r.get("training") or {}, r["matmul"]
    ms = []
    T = "Training"
    A = "Attention FLOP rate"
    if not tr:  # section skipped
        ms.append(metric("matmul_peak_gflops", A, "float32 matmul peak (measured)", pk["peak_gflops"], "GFLOP/s", pk.get("load")))
        return ms + build_other_metrics(r)
    ms.append(metric("fit_steps_per_s", T, "fit: steps/s (one lax.scan)", tr["fit_steps_per_s"], "steps/s", tr["fit_load"]))
    ms.append(metric("fit_first_call_s", T, f"fit: first call ({cfg['steps']} steps, compiles)", tr["fit_compile_and_run_s"], "s", tr["fit_load"]))
    ms.append(metric("fit_many_steps_per_s", T, f"fit_many, S={S}, one device: seed-steps/s", tr["fit_many_steps_per_s"], "steps/s", tr["fit_many_load"]))
    sh = tr.get("sharded", {})
    n_dev = sh.get("devices", "?")
    ms.append(metric("fit_many_sharded_steps_per_s", T, f"fit_many, S={S}, seeds sharded over {n_dev} CPU devices (JAX_NUM_CPU_DEVICES={n_dev}): seed-steps/s", sh.get("steps_per_s"), "steps/s", sh.get("load"),
                     note={True: "final heads identical to one device's", False: "final heads DIFFER from one device's"}.get(sh.get("same_as_one_device"), "")))
    ms.append(metric("torch_steps_per_s", T, f"PyTorch eager (CPU, {tr.get('torch_threads', '?')} thread(s)): steps/s", tr.get("torch_steps_per_s"), "steps/s", tr.get("torch_load")))
    ms.append(metric("loop_steps_per_s", T, "Python loop of jitted steps: steps/s", tr["loop_steps_per_s"], "steps/s", tr["loop_load"]))
    if "scan_steps_per_s" in tr:
        ms.append(metric("scan_steps_per_s", T, "same step, one lax.scan, no vmap: steps/s", tr["scan_steps_per_s"], "steps/s", tr["scan_load"]))
    ms.append(metric("sequential_steps_per_s", T, f"{S} sequential fit: steps/s", tr["sequential_steps_per_s"], "steps/s", tr["sequential_load"]))
    fm = tr["fit_many_steps_per_s"]
    # the goals judge fit_many as configured for this machine: one CPU device per core
    # when that was measured (PyTorch, too, gets the faster of 1 and 2 threads)
    best, best_load, how = (sh["steps_per_s"], sh.get("load"), f"{n_dev} CPU devices") if sh.get("steps_per_s") \
        else (fm, tr["fit_many_load"], "one device")
    torch = tr.get("torch_steps_per_s")
    ms.append(metric("fit_many_vs_torch", T, f"fit_many ({how}) / PyTorch eager", best / torch if torch else None, "x", best_load))
    ms.append(metric("fit_many_vs_loop", T, f"fit_many ({how}) / Python loop", best / tr["loop_steps_per_s"], "x", best_load))
    ms.append(metric("fit_many_one_device_vs_torch", T, "fit_many (one device) / PyTorch eager", fm / torch if torch else None, "x", tr["fit_many_load"]))
    ms.append(metric("fit_many_vs_sequential", T, f"fit_many / {S} sequential fit", fm / tr["sequential_steps_per_s"], "x", tr["fit_many_load"]))
    ms.append(metric("fit_vs_torch", T, "fit / PyTorch eager", tr["fit_steps_per_s"] / tr["torch_steps_per_s"] if tr.get("torch_steps_per_s") else None, "x", tr["fit_load"]))
    if "scan_steps_per_s" in tr:
        ms.append(metric("fit_vs_scan", T, "fit / the same scan without vmap", tr["fit_steps_per_s"] / tr["scan_steps_per_s"], "x", tr["fit_load"]))
    ms.append(metric("fit_vs_loop", T, "fit / Python loop", tr["fit_steps_per_s"] / tr["loop_steps_per_s"], "x", tr["fit_load"]))
    if sh.get("steps_per_s"):
        ms.append(metric("sharded_vs_fit_many", T, "fit_many sharded / one device", sh["steps_per_s"] / fm, "x", sh.get("load")))
    ms.append(metric("matmul_peak_gflops", A, "float32 matmul peak (measured)", pk["peak_gflops"], "GFLOP/s", pk.get("load")))
    for row in r["attention_flops"]:
        L = row["L"]
        ms.append(metric(f"attention_step_gflops_L{L}", A, f"training step, L={L}, batch {row['batch']}", row["gflops"], "GFLOP/s", row["load"]))
        ms.append(metric(f"attention_step_frac_peak_L{L}", A, f"training step, L={L}: fraction of peak", row["frac_peak"], "", row["load"]))
    return ms + build_other_metrics(r)


def build_other_metrics(r: dict) -> list[dict]:
    ms = []
    I = "Identity attention (d=32)"
    for row in r["identity"]:
        L = row["L"]
        if "blocked_s" not in row:
            ms.append(metric(f"identity_L{L}_time", I, f"L={L:,}: blocked, time", None, "s", note=row.get("blocked_error", "")))
            continue
        tag = "L100k" if L == 100000 else f"L{L}"
        ms.append(metric(f"identity_{tag}_time", I, f"L={L:,}: blocked (B={row['block']}), time", row["blocked_s"], "s", row["load"]))
        ms.append(metric(f"identity_{tag}_rss", I, f"L={L:,}: blocked, peak RSS", row["blocked_rss_mb"], "MB", row["load"]))
        if "full_s" in row:
            ms.append(metric(f"identity_{tag}_full_time", I, f"L={L:,}: unblocked, time", row["full_s"], "s", row["load"]))
            ms.append(metric(f"identity_{tag}_full_rss", I, f"L={L:,}: unblocked, peak RSS", row["full_rss_mb"], "MB", row["load"]))
        ms.append(metric(f"identity_{tag}_frac_peak", I, f"L={L:,}: blocked, fraction of peak", row["blocked_frac_peak"], "", row["load"]))
        ms.append(metric(f"identity_{tag}_vs_kmeans_time", I, f"L={L:,}: time / KMeans time", row["blocked_s"] / row["kmeans_s"], "x", row["load"]))
        ms.append(metric(f"identity_{tag}_D", I, f"L={L:,}: distortion D, attention", row["D_attention"], "", row["load"]))
        ms.append(metric(f"identity_{tag}_D_kmeans", I, f"L={L:,}: distortion D, KMeans", row["D_kmeans"], "", row["load"]))
    W = "Widget callbacks"
    p95s = []
    for w in r["widgets"]:
        name = w.get("callback", w["module"].rsplit(".", 1)[-1])
        if "p95_s" in w:
            ms.append(metric(f"widget_{name}_p50", W, f"{name}: slider moves, p50", w["p50_s"], "s", w["load"]))
            ms.append(metric(f"widget_{name}_p95", W, f"{name}: slider moves, p95 ({w['moves']} moves)", w["p95_s"], "s", w["load"]))
            ms.append(metric(f"widget_{name}_max", W, f"{name}: slider moves, slowest", w["max_s"], "s", w["load"]))
            if "render_p95_s" in w:
                ms.append(metric(f"widget_{name}_render_p95", W, f"{name}: drawing the figure as PNG after a move, p95", w["render_p95_s"], "s", w["load"]))
            ms.append(metric(f"widget_{name}_redraw_p95", W, f"{name}: redraw at defaults, p95", w["redraw_p95_s"], "s", w["load"]))
            if "prepare_s" in w:
                ms.append(metric(f"widget_{name}_prepare", W, f"{name}: prepare() (background compilation when the explorer opens)", w["prepare_s"], "s", w["load"]))
            ms.append(metric(f"widget_{name}_first", W, f"{name}: first call at the defaults", w["first_call_s"], "s", w["load"]))
            p95s.append(w["p95_s"])
        else:
            ms.append(metric(f"widget_{name}_missing", W, f"{w['module']}: not measured", None, "s", note=w.get("error", "")))
    ms.append(metric("widget_p95_max", W, "largest slider-move p95 over the callbacks", max(p95s) if p95s else None, "s"))
    B = "Book build"
    book = r.get("book")
    for kind, label in (("clean", "clean build (make bench-book)"), ("cached", "cached rebuild")):
        if not book:
            ms.append(metric(f"book_{kind}", B, label, None, "s", note="not measured: run make bench-book"))
            continue
        ok = book.get(f"{kind}_ok", True)
        ms.append(metric(f"book_{kind}", B, label, book[f"{kind}_s"] if ok else None, "s", book.get(f"{kind}_load"),
                         note=f"{book.get('source', '')}, {book.get('date', '')}" + ("" if ok else ", the build FAILED")))
    return ms


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=sorted(SIZES), default="small")
    p.add_argument("--quick", action="store_true", help="same as --size quick")
    p.add_argument("--out", default=str(HERE / "results.json"))
    p.add_argument("--book", default=str(HERE / "book.json"), help="book timings from make bench-book")
    p.add_argument("--skip", default="", help="comma-separated sections to skip: training,identity,widgets")
    p.add_argument("--command", default=None, help="the command recorded in the results")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = p.parse_args()

    if a.child:
        kind, *rest = a.child
        if kind == "identity":
            L, block, km = int(rest[0]), None if rest[1] == "none" else int(rest[1]), rest[2] == "1"
            print(json.dumps(child_identity(L, block, km)))
        elif kind == "fit_sharded":
            print(json.dumps(child_fit_sharded(int(rest[0]), int(rest[1]))))
        return 0

    size = "quick" if a.quick else a.size
    cfg = SIZES[size]
    skip = set(filter(None, a.skip.split(",")))
    t_start = time.perf_counter()
    load_start = list(os.getloadavg())
    from attnclust import perf

    results: dict = {
        "schema": perf.SCHEMA,
        "command": a.command or ("make bench" if size == "small" else f"python benchmarks/run.py --size {size}"),
        "size": size,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "config": {**cfg, "training": dict(K=K, d=D, r=R, sigma=SIGMA, lam=LAM, batch=BATCH, L=L_TRAIN, lr=LR),
                   "identity": dict(K=ID_K, d=ID_D, r=ID_R, sigma=ID_SIGMA, lam=ID_LAM)},
    }
    log(f"machine: {results['machine']['cpu']}, {results['machine']['cores']} cores, backend {results['machine']['backend']}")

    mm = matmul_peak(cfg["matmul_n"])
    mm["load"] = load1()
    results["matmul"] = mm
    peak = mm["peak_gflops"]
    log(f"matmul peak {peak:.1f} GFLOP/s {mm['by_library']}")

    tr: dict = {}
    if "training" not in skip:
        tr.update(bench_fit(cfg["steps"], cfg["S"]))
        log(f"fit {tr['fit_steps_per_s']:.0f} steps/s, fit_many {tr['fit_many_steps_per_s']:.0f}, sequential {tr['sequential_steps_per_s']:.0f}")
        tr.update(bench_python_loop(cfg["loop_steps"]))
        log(f"python loop {tr['loop_steps_per_s']:.0f} steps/s, plain scan {tr['scan_steps_per_s']:.0f} steps/s")
        try:
            tr.update(bench_torch(cfg["torch_steps"]))
            log(f"torch eager {tr['torch_steps_per_s']:.0f} steps/s")
        except ImportError as err:
            tr["torch_error"] = str(err)
            log(f"torch not installed: {err}")
        n_dev = results["machine"]["cores"] if results["machine"]["backend"] == "cpu" else None
        if n_dev and n_dev > 1:
            sh = _child(["--child", "fit_sharded", str(cfg["S"]), str(cfg["steps"])],
                        env={"JAX_NUM_CPU_DEVICES": str(n_dev)})
            if "theta_sum" in sh:
                sh["same_as_one_device"] = abs(sh["theta_sum"] - tr["fit_many_theta_sum"]) <= 1e-5 * abs(tr["fit_many_theta_sum"])
            tr["sharded"] = sh
            log(f"fit_many sharded over {n_dev} CPU devices: {sh}")
        results["training"] = tr
        results["attention_flops"] = bench_attention_flops(cfg["flop_L"], cfg["flop_batch"], peak)
    results["identity"] = [] if "identity" in skip else bench_identity(cfg["identity_L"], cfg["block"], cfg["full_max_bytes"], peak)
    results["widgets"] = [] if "widgets" in skip else bench_widgets(cfg["widget_calls"])
    book_path = Path(a.book)
    results["book"] = json.loads(book_path.read_text()) if book_path.is_file() else None

    results["metrics"] = build_metrics(results, cfg)
    if "grading" not in skip:
        results["metrics"] += bench_grading()
    results["load"] = {"start": load_start, "end": list(os.getloadavg())}
    results["duration_s"] = time.perf_counter() - t_start
    perf.validate(results)
    Path(a.out).write_text(json.dumps(results, indent=1) + "\n")
    m = results["machine"]
    print()
    print(f"attnclust benchmark, {results['date']}: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, "
          f"backend {m['backend']} x{m['devices']}; load {load_start[0]:.1f} -> {results['load']['end'][0]:.1f}")
    print(perf.text_table(results))
    s = perf.summary(results)
    print(f"\ngoals met: {s['met']}, not met: {s['not_met']}; wrote {a.out} ({results['duration_s']:.0f} s)")
    return 0


# --------------------------------------------------------------------------- grading


GRADING_CHAPTER = "mixtures"
"""The course chapter whose reference solutions are graded (the one tests/test_assignments.py
grades: its notebook runs fastest)."""


SANDBOX_SUBMISSIONS = 4
"""Toy submissions graded with and without the sandbox, to measure what the sandbox costs."""


def bench_grading() -> list[dict]:
    """Wall-clock seconds of the autograder (section "Autograder"; skip with --skip grading):
    one submission of the chapter ``GRADING_CHAPTER`` (its reference solutions, in the
    sandbox, with the trusted checker, as ``python -m attnclust.assignments grade`` runs
    each notebook), judged against 240 s; the worked example of chapters/instructors.md (two
    submissions of a toy chapter, two at a time); and the time of ``SANDBOX_SUBMISSIONS``
    toy submissions in sandboxes over the same without (``unsafe``), judged against 2. The
    unit tests check what grading gives, not how long it takes."""
    import tempfile

    import nbformat

    from attnclust.assignments import (autograder_material, grade_notebook, grade_submissions,
                                       instructor_notebook, parse_chapter)
    from attnclust.assignments.example import run_example

    G = "Autograder"
    chapter = parse_chapter(ROOT / "chapters" / f"{GRADING_CHAPTER}.md")
    t0 = time.perf_counter()
    grades = grade_notebook(instructor_notebook(chapter), autograder_material(chapter),
                            student="reference", timeout=600)
    seconds, load = time.perf_counter() - t0, load1()
    full = all(g.points == g.max_points for g in grades)
    ms = [metric(f"grading_{GRADING_CHAPTER}_s", G,
                 f"grade one submission of {GRADING_CHAPTER} (reference solutions, sandbox)",
                 seconds, "s", load, goal={"op": "<=", "target": 240.0},
                 note="" if full else "the reference solutions did NOT score full marks")]
    with tempfile.TemporaryDirectory(prefix="attnclust-bench-grading-") as tmp:
        example = run_example(tmp)
        ms.append(metric("grading_example_s", G, "worked example: 2 toy submissions, 2 jobs",
                         example["seconds"], "s", load1()))
        toy = parse_chapter(Path(tmp) / "chapters" / "toy.md")  # written by run_example
        subs = Path(tmp) / "bench-submissions"
        subs.mkdir()
        for i in range(SANDBOX_SUBMISSIONS):
            nbformat.write(instructor_notebook(toy), subs / f"s{i}.ipynb")
        times = {}
        for unsafe in (True, False):
            t0 = time.perf_counter()
            grade_submissions(subs, autograder_material(toy), timeout=120, unsafe=unsafe)
            times[unsafe] = time.perf_counter() - t0
    ms.append(metric("grading_sandbox_vs_unsafe", G,
                     f"{SANDBOX_SUBMISSIONS} toy submissions: sandboxed / unsandboxed time",
                     times[False] / times[True], "x", load1(),
                     goal={"op": "<=", "target": 2.0},
                     note=f"{times[False]:.1f} s in sandboxes, {times[True]:.1f} s without"))
    log(f"grading {GRADING_CHAPTER} {seconds:.1f} s (full marks: {full}), "
        f"worked example {example['seconds']:.1f} s, sandbox {times[False]:.1f} s vs "
        f"{times[True]:.1f} s unsafe")
    return ms


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""One benchmark run of attnclust: prints the goal table and writes benchmarks/results.json.

    make bench                                   # = python benchmarks/run.py
    python benchmarks/run.py --quick             # tiny sizes, a smoke test of this script

Sections:

0. Roofline (``benchmarks/roofline.py``): the exp throughput of this machine (a jitted
   sum of exps over a rank-one grid, the form of the layer's scores) and its memory
   bandwidth, measured first, in the same run as everything they judge.
1. Training. The training step (forward, backward, Adam on a fixed batch of 32 prompts,
   2 heads) at L = 50, 256, 1024, as a fraction of the exp roofline (2 B H L^2 exps by
   design), beside the previous kernel (``alternatives.previous_pool``; their repeats
   interleaved, more of them at L = 50, ``step_reps_L50``, where the L = 50 goal is decided
   by the paired ratios' sign-test interval: ``attnclust.book.perf.goal_verdict``) and the PyTorch
   peers (``benchmarks/peers.py``: eager, ``torch.compile``, and ``torch.func.vmap`` over
   S seeds against ``jax.vmap``). Then ``fit`` and ``fit_many`` (sampling included), and
   ``fit_many`` with the seeds sharded over one CPU device per core (JAX_NUM_CPU_DEVICES,
   in a child process).
2. Identity attention, d = 32, L = 1k..100k: first the query and key tiles, timed at
   L = 30,000, and the fastest used for every length; time and peak resident memory of the
   blocked evaluation (``identity_attention(X, lam, block=B)``) and of the unblocked one
   where its L x L matrix fits in 2 GB, each size in its own child process (peak RSS =
   VmHWM of the child, whose resident memory just before the evaluation is the baseline);
   the fraction of the exp roofline (L^2 exps) and of the combined roofline (the exps and
   the 4 L^2 d FLOPs of its matrix products at the measured matrix-multiply peak);
   distortion and time against scikit-learn's KMeans on the same tokens.
3. Widget callbacks: p50 and p95 latency over a scripted sequence of slider moves made on
   each explorer itself (``bench_widgets``: its update callback as it runs for a reader, less
   drawing the PNG, which is timed apart), and the same less the garbage collector's pauses
   during the moves; opening the explorer (its figure at the defaults).
4. Book build: read from benchmarks/book.json, written by ``make bench-book``.
5. Autograder: one submission graded.

Every timing is the min, median and max of at least 5 repeats, recorded with the 1-minute
load average when it was measured: on a shared machine a load above the core count means
other processes took part of the CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
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
    # CPU scale: the whole run takes about 15 minutes on 2 cores.
    "small": dict(
        # step_reps_L50: at L = 50 a repeat takes about 0.2 s and the library and the previous
        # kernel are close, so more repeats there narrow the paired ratios' sign-test interval
        # that decides the goal (attnclust.book.perf.goal_verdict)
        steps=400, S=16, step_L=(50, 256, 1024), step_batch=32, reps=7, step_reps=15, step_reps_L50=41,
        peer_L=(50, 256, 1024),
        identity_L=(1000, 3000, 10000, 30000, 100000), identity_reps=5,
        tile_L=30000, tile_blocks=(1024, 2048), tile_key_blocks=(1024, 2048),
        full_max_bytes=2 * 2**30, matmul_n=(1024, 2048),
        exp_grid=8192, bandwidth_bytes=512 * 2**20, step_target_exps=2e8,
    ),
    # smoke test of the script itself (seconds)
    "quick": dict(
        steps=40, S=4, step_L=(50, 128), step_batch=4, reps=5, step_reps=5, step_reps_L50=7, peer_L=(50,),
        identity_L=(1000, 3000), identity_reps=5, tile_L=3000, tile_blocks=(512,),
        tile_key_blocks=(1024, 2048), full_max_bytes=2 * 2**30, matmul_n=(512,),
        exp_grid=2048, bandwidth_bytes=64 * 2**20, step_target_exps=1e7,
    ),
}


def training_setting() -> dict:
    """The training benchmark's setting: the book's default setting (``attnclust.DEFAULT``:
    K, d, r, sigma, lam) and a run's default configuration (``attnclust.TrainConfig()``:
    batch, L, learning rate)."""
    import attnclust as ac

    config = ac.TrainConfig()
    return dict(**ac.DEFAULT.mixture_args(), lam=ac.DEFAULT.lam, batch=config.batch, L=config.L, lr=config.lr)

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

    return ac.orthogonal_mixture(**ac.DEFAULT.mixture_args())


def _timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def bench_fit(steps: int, S: int, reps: int) -> dict:
    """fit (one seed) and fit_many (S seeds), sampling included: the first call (compiles),
    then ``reps`` repeats (min, median, max seconds per run)."""
    import jax

    import attnclust as ac
    from roofline import timings

    m = _mixture()
    key = jax.random.PRNGKey(0)
    keys = jax.random.split(key, S)
    s = training_setting()
    run = dict(lam=s["lam"], steps=steps, batch=s["batch"], L=s["L"], lr=s["lr"], progress=False)
    _, first = _timed(lambda: ac.fit(key, m, **run))
    fit = timings(lambda: ac.fit(key, m, **run), reps)
    many = ac.fit_many(keys, m, **run)
    fm = timings(lambda: ac.fit_many(keys, m, **run), reps)
    return {"fit": {**fit, "first_call_s": first, "steps": steps},
            "fit_many": {**fm, "steps": steps, "S": S},
            "fit_many_theta_sum": float(abs(many.theta).sum())}  # compared with the sharded run's


def exp_rates(cfg: dict, exp_sum) -> dict:
    """The exp roofline by XLA ("exp") and, when the C++ loop is built (``exp_sum`` not
    None), by it ("exp_native"), their repeats interleaved (``roofline.exp_rooflines``)."""
    from roofline import exp_rooflines

    sums = {"exp": None, **({"exp_native": exp_sum} if exp_sum is not None else {})}
    return exp_rooflines(cfg["exp_grid"], cfg["exp_grid"], cfg["reps"], sums)


def step_reps(cfg: dict, L: int) -> int:
    """Interleaved repeats of the training step at L: ``step_reps_L{L}`` where the size sets
    one, else ``step_reps``."""
    return cfg.get(f"step_reps_L{L}", cfg["step_reps"])


def bench_steps(Ls, batch: int, cfg: dict) -> list[dict]:
    """The training step (forward, backward, Adam on a fixed batch) at each L: the library's,
    the previous kernel's (``alternatives.previous_pool``, the "before") and the C++ FFI
    kernels' (``load_kernel``) when built, their repeats interleaved (``step_reps``), right
    after a measurement of the exp roofline (on a shared machine the load changes during a
    run; ``apply_roofline`` later takes the run's fastest as the machine's limit). The
    paired ratios of the interleaved repeats, with their sign-test interval
    (``attnclust.book.perf.paired_ratio``): "previous_vs_library" (previous / library) and
    "library_vs_kernel" (library / C++ kernels)."""
    from alternatives import previous_pool
    from roofline import step_hlo, time_steps

    from attnclust.book.perf import paired_ratio

    kernel = load_kernel()
    exp_sum = native_exp_sum()
    pools = {"library": None, "previous": previous_pool, **({"kernel": kernel} if kernel is not None else {})}
    out = []
    for L in Ls:
        rates = exp_rates(cfg, exp_sum)
        row = {"L": L, "batch": batch, "roofline_before": rates["exp"]}
        if "exp_native" in rates:
            row["roofline_before_native"] = rates["exp_native"]
        row.update(time_steps(L, batch, pools, step_reps(cfg, L), cfg["step_target_exps"]))
        row["speedup_vs_previous"] = row["previous"]["median_s"] / row["library"]["median_s"]
        row["previous_vs_library"] = paired_ratio(row["previous"]["per_rep_s"], row["library"]["per_rep_s"])
        if "kernel" in row:
            row["library_vs_kernel"] = paired_ratio(row["library"]["per_rep_s"], row["kernel"]["per_rep_s"])
        row["hlo"] = step_hlo(L, batch)
        log(f"step L={L}: library {1e3 * row['library']['median_s']:.2f} ms, previous "
            f"{1e3 * row['previous']['median_s']:.2f} ms"
            + (f", FFI kernel {1e3 * row['kernel']['median_s']:.2f} ms" if kernel is not None else "")
            + f"; exp roofline just before {row['roofline_before']['best_per_s'] / 1e9:.2f} G/s")
        out.append(row)
    return out


def load_kernel():
    """The pooling through the C++ FFI kernels (``benchmarks/kernel``), checked against the
    library's values and gradients, or None (with a log line) when they are not built or
    do not agree."""
    from alternatives import check_pool

    ffi_pool = _ffi_pool()
    pool = ffi_pool.load()
    if pool is None:
        log(f"no FFI kernel at {ffi_pool.LIB} (bash benchmarks/kernel/build.sh): not timed")
        return None
    err = check_pool({"ffi": pool})
    if err > 1e-4:
        log(f"the FFI kernel differs from the library by {err:.2e} (relative): not timed")
        return None
    return pool


def _ffi_pool():
    """The module ``benchmarks/kernel/ffi_pool.py`` (its folder put on sys.path once)."""
    folder = str(HERE / "kernel")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import ffi_pool

    return ffi_pool


def native_exp_sum():
    """The exp roofline's sum in C++ (``benchmarks/kernel``), or None when not built."""
    ffi_pool = _ffi_pool()
    return ffi_pool.exp_sum if ffi_pool.load() is not None else None


def apply_roofline(results: dict) -> float:
    """The run's exp roofline, the fastest of its measurements (the one least disturbed by
    other processes), by XLA or by the C++ loop when built, and every step's and identity
    evaluation's fractions of it; each step also gets its fraction of the roofline measured
    just before it ("local") and of XLA's exps alone ("xla"), and the sign-test interval of
    its median fraction over its repeats ("frac_roofline_ci", ``attnclust.book.perf``). Which
    measurement gave each rate (where in the run, by which sum, its repeats and load) is
    kept beside it ("exp_rate_used_from", "exp_rate_xla_from")."""
    from roofline import step_exps, with_fractions

    from attnclust.book.perf import median_ci

    steps = results.get("steps", [])
    roof = results["roofline"]
    found = [("at the start of the run", "XLA", roof["exp"])]
    found += [(f"before the step at L={r['L']}", "XLA", r["roofline_before"]) for r in steps]
    if "exp_native" in roof:
        found.append(("at the start of the run", "C++", roof["exp_native"]))
    found += [(f"before the step at L={r['L']}", "C++", r["roofline_before_native"])
              for r in steps if "roofline_before_native" in r]

    def fastest(candidates):
        where, by, t = max(candidates, key=lambda c: c[2]["best_per_s"])
        return t["best_per_s"], {"where": where, "by": by, "reps": t["reps"], "load": t["load"]}

    rate, roof["exp_rate_used_from"] = fastest(found)
    xla, roof["exp_rate_xla_from"] = fastest([c for c in found if c[1] == "XLA"])
    roof["exp_rate_used"], roof["exp_rate_xla"] = rate, xla
    if any(c[1] == "C++" for c in found):
        roof["exp_rate_native"] = fastest([c for c in found if c[1] == "C++"])[0]
    for row in steps:
        exps = step_exps(row["batch"], 2, row["L"])
        local = max(row["roofline_before"]["best_per_s"], row.get("roofline_before_native", {}).get("best_per_s", 0.0))
        for kind in ("library", "previous", "kernel"):
            if kind not in row:
                continue
            row[kind] = with_fractions(row[kind], exps, rate)
            row[kind]["frac_roofline_local"] = exps / local / row[kind]["median_s"]
            row[kind]["frac_roofline_xla"] = exps / xla / row[kind]["median_s"]
            if "per_rep_s" in row[kind]:
                row[kind]["frac_roofline_ci"] = median_ci([exps / rate / t for t in row[kind]["per_rep_s"]])
    peak = results["matmul"]["peak_gflops"]
    for row in results.get("identity", []):
        row.update(identity_roofline(row["L"], rate, peak))
        if "blocked_s" in row:
            row["blocked_frac_exp_roofline"] = row["exp_roofline_s"] / row["blocked_s"]
            row["blocked_frac_roofline"] = row["roofline_s"] / row["blocked_s"]
    return rate


def bench_peers(Ls, batch: int, S: int, L_seeds: int, target_exps: float) -> dict:
    """PyTorch eager and torch.compile on the same step at each L, and S seeds at once
    (torch.func.vmap against jax.vmap of the library's step) at L = ``L_seeds``."""
    import peers
    from roofline import steps_per_repeat

    out: dict = {"eager": [], "compile": []}
    for L in Ls:
        n = max(2, steps_per_repeat(L, batch, target_exps) // 4)
        for kind in ("eager", "compile"):
            row = {"L": L, **peers.step_eager_or_compiled(L, batch, n, compiled=kind == "compile")}
            out[kind].append(row)
            log(f"torch {kind} L={L}: {1e3 * row['median_s']:.2f} ms/step")
    n = max(2, steps_per_repeat(L_seeds, batch * S, target_exps) // 2)
    out["vmap"] = {"L": L_seeds, **peers.step_vmap(L_seeds, batch, S, n)}
    out["jax_vmap"] = {"L": L_seeds, **peers.jax_step_vmap(L_seeds, batch, S, n)}
    log(f"{S} seeds, L={L_seeds}: torch.func.vmap {1e3 * out['vmap']['median_s']:.2f} ms/step, "
        f"jax.vmap {1e3 * out['jax_vmap']['median_s']:.2f} ms/step")
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


def child_fit_sharded(S: int, steps: int, reps: int) -> dict:
    """fit_many with the seeds sharded over all devices (run with JAX_NUM_CPU_DEVICES set)."""
    import jax

    import attnclust as ac
    from roofline import timings

    m = _mixture()
    keys = jax.random.split(jax.random.PRNGKey(0), S)
    s = training_setting()
    run = dict(lam=s["lam"], steps=steps, batch=s["batch"], L=s["L"], lr=s["lr"], progress=False)
    res = ac.fit_many(keys, m, **run)
    return {"devices": len(jax.devices()), **timings(lambda: ac.fit_many(keys, m, **run), reps),
            "S": S, "steps": steps, "theta_sum": float(abs(res.theta).sum())}


# --------------------------------------------------------------------------- identity attention


def child_identity(L: int, block: int | None, key_block: int, with_kmeans: bool, reps: int) -> dict:
    """Time and peak memory of identity attention at length L (this process does nothing
    else): the first evaluation gives the peak memory, then ``reps`` repeats the times (min,
    median, max); then scikit-learn's KMeans on the same tokens."""
    import jax

    import attnclust as ac
    from attnclust import _kernels as kernels
    from attnclust.baselines import kmeans_per_prompt
    from roofline import timings

    X, labels, mus = ac.sample_in_context(jax.random.PRNGKey(7), ID_K, ID_D, ID_R, ID_SIGMA, 1, L)
    X = X[0]
    jax.block_until_ready(X)
    # compile first (identical to what identity_attention runs), then time one evaluation
    if block is None:
        fn = kernels.identity_full.lower(X, ID_LAM).compile()
    else:
        fn = kernels.identity_blocked.lower(X, ID_LAM, min(block, L), key_block).compile()
    base = rss_mb()
    t0 = time.perf_counter()
    out = fn(X, ID_LAM)
    out.block_until_ready()
    first = time.perf_counter() - t0
    peak = maxrss_mb()
    t = timings(lambda: fn(X, ID_LAM).block_until_ready(), reps) if reps > 1 else \
        {"min_s": first, "median_s": first, "max_s": first, "reps": 1, "load": load1()}
    dev = jax.devices()[0]
    device_peak = None
    if dev.platform != "cpu":
        stats = dev.memory_stats() or {}
        device_peak = stats.get("peak_bytes_in_use", 0) / 2**20
    targets = mus[0][labels[0]]
    res = {
        "L": L, "block": block, "key_block": key_block, "first_s": first, **t, "time_s": t["median_s"],
        "peak_rss_mb": peak, "base_rss_mb": base,
        "D": float(ac.distortion(out, targets)), "device_peak_mb": device_peak,
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


def identity_roofline(L: int, exp_rate: float, peak: float) -> dict:
    """Identity attention's bounds at length L (d = ID_D): L^2 exps (one per score) and
    4 L^2 d FLOPs of matrix products (scores and values)."""
    exp_s = L * L / exp_rate
    mm_s = 4 * L * L * ID_D / (peak * 1e9)
    return {"exp_roofline_s": exp_s, "matmul_roofline_s": mm_s, "roofline_s": max(exp_s, mm_s)}


def bench_identity_tiles(L: int, blocks, key_blocks, reps: int) -> list[dict]:
    """Median seconds of the blocked identity attention at L for each (query block, key
    block): the tiles of the larger prompts are taken from the fastest."""
    rows = []
    for b in blocks:
        for kb in key_blocks:
            r = _child(["--child", "identity", str(L), str(b), str(kb), "0", str(reps)])
            rows.append({"L": L, "block": b, "key_block": kb, **{k: r[k] for k in ("min_s", "median_s", "max_s", "load") if k in r},
                         **({"error": r["error"]} if "error" in r else {})})
            log(f"identity tiles L={L} block {b} x key block {kb}: {r.get('median_s', float('nan')):.3f} s")
    return rows


def bench_identity(Ls, tiles: list[dict], full_max_bytes: int, peak: float, reps: int) -> list[dict]:
    ok = [t for t in tiles if "median_s" in t]
    best = min(ok, key=lambda t: t["median_s"]) if ok else {"block": 1024, "key_block": 2048}
    block, key_block = best["block"], best["key_block"]
    rows = []
    for L in Ls:
        row = {"L": L, "d": ID_D, "block": block, "key_block": key_block, "lam": ID_LAM}
        b = _child(["--child", "identity", str(L), str(block), str(key_block), "1", str(reps)])
        if "error" in b:
            row["blocked_error"] = b["error"]
        else:
            row.update(
                blocked_s=b["median_s"], blocked_min_s=b["min_s"], blocked_max_s=b["max_s"], reps=b["reps"],
                blocked_rss_mb=b["peak_rss_mb"], base_rss_mb=b["base_rss_mb"],
                D_attention=b["D"], kmeans_s=b["kmeans_s"], D_kmeans=b["D_kmeans"],
                blocked_gflops=4 * L * L * ID_D / b["median_s"] / 1e9, load=b["load"],
                matches_public=b.get("matches_public"),
            )
            row["blocked_frac_peak"] = row["blocked_gflops"] / peak
        if 4 * L * L <= full_max_bytes:
            f = _child(["--child", "identity", str(L), "none", "0", "0", str(reps)])
            if "error" in f:
                row["full_error"] = f["error"]
            else:
                row.update(full_s=f["median_s"], full_rss_mb=f["peak_rss_mb"],
                           full_gflops=4 * L * L * ID_D / f["median_s"] / 1e9)
        log(f"identity L={L}: " + ", ".join(f"{k}={v:.3g}" for k, v in row.items() if isinstance(v, float)))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- widgets


def widget_callbacks() -> list[tuple[str, str, str, tuple]]:
    """(module, callback, explorer, slider moves) of every registered explorer
    (``attnclust.book.widgets.explorers()``; the moves are the ones its module registered:
    one slider at a time from the defaults, every value new)."""
    from attnclust.book.widgets import explorers

    return [(spec.module, spec.draw.__name__, spec.func.__name__, spec.moves)
            for spec in explorers()]


@contextlib.contextmanager
def collector_seconds():
    """A counter of the seconds Python's garbage collector spends collecting while the block
    runs (``gc.callbacks``: each collection's start and stop): its ``seconds`` attribute."""

    class Counter:
        seconds, start = 0.0, 0.0

        def __call__(self, phase, info):
            if phase == "start":
                self.start = time.perf_counter()
            else:
                self.seconds += time.perf_counter() - self.start

    counter = Counter()
    gc.callbacks.append(counter)
    try:
        yield counter
    finally:
        gc.callbacks.remove(counter)


def full_collections() -> dict:
    """Seconds of one full garbage collection (``gc.collect()``) as the process is, and with
    the objects that ``gc.freeze`` put aside walked too (unfrozen for the measurement, then
    frozen again): what the freeze at the end of an explorer's ``prepare()`` saves a move."""
    t0 = time.perf_counter()
    gc.collect()
    frozen_s = time.perf_counter() - t0
    n = gc.get_freeze_count()
    gc.unfreeze()
    t0 = time.perf_counter()
    gc.collect()
    unfrozen_s = time.perf_counter() - t0
    if n:
        gc.freeze()
    return {"full_collection_s": frozen_s, "full_collection_unfrozen_s": unfrozen_s}


@contextlib.contextmanager
def shown_figures(collector):
    """While the block runs, ``IPython.display.display`` draws each figure it is given as the
    PNG a notebook shows, as the notebook's inline backend draws it
    (``IPython.core.pylabtools.print_figure`` with its default ``bbox_inches="tight"``,
    which draws the figure twice), and records ``(seconds, collector seconds in them)`` in
    the list it yields; anything else it is given is dropped, and what the explorers print
    outside a kernel is swallowed. Sending the PNG to the browser is not timed. The
    explorers import ``display`` when they are built, so they must be built inside the
    block."""
    import io

    import IPython.display
    from IPython.core.pylabtools import print_figure

    shown, real = [], IPython.display.display

    def display(*objs, **kwargs):
        for obj in objs:
            if hasattr(obj, "savefig"):
                gc0, t0 = collector.seconds, time.perf_counter()
                print_figure(obj, "png", bbox_inches="tight")
                shown.append((time.perf_counter() - t0, collector.seconds - gc0))

    IPython.display.display = display
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield shown
    finally:
        IPython.display.display = real


def bench_widgets() -> list[dict]:
    """Latency of each explorer's slider moves, made on the explorer itself as a reader makes
    them: the module's ``prepare()`` first when it has one (the compilation its explorer
    starts in a background thread when it opens; timed here, and not started a second time
    beside the moves), then the explorer is opened (its figure at the defaults), then a
    scripted sequence of slider moves (:func:`widget_callbacks`: one slider at a time, every
    value new, each slider set back to its default, untimed, before the next). A move's time
    is the explorer's update callback as it runs for a reader (setting the slider runs it),
    less drawing its figure as a PNG (``shown_figures``: inside the callback, by its
    ``display``), which is timed too; the reader's wait is the two together; and the
    callback less the garbage collector's pauses in it. Every move's times are kept."""
    import importlib

    import numpy as np

    from attnclust.book.widgets._background import DISABLE_ENV

    out, disabled = [], os.environ.get(DISABLE_ENV)
    with collector_seconds() as collector, shown_figures(collector) as shown:
        for module, callback, explorer, moves in widget_callbacks():
            row = {"module": module, "callback": callback, "explorer": explorer}
            try:
                mod = importlib.import_module(module)
                if hasattr(mod, "prepare"):  # what the explorer compiles while the reader reads
                    t0 = time.perf_counter()
                    mod.prepare()
                    row["prepare_s"] = time.perf_counter() - t0
                os.environ[DISABLE_ENV] = "1"  # compiled above: no second prepare() beside the moves
                n, t0 = len(shown), time.perf_counter()
                box = getattr(mod, explorer)()
                row["first_call_s"] = time.perf_counter() - t0 - sum(r for r, _ in shown[n:])
                move_ts, render_ts, gc_ts, errors = [], [], [], []
                for arg, values in moves:
                    slider = box.sliders.get(arg)
                    if slider is None:
                        errors.append(f"no slider {arg!r}")
                        continue
                    default = slider.value
                    for value in values:
                        n, gc0, t0 = len(shown), collector.seconds, time.perf_counter()
                        try:
                            slider.value = value
                        except Exception as err:  # noqa: BLE001 - recorded, not fatal
                            errors.append(f"{arg}={value!r}: {type(err).__name__}: {err}")
                            continue
                        total, drawn = time.perf_counter() - t0, shown[n:]
                        if len(drawn) != 1:  # the callback failed (the explorer shows its traceback), or drew twice
                            errors.append(f"{arg}={value!r}: {len(drawn)} figures shown")
                            continue
                        render, render_gc = drawn[0]
                        move_ts.append(total - render)
                        render_ts.append(render)
                        gc_ts.append(collector.seconds - gc0 - render_gc)
                    slider.value = default
                if not move_ts:
                    raise RuntimeError(f"no move answered: {errors}")
                # the moves less the garbage collector's pauses in them: how much of the tail is
                # the collector walking the process's objects rather than the callback's work
                row.update(move_s=move_ts, render_s=render_ts, gc_s=gc_ts, gc_max_s=float(max(gc_ts)),
                           p95_without_gc_s=float(np.percentile(np.subtract(move_ts, gc_ts), 95)),
                           render_p95_s=float(np.percentile(render_ts, 95)),
                           wait_p95_s=float(np.percentile(np.add(move_ts, render_ts), 95)),
                           gc_objects=len(gc.get_objects()), gc_frozen=gc.get_freeze_count(),
                           **full_collections())
                row.update(p50_s=float(np.percentile(move_ts, 50)), p95_s=float(np.percentile(move_ts, 95)),
                           max_s=float(max(move_ts)), moves=len(move_ts), move_errors=errors, load=load1())
            except Exception as err:  # noqa: BLE001 - report it, measure the other explorers
                row["error"] = f"{type(err).__name__}: {err}"
            finally:
                if disabled is None:
                    os.environ.pop(DISABLE_ENV, None)
            out.append(row)
            log(f"widget {row}")
    return out


# --------------------------------------------------------------------------- assemble


def metric(id_, section, label, value, unit, load=None, note="", goal="auto", interval=None):
    """One row of the table; ``interval`` ([lo, hi], a 95 % interval of the value) decides a
    goal with a tolerance (``attnclust.book.perf.goal_verdict``)."""
    from attnclust.book.perf import GOALS

    return {
        "id": id_, "section": section, "label": label,
        "value": None if value is None else float(value), "unit": unit,
        "goal": GOALS.get(id_) if goal == "auto" else goal, "load": load, "note": note,
        **({"interval": list(interval)} if interval is not None else {}),
    }


def _spread(t: dict, scale: float = 1.0, unit: str = "") -> str:
    """'min .. max over N repeats' of a timing (scaled, e.g. to ms)."""
    return f"min {t['min_s'] * scale:.3g}, max {t['max_s'] * scale:.3g}{unit} over {t['reps']} repeats"


def _interval_text(ci) -> str:
    """'lo to hi' of a sign-test interval, or why there is none."""
    lo, hi = ci
    return "(too few repeats)" if lo is None or hi is None else f"{lo:.4g} to {hi:.4g}"


def build_metrics(r: dict, cfg: dict) -> list[dict]:
    from attnclust.book.perf import paired_ratio

    roof, mm = r["roofline"], r["matmul"]
    R = "Roofline"
    used, xla_from = roof.get("exp_rate_used_from"), roof.get("exp_rate_xla_from")

    def measured(src):
        """The load and the note of a rate from the measurement that gave it (``apply_roofline``)."""
        if src is None:  # a results file from before the rates kept their source
            return roof["exp"]["load"], f"{roof['exp']['reps']} repeats a measurement"
        return src["load"], f"fastest repeat of the measurement {src['where']} ({src['by']}, {src['reps']} repeats)"

    (used_load, used_note), (xla_load, xla_note) = measured(used), measured(xla_from)
    ms = [
        metric("roofline_exp_per_s", R, "exp throughput (the faster of a jitted sum of exps and the same sum in C++, fastest of the run's measurements)", roof["exp_rate_used"] / 1e9,
               "G exp/s", used_load, note=used_note + "; measured at the start of the run and again before each training step"
                    + (", XLA's and the C++ loop's repeats interleaved" if roof["exp"].get("interleaved_with") else "")),
        metric("roofline_exp_xla_per_s", R, "exp throughput of XLA (jitted sum of exps, fastest of the run's measurements)", roof["exp_rate_xla"] / 1e9,
               "G exp/s", xla_load, note=xla_note + f"; at the start of the run: fastest {roof['exp']['best_per_s'] / 1e9:.3g}, median {roof['exp']['median_per_s'] / 1e9:.3g}, slowest {roof['exp']['worst_per_s'] / 1e9:.3g} G exp/s"),
        metric("roofline_bandwidth", R, "memory bandwidth (x + 1, read and write counted, fastest repeat)", roof["bandwidth"]["best_per_s"] / 1e9,
               "GB/s", roof["bandwidth"]["load"], note=f"median {roof['bandwidth']['median_per_s'] / 1e9:.3g} GB/s"),
        metric("matmul_peak_gflops", R, "float32 matrix-multiply peak (identity attention's other bound)", mm["peak_gflops"], "GFLOP/s", mm.get("load")),
    ]
    T = "Training step"
    for row in r.get("steps", []):
        L, lib, prev = row["L"], row["library"], row["previous"]
        ms.append(metric(f"step_ms_L{L}", T, f"L={L}: step time, median", lib["median_s"] * 1e3, "ms", lib["load"], note=_spread(lib, 1e3, " ms")))
        frac_ci = lib.get("frac_roofline_ci")
        ms.append(metric(f"step_frac_roofline_L{L}", T, f"L={L}: fraction of the exp roofline", lib["frac_roofline"], "", lib["load"],
                         note=f"{row['batch']} prompts x 2 heads, {2 * row['batch'] * 2 * L * L:,} exps; fastest repeat {lib['frac_roofline_best']:.3f}, slowest {lib['frac_roofline_worst']:.3f}"
                              + (f"; 95 % sign-test interval of the median over {lib['reps']} repeats {_interval_text(frac_ci)}" if frac_ci else "")
                              + f"; {lib['frac_roofline_local']:.3f} of the roofline measured just before it ({row['roofline_before']['best_per_s'] / 1e9:.3g} G exp/s)",
                         interval=frac_ci))
        ms.append(metric(f"previous_step_ms_L{L}", T, f"L={L}: previous kernel's step, median", prev["median_s"] * 1e3, "ms", prev["load"], note=_spread(prev, 1e3, " ms")))
        ms.append(metric(f"previous_frac_roofline_L{L}", T, f"L={L}: previous kernel's fraction of the roofline", prev["frac_roofline"], "", prev["load"]))
        ms.append(metric(f"step_frac_xla_roofline_L{L}", T, f"L={L}: fraction of XLA's exp throughput", lib["frac_roofline_xla"], "", lib["load"]))
        pr = row.get("previous_vs_library") or paired_ratio(prev["per_rep_s"], lib["per_rep_s"])
        ms.append(metric(f"step_vs_previous_L{L}", T, f"L={L}: previous step time / library step time (paired repeats, median)", pr["median"], "x", lib["load"],
                         note=f"{pr['n']} interleaved repeats: {pr['min']:.3g} to {pr['max']:.3g}; the library slower in {pr['below_one']} of {pr['n']}; "
                              f"95 % sign-test interval of the median {_interval_text(pr['ci'])}", interval=pr["ci"]))
        if "kernel" in row:
            ker = row["kernel"]
            ms.append(metric(f"kernel_step_ms_L{L}", T, f"L={L}: step with the C++ FFI kernels (benchmark only), median", ker["median_s"] * 1e3, "ms", ker["load"], note=_spread(ker, 1e3, " ms")))
            ms.append(metric(f"kernel_frac_roofline_L{L}", T, f"L={L}: the FFI kernels' fraction of the roofline", ker["frac_roofline"], "", ker["load"]))
            pk = row.get("library_vs_kernel") or paired_ratio(lib["per_rep_s"], ker["per_rep_s"])
            ms.append(metric(f"library_vs_kernel_L{L}", T, f"L={L}: library step time / FFI kernels' step time (paired repeats, median)", pk["median"], "x", ker["load"],
                             note=f"{pk['n']} interleaved repeats: {pk['min']:.3g} to {pk['max']:.3g}; 95 % sign-test interval of the median {_interval_text(pk['ci'])}",
                             interval=pk["ci"]))
    P = "PyTorch peers"
    peers = r.get("peers") or {}
    steps = {row["L"]: row["library"] for row in r.get("steps", [])}
    for kind, label in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
        for row in peers.get(kind, []):
            L = row["L"]
            ms.append(metric(f"torch_{kind}_ms_L{L}", P, f"L={L}: {label} step, median ({row['threads']} thread{'s' if row['threads'] > 1 else ''})", row["median_s"] * 1e3, "ms", row["load"],
                             note=_spread(row, 1e3, " ms") + (f"; first call (compiles) {row['first_call_s']:.1f} s" if kind == "compile" else "")))
            if L in steps:
                ms.append(metric(f"library_vs_torch_{kind}_L{L}", P, f"L={L}: {label} time / library time", row["median_s"] / steps[L]["median_s"], "x", row["load"]))
    if "vmap" in peers:
        tv, jv = peers["vmap"], peers["jax_vmap"]
        S, L = tv["S"], tv["L"]
        ms.append(metric("torch_vmap_ms", P, f"{S} seeds at L={L}: torch.func.vmap step, median", tv["median_s"] * 1e3, "ms", tv["load"], note=_spread(tv, 1e3, " ms")))
        ms.append(metric("jax_vmap_ms", P, f"{S} seeds at L={L}: jax.vmap of the library's step, median", jv["median_s"] * 1e3, "ms", jv["load"], note=_spread(jv, 1e3, " ms")))
        ms.append(metric("seeds_vs_torch_vmap", P, f"{S} seeds: torch.func.vmap time / jax.vmap time", tv["median_s"] / jv["median_s"], "x", jv["load"]))
    tr = r.get("training") or {}
    if tr:
        F = "Training runs"
        S, steps_n = cfg["S"], tr["fit"]["steps"]
        fit, fm = tr["fit"], tr["fit_many"]
        ms.append(metric("fit_first_call_s", F, f"fit: first call ({steps_n} steps, compiles)", fit["first_call_s"], "s", fit["load"]))
        ms.append(metric("fit_steps_per_s", F, "fit: steps/s (one lax.scan, sampling included), median", steps_n / fit["median_s"], "steps/s", fit["load"], note=_spread(fit, 1, " s a run")))
        ms.append(metric("fit_many_steps_per_s", F, f"fit_many, S={S}, one device: seed-steps/s, median", S * steps_n / fm["median_s"], "steps/s", fm["load"], note=_spread(fm, 1, " s a run")))
        sh = tr.get("sharded", {})
        if "median_s" in sh:
            n_dev = sh["devices"]
            ms.append(metric("fit_many_sharded_steps_per_s", F, f"fit_many, S={S}, seeds sharded over {n_dev} CPU devices: seed-steps/s, median", S * steps_n / sh["median_s"], "steps/s", sh["load"],
                             note=_spread(sh, 1, " s a run") + {True: "; final heads identical to one device's", False: "; final heads DIFFER from one device's"}.get(sh.get("same_as_one_device"), "")))
            ms.append(metric("sharded_vs_fit_many", F, "fit_many sharded / one device", fm["median_s"] / sh["median_s"], "x", sh["load"]))
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
        ms.append(metric(f"identity_{tag}_time", I, f"L={L:,}: blocked ({row['block']} queries x {row['key_block']} keys a tile), time, median", row["blocked_s"], "s", row["load"],
                         note=f"min {row['blocked_min_s']:.3g}, max {row['blocked_max_s']:.3g} s over {row['reps']} repeats"))
        ms.append(metric(f"identity_{tag}_rss", I, f"L={L:,}: blocked, peak RSS", row["blocked_rss_mb"], "MB", row["load"]))
        if "full_s" in row:
            ms.append(metric(f"identity_{tag}_full_time", I, f"L={L:,}: unblocked, time", row["full_s"], "s", row["load"]))
            ms.append(metric(f"identity_{tag}_full_rss", I, f"L={L:,}: unblocked, peak RSS", row["full_rss_mb"], "MB", row["load"]))
        ms.append(metric(f"identity_{tag}_frac_exp_roofline", I, f"L={L:,}: blocked, fraction of the exp roofline", row["blocked_frac_exp_roofline"], "", row["load"],
                         note=f"{L * L:,} exps at the measured exp throughput: {row['exp_roofline_s']:.3g} s"))
        ms.append(metric(f"identity_{tag}_frac_roofline", I, f"L={L:,}: blocked, fraction of the exp + matmul roofline", row["blocked_frac_roofline"], "", row["load"],
                         note=f"the larger of {row['exp_roofline_s']:.3g} s of exps and {row['matmul_roofline_s']:.3g} s of matrix products at the measured peak"))
        ms.append(metric(f"identity_{tag}_vs_kmeans_time", I, f"L={L:,}: time / KMeans time", row["blocked_s"] / row["kmeans_s"], "x", row["load"]))
        ms.append(metric(f"identity_{tag}_D", I, f"L={L:,}: distortion D, attention", row["D_attention"], "", row["load"]))
        ms.append(metric(f"identity_{tag}_D_kmeans", I, f"L={L:,}: distortion D, KMeans", row["D_kmeans"], "", row["load"]))
    W = "Widget callbacks"
    measured_rows = [w for w in r["widgets"] if "p95_s" in w]
    worst = max(measured_rows, key=lambda w: w["p95_s"], default=None)
    slowest = max((w for w in measured_rows if "wait_p95_s" in w), key=lambda w: w["wait_p95_s"], default=None)
    for w in r["widgets"]:
        name = w.get("callback", w["module"].rsplit(".", 1)[-1])
        if "p95_s" in w:
            ms.append(metric(f"widget_{name}_p50", W, f"{name}: slider moves, p50", w["p50_s"], "s", w["load"]))
            ms.append(metric(f"widget_{name}_p95", W, f"{name}: slider moves, p95 ({w['moves']} moves)", w["p95_s"], "s", w["load"]))
            ms.append(metric(f"widget_{name}_max", W, f"{name}: slider moves, slowest", w["max_s"], "s", w["load"]))
            if "p95_without_gc_s" in w:
                ms.append(metric(f"widget_{name}_p95_without_gc", W,
                                 f"{name}: slider moves less the garbage collector's pauses in them, p95",
                                 w["p95_without_gc_s"], "s", w["load"],
                                 note=f"longest pause in a move {w['gc_max_s']:.3g} s; {w['gc_objects']:,} objects "
                                      f"collected, {w['gc_frozen']:,} frozen by prepare(); a full collection "
                                      f"{w['full_collection_s']:.3g} s, {w['full_collection_unfrozen_s']:.3g} s unfrozen"))
            if "render_p95_s" in w:
                ms.append(metric(f"widget_{name}_render_p95", W, f"{name}: drawing the figure as the notebook's PNG after a move, p95", w["render_p95_s"], "s", w["load"]))
            if "wait_p95_s" in w:
                ms.append(metric(f"widget_{name}_wait_p95", W, f"{name}: the reader's wait, callback and PNG, p95 ({w['moves']} moves)", w["wait_p95_s"], "s", w["load"]))
            if "prepare_s" in w:
                ms.append(metric(f"widget_{name}_prepare", W, f"{name}: prepare() (background compilation when the explorer opens)", w["prepare_s"], "s", w["load"]))
            ms.append(metric(f"widget_{name}_first", W, f"{name}: opening the explorer (its widgets and its figure at the defaults, less drawing the PNG)", w["first_call_s"], "s", w["load"]))
        else:
            ms.append(metric(f"widget_{name}_missing", W, f"{w['module']}: not measured", None, "s", note=w.get("error", "")))
    ms.append(metric("widget_p95_max", W, "largest slider-move p95 over the callbacks (PNG excluded)", worst["p95_s"] if worst else None, "s",
                     worst["load"] if worst else None, note=f"the slowest callback: {worst['callback']}" if worst else ""))
    ms.append(metric("widget_wait_p95_max", W, "largest p95 of the reader's wait (callback and PNG) over the explorers",
                     slowest["wait_p95_s"] if slowest else None, "s", slowest["load"] if slowest else None,
                     note=f"the slowest explorer: {slowest['explorer']}; sending the PNG to the browser not timed" if slowest else ""))
    return ms + book_metrics(r.get("book"))


def refresh_widgets(out: Path) -> int:
    """Measure the explorers alone (:func:`bench_widgets`) and replace the widget section of
    the results file ``out`` (its ``widgets`` and its "Widget callbacks" rows; the other
    sections as they were). The run's date, load and command go to ``widgets_run``."""
    from attnclust.book import perf

    section = "Widget callbacks"
    results = json.loads(out.read_text())
    load_start = list(os.getloadavg())
    results["widgets"] = bench_widgets()
    rows = [m for m in build_other_metrics({"identity": [], "widgets": results["widgets"]})
            if m["section"] == section]
    metrics = results["metrics"]
    at = next((i for i, m in enumerate(metrics) if m["section"] == section), len(metrics))
    results["metrics"] = [m for m in metrics[:at] if m["section"] != section] + rows + \
        [m for m in metrics[at:] if m["section"] != section]
    results["widgets_run"] = {
        "command": "python benchmarks/run.py --refresh-widgets",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load": {"start": load_start, "end": list(os.getloadavg())}}
    perf.validate(results)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(perf.text_table({**results, "metrics": rows}))
    return 0


def book_metrics(book: dict | None) -> list[dict]:
    """The "Book build" rows, from benchmarks/book.json (make bench-book)."""
    ms = []
    B = "Book build"
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
    p.add_argument("--skip", default="", help="comma-separated sections to skip: training,identity,widgets,grading")
    p.add_argument("--command", default=None, help="the command recorded in the results")
    p.add_argument("--refresh-book", action="store_true",
                   help="only put the book timings of --book into the results file --out (make bench-book)")
    p.add_argument("--refresh-widgets", action="store_true",
                   help="only measure the explorers (the widget section) and put them into the results "
                        "file --out, the other sections kept")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = p.parse_args()

    if a.refresh_widgets:
        return refresh_widgets(Path(a.out))

    if a.refresh_book:
        from attnclust.book import perf

        results = json.loads(Path(a.out).read_text())
        results["book"] = json.loads(Path(a.book).read_text())
        rows = book_metrics(results["book"])
        metrics = results["metrics"]
        at = next((i for i, m in enumerate(metrics) if m["section"] == "Book build"), len(metrics))
        results["metrics"] = [m for m in metrics[:at] if m["section"] != "Book build"] + rows + \
            [m for m in metrics[at:] if m["section"] != "Book build"]
        perf.validate(results)
        Path(a.out).write_text(json.dumps(results, indent=1) + "\n")
        print(perf.text_table({**results, "metrics": rows}))
        return 0

    if a.child:
        kind, *rest = a.child
        if kind == "identity":
            L, block = int(rest[0]), None if rest[1] == "none" else int(rest[1])
            print(json.dumps(child_identity(L, block, int(rest[2]) or 2048, rest[3] == "1", int(rest[4]))))
        elif kind == "fit_sharded":
            print(json.dumps(child_fit_sharded(int(rest[0]), int(rest[1]), int(rest[2]))))
        return 0

    size = "quick" if a.quick else a.size
    cfg = SIZES[size]
    skip = set(filter(None, a.skip.split(",")))
    if "grading" not in skip:  # the autograder's timings run last: fail now, not after 8 minutes
        from attnclust.assignments.grading import require_sandbox

        require_sandbox()
    t_start = time.perf_counter()
    load_start = list(os.getloadavg())
    from attnclust.book import perf

    results: dict = {
        "schema": perf.SCHEMA,
        "command": a.command or ("make bench" if size == "small" else f"python benchmarks/run.py --size {size}"),
        "size": size,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "config": {**cfg, "training": training_setting(),
                   "identity": dict(K=ID_K, d=ID_D, r=ID_R, sigma=ID_SIGMA, lam=ID_LAM)},
    }
    log(f"machine: {results['machine']['cpu']}, {results['machine']['cores']} cores, backend {results['machine']['backend']}")

    from roofline import bandwidth, exp_paths

    exp_sum = native_exp_sum()
    roof = {**exp_rates(cfg, exp_sum),
            "bandwidth": bandwidth(cfg["bandwidth_bytes"], cfg["reps"]), "exp_paths": exp_paths(reps=cfg["reps"])}
    results["roofline"] = roof
    log(f"roofline: exp {roof['exp']['best_per_s'] / 1e9:.2f} G/s (median {roof['exp']['median_per_s'] / 1e9:.2f})"
        + (f", in C++ {roof['exp_native']['best_per_s'] / 1e9:.2f} G/s" if exp_sum is not None else "")
        + f", bandwidth {roof['bandwidth']['best_per_s'] / 1e9:.1f} GB/s")
    mm = matmul_peak(cfg["matmul_n"])
    mm["load"] = load1()
    results["matmul"] = mm
    peak = mm["peak_gflops"]
    log(f"matmul peak {peak:.1f} GFLOP/s {mm['by_library']}")

    if "training" not in skip:
        results["steps"] = bench_steps(cfg["step_L"], cfg["step_batch"], cfg)
        try:
            results["peers"] = bench_peers(cfg["peer_L"], cfg["step_batch"], cfg["S"], training_setting()["L"], cfg["step_target_exps"])
        except ImportError as err:
            results["peers"] = {"error": str(err)}
            log(f"torch not installed: {err}")
        tr = bench_fit(cfg["steps"], cfg["S"], cfg["reps"] if size != "small" else 5)
        log(f"fit {tr['fit']['median_s']:.2f} s, fit_many {tr['fit_many']['median_s']:.2f} s")
        n_dev = results["machine"]["cores"] if results["machine"]["backend"] == "cpu" else None
        if n_dev and n_dev > 1:
            sh = _child(["--child", "fit_sharded", str(cfg["S"]), str(cfg["steps"]), "5"],
                        env={"JAX_NUM_CPU_DEVICES": str(n_dev)})
            if "theta_sum" in sh:
                sh["same_as_one_device"] = abs(sh["theta_sum"] - tr["fit_many_theta_sum"]) <= 1e-5 * abs(tr["fit_many_theta_sum"])
            tr["sharded"] = sh
            log(f"fit_many sharded over {n_dev} CPU devices: {sh}")
        results["training"] = tr
    if "identity" in skip:
        results["identity_tiles"], results["identity"] = [], []
    else:
        results["identity_tiles"] = bench_identity_tiles(cfg["tile_L"], cfg["tile_blocks"], cfg["tile_key_blocks"], cfg["identity_reps"])
        results["identity"] = bench_identity(cfg["identity_L"], results["identity_tiles"], cfg["full_max_bytes"], peak,
                                             cfg["identity_reps"])
    results["widgets"] = [] if "widgets" in skip else bench_widgets()
    book_path = Path(a.book)
    results["book"] = json.loads(book_path.read_text()) if book_path.is_file() else None

    rate = apply_roofline(results)
    log(f"exp roofline of the run (fastest measurement): {rate / 1e9:.2f} G/s")
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
    print(f"\ngoals met: {s['met']}, not met: {s['not_met']}, unresolved: {s['unresolved']}; "
          f"wrote {a.out} ({results['duration_s']:.0f} s)")
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
    full = all(g.points == g.max_points for g in grades if not g.part)  # written parts: by hand
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

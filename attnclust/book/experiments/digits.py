"""The digits benchmark (chapter "Beyond the paper", chapters/beyond.md, section "Real data:
handwritten digits"): the paired benchmark of ``attnclust.book.benchmark`` on prompts of
scikit-learn's bundled 8x8 digits, for all 45 pairs of digits and for the ten digits at once,
with the trained two-head layer beside the in-context methods.

Data (``attnclust.digits.split_digits``): the images of the classes, split into a training
and a test half, projected on the top d principal directions of the training half and
centred at its mean. A prompt is L test images drawn with replacement; its "centroids" are
the class means of the test half. The two-head layer (H = K heads, lam = 1) is trained on
prompts of training images with ``SIZES[size]["seeds"]`` seeds (16 at full size); each test prompt is scored by the mean of its
ARI (and distortion) over the seeds. There is no sigma or r, so the oracle that needs them is
left out; the oracles that see the class means (best lam, nearest class mean) stay.

Committed: ``python -m attnclust experiment digits-benchmark`` writes
``attnclust/book/results/digits-benchmark.json``.
"""

from __future__ import annotations

import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np

from attnclust.book import benchmark
from attnclust.attention import two_head_layer
from attnclust.digits import sample_rows, split_digits
from attnclust.metrics import adjusted_rand, head_assignments
from attnclust.train import fit_sampler
from attnclust.book.experiments import committed
from attnclust.setting import DEFAULT
from attnclust.book import sizes, sweeps

__all__ = ["PAIRS", "TRAINED", "LAM", "digits_benchmark"]

PAIRS = tuple(itertools.combinations(range(10), 2))
"""The 45 pairs of digits."""

TRAINED = "two-head layer, trained"
"""The name of the trained model in the benchmark's tables."""

LAM = DEFAULT.lam
"""The trained layer's temperature (the book's default)."""

_SMALL, _TEST = sweeps.budget("small"), sweeps.budget("test")
SIZES = {
    # sized for the shared 2-core CPU (about half an hour there); an accelerator affords more.
    # The layer is trained at the book's small training budget (seeds, steps, batch).
    "full": dict(pair_ds=(5, 20), pair_n=16, pair_L=DEFAULT.L, ten_ds=(2, 5, 20, 64), ten_n=32, ten_L=100,
                 seeds=_SMALL.seeds, steps=_SMALL.steps, batch=_SMALL.batch, pairs=PAIRS),
    "test": dict(pair_ds=(5,), pair_n=4, pair_L=DEFAULT.L, ten_ds=(5,), ten_n=4, ten_L=100,
                 seeds=2, steps=_TEST.steps, batch=_TEST.batch, pairs=PAIRS[:2]),
}


def _methods():
    return tuple(m for m in benchmark.default_methods() if m.name != benchmark.ORACLE_BOUND)


def split_prompts(split, key, n, L) -> benchmark.Prompts:
    X, lab = sample_rows(key, jnp.asarray(split.test_X), n, L, labels=jnp.asarray(split.test_y))
    cents = np.broadcast_to(split.test_means, (n,) + split.test_means.shape)
    return benchmark.Prompts(np.asarray(X), np.asarray(lab), cents, len(split.classes))


def _train(key, splits, H, s) -> tuple[np.ndarray, float]:
    """Train the two-head layer on every split's training rows, ``s["seeds"]`` seeds each, in
    one vmapped run: heads (len(splits), seeds, H, d) and the wall-clock seconds."""
    S = s["seeds"]
    rows = min(sp.train_X.shape[0] for sp in splits)
    data = np.repeat(np.stack([sp.train_X[:rows] for sp in splits]), S, axis=0)  # (P S, rows, d)
    d = data.shape[-1]
    keys = jax.random.split(key, len(splits) * S)
    init = 0.01 * jax.random.normal(jax.random.fold_in(key, 1), (len(splits) * S, H, d))
    t0 = time.perf_counter()
    fit = fit_sampler(keys, sample_rows, jnp.asarray(data), init=init, lam=LAM, steps=s["steps"], batch=s["batch"],
                      L=s["L"], record_every=s["steps"], progress=False, data_per_seed=True)
    return np.asarray(fit.theta).reshape(len(splits), S, H, d), time.perf_counter() - t0


def _trained_scores(thetas, p: benchmark.Prompts):
    """The trained layer's scores on the prompts, averaged over seeds, and each seed's mean ARI."""
    aris, dists = [], []
    own = p.own_centroids()
    two_head_layer(thetas[0], p.X, LAM)  # compile before timing
    t0 = time.perf_counter()
    for th in thetas:
        T = np.asarray(two_head_layer(th, p.X, LAM), np.float64)
        aris.append(adjusted_rand(p.labels, np.asarray(head_assignments(th, p.X))))
        dists.append(np.mean(np.sum((T - own) ** 2, -1), -1))
    seconds = (time.perf_counter() - t0) / len(thetas)
    ari, dist = np.mean(aris, 0), np.mean(dists, 0)
    scores = benchmark.MethodScores(TRAINED, f"{len(thetas)} training seeds", False, ari, dist, seconds / p.n, None,
                                    np.full(p.n, thetas.shape[1]))
    return scores, np.mean(aris, 1)


def _run_setting(key, splits, n, L, s, H):
    """Benchmark every split (same methods), with the trained layer added: the pooled
    benchmark's summary, each split's summary, and the per-seed ARIs."""
    s = {**s, "L": L}
    thetas, train_s = _train(jax.random.fold_in(key, 0), splits, H, s)
    per, benches, seed_aris = [], [], []
    for i, sp in enumerate(splits):
        p = split_prompts(sp, jax.random.fold_in(key, 10 + i), n, L)
        bench = benchmark.run(jax.random.fold_in(key, 20 + i), p, _methods())
        sc, seed_ari = _trained_scores(thetas[i], p)
        bench = bench.with_scores(sc)
        benches.append(bench)
        seed_aris.append(seed_ari)
        per.append({"classes": list(sp.classes), "seed_ari": seed_ari, **benchmark.summary_data(bench)})
    return {"pooled": benchmark.summary_data(benchmark.concat(benches)), "per": per, "train_seconds": train_s,
            "seed_ari_pooled": np.mean(seed_aris, 0)}


def _uncentred(key, pairs, d, n, L):
    """Identity attention (one layer and the stack) and k-means on the same rows of each
    pair, not centred: the pooled summary (identity attention is not translation-equivariant,
    k-means is)."""
    methods = [m for m in benchmark.default_methods(oracles=False, meanshift=False)
               if m.name in (benchmark.KMEANS, benchmark.IDENTITY, benchmark.STACK)]
    benches = []
    for i, pair in enumerate(pairs):
        sp = split_digits(pair, d, centre=False)
        p = split_prompts(sp, jax.random.fold_in(key, 10 + i), n, L)
        benches.append(benchmark.run(jax.random.fold_in(key, 20 + i), p, methods))
    return benchmark.summary_data(benchmark.concat(benches))


@committed("digits-benchmark", sources=("attnclust/book/benchmark.py", "attnclust/temperature.py",
                                        "attnclust/baselines.py", "attnclust/digits.py",
                                        "attnclust/book/sweeps.py"),
           description="Paired benchmark on scikit-learn's digits: all 45 pairs and the ten digits, several projection dimensions")
def digits_benchmark(size: str = "full") -> dict:
    """The digits benchmark (module docstring): for every dimension of ``pair_ds`` the 45 pairs
    (pooled and per pair) and, at the first, the same pairs uncentred; for every dimension of
    ``ten_ds`` the ten digits."""
    from tqdm.auto import tqdm

    s = sizes.pick(SIZES, size)
    key = jax.random.PRNGKey(45)
    out = {"pairs": {}, "ten": {}, "seeds": s["seeds"], "steps": s["steps"], "lam": LAM,
           "pair_L": s["pair_L"], "pair_n": s["pair_n"], "ten_L": s["ten_L"], "ten_n": s["ten_n"]}
    bar = tqdm(total=len(s["pair_ds"]) + len(s["ten_ds"]) + 1, desc="digits", unit="setting")
    for d in s["pair_ds"]:
        splits = [split_digits(pair, d) for pair in s["pairs"]]
        out["pairs"][str(d)] = _run_setting(jax.random.fold_in(key, d), splits, s["pair_n"], s["pair_L"], s, 2)
        bar.update()
    d0 = s["pair_ds"][0]
    out["pairs_uncentred"] = {"d": d0, **_uncentred(jax.random.fold_in(key, d0), s["pairs"], d0, s["pair_n"], s["pair_L"])}
    bar.update()
    for d in s["ten_ds"]:
        split = split_digits(tuple(range(10)), d)
        res = _run_setting(jax.random.fold_in(key, 1000 + d), [split], s["ten_n"], s["ten_L"], s, 10)
        out["ten"][str(d)] = {"pooled": res["pooled"], "train_seconds": res["train_seconds"],
                              "seed_ari": res["seed_ari_pooled"]}
        bar.update()
    bar.close()
    return out

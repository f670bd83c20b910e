"""attnclust.book.experiments.icq, icq_sweeps, icq_baselines and digits: the sweep grid, reading the
committed results files (every method at every point, intervals in order; the baselines on the
sweeps' own prompts), the extra baselines and the repeated timings, the regimes experiment."""

import numpy as np
import pytest

from attnclust.book import benchmark as B
from attnclust.book import results
from attnclust.book.experiments import digits as Dg
from attnclust.book.experiments import icq as E
from attnclust.book.experiments import icq_baselines as Bl
from attnclust.book.experiments import icq_sweeps as S


def test_sweep_points_are_unique_and_cover_every_sweep():
    pts = S.sweep_points()
    keys = [(p["K"], p["d"], p["L"], p["sigma"], p["unequal"]) for p in pts]
    assert len(keys) == len(set(keys))
    for axis, spec in S.SWEEPS.items():
        for unequal in (False, True):
            on = [p for p in pts if axis in p["axes"] and p["unequal"] == unequal]
            assert len(on) == len(spec["values"])
    default = [p for p in pts if set(p["axes"]) == {"L", "d", "r/sigma"}]
    assert len(default) == 2  # the default setting, equal and unequal weights, listed once each


def test_weights():
    assert S.weights(3, False) is None
    w = np.asarray(S.weights(2, True))
    np.testing.assert_allclose(w, [0.8, 0.2])
    w = np.asarray(S.weights(5, True))
    assert abs(w.sum() - 1) < 1e-12 and np.isclose(w[0] / w[-1], S.WEIGHT_RATIO) and np.all(np.diff(w) < 0)


def _intervals_in_order(methods: dict):
    for name, m in methods.items():
        for metric in ("ari", "distortion"):
            assert m[metric]["low"] <= m[metric]["estimate"] <= m[metric]["high"], (name, metric)
        if m["ari_vs_ref"] is not None:
            assert m["ari_vs_ref"]["wins"] + m["ari_vs_ref"]["losses"] + m["ari_vs_ref"]["ties"] > 0


def test_committed_sweeps_hold_every_method_at_every_point():
    data = results.load("icq-sweeps").data
    names = [m.name for m in B.default_methods()]
    assert len(data["points"]) == len(S.sweep_points())
    for p in data["points"]:
        assert list(p["methods"]) == names and p["n"] >= 2
        _intervals_in_order(p["methods"])
    for axis in S.SWEEPS:
        x, est, lo, hi = E.sweep_series(data, axis, B.KMEANS, "distortion")
        assert np.all(np.diff(x) > 0) and np.all(lo <= est) and np.all(est <= hi)
    p0 = data["points"][0]
    rows = E.summary_table(p0).split("\n")[2:]
    assert len(rows) == len(names) and sum(r.startswith("| **oracle**") for r in rows) == 3
    km = next(r for r in rows if r.startswith(f"| {B.KMEANS} |"))
    assert "(reference)" in km and f"{p0['methods'][B.KMEANS]['ari']['estimate']:.3f} [" in km


def test_committed_digits_benchmark():
    data = results.load("digits-benchmark").data
    for d, setting in data["pairs"].items():
        assert len(setting["per"]) == len(Dg.PAIRS)
        assert {tuple(r["classes"]) for r in setting["per"]} == set(Dg.PAIRS)
        assert Dg.TRAINED in setting["pooled"]["methods"] and B.ORACLE_BOUND not in setting["pooled"]["methods"]
        _intervals_in_order(setting["pooled"]["methods"])
        assert len(setting["seed_ari_pooled"]) == data["seeds"] >= 16
    for d, setting in data["ten"].items():
        _intervals_in_order(setting["pooled"]["methods"])


@pytest.mark.integration
def test_regimes_at_test_size():
    rg = E.regimes("test")
    assert rg.ds.shape == rg.D_sure.shape == rg.self_weight_bound.shape
    # the own key's weight grows with d at the bound's lam, and the estimate follows it
    assert np.all(np.diff(rg.self_weight_predicted) >= 0) and rg.self_weight_bound[-1] > 0.99
    # the raw tokens' distortion is about d sigma^2
    np.testing.assert_allclose(rg.floor, rg.ds * E.SIGMA**2, rtol=0.3)
    assert rg.d_star == pytest.approx((E.R / E.SIGMA) ** 2 * np.log(E.L / E.K))


@pytest.mark.integration
def test_kmeans_and_identity_are_the_default_benchmarks_rows():
    """The page "The two results at a glance" reads k-means against identity attention from
    the short run; the chapter states the comparison from the full benchmark. Both must give
    the same rows (the same prompts, key and draws), or the page would show other numbers."""
    short, full = E.kmeans_and_identity("test"), E.default_benchmark("test")
    assert list(short.scores) == [B.KMEANS, B.IDENTITY] and short.reference == full.reference == B.KMEANS
    for name in (B.KMEANS, B.IDENTITY):
        a, b = short.scores[name], full.scores[name]
        np.testing.assert_array_equal(a.distortion, b.distortion)
        np.testing.assert_array_equal(a.ari, b.ari)
    assert short.noise_floor == full.noise_floor
    assert short.row(B.IDENTITY).distortion_vs_ref == full.row(B.IDENTITY).distortion_vs_ref


def test_committed_baselines_share_the_sweeps_prompts_and_hold_every_method():
    data = results.load("icq-baselines").data
    sweeps = results.load("icq-sweeps").data
    names = [m.name for m in B.default_methods() + Bl.extra_methods()]
    assert [p["d"] for p in data["points"]] == list(Bl.DS)
    for p in data["points"]:
        assert list(p["methods"]) == [n for n in names if not p["methods"][n]["oracle"]] + \
            [n for n in names if p["methods"][n]["oracle"]]
        _intervals_in_order(p["methods"])
        assert all(len(p["scores"][n]["ari"]) == p["n"] for n in names)
        t = p["timing"]
        assert set(t["methods"]) == set(names)
        assert all(x["min"] <= x["median"] <= x["max"] and x["repeats"] >= 5 for x in t["methods"].values())
        # same keys, same prompts: the methods the sweeps ran score exactly as they did there
        sp = sweeps["points"][p["sweep_index"]]
        assert (sp["d"], sp["L"], sp["unequal"], sp["n"]) == (p["d"], p["L"], False, p["n"])
        for n in (B.KMEANS, B.IDENTITY, B.ORACLE_BEST):
            assert np.isclose(sp["methods"][n]["ari"]["estimate"], p["methods"][n]["ari"]["estimate"], atol=1e-9)
            assert np.isclose(sp["methods"][n]["distortion"]["estimate"], p["methods"][n]["distortion"]["estimate"],
                              rtol=1e-5)
        assert p["methods"][Bl.PROMPT_MEAN]["ari"]["estimate"] == 0
    table = E.closing_tables(data["points"])
    assert table.count("**oracle**") == 3 * 3 and "| 200 |" in table and "ms per prompt, median [min, max]" in table
    assert set(data["timing_long"]["methods"]) == set(Bl.TIMED_LONG)
    c = data["digits_centring"]
    assert len(c["pair"]) == len(Dg.PAIRS) * Dg.SIZES["full"]["pair_n"]
    assert all(len(c[o][n]) == len(c["pair"]) for o in ("centred", "uncentred") for n in c[o])
    diff = E.centring_difference(data, B.IDENTITY)
    assert diff.difference.n == len(Dg.PAIRS) and diff.wins + diff.losses + diff.ties == len(c["pair"])


def _toy_prompts(d=6, n=4, L=20):
    import jax

    return B.in_context_prompts(jax.random.PRNGKey(0), 2, d, 2.0, 0.3, n, L)


@pytest.mark.slow
def test_extra_methods_on_toy_prompts():
    import jax

    p = _toy_prompts()
    bench = B.run(jax.random.PRNGKey(1), p, (B.default_methods(oracles=False, meanshift=False)[0],) + Bl.extra_methods())
    mean = bench.scores[Bl.PROMPT_MEAN]
    assert np.all(mean.ari == 0) and np.all(mean.n_clusters == 1)
    own = p.own_centroids()
    np.testing.assert_allclose(mean.distortion, np.mean(np.sum((p.X.mean(1, keepdims=True) - own) ** 2, -1), -1),
                               rtol=1e-6)
    # well-separated clusters: both k-means and the PCA baseline find them
    for name in (Bl.KMEANS_JAX, Bl.PCA_KMEANS):
        assert np.all(bench.scores[name].ari > 0.95), name
    t = Bl.time_methods(jax.random.PRNGKey(1), p, Bl.extra_methods(), repeats=5)
    assert all(x["min"] <= x["median"] <= x["max"] for x in t["methods"].values()) and t["n"] == p.n
    with pytest.raises(ValueError, match="repeats"):
        Bl.time_methods(jax.random.PRNGKey(1), p, Bl.extra_methods(), repeats=3)


def test_pca_baseline_uses_the_top_direction():
    import jax

    # the clusters differ along one coordinate; every other coordinate is much noisier but
    # the same for both clusters: the top principal direction is the separating one
    rng = np.random.default_rng(0)
    n, L, d = 3, 40, 30
    labels = np.tile(np.repeat([0, 1], L // 2), (n, 1))
    cents = np.zeros((n, 2, d))
    cents[:, 0, 0], cents[:, 1, 0] = -4.0, 4.0
    X = np.take_along_axis(cents, labels[..., None], 1) + rng.normal(size=(n, L, d)) * np.r_[0.3, np.full(d - 1, 1.0)]
    p = B.Prompts(X.astype(np.float32), labels, cents, 2)
    pca = next(m for m in Bl.extra_methods() if m.name == Bl.PCA_KMEANS)
    out = pca.fn(jax.random.PRNGKey(0), p)
    from attnclust.metrics import adjusted_rand

    assert np.all(np.asarray(adjusted_rand(p.labels, out.labels)) == 1.0)


def test_best_from_summary_and_pair_cluster_difference():
    dig = results.load("digits-benchmark").data
    for d, setting in dig["ten"].items():
        top, tied = E.best_from_summary(setting["pooled"])
        assert tied[0] == top and all(not setting["pooled"]["methods"][n]["oracle"] for n in tied)
    summary = {"reference": "a", "methods": {
        "a": {"oracle": False, "ari": {"estimate": 0.5}, "ari_vs_ref": None},
        "b": {"oracle": False, "ari": {"estimate": 0.6}, "ari_vs_ref": {"estimate": 0.1, "low": 0.05, "high": 0.15}}}}
    with pytest.raises(ValueError, match="not the reference"):
        E.best_from_summary(summary)
    setting = dig["pairs"]["5"]
    iv = E.pair_cluster_difference(setting, B.IDENTITY)
    pooled = setting["pooled"]["methods"][B.IDENTITY]["ari_vs_ref"]
    assert np.isclose(iv.estimate, pooled["estimate"]) and iv.n == len(Dg.PAIRS)
    assert iv.width > pooled["high"] - pooled["low"]  # the prompts of a pair are not independent

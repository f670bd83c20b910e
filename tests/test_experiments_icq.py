"""attnclust.experiments.icq, icq_sweeps and digits: the sweep grid, reading the committed
results files (every method at every point, intervals in order), the regimes experiment."""

import numpy as np
import pytest

from attnclust import benchmark as B
from attnclust import results
from attnclust.experiments import digits as Dg
from attnclust.experiments import icq as E
from attnclust.experiments import icq_sweeps as S


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
    table = E.closing_tables(data)
    assert table.count("**oracle**") == 3 * 3 and "| 200 |" in table
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


@pytest.mark.slow
def test_regimes_at_test_size():
    rg = E.regimes("test")
    assert rg.ds.shape == rg.D_sure.shape == rg.self_weight_bound.shape
    # the own key's weight grows with d at the bound's lam, and the estimate follows it
    assert np.all(np.diff(rg.self_weight_predicted) >= 0) and rg.self_weight_bound[-1] > 0.99
    # the raw tokens' distortion is about d sigma^2
    np.testing.assert_allclose(rg.floor, rg.ds * E.SIGMA**2, rtol=0.3)
    assert rg.d_star == pytest.approx((E.R / E.SIGMA) ** 2 * np.log(E.L / E.K))

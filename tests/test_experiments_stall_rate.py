"""attnclust.book.experiments.stall_rate: the close start's stall rate against the prompt length,
each length on its own seeds, and the committed results file's shape (chapter "Training
dynamics", section "Where the stalled runs are")."""

import numpy as np
import pytest

from attnclust import stats
from attnclust.book import sweeps, trend
from attnclust.book.experiments import stall_rate as sr
from attnclust.book.experiments import training as tr

B, A, O = sweeps.BETWEEN, sweeps.ALIGNED, sweeps.OTHER


def _toy():
    codes = np.array([[B, B, A, O], [B, A, A, A], [A, A, A, A]])
    worst = np.linspace(0.5, 0.99, 12).reshape(3, 4)
    return sr.StallRate((50, 100, 200), dict(init="close", steps=400), np.array([3050, 3100, 3200]),
                        codes, worst)


def test_counts_rates_trend_and_round_trip():
    """Counts and exact intervals per length, the difference of two lengths as independent
    frequencies (Newcombe), the trend as the logistic slope against log2 L; the results file's
    data round-trips."""
    s = _toy()
    assert s.seeds == 4 and (s.count(50), s.count(100), s.count(200)) == (2, 1, 0)
    assert s.count(50, "other") == 1 and s.count(200, "aligned") == 4
    assert s.rate(50) == stats.binomial_interval(2, 4)
    assert s.difference(200, 50) == stats.rate_difference(0, 4, 2, 4)
    assert s.trend() == trend.logistic_slope(np.log2([50, 100, 200]), [2, 1, 0], [4, 4, 4])
    assert s.trend().estimate < 0
    data = s.as_data()
    assert [row["counts"] for row in data["lengths"]][0] == {"aligned": 1, "between": 2, "other": 1}
    back = sr.StallRate.from_data(data)
    assert back.Ls == s.Ls and back.setting == s.setting
    np.testing.assert_array_equal(back.codes, s.codes)
    np.testing.assert_array_equal(back.seed, s.seed)
    np.testing.assert_allclose(back.final_worst, s.final_worst, atol=1e-5)
    with pytest.raises(ValueError, match="L must be one of"):
        s.count(70)
    with pytest.raises(ValueError, match="name"):
        s.count(50, "stuck")


def test_each_length_has_its_own_new_stream():
    """One stream per length, none of them the small budget's seed 0 (the chapter's runs)."""
    seeds = [sr.SEED_BASE + L for L in sr.LENGTHS]
    assert len(set(seeds)) == len(seeds) and 0 not in seeds
    assert sr.LENGTHS[0] == sweeps.budget("small").L


@pytest.mark.integration
def test_test_size_runs_end_to_end_on_its_own_seeds():
    """The test size trains every length of its table with its steps; the runs at a length are
    the close start on that length's stream, not the small budget's seeds."""
    cfg = sr.SIZES["test"]
    s = sr.StallRate.from_data(sr.experiment("test"))
    assert s.Ls == cfg["Ls"] and s.seeds == cfg["seeds"] and s.codes.shape == (len(cfg["Ls"]), cfg["seeds"])
    assert s.setting["steps"] == cfg["steps"] and s.setting["init"] == "close"
    np.testing.assert_array_equal(s.seed, [sr.SEED_BASE + L for L in cfg["Ls"]])
    L = cfg["Ls"][0]
    runs = sr.close_runs(L, cfg["seeds"], cfg["steps"])
    np.testing.assert_array_equal(runs.codes, s.codes[0])
    np.testing.assert_allclose(runs.final_worst(), s.final_worst[0], atol=1e-5)
    book = sweeps.run_seeds("small", init="close", L=L, seeds=cfg["seeds"], steps=cfg["steps"])
    assert not np.allclose(runs.theta0, np.asarray(book.theta0))


def test_stored_stall_rate_has_the_chapters_shape():
    """results/training-stall-rate.json: at least 128 seeds at each of L = 50, 70, 100, 140, 200,
    the small budget's steps, batch and learning rate, the close start, each length on its own
    stream, written at full size."""
    s, st = sr.stored()
    b = sweeps.budget("small")
    assert st.data["size"] == "full" and set(sr.LENGTHS) <= set(s.Ls) and s.seeds >= 128
    assert s.setting["init"] == "close"
    assert (s.setting["steps"], s.setting["batch"], s.setting["lr"]) == (b.steps, b.batch, b.lr)
    assert s.codes.shape == s.final_worst.shape == (len(s.Ls), s.seeds)
    assert set(np.unique(s.codes)) <= {A, B, O} and np.all((s.final_worst >= 0) & (s.final_worst <= 1))
    np.testing.assert_array_equal(s.seed, [sr.SEED_BASE + L for L in s.Ls])
    for row in st.data["lengths"]:
        assert sum(row["counts"].values()) == row["seeds"] == s.seeds
        assert row["counts"]["between"] == s.count(row["L"])
    assert tr.CLASS_NAMES == ("aligned", "between", "other")

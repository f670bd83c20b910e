"""attnclust.experiments.beyond: the settings of the chapter "Beyond the paper", the summaries
of their training runs, and the committed results file's shape."""

import numpy as np
import pytest

import attnclust as ac
from attnclust.experiments import beyond as ex


def test_settings_and_span_coverage():
    sets = ex.settings()
    assert len(sets) == 7 and all(m.d == ex.D for m in sets.values())
    assert ex.PM in sets and set(ex.NEAR) <= set(sets)
    theta = np.array([[1.0, 0, 0], [0, 1, 0]])
    assert ex.span_coverage(theta, np.array([[3.0, 4, 0]])) == pytest.approx(1.0)
    assert ex.span_coverage(theta, np.array([[0.0, 0, 2]])) == pytest.approx(0.0)


def _runs(worst, inf=True):
    S = len(worst)
    cos = np.stack([np.asarray(worst), np.ones(S)], 1)
    return ex.SettingRuns("x", np.zeros((S, 2, 5)), cos, np.ones(S), np.zeros(S),
                          np.zeros((S, 2, 5)) if inf else np.zeros((0, 2, 5)),
                          cos if inf else np.zeros((0, 2)), np.zeros(S) if inf else np.zeros(0))


def test_setting_runs_alignment_and_round_trip():
    r = _runs([0.99, 0.96, 0.7, 0.94])
    np.testing.assert_allclose(r.worst(), [0.99, 0.96, 0.7, 0.94])
    iv = r.aligned(0.95)
    assert iv.estimate == 0.5 and iv.n == 4 and iv.low < 0.5 < iv.high
    back = ex.SettingRuns.from_data(r.as_data())
    np.testing.assert_allclose(back.cos, r.cos)
    assert back.has_inf and back.name == "x"
    assert not _runs([0.99, 0.9], inf=False).has_inf


@pytest.mark.bad_input
def test_bad_size():
    with pytest.raises(ValueError, match="size"):
        ex.variances("medium")


def test_stored_training_has_the_chapters_shape():
    """results/beyond-training.json: every setting with its seeds, the large-L points of the
    isotropic ones only, and the near-start runs."""
    st = ex.stored_training()
    S = st.budget["seeds"]
    assert S >= 16 and list(st.runs) == list(ex.settings())
    for name, m in ex.settings().items():
        r = st.runs[name]
        assert r.theta.shape == (S, 2, ex.D) and r.cos.shape == (S, 2)
        assert r.has_inf == isinstance(m, ac.GaussianMixture)
        assert np.all((r.cos >= 0) & (r.cos <= 1 + 1e-9))
    for name in ex.NEAR:
        assert st.near.cos[name].shape == (S, 2) and st.near.cos_inf[name].shape == (2,)

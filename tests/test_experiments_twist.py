"""attnclust.book.experiments.twist and .stall_length: the signed twist about the mixture-mean
axis, the empirical minimiser, and the committed results files' shape (chapter "Training
dynamics", sections "Where the stalled runs are" and "More centroids")."""

import jax
import numpy as np
import pytest

import attnclust as ac
from attnclust.book import sweeps
from attnclust.book.experiments import landscape as ls
from attnclust.book.experiments import stall_length
from attnclust.book.experiments import twist as tw


def _symmetric():
    return np.array([[0.9, 0.1, 0.1, 0, 0], [0.1, 0.9, 0.1, 0, 0], [0.1, 0.1, 0.9, 0, 0]])


@pytest.mark.parametrize("degrees", [-20.0, -3.0, 0.0, 7.5, 18.0])
def test_signed_twist_of_a_turn_is_its_angle(degrees):
    """A configuration turned about the axis by an angle has that signed twist, whatever the
    order and signs of its heads; the unsigned twist is its absolute value."""
    sym = _symmetric()
    turned = ls._turn(sym, np.radians(degrees))
    tol = 1e-4  # the heads are validated to float32: angles good to about 1e-5 degrees
    assert tw.signed_twist(turned, sym) == pytest.approx(degrees, abs=tol)
    assert tw.signed_twist(-turned[[1, 2, 0]], sym) == pytest.approx(degrees, abs=tol)
    assert ls.twist_angle(turned, sym) == pytest.approx(abs(degrees), abs=tol)


def test_signed_twist_of_a_mirror_image_changes_sign():
    sym = _symmetric()
    turned = ls._turn(sym, np.radians(12.0))
    mirror = turned[:, [0, 2, 1, 3, 4]][[0, 2, 1]]  # e_2 <-> e_3, heads relabelled
    assert tw.signed_twist(mirror, sym) == pytest.approx(-12.0, abs=1e-4)


@pytest.mark.usefixtures("typecheck_off")
def test_signed_twist_needs_three_heads():
    with pytest.raises(ValueError, match="theta"):
        tw.signed_twist(np.eye(2, 5), np.eye(2, 5))


@pytest.mark.slow
def test_minimise_empirical_finds_a_minimum():
    """From a point off the minimum, the sample's risk decreases to a point with zero gradient
    and a positive-definite Hessian (K = 2 at L = 20: the aligned minimum)."""
    mix = ac.orthogonal_mixture()
    X, _ = ac.sample(jax.random.PRNGKey(0), mix, 64, 20)
    start = np.array([[0.8, 0.3, 0.1, 0, 0], [0.2, 0.7, 0, 0.1, 0]])
    p = tw.minimise_empirical(start, X, 1.0)
    assert p.risk < float(ac.empirical_risk(start, X, 1.0))
    assert p.grad_norm < 1e-4 and p.eigenvalues[0] > 0


def test_twist_result_round_trip():
    t = tw.Twist(ls.point_setting("symmetric"), (50, 100), (400, 200), 20_000,
                 np.array([[0.1, -0.2, 0.0], [11.0, 12.0, 13.0]]), np.full((2, 3), 0.03),
                 np.full((2, 3), 1e-6), 18.1)
    back = tw.Twist.from_data(t.as_data())
    np.testing.assert_array_equal(back.twist, t.twist)
    assert back.Ls == (50, 100) and back.samples == 3 and back.twist_inf == 18.1
    assert back.interval(100).estimate == pytest.approx(12.0)
    assert back.interval(50).contains(0.0) and back.interval(100).low > 0


def test_stored_twist_has_the_chapters_shape():
    """results/training-k3-twist.json: a grid of L with lengths on both sides of the symmetric
    point's crossing, at least two samples per L, one twist and eigenvalue per sample."""
    t, st = tw.stored()
    assert t.setting["K"] == 3 and len(t.Ls) >= 3 and t.samples >= 2
    assert t.twist.shape == t.smallest.shape == t.grad_norm.shape == (len(t.Ls), t.samples)
    assert min(t.Ls) < 70 < max(t.Ls) and st.data["size"] == "full"
    assert 0 < t.twist_inf < 45


def test_stored_stall_length_has_the_chapters_shape():
    """results/training-stall-length.json: close starts at a length beyond the split point's
    crossing, the same seeds at the small and the long budget."""
    s, st = stall_length.stored()
    assert s.L > 70 and set(s.runs) == {"small", "long"}
    for b, r in s.runs.items():
        assert r.setting["L"] == s.L and r.setting["init"] == "close"
        assert r.setting["steps"] == sweeps.budget(b).steps and r.seeds >= 16
        assert r.final.shape == (r.seeds, 2, 5)
    np.testing.assert_array_equal(s.runs["small"].theta0, s.runs["long"].theta0)


@pytest.mark.slow
def test_close_at_trains_at_the_given_length():
    """The length is passed to the training (not only recorded): two lengths give different
    runs from the same initial heads."""
    a = stall_length.close_at(10, "small", 2, steps=8)
    b = stall_length.close_at(20, "small", 2, steps=8)
    np.testing.assert_array_equal(a.theta0, b.theta0)
    assert not np.allclose(a.final, b.final)
    assert a.setting["L"] == 10 and a.setting["steps"] == 8

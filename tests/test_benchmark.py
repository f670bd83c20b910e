"""attnclust.book.benchmark: every method on the same prompts, intervals, paired differences,
oracles kept apart; mean shift in attnclust.baselines."""

import jax
import numpy as np
import pytest

from attnclust import baselines
from attnclust.book import benchmark as B

KEY = jax.random.PRNGKey(3)


def _prompts(n=6, L=30, d=4, seed=0):
    rng = np.random.default_rng(seed)
    mus = np.broadcast_to(2.0 * np.eye(2, d), (n, 2, d)).astype(np.float32)
    lab = rng.integers(0, 2, size=(n, L))
    X = np.take_along_axis(mus, lab[..., None], 1) + 0.5 * rng.standard_normal((n, L, d))
    return B.Prompts(X.astype(np.float32), lab, mus, 2, 0.5, 2.0)


def _by_name(*names):
    return [m for m in B.default_methods() if m.name in names]


@pytest.mark.slow
def test_paired_scores_on_the_same_prompts():
    p = _prompts()
    bench = B.run(KEY, p, _by_name(B.KMEANS, B.IDENTITY, B.BAYES))
    assert list(bench.scores) == [B.KMEANS, B.IDENTITY, B.BAYES]
    for s in bench.scores.values():
        assert s.ari.shape == (6,) and s.distortion.shape == (6,) and s.time_per_prompt > 0
    # the Bayes rule's representatives are the true centroids: its distortion is the
    # squared distance of the misassigned tokens' centroids, 0 where it is right
    assert bench.scores[B.BAYES].oracle and np.all(bench.scores[B.BAYES].distortion < 0.2)
    # the raw tokens' distortion is about d sigma^2 = 1
    assert 0.8 < bench.noise_floor < 1.2
    rows = bench.rows
    assert [r.name for r in rows][-1] == B.BAYES  # oracles last
    ref = bench.row(B.KMEANS)
    assert ref.ari_vs_ref is None and ref.ari.contains(ref.ari.estimate)
    diff = bench.row(B.IDENTITY).distortion_vs_ref
    np.testing.assert_allclose(diff.difference.estimate,
                               np.mean(bench.scores[B.IDENTITY].distortion - bench.scores[B.KMEANS].distortion))
    table = B.markdown_table(bench)
    assert "**oracle**: " + B.BAYES in table and "(reference)" in table and table.count("\n") == 4


def test_a_copy_of_the_reference_differs_by_zero():
    p = _prompts()
    km = _by_name(B.KMEANS)[0]
    twin = B.Method("k-means again", km.fn, "K")
    bench = B.run(KEY, p, [km, twin])
    pd = bench.row("k-means again").ari_vs_ref
    assert pd.difference.estimate == 0 and pd.wins == pd.losses == 0 and pd.ties == 6


def test_with_scores_and_concat():
    p = _prompts()
    bench = B.run(KEY, p, _by_name(B.KMEANS, B.BAYES))
    extra = B.MethodScores("constant", "nothing", False, np.zeros(6), np.ones(6), 1e-3, None, np.ones(6))
    both = B.concat([bench.with_scores(extra), bench.with_scores(extra)])
    assert both.n == 12 and both.row("constant").ari_vs_ref.losses == 2 * np.sum(bench.scores[B.KMEANS].ari > 0)
    np.testing.assert_allclose(both.scores[B.KMEANS].ari, np.tile(bench.scores[B.KMEANS].ari, 2))


def _one_cluster(key, p):
    return B.Output(np.zeros_like(p.labels), np.broadcast_to(p.X.mean(1, keepdims=True), p.X.shape))


@pytest.mark.usefixtures("typecheck_off")
def test_validation():
    p = _prompts()
    km = B.Method(B.KMEANS, _one_cluster, "nothing")
    with pytest.raises(ValueError, match="distinct"):
        B.run(KEY, p, [km, km])
    with pytest.raises(ValueError, match="reference"):
        B.run(KEY, p, [km], reference="EM")
    bad = B.Method("bad", lambda key, p: B.Output(p.labels[:, :3], p.X), "nothing")
    with pytest.raises(ValueError, match="bad"):
        B.run(KEY, p, [km, bad])
    with pytest.raises(ValueError, match="labels"):
        B.Prompts(p.X, p.labels[:, :3], p.centroids, 2)
    with pytest.raises(ValueError, match="centroids"):
        B.Prompts(p.X, p.labels, p.centroids[:, :1], 2)
    no_truth = B.Prompts(p.X, p.labels, p.centroids, 2)
    with pytest.raises(ValueError, match="sigma"):
        B.run(KEY, no_truth, [km] + _by_name(B.ORACLE_BOUND))


def test_meanshift_finds_separated_clusters():
    p = _prompts(n=3, L=40)
    labels, centres = baselines.meanshift_per_prompt(KEY, p.X)
    assert labels.shape == (3, 40) and centres.shape == (3, 40, 4)
    for i in range(3):  # each token's centre is the mode of its cluster
        for c in np.unique(labels[i]):
            assert np.allclose(centres[i][labels[i] == c], centres[i][labels[i] == c][0])
    from attnclust import adjusted_rand

    assert np.mean(adjusted_rand(p.labels, labels)) > 0.8


@pytest.mark.slow
def test_default_methods_run_and_label_free_ones_see_no_truth():
    """Every default method runs; the label-free ones give the same scores when the prompts
    carry no sigma, r (and the oracle that needs them is left out)."""
    p = _prompts(n=3, L=20)
    methods = B.default_methods()
    assert [m.oracle for m in methods] == sorted(m.oracle for m in methods)
    bench = B.run(KEY, p, methods)
    assert len(bench.rows) == len(methods)
    free = [m for m in methods if not m.oracle]
    blind = B.run(KEY, B.Prompts(p.X, p.labels, p.centroids, 2), free)
    for m in free:
        np.testing.assert_allclose(blind.scores[m.name].ari, bench.scores[m.name].ari)

"""attnclust.book.seeds: the master seed re-keys every integer-seeded stream, leaves the book's
own draws alone, keeps a stream's two draws paired, and restores what was in force."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.utils import check_random_state

from attnclust.book import seeds


def _draws():
    return (np.asarray(jax.random.normal(jax.random.PRNGKey(5), (3,))),
            np.asarray(jax.random.normal(jax.random.key(5), (3,))),
            np.random.default_rng(5).random(3), np.random.RandomState(5).rand(3),
            check_random_state(5).rand(3))


def test_the_books_seed_changes_nothing():
    book = _draws()
    with seeds.replicating(seeds.BOOK_SEED):
        assert seeds.master() == seeds.BOOK_SEED
        for a, b in zip(book, _draws()):
            np.testing.assert_array_equal(a, b)


@settings(max_examples=10, deadline=None)
@given(stream=st.integers(0, 2**31 - 1), master=st.integers(1, 2**31 - 1))
def test_another_seed_folds_itself_into_every_stream(stream, master):
    with seeds.replicating(master):
        key = jax.random.PRNGKey(stream)
    expected = jax.random.fold_in(jax.random.PRNGKey(stream), master)
    np.testing.assert_array_equal(np.asarray(key), np.asarray(expected))


def test_every_kind_of_stream_is_rekeyed_and_stays_paired():
    book = _draws()
    with seeds.replicating(3):
        three, again = _draws(), _draws()
    with seeds.replicating(4):
        four = _draws()
    for b, t, a, f in zip(book, three, again, four):
        assert not np.allclose(b, t) and not np.allclose(t, f)  # each master seed its own draws
        np.testing.assert_array_equal(t, a)  # a stream drawn twice under one seed: the same draws
    # an unseeded generator and a generator passed on are left alone
    with seeds.replicating(3):
        g = np.random.default_rng(np.random.SeedSequence(9))
        assert g.random() == np.random.default_rng(np.random.SeedSequence(9)).random()


def test_the_seed_in_force_before_is_restored():
    with seeds.replicating(2):
        with seeds.replicating(6):
            assert seeds.master() == 6
        assert seeds.master() == 2
        inner = np.asarray(jax.random.PRNGKey(1))
    assert seeds.master() == seeds.BOOK_SEED
    assert not np.array_equal(inner, np.asarray(jax.random.PRNGKey(1)))
    assert jax.random.PRNGKey is seeds._ORIGINAL["PRNGKey"]


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True])
def test_a_bad_master_seed_is_refused(bad):
    with pytest.raises((ValueError, TypeError), match="seed"):
        seeds.install(bad)
    assert seeds.master() == seeds.BOOK_SEED

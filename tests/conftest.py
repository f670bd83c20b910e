"""Shared fixtures: fixed PRNG keys and the book's default mixture.

Every random test draws from a key derived here, so every run sees the same arrays.
"""

import jax
import pytest

import attnclust as ac

DEFAULT = dict(K=2, d=5, r=2.0, sigma=0.5)
"""The book's default setting (THEORY.md section 5): orthogonal centroids, separation 4."""


@pytest.fixture
def key():
    return jax.random.PRNGKey(20251201)


@pytest.fixture
def mixture():
    return ac.orthogonal_mixture(**DEFAULT)

from hypothesis import settings

# Property tests are derandomised (same examples every run) and have no deadline: the first
# call of a jitted function compiles, which is slow but not a failure.
settings.register_profile("attnclust", derandomize=True, deadline=None, max_examples=25)
settings.load_profile("attnclust")

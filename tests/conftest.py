"""Shared fixtures: fixed PRNG keys and the book's default mixture.

Every random test draws from a key derived here, so every run sees the same arrays.
Test files run in the order of their number of ``slow`` tests (most first).
"""

from collections import Counter

import jax
import pytest

import attnclust as ac

DEFAULT = dict(K=2, d=5, r=2.0, sigma=0.5)
"""The book's default setting (the default mixture of chapters/attention.md and
chapters/population_risk.md): orthogonal centroids, separation r / sigma = 4."""


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


def pytest_collection_modifyitems(config, items):
    """Files with the most ``slow`` tests first, each file's tests in their own order:
    ``make unit`` hands whole files to its workers (pytest-xdist, ``--dist loadfile``) in
    this order, so the long files start early rather than end the run on one worker while
    the other idles."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    first = {path: i for i, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (-slow[item.path], first[item.path]))

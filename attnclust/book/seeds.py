"""The master seed of the book's replication build (page "Claims and evidence", section
"Under other seeds").

Every random draw of the book comes from an integer seed written where the draw is made:
``jax.random.PRNGKey(11)`` in an experiment, ``jax.random.PRNGKey(0)`` in a chapter's cell,
``np.random.default_rng(seed)`` in a bootstrap. Those integers are the book's streams: one
per experiment or figure, so that two experiments do not share a draw unless the code says
so (the in-context benchmarks of ``icq_sweeps`` and ``icq_baselines`` score the same prompts
on purpose).

The **master seed** picks one realisation of all of them at once. The book's own is
``BOOK_SEED`` (0): every stream is its integer, as written. Under another master seed ``N``
(:func:`install`) every stream is re-keyed in this process:

- ``jax.random.PRNGKey(s)`` and ``jax.random.key(s)`` return ``fold_in(PRNGKey(s), N)``;
- ``np.random.default_rng(s)`` for an integer ``s`` returns ``default_rng([s, N])``
  (NumPy's ``SeedSequence`` of the pair), and ``np.random.RandomState(s)`` likewise.

So streams stay distinct from one another and from every other master seed, and a draw that
the code makes twice with one seed (the two sides of a paired comparison) is still made twice
with one key. The book's own results are unchanged: at ``BOOK_SEED`` nothing is re-keyed.
``python -m attnclust experiment NAME --seed N`` and ``make replicate SEED=N``
(``scripts/replicate.py``) install it before anything is drawn.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from numbers import Integral

import jax
import numpy as np

from attnclust import _validate as v

__all__ = ["BOOK_SEED", "install", "master", "replicating", "uninstall"]

BOOK_SEED = 0
"""The book's master seed: every stream is the integer written at its draw."""

_ORIGINAL = {"PRNGKey": jax.random.PRNGKey, "key": jax.random.key,
             "default_rng": np.random.default_rng, "RandomState": np.random.RandomState}
_master = BOOK_SEED


def master() -> int:
    """The master seed in force in this process (``BOOK_SEED`` unless :func:`install`)."""
    return _master


def _is_int(seed) -> bool:
    return isinstance(seed, Integral) and not isinstance(seed, bool)


def install(seed: int) -> None:
    """Re-key every stream of this process under the master seed ``seed`` (see the module
    docstring); ``BOOK_SEED`` restores the book's own draws. Install it before the first
    draw: what this process has already drawn and cached (``sweeps.run_seeds`` keeps its
    runs) is not drawn again.

    Raises:
        ValueError: ``seed`` is not an integer >= 0.
    """
    global _master
    seed = v.positive_int("seed", seed, minimum=0)
    uninstall()
    if seed == BOOK_SEED:
        return
    prng, key, rng, state = (_ORIGINAL[k] for k in ("PRNGKey", "key", "default_rng", "RandomState"))

    def PRNGKey(s, *args, **kw):
        return jax.random.fold_in(prng(s, *args, **kw), seed)

    def typed_key(s, *args, **kw):
        return jax.random.fold_in(key(s, *args, **kw), seed)

    def default_rng(s=None, *args, **kw):
        return rng([int(s), seed] if _is_int(s) else s, *args, **kw)

    class RandomState(state):
        def __init__(self, s=None):
            super().__init__(np.random.SeedSequence([int(s), seed]).generate_state(4) if _is_int(s) else s)

    jax.random.PRNGKey, jax.random.key = PRNGKey, typed_key
    np.random.default_rng, np.random.RandomState = default_rng, RandomState
    _master = seed


def uninstall() -> None:
    """Restore the book's own draws (``BOOK_SEED``)."""
    global _master
    jax.random.PRNGKey, jax.random.key = _ORIGINAL["PRNGKey"], _ORIGINAL["key"]
    np.random.default_rng, np.random.RandomState = _ORIGINAL["default_rng"], _ORIGINAL["RandomState"]
    _master = BOOK_SEED


@contextmanager
def replicating(seed: int) -> Iterator[int]:
    """``with replicating(N):`` every stream re-keyed under the master seed ``N`` inside the
    block, the one in force before restored after it."""
    before = master()
    install(seed)
    try:
        yield seed
    finally:
        install(before)

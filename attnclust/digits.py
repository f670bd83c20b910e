"""Real data: scikit-learn's bundled 8x8 digits (no download), projected on a few principal
directions, and prompts drawn from its rows (chapter "Beyond the paper", chapters/beyond.md,
section "Real data: handwritten digits").

- ``load_digits_pca``: the images of some classes on their top principal directions.
- ``split_digits``: the same with a training and a test part, centred at the training mean
  (the setting of the digits benchmark, ``attnclust.book.experiments.digits``).
- ``sample_rows``: prompts of L rows drawn with replacement (a sampler for ``fit_sampler``).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float, Int, PRNGKeyArray

from . import _validate as v

__all__ = ["DigitsSplit", "load_digits_pca", "sample_rows", "split_digits"]


def _classes(classes) -> tuple[int, ...]:
    return v.distinct_ints("classes", classes, 0, 9)


def _components(n_components) -> int:
    return v.positive_int("n_components", n_components, maximum=64)  # the 8 x 8 pixels


def load_digits_pca(
    classes: tuple[int, ...] = (0, 1), n_components: int = 5, centre: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits (1797 images, no download) of the given
    ``classes``, pixels scaled to [0, 1], projected on their top ``n_components``
    principal directions.

    Args:
        classes: which digits to keep (distinct, in 0..9); labels are renumbered 0..K-1 in
            this order.
        n_components: number of principal directions d.
        centre: subtract the mean before projecting (PCA's usual scores; the mixture is
            then centred). By default the images are projected without centring, so the
            class means stay away from the origin as in the book's mixtures.

    Returns:
        X (n, d) float32, labels (n,) int, class_means (K, d).
    """
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    classes = _classes(classes)
    n_components = _components(n_components)
    images, y = load_digits(return_X_y=True)
    keep = np.isin(y, classes)
    Xs = images[keep] / 16.0
    labels = np.array([classes.index(int(c)) for c in y[keep]])
    pca = PCA(n_components=n_components, random_state=0).fit(Xs)
    Z = (Xs - (pca.mean_ if centre else 0.0)) @ pca.components_.T
    means = np.stack([Z[labels == c].mean(axis=0) for c in range(len(classes))])
    return Z.astype(np.float32), labels.astype(np.int64), means


def sample_rows(
    key: PRNGKeyArray, data: Float[ArrayLike, "n d"], n_prompts: int, L: int,
    labels: Int[ArrayLike, "n"] | None = None,
):
    """Prompts of L rows drawn uniformly with replacement from ``data``: (n_prompts, L, d),
    and their labels (n_prompts, L) when ``labels`` is given. Traceable (inside
    ``fit_sampler``, where data and key are traced and only their shapes are checked).

    Raises:
        TypeError: key not a PRNG key, data not real numbers, labels not integers, or
            n_prompts or L not integers.
        ValueError: data not a finite (n, d) array with n >= 1, labels not (n,), n_prompts
            or L < 1, or a sample too large for the device's memory.
    """
    key = v.prng_key("key", key)
    data = v.real_array("data", data)
    v.shape("data", data.shape, "(n, d) with n >= 1 rows", data.ndim == 2 and data.shape[0] >= 1)
    n_prompts = v.positive_int("n_prompts", n_prompts)
    L = v.positive_int("L", L)
    v.allocation("the sample", n_prompts * L * (data.shape[1] + 2), n_prompts=n_prompts, L=L)
    idx = jax.random.randint(key, (n_prompts, L), 0, data.shape[0])
    X = data[idx]
    if labels is None:
        return X
    labels = v.labels("labels", labels)
    v.shape("labels", labels.shape, f"(n,) = ({data.shape[0]},), one per row of data", tuple(labels.shape) == data.shape[:1])
    return X, jnp.asarray(labels)[idx]


@dataclass(frozen=True)
class DigitsSplit:
    """Digits of some classes split into a training half and a test half, centred and
    projected with the training half's statistics.

    Attributes:
        classes: the digits kept, in label order (label c is digit ``classes[c]``).
        n_components: the projection dimension d (64: every pixel direction, no reduction).
        centred: whether the training mean was subtracted.
        train_X: (n_train, d) float32 rows of the training half.
        train_y: (n_train,) their labels.
        test_X: (n_test, d) float32 rows of the test half.
        test_y: (n_test,) their labels.
        test_means: (K, d) class means of the test half.
    """

    classes: tuple
    n_components: int
    centred: bool
    train_X: np.ndarray
    train_y: np.ndarray
    test_X: np.ndarray
    test_y: np.ndarray
    test_means: np.ndarray


def split_digits(
    classes: tuple[int, ...], n_components: int, *, centre: bool = True, seed: int = 0, train_fraction: float = 0.5
) -> DigitsSplit:
    """scikit-learn's bundled digits of ``classes`` (pixels / 16), split at random into a
    training and a test part (stratified by nothing: a seeded permutation), projected on the
    top ``n_components`` principal directions of the training part and, with ``centre``,
    centred at the training mean (PCA's usual scores). A model trained on prompts of the
    training rows is scored on prompts of the test rows; in-context methods only see test
    prompts. ``split_digits(..., centre=False)`` keeps the same rows and directions without
    subtracting the mean (the translation of the data identity attention is sensitive to).

    Args:
        classes: distinct digits in 0..9, at least one.
        n_components: d, an integer in 1..64.
        centre: subtract the training mean.
        seed: the permutation's seed.
        train_fraction: the training part's share, in (0, 1).

    Returns:
        A ``DigitsSplit``.

    Raises:
        ValueError: bad classes, n_components or train_fraction.
    """
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    classes = _classes(classes)
    n_components = _components(n_components)
    train_fraction = v.number_in("train_fraction", train_fraction, 0.0, 1.0, high_open=True)
    images, y = load_digits(return_X_y=True)
    keep = np.isin(y, classes)
    Xs = images[keep] / 16.0
    labels = np.array([classes.index(int(c)) for c in y[keep]])
    perm = np.random.default_rng(seed).permutation(len(labels))
    n_train = int(round(train_fraction * len(labels)))
    tr, te = perm[:n_train], perm[n_train:]
    pca = PCA(n_components=n_components, random_state=0).fit(Xs[tr])
    shift = pca.mean_ if centre else 0.0
    Ztr = (Xs[tr] - shift) @ pca.components_.T
    Zte = (Xs[te] - shift) @ pca.components_.T
    means = np.stack([Zte[labels[te] == c].mean(axis=0) for c in range(len(classes))])
    return DigitsSplit(classes, n_components, bool(centre), Ztr.astype(np.float32), labels[tr].astype(np.int64),
                       Zte.astype(np.float32), labels[te].astype(np.int64), means.astype(np.float32))

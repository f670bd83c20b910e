"""Real data: scikit-learn's bundled 8x8 digits (no download), projected on a few principal
directions, and prompts drawn from its rows (chapter "Beyond the paper", chapters/beyond.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float, Int, PRNGKeyArray

from . import _validate as v

__all__ = ["load_digits_pca", "sample_rows"]


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

    classes = tuple(int(c) for c in classes)
    if len(classes) < 1 or len(set(classes)) != len(classes) or not all(0 <= c <= 9 for c in classes):
        raise ValueError(f"classes must be distinct digits in 0..9, got classes={classes!r}")
    n_components = v.positive_int("n_components", n_components)
    if n_components > 64:
        raise ValueError(f"n_components must be <= 64, got {n_components}")
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
    and their labels (n_prompts, L) when ``labels`` is given."""
    idx = jax.random.randint(key, (n_prompts, L), 0, jnp.shape(data)[0])
    X = jnp.asarray(data)[idx]
    return X if labels is None else (X, jnp.asarray(labels)[idx])

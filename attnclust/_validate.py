"""Validation at the public boundary: plain ValueErrors naming the parameter, its value and
what is allowed (DESIGN.md, "Library conventions").

Values that are JAX tracers (inside ``jit``, ``vmap`` or ``grad``) cannot be inspected and
are passed through; the public functions validate before they trace.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np


def concrete(value: Any) -> np.ndarray | None:
    """``value`` as a NumPy array, or None when it is an abstract tracer."""
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value)


def positive_finite(name: str, value: Any) -> None:
    """Raise unless ``value`` is a finite number > 0 (tracers pass)."""
    arr = concrete(value)
    if arr is None:
        return
    if arr.ndim != 0 and arr.size != 1:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    v = float(arr.reshape(()))
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {name}={v!r}")


def positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """Return ``value`` as an int, raising unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value!r}")
    return int(value)


def finite_array(name: str, value: Any) -> None:
    """Raise if a concrete array contains NaN or infinity."""
    arr = concrete(value)
    if arr is not None and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; it contains NaN or inf: {name}={arr!r}")


def ndim_at_least(name: str, shape: tuple[int, ...], ndim: int, what: str) -> None:
    if len(shape) < ndim:
        raise ValueError(f"{name} must have shape {what}, got shape {tuple(shape)}")


def same_dim(name_a: str, d_a: int, name_b: str, d_b: int) -> None:
    if d_a != d_b:
        raise ValueError(
            f"{name_a} and {name_b} must have the same dimension d, "
            f"got {name_a} with d={d_a} and {name_b} with d={d_b}"
        )

"""Validation at the public boundary: a plain ValueError or TypeError naming the argument, its
value and what is allowed. This is the one toolkit every module uses.

- Types (TypeError): arrays must hold real numbers (not complex, strings or objects);
  scalars must be real numbers; mixtures must be ``GaussianMixture``; keys must be JAX PRNG
  keys (raw uint32 (2,) keys or typed ``jax.random.key`` keys).
- Values (ValueError): NaN and inf, numbers outside their range, wrong shapes and sizes,
  batch shapes that do not broadcast. Values are checked in the dtype they are stored in,
  float32: a number finite in float64 but beyond float32's range (about 3.4e38) is refused.

Under ``jit``, ``vmap`` or ``grad`` a value is an abstract tracer: its shape and dtype are
still checked (they are static), its values cannot be and are passed through. The public
functions validate before they trace.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

F32_MAX = float(np.finfo(np.float32).max)
"""The largest float32, about 3.4e38: arrays and scalars are stored in float32."""


def is_tracer(value: Any) -> bool:
    """True when ``value`` is an abstract JAX tracer (inside jit, vmap or grad)."""
    return isinstance(value, jax.core.Tracer)


def holds(predicate, *arrays) -> bool:
    """``bool(predicate(*arrays))`` for concrete arrays, evaluated at once even inside a
    user's ``jit`` (where a JAX operation on a concrete array would otherwise be traced)."""
    with jax.ensure_compile_time_eval():
        return bool(predicate(*arrays))


def _on_host(a: jax.Array) -> bool:
    """True when the concrete array ``a`` lives on CPU devices (reading it is free)."""
    return all(d.platform == "cpu" for d in a.devices())


def all_finite(a: Any) -> bool:
    """True when every entry of the concrete array ``a`` is finite. Checked with NumPy on the
    host (no JAX program to compile for each new shape); an array on an accelerator is
    checked there and only the answer comes back."""
    if isinstance(a, jax.Array) and not _on_host(a):
        return holds(lambda x: jnp.all(jnp.isfinite(x)), a)
    return bool(np.all(np.isfinite(np.asarray(a))))


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def positive_finite(name: str, value: Any) -> Any:
    """``value`` as a Python float, raising unless it is a real number, finite and > 0, that
    float32 can hold (<= about 3.4e38). A tracer is returned unchanged once its shape and
    dtype are checked. TypeError for a non-number (a string, None, complex, a bool),
    ValueError for a bad value or an array."""
    if is_tracer(value):
        if value.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got an array of shape {value.shape}")
        if not (jnp.issubdtype(value.dtype, jnp.floating) or jnp.issubdtype(value.dtype, jnp.integer)):
            raise TypeError(f"{name} must be a real number, got a tracer of dtype {value.dtype}")
        return value
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise TypeError(f"{name} must be a real number, got {name}={_describe(value)}")
    if not isinstance(value, numbers.Real):
        arr = np.asarray(value) if isinstance(value, (np.ndarray, jax.Array, list, tuple)) else None
        if arr is None or arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a real number, got {name}={_describe(value)}")
        if arr.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
        value = arr
    x = float(value)
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {name}={x!r}")
    if x > F32_MAX:
        raise ValueError(f"{name} must lie within float32's range ({name} <= {F32_MAX:.3g}), got {name}={x!r}")
    return x


def positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """Return ``value`` as an int, raising unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={_describe(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value!r}")
    return int(value)


def real_array(name: str, value: Any, *, finite: bool = True, dtype=jnp.float32) -> jax.Array:
    """``value`` (an array, list or number) as a JAX array of ``dtype`` (float32 by default;
    integer and float16 inputs are promoted). TypeError unless it holds real numbers;
    ValueError when ``finite`` and it contains NaN or inf, or values beyond ``dtype``'s range.
    A tracer is cast, its dtype checked, its values not."""
    if is_tracer(value) or isinstance(value, jax.Array):
        kind = np.dtype(value.dtype).kind if not jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key) else "key"
        if kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got an array of dtype {value.dtype}")
        if is_tracer(value):
            return value.astype(dtype)
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError) as e:  # ragged lists
            raise ValueError(f"{name} must be a rectangular array of real numbers, got {name}={_describe(value)}") from e
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got an array of dtype {arr.dtype}: {name}={_describe(value)}")
    if finite and arr.dtype.kind == "f":
        if not all_finite(arr):
            raise ValueError(f"{name} must be finite; it contains NaN or inf: {name}={_describe(arr)}")
        if np.dtype(arr.dtype).itemsize > 4 and arr.size and float(np.max(np.abs(arr))) > F32_MAX:
            raise ValueError(
                f"{name} must lie within float32's range (|{name}| <= {F32_MAX:.3g}), "
                f"got entries up to {float(np.max(np.abs(arr))):.3g}"
            )
    return jnp.asarray(arr, dtype=dtype)


def same_dim(name_a: str, d_a: int, name_b: str, d_b: int) -> None:
    if d_a != d_b:
        raise ValueError(
            f"{name_a} and {name_b} must have the same dimension d, "
            f"got {name_a} with d={d_a} and {name_b} with d={d_b}"
        )


def tokens(name: str, X: Any, d: int | None = None, d_from: str = "theta") -> jax.Array:
    """``X`` as a float32 array of shape (..., L, d) with L >= 1 and d >= 1, finite; when
    ``d`` is given, its last axis must have that size (named after ``d_from``)."""
    X = real_array(name, X)
    if X.ndim < 2:
        raise ValueError(f"{name} must have shape (..., L, d), got shape {tuple(X.shape)}")
    if X.shape[-2] < 1 or X.shape[-1] < 1:
        raise ValueError(f"{name} must have L >= 1 tokens of dimension d >= 1, got shape {tuple(X.shape)}")
    if d is not None:
        same_dim(d_from, d, name, X.shape[-1])
    return X


def heads(
    name: str, theta: Any, d: int | None = None, d_from: str = "X", *, H: int | None = None,
    ndims: tuple[int, ...] = (2,),
) -> jax.Array:
    """``theta`` as a finite float32 array of heads, shape (H, d) with H >= 1 (or, with
    ``ndims`` (3,) or (2, 3), one set per seed (S, H, d)); when ``d`` is given, d must match
    it (named after ``d_from``), and when ``H`` is given, the number of heads."""
    theta = real_array(name, theta)
    if theta.ndim not in ndims:
        what = " or ".join({2: "(H, d)", 3: "(S, H, d)"}[n] for n in ndims)
        raise ValueError(f"{name} must have shape {what}, got shape {tuple(theta.shape)}")
    if theta.shape[-2] < 1 or theta.shape[-1] < 1:
        raise ValueError(f"{name} must have H >= 1 heads of dimension d >= 1, got shape {tuple(theta.shape)}")
    if d is not None:
        same_dim(name, theta.shape[-1], d_from, d)
    if H is not None and theta.shape[-2] != H:
        raise ValueError(f"{name} must have H={H} heads (rows), got shape {tuple(theta.shape)}")
    return theta


def batch_match(name_a: str, shape_a: tuple, name_b: str, shape_b: tuple) -> tuple:
    """The broadcast of two batch shapes, raising a ValueError naming both when they do
    not broadcast."""
    try:
        return np.broadcast_shapes(tuple(shape_a), tuple(shape_b))
    except ValueError:
        raise ValueError(
            f"{name_a} and {name_b} must have batch shapes that broadcast, got {name_a} with "
            f"batch shape {tuple(shape_a)} and {name_b} with batch shape {tuple(shape_b)}"
        ) from None


def instance(name: str, value: Any, cls: type):
    """Raise a TypeError unless ``value`` is an instance of ``cls`` (e.g. ``GaussianMixture``:
    the class is passed in, so this toolkit imports no module of the library); return it."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {name}={_describe(value)}")
    return value


RAW_KEY = jax.eval_shape(lambda: jax.random.PRNGKey(0))
"""Shape and dtype of one raw key of the default PRNG implementation ((2,) uint32)."""


def prng_key(name: str, key: Any) -> jax.Array:
    """``key`` as a JAX PRNG key: a typed key (``jax.random.key``, returned as it is) or raw
    uint32 key data of shape (2,) (``jax.random.PRNGKey``, NumPy included). TypeError or
    ValueError otherwise."""
    if (isinstance(key, jax.Array) or is_tracer(key)) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.ndim != 0:
            raise ValueError(f"{name} must be a single key, got an array of keys of shape {key.shape}")
        return key
    return raw_keys(name, key, batched=False)


def raw_keys(name: str, keys: Any, batched: bool = True) -> jax.Array:
    """``keys`` as raw uint32 key data: shape (S, 2) with S >= 1 when ``batched`` (from
    ``jax.random.split(key, S)`` or S typed keys), else (2,).

    Typed keys (``jax.random.key``) of the default implementation are unwrapped
    (``jax.random.key_data``), so a typed key and ``jax.random.PRNGKey`` of the same seed
    give the same numbers (raw keys are also what ``jax.device_put`` shards over processes)."""
    want = "(S,) typed keys or (S, 2) uint32 keys (jax.random.split(key, S))" if batched \
        else "a single key (jax.random.key(seed) or jax.random.PRNGKey(seed))"
    if isinstance(keys, jax.Array) and jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        raw = jax.random.key_data(keys)
    else:
        try:
            raw = jnp.asarray(keys)
        except (TypeError, ValueError):  # None, strings, ragged lists
            raise TypeError(f"{name} must be {want}, got {name}={_describe(keys)}") from None
    if raw.dtype != RAW_KEY.dtype or raw.shape[-1:] != RAW_KEY.shape:
        raise TypeError(f"{name} must be {want} of the default PRNG implementation, got key data "
                        f"of dtype {raw.dtype} and shape {raw.shape}")
    if raw.ndim != 1 + int(batched):
        raise ValueError(f"{name} must be {want}, got key data of shape {raw.shape}")
    if batched and raw.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one key (S >= 1), got S=0")
    return raw


def finite_result(out: Any, culprits: str) -> Any:
    """Return ``out``, raising a ValueError naming ``culprits`` (for instance "theta and X
    are") when a concrete result overflowed float32 although every input was finite."""
    if not is_tracer(out) and not all_finite(out):
        raise ValueError(f"{culprits} too large: the result overflows float32 (|x| <= {F32_MAX:.3g}); rescale them")
    return out


def orthogonal_sizes(K: Any, d: Any) -> tuple[int, int]:
    """(K, d) as ints for K orthogonal centroids in R^d: integers >= 1 with K <= d."""
    K = positive_int("K", K)
    d = positive_int("d", d)
    if K > d:
        raise ValueError(f"K must be <= d for orthogonal centroids, got K={K}, d={d}")
    return K, d


def one_of(name: str, value: Any, allowed) -> Any:
    """Return ``value``, raising a ValueError naming ``name`` unless it is one of
    ``allowed`` (a tuple of options, or a dict whose keys are the options)."""
    options = tuple(allowed)
    try:
        ok = value in options
    except TypeError:  # an unhashable value against a dict's keys
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {options}, got {name}={value!r}")
    return value

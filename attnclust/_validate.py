"""Validation at the public boundary: the one toolkit every public function of the core uses,
so that each kind of bad value gets one answer, whichever function it is passed to.

- Wrong type -> ``TypeError`` naming the parameter, what it got and what is allowed:
  a string, None, complex or a bool where a real number is due; anything but an integer
  (a float 2.0 included) where an integer is due; an array of strings, objects, complex
  numbers or booleans where real numbers are due (allowed: integer and floating dtypes,
  float16 and bfloat16 included, converted to float32); a mask that is not boolean; an
  object of the wrong class (a mixture); a key that is not a JAX PRNG key.
- Wrong value -> ``ValueError`` naming the parameter, the value and what is allowed: NaN
  and inf, numbers outside their range, wrong shapes and sizes (an array where a number is
  due, too few tokens, an empty batch), batch shapes that do not broadcast, labels outside
  0..K-1, a request for more memory than the device has. Values are checked in the dtype
  they are stored in, float32: a number finite in float64 but beyond float32's range
  (about 3.4e38) is refused.

Array-likes are read with ``numpy.asarray``: lists, NumPy and JAX arrays, memoryviews and
objects with ``__array__`` (a pandas Series) are checked alike.

Under ``jit``, ``vmap`` or ``grad`` a value is an abstract tracer: its shape and dtype are
still checked (they are static), its values cannot be and are passed through. The public
functions validate before they trace.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

F32_MAX = float(np.finfo(np.float32).max)
"""The largest float32, about 3.4e38: arrays and scalars are stored in float32."""

REAL_DTYPES = "integer or floating (float16, bfloat16, float32, float64)"
"""What an array of real numbers may hold, as the messages say it."""


def is_tracer(value: Any) -> bool:
    """True when ``value`` is an abstract JAX tracer (inside jit, vmap or grad)."""
    return isinstance(value, jax.core.Tracer)


def holds(predicate, *arrays) -> bool:
    """``bool(predicate(*arrays))`` for concrete arrays, evaluated at once even inside a
    user's ``jit`` (where a JAX operation on a concrete array would otherwise be traced)."""
    with jax.ensure_compile_time_eval():
        return bool(predicate(*arrays))


def on_host(a: jax.Array) -> bool:
    """True when the concrete array ``a`` lives on CPU devices (reading it is free)."""
    return all(d.platform == "cpu" for d in a.devices())


def all_finite(a: Any) -> bool:
    """True when every entry of the concrete array ``a`` is finite. Checked with NumPy on the
    host (no JAX program to compile for each new shape); an array on an accelerator is
    checked there and only the answer comes back."""
    if isinstance(a, jax.Array) and not on_host(a):
        return holds(lambda x: jnp.all(jnp.isfinite(x)), a)
    return bool(np.all(np.isfinite(np.asarray(a))))


def describe(value: Any) -> str:
    """``repr(value)``, cut to 120 characters."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def dtype_kind(dtype) -> str:
    """"b" (bool), "i" (signed or unsigned integers), "f" (every floating dtype JAX knows,
    bfloat16 and float16 included), "c" (complex), "key" (JAX PRNG keys) or "other"
    (strings, objects)."""
    try:
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            return "key"
        for kind, base in (("b", jnp.bool_), ("i", jnp.integer), ("f", jnp.floating), ("c", jnp.complexfloating)):
            if jnp.issubdtype(dtype, base):
                return kind
    except TypeError:
        pass
    return "other"


def is_array_like(value: Any) -> bool:
    """True for what ``numpy.asarray`` reads as an array a user meant: NumPy and JAX arrays,
    lists and tuples, memoryviews, objects with ``__array__`` or ``__array_interface__``."""
    return (isinstance(value, (np.ndarray, np.generic, jax.Array, list, tuple, memoryview, bytearray))
            or hasattr(type(value), "__array__") or hasattr(value, "__array_interface__"))


def real_number(name: str, value: Any, *, float32: bool = True, finite: bool = True) -> Any:
    """``value`` as a finite Python float: TypeError unless it is a real number (a bool, a
    string, None or complex is not) or a 0-d array of an integer or floating dtype;
    ValueError for an array of another shape, NaN or inf (unless ``finite`` is False), or
    (with ``float32``) a magnitude beyond float32's range. A tracer is returned unchanged
    once its shape and dtype are checked."""
    if is_tracer(value):
        if value.ndim != 0:
            raise ValueError(f"{name} must be a number, got an array of shape {value.shape}")
        if dtype_kind(value.dtype) not in "if":
            raise TypeError(f"{name} must be a real number, got a tracer of dtype {value.dtype}")
        return value
    if isinstance(value, (bool, np.bool_)) or not (isinstance(value, numbers.Real) or is_array_like(value)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}: {name}={describe(value)}")
    if not isinstance(value, numbers.Real):
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError):  # ragged lists
            raise ValueError(f"{name} must be a number, got {name}={describe(value)}") from None
        if dtype_kind(arr.dtype) not in "if":
            raise TypeError(f"{name} must be a real number, got an array of dtype {arr.dtype}: {name}={describe(value)}")
        if arr.ndim != 0:
            raise ValueError(f"{name} must be a number, got an array of shape {arr.shape}")
        value = arr
    x = float(value)
    if not finite:
        return x
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {name}={x!r}")
    if float32 and abs(x) > F32_MAX:
        raise ValueError(f"{name} must lie within float32's range (|{name}| <= {F32_MAX:.3g}), got {name}={x!r}")
    return x


def positive_finite(name: str, value: Any, *, float32: bool = True) -> Any:
    """``value`` as a Python float > 0 (``real_number``'s types and checks; with
    ``float32``, at most about 3.4e38). A tracer is returned unchanged once its shape and
    dtype are checked."""
    x = real_number(name, value, float32=float32)
    if not is_tracer(x) and x <= 0:
        raise ValueError(f"{name} must be > 0, got {name}={x!r}")
    return x


def positive_reals(**values: Any) -> tuple[float, ...]:
    """Each keyword's value as a Python float > 0 (``positive_finite`` in float64's range,
    for the float64 code of ``attnclust.symbolic``), in the order given."""
    return tuple(positive_finite(name, value, float32=False) for name, value in values.items())


def number_in(name: str, value: Any, low: float, high: float, *, low_open: bool = True, high_open: bool = False) -> float:
    """``value`` as a Python float in the interval from ``low`` to ``high`` (open or closed
    at each end, as ``low_open`` and ``high_open`` say): ``real_number``'s types, and a
    ValueError naming the interval otherwise."""
    x = real_number(name, value)
    below = x <= low if low_open else x < low
    above = x >= high if high_open else x > high
    if below or above:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {name}={x!r}")
    return x


def positive_int(name: str, value: Any, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int in ``minimum``..``maximum``: TypeError unless it is a Python or
    NumPy integer (not a bool, a float or a string), ValueError when it is out of range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}: {name}={describe(value)}")
    if value < minimum or (maximum is not None and value > maximum):
        allowed = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise ValueError(f"{name} must be an integer {allowed}, got {name}={int(value)!r}")
    return int(value)


def real_array(name: str, value: Any, *, finite: bool = True, dtype=jnp.float32) -> jax.Array | np.ndarray:
    """``value`` (an array-like or a number) as a JAX array of ``dtype`` (float32 by default;
    integer, float16 and bfloat16 inputs are converted), or with ``dtype`` float64 as a
    NumPy float64 array (for the NumPy code of the library, without float32's rounding).
    TypeError unless it holds real numbers (``REAL_DTYPES``: not booleans, complex, strings
    or objects); ValueError when ``finite`` and it contains NaN or inf, or values beyond
    float32's range (unless ``dtype`` is float64). A tracer is cast, its dtype checked, its
    values not."""
    if is_tracer(value) or isinstance(value, jax.Array):
        arr = value
    else:
        if not (is_array_like(value) or isinstance(value, numbers.Number)):
            raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}: {name}={describe(value)}")
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError) as e:  # ragged lists
            raise ValueError(f"{name} must be a rectangular array of real numbers, got {name}={describe(value)}") from e
    kind = dtype_kind(arr.dtype)
    if kind not in "if":
        what = "a boolean array" if kind == "b" else f"an array of dtype {arr.dtype}"
        hint = f"; pass {name}.astype(float) if 0 and 1 are meant" if kind == "b" else ""
        shown = "" if is_tracer(arr) or isinstance(arr, jax.Array) else f": {name}={describe(value)}"
        raise TypeError(f"{name} must hold real numbers ({REAL_DTYPES} dtype), got {what}{shown}{hint}")
    if is_tracer(arr):
        return arr.astype(dtype)
    float64 = np.dtype(dtype) == np.float64
    if finite and kind == "f":
        if not all_finite(arr):
            raise ValueError(f"{name} must be finite; it contains NaN or inf: {name}={describe(arr)}")
        if not float64 and np.dtype(arr.dtype).itemsize > 4 and arr.size and float(np.max(np.abs(arr))) > F32_MAX:
            raise ValueError(
                f"{name} must lie within float32's range (|{name}| <= {F32_MAX:.3g}), "
                f"got entries up to {float(np.max(np.abs(arr))):.3g}"
            )
    if float64:
        return np.asarray(arr, np.float64)
    return jnp.asarray(arr, dtype=dtype)


def same_dim(name_a: str, d_a: int, name_b: str, d_b: int) -> None:
    if d_a != d_b:
        raise ValueError(
            f"{name_a} and {name_b} must have the same dimension d, "
            f"got {name_a} with d={d_a} and {name_b} with d={d_b}"
        )


def shape(name: str, shape_: tuple, expected: str, ok: bool) -> None:
    """Raise "``name`` must have shape ``expected``, got shape ..." (a ValueError) unless
    ``ok``: the one message of every shape check."""
    if not ok:
        raise ValueError(f"{name} must have shape {expected}, got shape {tuple(shape_)}")


def count(name: str, n: int, minimum: int, what: str) -> None:
    """Raise "``name`` must hold at least ``minimum`` ``what``, got ``n``" (a ValueError)
    when ``n < minimum``."""
    if n < minimum:
        raise ValueError(f"{name} must hold at least {minimum} {what}, got {n}")


def ordered(name_a: str, a: float, name_b: str, b: float) -> None:
    """Raise a ValueError naming both unless ``a <= b``."""
    if not a <= b:
        raise ValueError(f"{name_a} must be <= {name_b}, got {name_a}={a!r}, {name_b}={b!r}")


def same_shape(name_a: str, shape_a: tuple, name_b: str, shape_b: tuple, what: str = "") -> None:
    """Raise a ValueError naming both arguments unless their shapes are equal (``what``: what
    the shapes count, for the message)."""
    if tuple(shape_a) != tuple(shape_b):
        same = f" (the same {what})" if what else ""
        raise ValueError(f"{name_a} and {name_b} must have the same shape{same}, got {tuple(shape_a)} and {tuple(shape_b)}")


def positive_array(name: str, value: Any, shape_: tuple | None = None, *, dtype=jnp.float32) -> jax.Array | np.ndarray:
    """``value`` as a finite array (``real_array``'s, of ``dtype``) whose entries are all > 0:
    of shape ``shape_`` when given, else one-dimensional with at least one entry (a grid of
    values)."""
    arr = real_array(name, value, dtype=dtype)
    if shape_ is None:
        shape(name, arr.shape, "(G,) with G >= 1", arr.ndim == 1 and arr.size >= 1)
    else:
        shape(name, arr.shape, str(tuple(shape_)), tuple(arr.shape) == tuple(shape_))
    if not is_tracer(arr) and not np.all(np.asarray(arr) > 0):
        raise ValueError(f"{name} must be > 0 everywhere, got {name}={describe(np.asarray(arr))}")
    return arr


def per_prompt(name: str, value: Any, n: int) -> jax.Array:
    """``value`` (a number > 0, or (n,) numbers > 0, one per prompt) as a float32 (n,) array."""
    arr = real_array(name, value)
    if arr.ndim == 0:
        arr = jnp.broadcast_to(arr, (n,))
    shape(name, arr.shape, f"() or (n,) = ({n},)", tuple(arr.shape) == (n,))
    return positive_array(name, arr, (n,))


def mixture_weights(name: str, value: Any, shape_: tuple) -> jax.Array:
    """``value`` as float32 mixing weights of shape ``shape_`` (one per component, a stack of
    mixtures adding leading axes): finite, >= 0, each set summing to 1 within 1e-5."""
    w = real_array(name, value)
    shape(name, w.shape, f"{tuple(shape_)}, one weight per row of centroids (their shape without d)",
          tuple(w.shape) == tuple(shape_))
    w64 = np.asarray(w, np.float64)
    if np.any(w64 < 0):
        raise ValueError(f"{name} must be >= 0, got {name}={describe(w64)}")
    if np.any(np.abs(w64.sum(axis=-1) - 1.0) > 1e-5):
        raise ValueError(f"{name} must sum to 1, got {name}={describe(w64)} with sum {w64.sum(axis=-1)!r}")
    return w


def centroids(name: str, value: Any) -> jax.Array:
    """``value`` as finite float32 centroids of shape (K, d), or (..., K, d) for a stack of
    mixtures, with K >= 1 components of dimension d >= 1."""
    mu = real_array(name, value)
    shape(name, mu.shape, "(K, d) with K >= 1 components of dimension d >= 1",
          mu.ndim >= 2 and mu.shape[-2] >= 1 and mu.shape[-1] >= 1)
    return mu


def axis(name: str, value: Any) -> Any:
    """``value`` unchanged when it is an axis (an int) or None; a TypeError otherwise."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{name} must be an axis (an int) or None, got {name}={value!r}")
    return value


def lengths(name: str, value: Any) -> np.ndarray:
    """``value`` as a one-dimensional int array of prompt lengths >= 1, each dividing the
    largest (one sample of prompts of the largest length is cut into every length)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of prompt lengths, got {name}={describe(value)}") from None
    if dtype_kind(arr.dtype) != "i":
        raise TypeError(f"{name} must hold integer lengths, got dtype {arr.dtype}: {name}={describe(value)}")
    shape(name, arr.shape, "(m,) with m >= 1 lengths", arr.ndim == 1 and arr.size >= 1)
    if arr.min() < 1:
        raise ValueError(f"{name} must hold lengths >= 1, got {name}={arr.tolist()}")
    if np.any(arr.max() % arr):
        raise ValueError(f"every L of {name} must divide max({name})={arr.max()}, got {name}={arr.tolist()}")
    return arr.astype(int)


def distinct_ints(name: str, value: Any, low: int, high: int) -> tuple[int, ...]:
    """``value`` (a sequence of integers) as a tuple of at least one distinct int in
    ``low``..``high``."""
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of integers, got {name}={describe(value)}") from None
    out = tuple(positive_int(f"{name}[{i}]", c, minimum=low, maximum=high) for i, c in enumerate(items))
    if not out or len(set(out)) != len(out):
        raise ValueError(f"{name} must hold at least one value, all distinct, in {low}..{high}, got {name}={out!r}")
    return out


def tokens(name: str, X: Any, d: int | None = None, d_from: str = "theta", *, nonempty: bool = False,
           dtype=jnp.float32) -> jax.Array | np.ndarray:
    """``X`` as a float32 array of shape (..., L, d) with L >= 1 and d >= 1, finite; when
    ``d`` is given, its last axis must have that size (named after ``d_from``); with
    ``nonempty``, at least one prompt (no batch axis of size 0: a mean over the prompts is
    due). ``dtype``: as ``real_array``'s."""
    X = real_array(name, X, dtype=dtype)
    if X.ndim < 2:
        raise ValueError(f"{name} must have shape (..., L, d), got shape {tuple(X.shape)}")
    if X.shape[-2] < 1 or X.shape[-1] < 1:
        raise ValueError(f"{name} must have L >= 1 tokens of dimension d >= 1, got shape {tuple(X.shape)}")
    if nonempty and 0 in X.shape[:-2]:
        raise ValueError(f"{name} must hold at least one prompt, got shape {tuple(X.shape)} (an empty batch)")
    if d is not None:
        same_dim(d_from, d, name, X.shape[-1])
    return X


def prompts(name: str, X: Any, *, min_L: int = 1, why: str = "", dtype=jnp.float32) -> jax.Array | np.ndarray:
    """``X`` as a finite float32 batch of prompts of shape (n, L, d) with n >= 1, d >= 1 and
    L >= ``min_L`` tokens per prompt (``why`` says what needs them, for the message);
    ``dtype``: as ``real_array``'s."""
    X = tokens(name, X, nonempty=True, dtype=dtype)
    if X.ndim != 3:
        raise ValueError(f"{name} must have shape (n, L, d), got shape {tuple(X.shape)}")
    if X.shape[1] < min_L:
        reason = f" {why}" if why else ""
        raise ValueError(f"{name} must hold L >= {min_L} tokens per prompt{reason}, got L={X.shape[1]} (shape {tuple(X.shape)})")
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


def bool_mask(name: str, mask: Any, purpose: str) -> jax.Array:
    """``mask`` as a boolean array (True for the ``purpose``, e.g. "keys to attend to"):
    TypeError for any other dtype, an integer mask included (it is not read as weights)."""
    mask = mask if is_tracer(mask) or isinstance(mask, jax.Array) else np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(
            f"{name} must be a boolean array (True for the {purpose}), got dtype {mask.dtype}; "
            f"convert it with {name} != 0 if that is what you mean"
        )
    return jnp.asarray(mask)


def any_true(name: str, mask: Any, what: str) -> None:
    """Raise a ValueError unless the concrete boolean ``mask`` is True somewhere (at least
    one ``what`` is kept); a tracer passes."""
    if not is_tracer(mask) and not holds(jnp.any, mask):
        raise ValueError(f"{name} must be True for at least one {what}, got a {name} that is False everywhere")


def key_mask(name: str, mask: Any, X: jax.Array) -> jax.Array:
    """``mask`` as a boolean key mask (..., L) for the keys X (..., L, d): batch shapes that
    broadcast, and (for a concrete mask) at least one True key per prompt."""
    mask = bool_mask(name, mask, "keys to attend to")
    if mask.ndim < 1 or mask.shape[-1] != X.shape[-2]:
        raise ValueError(
            f"{name} must have shape (..., L) with L={X.shape[-2]} the number of keys in X, "
            f"got shape {tuple(mask.shape)}"
        )
    batch_match(name, mask.shape[:-1], "X", X.shape[:-2])
    if not is_tracer(mask) and not holds(lambda m: jnp.all(jnp.any(m, axis=-1)), mask):
        raise ValueError(f"{name} must be True for at least one key of every prompt, got a prompt with every key masked")
    return mask


def labels(name: str, value: Any, K: int | None = None) -> np.ndarray:
    """``value`` as an int64 NumPy array of cluster labels, shape (..., L) with L >= 1:
    TypeError unless it holds integers (booleans, and floats with integer values, are read
    as labels), ValueError for NaN or non-integer values and, when ``K`` is given, for
    labels outside 0..K-1 (a label K or -1 would pick another cluster's centroid)."""
    if is_tracer(value):
        if dtype_kind(value.dtype) not in "bi":
            raise TypeError(f"{name} must hold integer labels, got a tracer of dtype {value.dtype}")
        return value
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a rectangular array of integer labels, got {name}={describe(value)}") from None
    kind = dtype_kind(arr.dtype)
    if kind not in "bif":
        raise TypeError(f"{name} must hold integer labels, got dtype {arr.dtype}")
    if kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer labels, got non-integer values: {name}={describe(arr)}")
    arr = arr.astype(np.int64)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(f"{name} must have shape (..., L) with L >= 1 labels, got shape {arr.shape}")
    if K is not None and arr.size and (arr.min() < 0 or arr.max() >= K):
        raise ValueError(f"{name} must lie in 0..K-1 = 0..{K - 1}, got labels from {arr.min()} to {arr.max()}")
    return arr


@functools.lru_cache(maxsize=None)
def memory_bytes() -> int:
    """Bytes the default device can hold: an accelerator's memory limit where JAX reports
    one (``Device.memory_stats``), else the host's physical memory."""
    try:
        stats = jax.devices()[0].memory_stats() or {}
    except Exception:  # noqa: BLE001 - a backend without memory statistics
        stats = {}
    if stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def allocation(what: str, n_values: int, itemsize: int = 4, **sizes: Any) -> None:
    """Raise a ValueError naming ``sizes`` (the arguments that set the size) when ``what``,
    an array of ``n_values`` values of ``itemsize`` bytes, would not fit in the device's
    memory (``memory_bytes``): checked before the array is asked of XLA, which would fail
    on it (or end the process)."""
    need = int(n_values) * itemsize
    limit = memory_bytes()
    if need > limit:
        args = ", ".join(f"{k}={v!r}" for k, v in sizes.items())
        raise ValueError(
            f"{args}: too large, {what} would hold {int(n_values):.3g} values ({need / 2**30:.3g} GiB), "
            f"more than the device's memory ({limit / 2**30:.3g} GiB); ask for fewer"
        )


def instance(name: str, value: Any, cls: type):
    """Raise a TypeError unless ``value`` is an instance of ``cls`` (e.g. ``GaussianMixture``:
    the class is passed in, so this toolkit imports no module of the library); return it."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {name}={describe(value)}")
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
            raise TypeError(f"{name} must be {want}, got {name}={describe(keys)}") from None
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

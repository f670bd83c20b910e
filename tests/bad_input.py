"""Bad or extreme input tried as a careless user would, as tables of cases that the test
files of each module parametrize (``check_case``): every call gives a clear error (a
ValueError or TypeError whose message names the argument) or a correct finite result; never
a silent non-finite or wrong result, nor any other exception.

Every call runs outside any user ``jit``, on the fixed arrays below."""

from __future__ import annotations

import dataclasses
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnclust as ac

NAN, INF = float("nan"), float("inf")
BAD_LAMS = [-1.0, 0.0, NAN, INF, -INF, 1e39]  # 1e39 is finite in float64 only
HUGE_LAMS = [1e4, 1e9, 1e30, 1e38]  # valid: the result must be finite

KEY = jax.random.PRNGKey(0)
MIX = ac.orthogonal_mixture(K=2, d=5, r=2.0, sigma=0.5)
W, MU = np.array([0.5, 0.5], np.float32), np.eye(2, 5, dtype=np.float32) * 2.0
X = ac.sample(KEY, MIX, 2, 8)[0]  # (2, 8, 5)
Z = X[:, :3]  # (2, 3, 5)
TH = jnp.asarray(MU) + 0.1  # (2, 5) heads near the centroids
z = X[0]  # (8, 5) queries for the limits
P = z @ TH.T  # (8, 2) projections


def nan_at(A, value=NAN):
    A = jnp.asarray(A, jnp.float32)
    return A.at[(0,) * A.ndim].set(value)


BAD_ARRAYS = [("nan", nan_at), ("inf", lambda A: nan_at(A, INF)), ("complex", lambda A: jnp.asarray(A) + 1j),
              ("strings", lambda A: np.full(np.shape(A), "a"))]
"""(label, f): f(A) is A made bad."""


def collector(cases: list):
    """A ``case(label, call, names=(), error=False, check=None)`` that appends a pytest param
    to ``cases``. ``names``: an error must name one of them (a tuple inside means all of its
    names). ``error``: no result is correct, only an error. ``check``: a function of the
    result returning True when it is right (by default: every leaf is finite)."""
    def case(label, call, names=(), error=False, check=None):
        cases.append(pytest.param(dict(call=call, names=names, error=error, check=check), id=label))
    return case


def leaves(result):
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [getattr(result, f.name) for f in dataclasses.fields(result)]
    return jax.tree_util.tree_leaves(result)


def finite(result) -> bool:
    for leaf in leaves(result):
        if isinstance(leaf, str):
            return False
        a = np.asarray(leaf)
        if a.dtype.kind not in "biuf":
            return False
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            return False
    return True


def has_nan(result) -> bool:
    return bool(np.isnan(np.asarray(result, dtype=np.float64)).any())


def close(expected, rtol=1e-4, atol=1e-4):
    return lambda r: finite(r) and np.allclose(np.asarray(r, np.float64), np.asarray(expected, np.float64), rtol=rtol, atol=atol)


def hard_identity(Zq, Xk):
    """Identity attention as lam -> inf: each query gets the key of largest <z, x_k>."""
    Zq, Xk = np.asarray(Zq, np.float64), np.asarray(Xk, np.float64)
    idx = np.argmax(np.einsum("...qd,...kd->...qk", Zq, Xk), axis=-1)
    return np.take_along_axis(Xk, idx[..., None], axis=-2)


def names_in(message: str, names) -> bool:
    def named(n):
        return re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message) is not None

    return any(all(named(n) for n in alt) if isinstance(alt, tuple) else named(alt) for alt in names)


def check_case(c: dict) -> None:
    """Fail unless the call raises a ValueError or TypeError naming one of ``c["names"]``, or
    (unless ``c["error"]``) returns a result that passes ``c["check"]`` (default: finite)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            result = c["call"]()
            jax.block_until_ready(jax.tree_util.tree_leaves(leaves(result)))
    except (ValueError, TypeError) as e:
        assert c["names"] and names_in(str(e), c["names"]), f"cryptic: {type(e).__name__}: {e} (names {c['names']})"
        return
    assert not c["error"], f"silent: accepted, returned {result!r:.200}"
    ok = c["check"](result) if c["check"] else finite(result)
    assert ok, f"silent: wrong or non-finite result {result!r:.200}"

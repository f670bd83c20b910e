"""The library's pooling with both passes in the C++ FFI kernels of ``pool.cc``: the same
formulas (``attnclust._kernels``: the exact shift, the three moments per query, the keys'
gradient), each pass one loop over its scores with one exp each. For ``make bench``: a
measurement of what a custom kernel gives, beside the library's XLA program.

``load()`` returns the pooling, with the signature of ``rank_one_softmax_pool``, or None
when ``libpool.so`` is not built (``bash benchmarks/kernel/build.sh``); after it,
``exp_sum`` is the exp roofline's sum in the same C++."""

from __future__ import annotations

import ctypes
from pathlib import Path

import jax
import jax.numpy as jnp

from attnclust._kernels import shift

LIB = Path(__file__).resolve().parent / "libpool.so"


def _moments(s, ext, Pk):
    out = jax.ShapeDtypeStruct(s.shape, jnp.float32)
    return jax.ffi.ffi_call("attnclust_moments", (out, out, out))(s, ext, Pk)


def _key_grads(s, ext, Pk, a, b):
    return jax.ffi.ffi_call("attnclust_key_grads", jax.ShapeDtypeStruct(Pk.shape, jnp.float32))(s, ext, Pk, a, b)


def exp_sum(a, b):
    """sum_ij exp(a_i b_j) (a (rows,), b (cols,) float32) by the C++ loop: the exp roofline's
    sum, compiled as the kernels are."""
    return jax.ffi.ffi_call("attnclust_exp_sum", jax.ShapeDtypeStruct((), jnp.float32))(a, b)


def _stats(lam, Pq, Pk):
    ext, s = shift(lam, Pq, Pk)
    Z, S1, S2 = _moments(s, ext, Pk)
    m1 = S1 / Z
    return ext, s, Z, m1, jnp.maximum(S2 / Z - m1 * m1, 0.0)


@jax.custom_vjp
def _pool(lam, Pq, Pk):
    ext, _, _, m1, _ = _stats(lam, Pq, Pk)
    return ext + m1


def _fwd(lam, Pq, Pk):
    ext, s, Z, m1, var = _stats(lam, Pq, Pk)
    return ext + m1, (lam, Pq, Pk, ext, s, Z, m1, var)


def _bwd(res, g):
    lam, Pq, Pk, ext, s, Z, m1, var = res
    c = g / Z
    a = c * (1.0 - lam * Pq * m1)
    b = c * lam * Pq
    lam = jnp.asarray(lam)
    return (jnp.sum(g * Pq * var).reshape(lam.shape).astype(lam.dtype), g * lam * var,
            _key_grads(s, ext, Pk, a, b))


_pool.defvjp(_fwd, _bwd)


def ffi_pool(lam, Pq, Pk):
    """``rank_one_softmax_pool`` (float32, same batch shapes for Pq and Pk) through the kernels."""
    shape = Pq.shape
    Pq = jnp.asarray(Pq, jnp.float32).reshape(-1, shape[-1])
    Pk = jnp.asarray(Pk, jnp.float32).reshape(-1, Pk.shape[-1])
    return _pool(lam, Pq, Pk).reshape(shape)


_LOADED: list[Path] = []


def load(path: Path | str = LIB):
    """The pooling through the FFI kernels of the library at ``path``, or None when it is
    not built. The kernels are registered with XLA once per process, from the first library
    loaded."""
    path = Path(path)
    if not _LOADED:
        if not path.is_file():
            return None
        lib = ctypes.cdll.LoadLibrary(str(path))
        for name in ("attnclust_moments", "attnclust_key_grads", "attnclust_exp_sum"):
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, name)), platform="cpu")
        _LOADED.append(path)
    return ffi_pool

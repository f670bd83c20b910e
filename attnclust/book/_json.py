"""JSON data from the library's values, for committed results files (``attnclust.book.results``)
and the claims ledger (``attnclust.book.claims``): one converter, with a hook for each caller's
own types."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

NOT_SPECIAL = object()
"""Returned by a ``to_json`` ``special`` hook for a value it leaves to the general rules."""


def to_json(name: str, value: Any, *, special: Callable[[Any], Any] | None = None,
            max_array: int | None = None,
            what: str = "JSON-like data (numbers, strings, lists, dicts, arrays)") -> Any:
    """``value`` as JSON data: bools, ints, finite floats (others as "inf", "-inf", "nan"),
    None, strings, and dicts, lists and arrays of them (arrays as nested lists).

    ``special(value)`` converts the caller's own types first (it returns
    :data:`NOT_SPECIAL` for the others); ``max_array`` bounds an array's size; ``what``
    names the accepted data in the TypeError. Used by ``results.save`` and by the claims ledger.
    """
    if special is not None and (out := special(value)) is not NOT_SPECIAL:
        return out
    again = dict(special=special, max_array=max_array, what=what)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else str(value)  # "inf" (a large-L setting), "nan"
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(f"{name}[{k!r}]", x, **again) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(f"{name}[{i}]", x, **again) for i, x in enumerate(value)]
    if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
        arr = np.asarray(value)
        if max_array is not None and arr.size > max_array:
            raise ValueError(f"{name} has {arr.size} entries: give a summary (<= {max_array} numbers)")
        return to_json(name, arr.tolist(), **again)
    raise TypeError(f"{name} must be {what}, got {type(value).__name__}")

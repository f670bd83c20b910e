"""Answers as data: decode what a student's kernel exported, trusting none of it.

A submission's kernel exports each answer with ``_export.py`` (tagged JSON). The trusted
checker decodes it here into plain values before any check sees it:

* ``None``, ``bool``, ``int``, ``float``, ``complex`` and ``str`` of exactly those types;
  lists, tuples and dicts (``str`` keys) of answers;
* NumPy arrays of booleans or numbers, read from ``.npy`` bytes with ``allow_pickle=False``;
* SymPy expressions and matrices, rebuilt from their ``srepr`` string by :func:`parse_srepr`,
  which evaluates nothing: it calls SymPy's own classes (and the SymPy functions of
  :data:`TRUSTED_MODULES`, such as ``attnclust.symbolic.logistic``) on literal numbers and
  names only.

Anything else is refused with :class:`AnswerError`, whose message becomes the feedback.
Exercise kinds add one rule (:func:`check_kind`): a string answer, or a dict (whose keys are
strings), is accepted only for an interpretation exercise, since a check may hand a
derivation's answer to SymPy's ``sympify`` or ``lambdify``, which run strings as code (SymPy
sympifies a dict's keys when it converts one).
"""

from __future__ import annotations

import ast
import base64
import binascii
import functools
import io
import math
import re

__all__ = ["AnswerError", "MAX_JSON_DEPTH", "check_kind", "decode", "json_depth",
           "parse_srepr"]

MAX_STRING = 1 << 20
"""Longest accepted string (characters), and longest ``srepr``."""

MAX_ARRAY_BYTES = 64 << 20
"""Largest accepted array (bytes)."""

MAX_ARRAY_TEXT = MAX_ARRAY_BYTES * 4 // 3 + 16
"""Longest base64 text of an accepted array (its ``.npy`` bytes, header included)."""

MAX_NODES = 200_000
"""Most syntax nodes in one ``srepr``."""

MAX_ITEMS = 1_000_000
"""Most values (nested ones included) in one answer."""

MAX_DEPTH = 32
"""Deepest nesting of lists, tuples and dicts."""

MAX_JSON_DEPTH = 3 * MAX_DEPTH + 8
"""Deepest JSON nesting of one exported answer: a dict answer takes three JSON levels a level
(``{"t": "dict", "v": [[key, value], ...]}``). The grader refuses deeper exports before it
stores or forwards them, so that no parser downstream runs out of stack."""

_NAME = re.compile(r"^[^\W\d_]\w{0,63}$")
_FLOAT = re.compile(r"^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|nan)$")
NAMED = frozenset({"Symbol", "Dummy", "Str"})
"""SymPy classes whose first argument is a name: it must look like an identifier (letters,
digits, underscores; at most 64), since printers such as ``lambdify`` write it into code."""

TRUSTED_MODULES = ("attnclust.symbolic",)
"""Modules whose exported SymPy classes (``__all__``) answers may hold besides SymPy's own:
the book's derivations return expressions with them."""

REFUSED = frozenset({"Function", "WildFunction", "Wild", "Lambda", "Basic", "Subs"})
"""SymPy names never called: ``Function`` makes functions whose names ``lambdify`` would
call as Python functions, the others take arbitrary code-like arguments."""


class AnswerError(ValueError):
    """An exported answer that the grader does not accept (the message says why)."""


def _plain_float(text: object) -> float:
    if not isinstance(text, str) or len(text) > 40:
        raise AnswerError("malformed number")
    try:
        return float(text)
    except ValueError as e:
        raise AnswerError("malformed number") from e


def _plain_int(text: object) -> int:
    if not isinstance(text, str) or not re.fullmatch(r"-?\d{1,4000}", text):
        raise AnswerError("malformed or too large integer")
    return int(text)


def _array(data: object):
    import numpy as np

    if not isinstance(data, str) or len(data) > MAX_ARRAY_TEXT:
        raise AnswerError(f"the array is larger than {MAX_ARRAY_BYTES >> 20} MiB")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (binascii.Error, ValueError, OSError, EOFError) as e:
        raise AnswerError(f"malformed array ({type(e).__name__})") from e
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biufc" \
            or array.dtype.names is not None:
        raise AnswerError("arrays must hold booleans or numbers")
    array.flags.writeable = False
    return array


def json_depth(value: object, limit: int = MAX_JSON_DEPTH) -> int:
    """How deeply JSON data (lists and dicts) nests, counted without recursion and up to
    ``limit + 1`` (a deeper value returns ``limit + 1`` as soon as that is known)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (list, dict)):
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            return limit + 1
        stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def decode(encoded: object, *, _depth: int = 0, _count: list | None = None):
    """The plain value of one exported answer.

    Raises:
        AnswerError: the encoding is malformed, too large, or of a type the grader refuses
            (the message names the type); ``missing`` (the name was not defined) and the
            kernel's own encoding errors are reported the same way.
    """
    count = [0] if _count is None else _count
    count[0] += 1
    if count[0] > MAX_ITEMS or _depth > MAX_DEPTH:
        raise AnswerError("the answer is too large or too deeply nested")
    if not isinstance(encoded, dict) or not isinstance(encoded.get("t"), str):
        raise AnswerError("malformed answer")
    tag, v = encoded["t"], encoded.get("v")
    if tag == "none":
        return None
    if tag == "bool" and isinstance(v, bool):
        return bool(v)
    if tag == "int":
        return _plain_int(v)
    if tag == "float":
        return _plain_float(v)
    if tag == "complex":
        return complex(_plain_float(encoded.get("re")), _plain_float(encoded.get("im")))
    if tag == "str" and isinstance(v, str):
        if len(v) > MAX_STRING:
            raise AnswerError(f"the string is longer than {MAX_STRING} characters")
        return str(v)
    if tag in ("list", "tuple") and isinstance(v, list):
        items = [decode(x, _depth=_depth + 1, _count=count) for x in v]
        return items if tag == "list" else tuple(items)
    if tag == "dict" and isinstance(v, list):
        out = {}
        for pair in v:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise AnswerError("malformed dict answer")
            out[str(pair[0])] = decode(pair[1], _depth=_depth + 1, _count=count)
        return out
    if tag == "ndarray":
        return _array(encoded.get("npy"))
    if tag == "sympy":
        return parse_srepr(encoded.get("srepr"))
    if tag == "missing":
        raise AnswerError("not defined")
    if tag == "unsupported":
        kind = str(encoded.get("type", "?"))[:80]
        raise AnswerError(f"the answer is of type {kind}, which the grader does not read "
                          "(answers are numbers, strings, arrays of numbers, SymPy "
                          "expressions or matrices, or lists, tuples and dicts of those)")
    if tag == "error":
        raise AnswerError(f"the answer could not be read ({str(encoded.get('error'))[:200]})")
    raise AnswerError("malformed answer")


@functools.lru_cache(maxsize=1)
def _sympy_names() -> tuple[dict, dict]:
    """SymPy's callable classes (and those of :data:`TRUSTED_MODULES`) and its named
    constants (``pi``, ``oo``, ``true``...)."""
    import importlib

    import sympy
    from sympy.matrices import MatrixBase

    classes, constants = {}, {}
    for module_name in TRUSTED_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, sympy.Basic):
                classes[name] = obj
    for name in dir(sympy):
        obj = getattr(sympy, name)
        if isinstance(obj, type) and issubclass(obj, (sympy.Basic, MatrixBase)) \
                and name not in REFUSED:
            classes[name] = obj
        elif isinstance(obj, sympy.Basic):
            constants[name] = obj
    for cls in (sympy.Dummy, sympy.core.symbol.Str, sympy.ImmutableDenseMatrix,
                sympy.MutableDenseMatrix):
        classes[cls.__name__] = cls
    return classes, constants


def _literal(node: ast.AST, first_of: str | None):
    """A literal argument: a number, a bool or None, or a name where :data:`NAMED` allows."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        v = node.operand.value
        return -v if isinstance(node.op, ast.USub) else v
    if not isinstance(node, ast.Constant):
        return _NOT_LITERAL
    v = node.value
    if v is None or type(v) in (bool, int):
        return v
    if type(v) is float and math.isfinite(v):
        return v
    if type(v) is str:
        if first_of in NAMED and _NAME.match(v):
            return v
        if first_of == "Float" and _FLOAT.match(v):
            return v
        raise AnswerError(f"the SymPy answer holds a string {v[:40]!r} where the grader "
                          "accepts none (symbol names are letters, digits and underscores)")
    raise AnswerError("the SymPy answer holds an unsupported literal")


_NOT_LITERAL = object()


def _build(node: ast.AST, first_of: str | None = None):
    lit = _literal(node, first_of)
    if lit is not _NOT_LITERAL:
        return lit
    classes, constants = _sympy_names()
    if isinstance(node, ast.Name):
        if node.id in constants:
            return constants[node.id]
        raise AnswerError(f"the SymPy answer uses an unknown name {node.id[:40]!r}")
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_build(e) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name not in classes:
            raise AnswerError(f"the SymPy answer uses {name[:40]!r}, which is not one of "
                              "SymPy's own classes or functions (undefined functions such "
                              "as Function('f') are not accepted)")
        args = [_build(a, name if i == 0 else None) for i, a in enumerate(node.args)]
        kwargs = {}
        for kw in node.keywords:
            value = _literal(kw.value, None) if kw.arg else _NOT_LITERAL
            if value is _NOT_LITERAL or not isinstance(value, (bool, int)):
                raise AnswerError("the SymPy answer has an unsupported keyword argument")
            kwargs[kw.arg] = value
        return classes[name](*args, **kwargs)
    raise AnswerError("the SymPy answer is not a plain srepr string")


def parse_srepr(text: object):
    """The SymPy object of a ``srepr`` string, built without evaluating any code.

    Only calls of SymPy's classes and functions by their bare names (``Mul``, ``Symbol``,
    ``exp``, ``ImmutableDenseMatrix``...) on numbers, booleans, lists, tuples, SymPy's named
    constants and the names of symbols are accepted; undefined functions are not.

    Raises:
        AnswerError: anything else, or a result that is not a SymPy object.
    """
    import sympy
    from sympy.matrices import MatrixBase

    if not isinstance(text, str) or len(text) > MAX_STRING:
        raise AnswerError("the SymPy answer is too long")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise AnswerError(f"the SymPy answer does not parse ({type(e).__name__})") from e
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise AnswerError("the SymPy answer is too large")
    try:
        value = _build(tree.body)
    except AnswerError:
        raise
    except RecursionError as e:
        raise AnswerError("the SymPy answer is too deeply nested") from e
    except Exception as e:  # noqa: BLE001 -- SymPy rejected the arguments
        raise AnswerError(f"the SymPy answer could not be rebuilt ({type(e).__name__}: "
                          f"{str(e)[:120]})") from e
    if not isinstance(value, (sympy.Basic, MatrixBase)):
        raise AnswerError("the SymPy answer is not a SymPy object")
    return value


def check_kind(value, kind: str) -> None:
    """Refuse a string anywhere inside ``value``, a dict's keys included, unless the
    exercise ``kind`` is ``interpretation``: checks of derivations and code may pass answers
    to ``sympify`` or ``lambdify``, which run a string as code, and SymPy converts a dict by
    sympifying its keys (so a dict answer is refused there: its keys are strings).

    Raises:
        AnswerError: a string or a dict in the answer to a derivation or coding exercise.
    """
    if kind == "interpretation":
        return
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            raise AnswerError("the answer is a string, and this exercise expects a "
                              "number, an array or a SymPy expression (write the "
                              "expression itself, e.g. 3*x**2, not a string)")
        if isinstance(v, dict):
            raise AnswerError("the answer is a dict, and this exercise expects a number, an "
                              "array, a SymPy expression or a list or tuple of those")
        if isinstance(v, (list, tuple)):
            stack.extend(v)

"""Export answers from a student's kernel as data (the grader's side is :mod:`.answers`).

The grader puts this file's source in the first cell of every submission it runs (which also
keeps a copy of ``_attnclust_export`` among the builtins, so that a notebook that clears its
variables, ``%reset -f``, still exports its answers), and replaces each check cell by a call
``_attnclust_export(label, occurrence, names)``. The call
encodes the current value of each name as JSON and displays it with the MIME type
``_ATTNCLUST_MIME``; the worker that runs the notebook collects these outputs. Nothing else
leaves the kernel: the checks run elsewhere, on the decoded values.

The encoding is tagged JSON (``{"t": tag, ...}``), values converted to plain ones first: a
``str`` or ``float`` subclass becomes a plain ``str`` or ``float`` (so its own ``__eq__`` or
``__sub__`` is lost), NumPy and JAX arrays of numbers become ``.npy`` bytes (base64, no
pickles), SymPy objects their ``srepr`` string; anything else is sent as ``unsupported``
with its type's name, and the grader rejects it. This code imports nothing from attnclust:
the student's kernel may have changed anything, and the grader trusts none of it.
"""

_ATTNCLUST_MIME = "application/vnd.attnclust.answer+json"
_ATTNCLUST_MAX_DEPTH = 32
_ATTNCLUST_MAX_ITEMS = 1_000_000
_ATTNCLUST_MAX_ARRAY_BYTES = 64 << 20


def _attnclust_encode(value, depth=0, counter=None):
    import base64
    import io
    import numbers
    import sys

    counter = [0] if counter is None else counter
    counter[0] += 1
    if counter[0] > _ATTNCLUST_MAX_ITEMS or depth > _ATTNCLUST_MAX_DEPTH:
        return {"t": "error", "error": "the answer is too large or too deeply nested"}
    if value is None:
        return {"t": "none"}
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(value, (sympy.Basic, sympy.MatrixBase)):
        return {"t": "sympy", "srepr": str.__str__(sympy.srepr(value))}
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic) and value.ndim == 0 \
            and value.dtype.kind in "biufc":
        value = value.item()
    if isinstance(value, bool):
        return {"t": "bool", "v": bool(value)}
    if isinstance(value, numbers.Integral):
        return {"t": "int", "v": str(int(value))}
    if isinstance(value, numbers.Real):
        return {"t": "float", "v": repr(float(value))}
    if isinstance(value, numbers.Complex):
        c = complex(value)
        return {"t": "complex", "re": repr(c.real), "im": repr(c.imag)}
    if isinstance(value, str):
        return {"t": "str", "v": str.__str__(value)}
    if isinstance(value, (list, tuple)):
        tag = "list" if isinstance(value, list) else "tuple"
        return {"t": tag, "v": [_attnclust_encode(v, depth + 1, counter)
                                for v in value]}
    if isinstance(value, dict):
        items = []
        for k, v in dict.items(value):
            if not isinstance(k, str):
                return {"t": "error", "error": "dict answers need str keys"}
            items.append([str.__str__(k), _attnclust_encode(v, depth + 1, counter)])
        return {"t": "dict", "v": items}
    if numpy is not None and (isinstance(value, numpy.ndarray)
                              or hasattr(type(value), "__array__")):
        array = numpy.asarray(value)
        if array.dtype.kind not in "biufc":
            return {"t": "unsupported", "type": f"array of dtype {array.dtype}"}
        if array.nbytes > _ATTNCLUST_MAX_ARRAY_BYTES:
            return {"t": "error", "error": f"the array is larger than {_ATTNCLUST_MAX_ARRAY_BYTES} bytes"}
        buf = io.BytesIO()
        numpy.save(buf, numpy.ascontiguousarray(array), allow_pickle=False)
        return {"t": "ndarray", "npy": base64.b64encode(buf.getvalue()).decode("ascii")}
    kind = type(value)
    return {"t": "unsupported", "type": f"{kind.__module__}.{kind.__qualname__}"}


def _attnclust_export(label, occurrence, names):
    """Display the encoded values of ``names`` (missing ones as ``missing``) for the check
    ``occurrence`` of exercise ``label``."""
    from IPython import get_ipython
    from IPython.display import display

    shell = get_ipython()
    space = shell.user_ns if shell is not None else globals()  # the notebook's variables
    values = {}
    for name in names:
        if name not in space:
            values[name] = {"t": "missing"}
            continue
        try:
            values[name] = _attnclust_encode(space[name])
        except Exception as e:  # noqa: BLE001 -- the student's object raised while read
            values[name] = {"t": "error", "error": f"{type(e).__name__}: {e}"[:300]}
    display({_ATTNCLUST_MIME: {"label": label, "occurrence": occurrence, "values": values}}, raw=True)

"""Readable type annotations on the API reference (chapters/api*.md, sphinx.ext.autodoc).

The library annotates arrays with jaxtyping (``Float[Array, "H d"]``). Left to itself,
autodoc writes such an annotation as ``Float[jaxlib._jax.Array, 'H d']``, jaxtyping's
``PRNGKeyArray`` as the union it stands for (``Key[Array, ''] | UInt32[Array, '2'] |
UInt32[Array, '4']``), and makes a cross-reference of every part, shape strings included.
None of them can resolve (the book builds offline, without intersphinx), and ``-n`` turns
each into a warning. Two fixes:

1. After autodoc has recorded a function's annotations, each is rewritten to the form of
   the source: ``Float[Array, 'H d']``, ``PRNGKeyArray``; the module aliases of
   annotations left as strings (``sp.Expr``, ``np.ndarray``) are spelled out. The
   constructor parameters of a dataclass whose docstring documents its fields under
   ``Attributes:`` (shown with their types) are not listed a second time as parameters.
2. A reference to a type of another package (a dotted name whose top-level module is
   loaded and is not attnclust: ``jax.Array``, ``sympy.Expr``, ``threading.Thread``) or to
   a jaxtyping shape string is resolved as plain text showing the last component of its
   name (``Array``, ``Expr``, ``'H d'``): no link, no warning. Any other unresolved
   reference (a typo in a docstring's :func:`...` role, a name of attnclust that the page
   does not document) still warns.

Why an extension: autodoc's options (``autodoc_typehints_format``, ``autodoc_type_aliases``)
and sphinx-autodoc-typehints still write these annotations expanded and as references that
cannot resolve offline, and ``nitpick_ignore`` only silences the warning, leaving a
reference that links nowhere on the page (which the browser checks report).
"""

from __future__ import annotations

import dataclasses
import re
import sys

from docutils import nodes

_PRNG_KEY = re.compile(
    r"~?jaxtyping\.Key\[[\w.]*Array, ''\] \| ~?jaxtyping\.UInt32\[[\w.]*Array, '2'\]"
    r" \| ~?jaxtyping\.UInt32\[[\w.]*Array, '4'\]"
)
_JAX_ARRAY = re.compile(r"\bjaxlib\._jax\.Array\b|\bjax\.Array\b")
# jaxtyping writes the array type of Float[np.ndarray, ...] by its bare name.
_BARE_NDARRAY = re.compile(r"(?<=\[)ndarray(?=, ')")
_ALIASES = {"np": "numpy", "sp": "sympy", "jnp": "jax.numpy"}
_ALIASED = re.compile(r"(?<![\w.~])(%s)\." % "|".join(_ALIASES))
_SHAPE = re.compile(r"^'[^']*'$")
# The same bare name in the attribute types that napoleon takes from a dataclass's
# annotations (``Float[ArrayLike, " S"]`` expands to ``Float[ndarray, ' S'] | ...``), which no
# autodoc event lets ``readable`` rewrite.
_BARE_EXTERNAL = {"ndarray": "numpy.ndarray"}


def readable(annotation: str) -> str:
    """The annotation as autodoc wrote it, in the form of the source."""
    annotation = _PRNG_KEY.sub("~jaxtyping.PRNGKeyArray", annotation)
    annotation = _ALIASED.sub(lambda m: f"~{_ALIASES[m.group(1)]}.", annotation)
    annotation = _BARE_NDARRAY.sub("~numpy.ndarray", annotation)
    return _JAX_ARRAY.sub("~jax.Array", annotation)


def rewrite_annotations(app, objtype, name, obj, options, args, retann) -> None:
    """Runs after sphinx.ext.autodoc.typehints.record_typehints (priority 500)."""
    annotations = app.env.temp_data.get("annotations", {})
    if (objtype == "class" and dataclasses.is_dataclass(obj)
            and "Attributes:" in (obj.__doc__ or "")):
        annotations.pop(name, None)
        return
    recorded = annotations.get(name)
    if recorded:
        for key, annotation in recorded.items():
            recorded[key] = readable(annotation)


_STARRED_SHAPE = re.compile(r"(['\"])\*")


def escape_starred_shapes(app, what, name, obj, options, lines) -> None:
    """Runs after napoleon (priority 500): the attribute types it takes from a class's
    annotations (``:vartype A: ...``, ``:type: ...``) are reStructuredText, where a variadic shape (``Float[ArrayLike, '*S d d']``)
    would open an emphasis; its star is escaped."""
    for i, line in enumerate(lines):
        if line.lstrip().startswith((":type", ":vartype")):
            lines[i] = _STARRED_SHAPE.sub(lambda m: m.group(1) + "\\*", line)


def external_as_text(app, env, node, contnode):
    """Resolve a Python reference to another package's type or a shape string as text."""
    if node.get("refdomain") != "py":
        return None
    target = _BARE_EXTERNAL.get(node.get("reftarget", ""), node.get("reftarget", ""))
    package = target.split(".", 1)[0]
    if "." in target and package != "attnclust" and package in sys.modules:
        shown = target.rsplit(".", 1)[-1]
    elif _SHAPE.match(target):
        shown = target
    else:
        return None
    if isinstance(contnode, nodes.Text):
        return nodes.Text(shown)
    text = contnode.deepcopy()
    text.children = [nodes.Text(shown)]
    # not a cross-reference any more: the browser checks report an unlinked .xref
    text["classes"] = [c for c in text["classes"] if c != "xref" and not c.startswith("py")]
    return text


def setup(app):
    app.connect("autodoc-process-signature", rewrite_annotations, priority=600)
    app.connect("missing-reference", external_as_text)
    app.connect("autodoc-process-docstring", escape_starred_shapes, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

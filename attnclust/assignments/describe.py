"""What a check verifies, in words: the line a student edition shows instead of a hidden check.

A check cell's code holds the expected value, which the student edition with hidden checks
must not show; what it may show is the answer's expected *form* and the check's *tolerance*.
:func:`describe_check` derives both, so that no check says only "against the chapter's own
computation":

- **what to store**, from the exercise's statement (its sentence ``Store ... in `ex_...```,
  :func:`stored_object`), or, where the statement says only "your answer", from the kind
  (a SymPy expression for a derivation, an option's letter for a multiple-choice question);
- **how it is compared**, from the check's code (:mod:`ast`, never run): a tuple unpacked
  into its parts, a length, a shape, a letter compared without case, spaces or parentheses,
  a SymPy expression evaluated at fixed values of the symbols it names (which are listed:
  the answer must use those names) or compared symbolically, a function of named symbols,
  and the tolerance: a literal ``abs(...) < 1e-6`` or ``allclose(..., atol=1e-4)`` is
  quoted, a computed one is called so (a multiple of a measured error, a range).

The author's ``# verifies:`` words, where a check has them, come first. The expected value
itself (a literal the answer is compared with, a message's text) is never part of the line.
"""

from __future__ import annotations

import ast
import re

from .source import Exercise, check_description

__all__ = ["describe_check", "stored_object", "GENERIC_WORDS"]

GENERIC_WORDS = "against the chapter's own computation"
"""The words of the general line that no check of the book may show any more (a test reads
it)."""

_STORE = re.compile(r"\bStore\s+(?P<what>.+?)\s+in\s+`(?P<var>ex_\w+)`", re.S | re.I)
_VAGUE = re.compile(r"^(?:your answer|it|the answer|the result|them)$", re.I)
_YOURS = re.compile(r"^your answer\s*\((?P<what>.+)\)$", re.I)
_DOLLARS = re.compile(r"\$([^$]+)\$")


def stored_object(statement: str, variable: str) -> str | None:
    """What ``statement`` asks to store in the answer ``variable`` (``the pair
    `(eigenvalue, letter)```), from its sentence ``Store <what> in `ex_...```; ``None`` where
    there is none, or it says only "your answer" or "it"."""
    for m in _STORE.finditer(statement):
        if m["var"] == variable:
            what = _DOLLARS.sub(r"\1", " ".join(m["what"].split())).rstrip(",;")
            if (yours := _YOURS.match(what)):
                what = yours["what"]
            return None if _VAGUE.match(what) else what
    return None


def asks_for_letter_only(ex: Exercise) -> bool:
    """Whether a multiple-choice question's statement asks for an option's letter alone (or
    says only "your answer"), rather than something else, such as a pair of a computed value
    and a letter."""
    what = stored_object(ex.statement, ex.variable)
    return what is None or bool(re.fullmatch(r"(?:the|an option's|its)\s+letter(?:\s*\(a string\))?",
                                             what, re.I))


_KIND_OBJECT = {
    "derivation": "a SymPy expression",
    "coding": "a number or an array",
    "interpretation": "an option's letter, a string such as \"a\"",
    "open question": "the values the exercise asks for",
}


def _num(node: ast.AST) -> float | None:
    """The value of a numeric literal (``1e-6``, ``-3``), else ``None``."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _public(node: ast.AST) -> str | None:
    """``node`` as code, if it names nothing private to the check (no ``_name``)."""
    if any(isinstance(n, ast.Name) and n.id.startswith("_") for n in ast.walk(node)):
        return None
    return ast.unparse(node)


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _keys(node: ast.AST) -> list[str]:
    """The string keys of a dict literal."""
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def _tolerance(bound: ast.AST, entrywise: bool) -> str:
    """The words for a comparison ``abs(answer - expected) < bound`` (``entrywise``: the
    largest entry of an array's difference): a literal bound quoted, a multiple of a
    computed error, or a computed tolerance."""
    each = "each entry " if entrywise else ""
    tol = _num(bound)
    if tol is not None:
        return f"{each}to within {tol:g}" + ("" if entrywise else " (absolute error)")
    if isinstance(bound, ast.BinOp) and (factor := _num(bound.left)) is not None:
        return f"{each}to within {factor:g} times a statistical error the check measures"
    return f"{each}to within a tolerance the check computes"


def _facts(source: str, variable: str) -> list[str]:
    """How the check compares the answer, in words, in the order found."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    facts: list[tuple[int, str]] = []

    def add(text: str) -> None:
        if text not in (f for _, f in facts):
            facts.append((_rank(text), text))

    answer = {variable}  # the names that hold the answer or one of its parts
    dicts: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                # a dict literal, or a comprehension that picks from one ({s: {...}[s.name]})
                inner = [k for n in ast.walk(node.value) if isinstance(n, ast.Subscript)
                         for k in _keys(n.value)]
                if _keys(node.value) or inner:
                    dicts[target.id] = _keys(node.value) or inner
            if (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Name)
                    and node.value.id == variable):
                add(f"a tuple of {len(target.elts)} parts, unpacked in order")
                answer |= {e.id for e in target.elts if isinstance(e, ast.Name)}
            elif isinstance(target, ast.Name) and _reads(node.value, answer):
                answer.add(target.id)  # e.g. _e = sp.sympify(ex_...)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name.endswith("sympify") and _reads(node, answer):
                add("read as a SymPy expression")
            elif name.endswith("Matrix") and _reads(node, answer):
                add("read as a SymPy Matrix")
            elif name.endswith("lambdify") and node.args:
                names = [n.value for n in ast.walk(node.args[0])
                         if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                if names:
                    add("evaluated as a function of the symbols "
                        + ", ".join(dict.fromkeys(names)))
            elif name.endswith(".subs") and _reads(node, answer):
                for n in ast.walk(node):
                    if isinstance(n, ast.Name) and n.id in dicts:
                        add("evaluated at fixed values of its symbols, which must be among "
                            + ", ".join(dicts[n.id]))
                    elif isinstance(n, ast.Subscript) and (
                            keys := _keys(n.value) or (dicts.get(n.value.id, []) if
                                                       isinstance(n.value, ast.Name) else [])):
                        add("evaluated at fixed values of its symbols, which must be among "
                            + ", ".join(keys))
            elif name.endswith("allclose") and _reads(node, answer):
                atol = next((_num(k.value) for k in node.keywords if k.arg == "atol"), None)
                add(f"each entry to within {atol:g}" if atol is not None else
                    "each entry close to the expected one")
            elif name == "len" and _reads(node, answer):
                pass  # a length: read from the comparison below
            elif name.endswith("simplify") and _reads(node, answer):
                add("compared symbolically (the simplified difference must be 0)")
        elif isinstance(node, ast.Compare):
            left, ops, rights = node.left, node.ops, node.comparators
            if not (_reads(left, answer) or any(_reads(r, answer) for r in rights)):
                continue
            text = ast.unparse(left)
            if ".lower()" in text and isinstance(ops[0], ast.Eq):
                add("compared as a letter, ignoring case and spaces"
                    + (" and parentheses" if "strip('()')" in text else ""))
                continue
            if isinstance(left, ast.Call) and ast.unparse(left.func) == "len":
                n = _num(rights[0])
                if n is not None:
                    add(f"of length {n:g}")
                continue
            if "shape" in text and isinstance(ops[0], ast.Eq):
                shape = _public(rights[0])
                if shape is not None:
                    add(f"of shape {shape}")
                continue
            entrywise = (isinstance(left, ast.Call) and ast.unparse(left.func).endswith(".max")
                         and "abs" in text)
            if entrywise or (isinstance(left, ast.Call)
                             and ast.unparse(left.func) in ("abs", "np.abs")):
                add(_tolerance(rights[0], entrywise))
                continue
            if len(ops) == 2 and all(isinstance(o, (ast.Lt, ast.LtE)) for o in ops):
                add("a number inside a range the check computes (strict bounds)")
    return [f for _, f in sorted(facts, key=lambda rf: rf[0])]


_ORDER = ("a tuple", "of length", "of shape", "read as", "evaluated", "compared", "a number",
          "each entry", "to within")


def _rank(text: str) -> int:
    """The place of a fact in the line: the answer's structure, how it is read, how it is
    compared, the tolerance."""
    return next((i for i, start in enumerate(_ORDER) if text.startswith(start)), len(_ORDER))


def describe_check(source: str, variable: str, number: int, kind: str = "",
                   statement: str = "") -> str:
    """One line: what the check cell ``source`` of exercise ``number`` (its answer
    ``variable``, its ``kind`` and ``statement``) verifies: the author's ``# verifies:``
    words first, then what to store and how it is compared, without the expected value. See
    the module docstring."""
    own = check_description(source).rstrip(".")
    what = (stored_object(statement, variable)
            or _KIND_OBJECT.get(kind, "the answer the exercise asks for"))
    facts = _facts(source, variable)
    if kind == "open question":  # a worked answer: checked on what any right one satisfies
        facts = [f for f in facts if f.startswith(("a tuple", "read as"))] + [
            "checked on the conditions the statement sets (any answer that meets them "
            "passes), not against one expected value"]
    line = f"`{variable}` holds {what}"
    if facts:
        line += "; " + "; ".join(facts)
    line += f" (exercise {number})"
    return f"{own}: {line}" if own else line

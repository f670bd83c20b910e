"""Text a submission controls, made safe for where the grader writes it.

A student's notebook decides the bytes of its file name, its cells' output and the messages
of its errors, and some of them reach the grader's terminal, its CSV and its UTF-8 files:

* :func:`utf8`: lone surrogates (what Python makes of bytes that are not UTF-8, in a file
  name or a kernel's message) become ``\\udcxx`` escapes, so that writing UTF-8 cannot fail;
* :func:`printable`: control characters (newlines, terminal escape sequences, bidirectional
  overrides) become escapes, so that one name is one line of the grader's output and cannot
  move its cursor or forge another line;
* :func:`csv_cell`: a cell that a spreadsheet would read as a formula (starting with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return) is prefixed with ``'``, which spreadsheets
  show as text (the OWASP advice on CSV injection);
* :func:`file_name`: a file name as text, decoded as UTF-8 or, failing that, as Latin-1
  (what a Windows machine's zip tool writes), so that ``jos\\xe9.ipynb`` is ``josé``.
"""

from __future__ import annotations

import os

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a CSV cell as a formula."""


def utf8(text: object) -> str:
    """``str(text)`` with every lone surrogate written as a backslash escape."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def printable(text: object) -> str:
    """``text`` on one line with no control characters: each character Python does not call
    printable (but the space) written as its escape, e.g. ``\\n``, ``\\x1b``, ``\\u202e``."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in utf8(text))


def csv_cell(text: object) -> str:
    """``text`` as a CSV cell no spreadsheet runs: UTF-8-safe, with a leading ``'`` when it
    starts like a formula."""
    text = utf8(text)
    return "'" + text if text.startswith(FORMULA_START) else text


def file_name(name: str) -> str:
    """A file name (as ``os.listdir`` gives it) as text: its bytes decoded as UTF-8, else as
    Latin-1."""
    raw = os.fsencode(name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")

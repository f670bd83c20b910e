"""Committed results files: experiments too large to run at build time, kept in the repository
with the command, commit and date that produced them, and checked for freshness.

A chapter shows the longer-budget or full-size version of an experiment either by computing it
at build time (when it fits the book's CPU budget) or by reading a results file of
the folder ``attnclust/book/results/``, written by the command that the file records::

    python -m attnclust experiment NAME --size full        # writes attnclust/book/results/NAME.json

``save`` writes the data with its provenance (the command, the git commit and whether the
package's code was clean, the UTC date, the machine, and a hash of the library sources the
experiment depends on, docstrings and comments left out); ``load`` reads it back and
``Stored.stale`` says whether the code of those sources changed since (then the file must be regenerated: the tests fail on a stale file).
Data are JSON: numbers, strings, lists and dicts (NumPy arrays as nested lists).
"""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import json
import platform
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnclust import _validate as v
from attnclust.book._json import to_json

__all__ = ["RESULTS_DIR", "Stored", "code_of", "directory", "load", "save", "sources_hash", "use_directory"]

RESULTS_DIR = Path(__file__).resolve().parent
"""The folder of the committed results files: this package's own folder, installed with it
as package data, so that ``load`` works from a clone and from ``pip install`` alike."""
SOURCE_ROOT = RESULTS_DIR.parents[2]
"""The folder that holds the ``attnclust`` package (the repository's root in a clone,
``site-packages`` in an installed copy): results files name their sources relative to it."""


def _without_docs(text: str) -> ast.Module:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]
    return tree


def code_of(text: str, rel: str) -> bytes:
    """What of a source file an experiment's result depends on: for Python, its syntax tree
    without docstrings (or any other bare string statement) and comments, so that editing
    the documentation leaves a results file fresh; for other files, the bytes."""
    if not rel.endswith(".py"):
        return text.encode()
    return ast.dump(_without_docs(text), include_attributes=False).encode()


def sources_hash(sources: Sequence[str]) -> str:
    """sha256 over the code of ``sources`` (paths relative to the repository root, e.g.
    ``"attnclust/book/experiments/training.py"``; :func:`code_of`), in the order given."""
    h = hashlib.sha256()
    for rel in sources:
        path = SOURCE_ROOT / rel
        if not path.is_file():
            raise ValueError(f"sources must be files of the repository, got {rel!r} (no such file)")
        h.update(rel.encode())
        h.update(b"\0")
        h.update(code_of(path.read_text(encoding="utf-8"), rel))
        h.update(b"\0")
    return h.hexdigest()


_CODE = ("attnclust", ":(exclude)attnclust/book/results/*.json")
"""The paths whose uncommitted changes make a new results file not ``clean``."""


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=SOURCE_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _restore(value: Any) -> Any:
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, list):
        return [_restore(x) for x in value]
    if isinstance(value, dict):
        return {k: _restore(x) for k, x in value.items()}
    return value


@dataclass(frozen=True)
class Stored:
    """A results file read back.

    Attributes:
        name: the file's name (``attnclust/book/results/<name>.json``).
        data: the experiment's data (JSON types; non-finite numbers restored as floats).
        command: the command that wrote it.
        commit: the git commit it was run at (None outside a git checkout).
        clean: whether the package's code had no uncommitted change then (results files
            aside, so that one experiment's new file does not mark the next one's).
        date: the UTC date and time it was written, ISO 8601.
        machine: a short description of the machine.
        sources: the library files the experiment depends on.
        sources_hash: their hash when it was written.
    """

    name: str
    data: dict
    command: str
    commit: str | None
    clean: bool | None
    date: str
    machine: str
    sources: tuple[str, ...]
    sources_hash: str

    @property
    def stale(self) -> bool:
        """True when a source file changed since the file was written (regenerate it)."""
        try:
            return sources_hash(self.sources) != self.sources_hash
        except ValueError:  # a source file was removed or renamed
            return True

    def provenance(self) -> str:
        """One line for a chapter: "``command`` at commit abc1234 on 2026-12-01 (machine)"."""
        commit = (self.commit or "unknown")[:7] + ("" if self.clean or self.clean is None else "+changes")
        return f"`{self.command}` at commit {commit} on {self.date[:10]} ({self.machine})"


_directory: Path | None = None


def use_directory(folder: Path | str | None) -> None:
    """Read and write results files in ``folder`` instead of ``RESULTS_DIR`` when no call
    names its own (None: back to ``RESULTS_DIR``). The replication build
    (``scripts/replicate.py``) points the chapters at the files it wrote under another
    master seed; the book's own build never calls it.

    Raises:
        ValueError: ``folder`` is not an existing folder.
    """
    global _directory
    if folder is not None and not Path(folder).is_dir():
        raise ValueError(f"folder must be an existing folder of results files, got {folder!r}")
    _directory = None if folder is None else Path(folder)


def directory() -> Path:
    """The folder results files are read from and written to by default (``use_directory``)."""
    return RESULTS_DIR if _directory is None else _directory


def _path(name: str, folder: Path | None) -> Path:
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"name must be letters, digits, '-' or '_', got name={name!r}")
    return (directory() if folder is None else Path(folder)) / f"{name}.json"


def save(
    name: str,
    data: Mapping[str, Any],
    *,
    command: str,
    sources: Sequence[str],
    directory: Path | None = None,
) -> Path:
    """Write ``data`` to ``attnclust/book/results/<name>.json`` with its provenance.

    Args:
        name: the file's name: letters, digits, '-' or '_'.
        data: the experiment's data (numbers, strings, lists, dicts, NumPy arrays).
        command: the command a reader runs to regenerate the file.
        sources: the library files (relative to the repository root) whose change makes the
            file stale: at least the module holding the experiment.
        directory: another folder (tests); ``RESULTS_DIR`` by default.

    Returns:
        The path written.
    """
    path = _path(name, directory)
    v.instance("command", command, str)
    if not sources:
        raise ValueError("sources must name at least the module that computes the experiment")
    record = {
        "name": name,
        "command": command,
        "commit": _git("rev-parse", "HEAD"),
        "clean": None if _git("rev-parse", "HEAD") is None else _git("status", "--porcelain", "--", *_CODE) == "",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {_cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}",
        "sources": list(sources),
        "sources_hash": sources_hash(sources),
        "data": to_json("data", dict(data)),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)
    return path


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 1


def load(name: str, *, directory: Path | None = None) -> Stored:
    """Read ``attnclust/book/results/<name>.json`` back (see ``save``).

    Raises:
        FileNotFoundError: no such file, with the message saying how to make it.
        ValueError: the file is not a results file.
    """
    path = _path(name, directory)
    if not path.is_file():
        raise FileNotFoundError(f"no results file {path}: run the command that writes it "
                                f"(python -m attnclust experiment {name} --size full)")
    record = json.loads(path.read_text())
    missing = {"command", "date", "sources", "sources_hash", "data"} - set(record)
    if missing:
        raise ValueError(f"{path} is not a results file: it lacks {sorted(missing)}")
    return Stored(name, _restore(record["data"]), record["command"], record.get("commit"),
                  record.get("clean"), record["date"], record.get("machine", ""),
                  tuple(record["sources"]), record["sources_hash"])

"""The replication build: every claim's evidence computed again under another master seed
(page "Claims and evidence", section "Under other seeds"; ``make replicate SEED=N``).

The book's build checks each claim once, under the book's seed: a claim whose verdict
changes fails the build, so every built book shows the verdicts its prose was written for.
That makes the ledger a regression test on one realisation of every random draw. The
replication build asks the other question, whether a claim survives another realisation:

1. every committed experiment is run again at the book's size under the master seed ``N``
   (``python -m attnclust experiment NAME --seed N --out DIR``; ``attnclust.book.seeds``
   re-keys every stream), into a folder of its own;
2. every chapter that states claims is executed again, in a fresh kernel, under the same
   master seed and reading those results files, with ``claims.record_to`` in force: each
   claim records the verdict its evidence gives under ``N`` instead of failing the cell;
3. the report (:func:`report`) lists, per claim, that verdict, whether it is one the prose is
   written for, and the cells that failed; ``replications/seed-N.json`` is committed, and the
   Claims page shows each claim's verdict under every committed seed beside the book's.

A claim that *flips* (its verdict under ``N`` is not one of its ``expect``) is a claim whose
sentence says more than one realisation of the draws supports: it is made robust (more
seeds, an interval instead of a count) or reworded to what holds.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnclust import _validate as v

__all__ = ["CellError", "ChapterRun", "REPORT_DIR", "flips", "load_reports", "report", "run_chapter", "setup_source"]

REPORT_DIR = "replications"
"""The folder, relative to the repository's root, of the committed reports ``seed-N.json``."""


def setup_source(seed: int, results_dir: Path | str, claims_log: Path | str) -> str:
    """The code run in a chapter's kernel before its first cell: the master seed installed,
    the results files read from ``results_dir``, every claim recorded to ``claims_log``."""
    return (
        "from attnclust.book import claims as _claims, results as _results, seeds as _seeds\n"
        f"_seeds.install({int(seed)})\n"
        f"_results.use_directory({str(results_dir)!r})\n"
        f"_claims.record_to({str(claims_log)!r})\n"
    )


@dataclass(frozen=True)
class CellError:
    """A code cell of a chapter that raised under the replication's seed (``cell``: its
    number among the chapter's code cells, from 1)."""

    chapter: str
    cell: int
    error: str
    source: str


@dataclass(frozen=True)
class ChapterRun:
    """One chapter executed under a master seed: its failing cells and its wall seconds."""

    chapter: str
    errors: tuple[CellError, ...]
    seconds: float


def run_chapter(path: Path | str, setup: str, *, timeout: int = 3600) -> ChapterRun:
    """Execute the MyST chapter ``path`` in a fresh kernel (its folder as the working
    folder, this process's environment), ``setup`` first; every cell runs even after one
    fails.

    Raises:
        FileNotFoundError: no such chapter.
    """
    import time

    import jupytext
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no chapter {path}")
    nb = jupytext.read(path)
    nb.cells.insert(0, nbformat.v4.new_code_cell(setup))
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    errors = []
    code = [c for c in nb.cells[1:] if c.cell_type == "code"]
    for i, cell in enumerate(code, start=1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                first = next((line for line in cell.source.splitlines() if line.strip()), "")
                errors.append(CellError(path.stem, i, f"{out['ename']}: {out['evalue']}"[:500], first[:200]))
    return ChapterRun(path.stem, tuple(errors), seconds)


def report(seed: int, claims_log: Path | str, runs: Sequence[ChapterRun], *, expected_ids: Sequence[str],
           experiments: dict[str, dict], commit: str | None, clean: bool | None) -> dict:
    """The replication report under the master seed ``seed``: per claim (in the order they
    were recorded) its verdict, the detail, the verdicts its prose is written for and whether
    it flipped; the claims of ``expected_ids`` that no cell recorded (a cell before them
    failed); each chapter's failing cells and seconds; the experiments' provenance."""
    seed = v.positive_int("seed", seed, minimum=0)
    records = [json.loads(line) for line in Path(claims_log).read_text(encoding="utf-8").splitlines() if line.strip()]
    seen, rows = set(), []
    for r in records:
        if r["id"] in seen:
            continue
        seen.add(r["id"])
        rows.append({"id": r["id"], "verdict": r["verdict"], "detail": r["detail"], "expect": r["expect"],
                     "flipped": r["verdict"] not in r["expect"], "sentence": r["sentence"], "evidence": r["evidence"]})
    return {
        "seed": seed,
        "commit": commit, "clean": clean,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "experiments": experiments,
        "chapters": [{"chapter": c.chapter, "seconds": round(c.seconds, 1),
                      "errors": [e.__dict__ for e in c.errors]} for c in runs],
        "claims": rows,
        "not_recorded": [i for i in expected_ids if i not in seen],
        "counts": {"claims": len(rows), "flipped": sum(r["flipped"] for r in rows),
                   "not_recorded": sum(i not in seen for i in expected_ids),
                   "cell_errors": sum(len(c.errors) for c in runs)},
    }


def flips(rep: dict) -> list[dict]:
    """The claims of a report whose verdict is not one their prose is written for."""
    return [r for r in rep["claims"] if r["flipped"]]


def load_reports(root: Path | str, *, on_bad: Callable[[str], None] | None = None) -> list[dict]:
    """The committed reports ``<root>/replications/seed-N.json``, by seed."""
    out = []
    for path in sorted((Path(root) / REPORT_DIR).glob("seed-*.json")):
        try:
            rep = json.loads(path.read_text(encoding="utf-8"))
            rep["seed"], rep["claims"]
        except (ValueError, KeyError) as e:
            if on_bad is not None:
                on_bad(f"{path}: not a replication report ({e})")
            continue
        out.append(rep)
    return sorted(out, key=lambda r: r["seed"])

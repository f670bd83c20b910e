"""Grade a folder of submitted notebooks against a chapter's checks; write a CSV.

For each submission:

1. **Prepare.** Outputs are cleared. Every check cell of the submission (tagged ``check`` or
   starting with ``# check <label> points=N``) gets back the authoritative source of that
   check, read from the chapter (a student may have edited or deleted it); checks that the
   submission lost are appended at the end; a check cell of an unknown label is dropped.
2. **Execute** in a fresh Jupyter kernel (nbclient), in a separate process, with
   ``allow_errors``: a cell that raises does not stop the next ones, so an exercise that
   raises costs only its own points. A cell that runs longer than ``cell_timeout`` is
   interrupted and execution goes on; the whole notebook gets ``timeout`` seconds, after
   which the kernel and the process are killed. Checks that ran before are kept; those that
   had not run get 0 points, with feedback saying so.
3. **Score.** An exercise gets its points when all of its checks ran without error, else 0;
   the feedback is the check's assertion message (which names the exercise and what was
   expected), or the error that stopped the check.

No Docker, no database: everything runs as the current user on the current machine, with the
Python environment of the grader (so the kernel sees attnclust). This is not a sandbox;
grade only notebooks you are willing to run.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .source import check_header

__all__ = ["ExerciseGrade", "discover_submissions", "grade_notebook", "grade_submissions",
           "prepare_submission", "unanswered", "write_csv"]

WORKER = Path(__file__).with_name("_worker.py")
CSV_FIELDS = ["student", "exercise", "points", "max_points", "feedback"]


@dataclass
class ExerciseGrade:
    """One row of the grades CSV."""

    student: str
    exercise: str
    points: float
    max_points: float
    feedback: str

    def row(self) -> dict:
        return {"student": self.student, "exercise": self.exercise,
                "points": _fmt(self.points), "max_points": _fmt(self.max_points),
                "feedback": self.feedback}


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def prepare_submission(nb: nbformat.NotebookNode, material: dict) -> nbformat.NotebookNode:
    """The notebook that is executed: outputs cleared, authoritative checks in place.

    Each check cell is matched to the chapter's checks by the label on its first line (or by
    the ``attnclust.check`` cell metadata the editions write), in order when an exercise has
    several checks.
    """
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    checks = {e["label"]: list(e["checks"]) for e in material["exercises"]}
    placed: dict[str, int] = {label: 0 for label in checks}
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            header = check_header(cell.source)
            meta_label = cell.metadata.get("attnclust", {}).get("check")
            label = header[0] if header else meta_label
            if label is not None or "check" in cell.metadata.get("tags", []):
                if label in checks and placed[label] < len(checks[label]):
                    cell.source = checks[label][placed[label]]
                    placed[label] += 1
                    cell.metadata["attnclust"] = {"check": label}
                    cells.append(cell)
                continue  # unknown, duplicate or unlabelled check cell: dropped
        cells.append(cell)
    for label, sources in checks.items():
        for src in sources[placed[label]:]:
            cell = nbformat.v4.new_code_cell(src)
            cell.metadata["tags"] = ["check"]
            cell.metadata["attnclust"] = {"check": label}
            cells.append(cell)
    nb.cells = cells
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                 "name": "python3"}
    return nb


def unanswered(nb: nbformat.NotebookNode, material: dict) -> set[str]:
    """Labels whose starter cell is unchanged and whose variable no other cell assigns."""
    import re

    from .editions import STARTER_MARK

    sources = [c.source for c in nb.cells if c.cell_type == "code"
               and not check_header(c.source)]
    labels = set()
    for ex in material["exercises"]:
        var = ex["variable"]
        starter = f"{var} = None  {STARTER_MARK}"
        assign = re.compile(rf"^\s*{re.escape(var)}\s*[:+\-*/]?=", re.M)
        others = [s for s in sources if s.strip() != starter and assign.search(s)]
        if any(s.strip() == starter for s in sources) and not others:
            labels.add(ex["label"])
    return labels


def _kill_group(pid: int | None) -> None:
    if not pid:
        return
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError, OSError):
            continue


def _run_worker(nb: nbformat.NotebookNode, workdir: Path, timeout: float,
                cell_timeout: float, executed: Path | None) -> tuple[list[dict], bool, float]:
    """Execute ``nb`` in a worker process; return (events, timed_out, seconds)."""
    nb_path = workdir / "submission.ipynb"
    results = workdir / "results.jsonl"
    log = workdir / "worker.log"
    nbformat.write(nb, nb_path)
    argv = [sys.executable, str(WORKER), str(nb_path), str(results), str(cell_timeout)]
    if executed is not None:
        argv.append(str(executed))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    t0 = time.monotonic()
    timed_out = False
    with open(log, "w") as logf:
        proc = subprocess.Popen(argv, cwd=workdir, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            events = _read_events(results)
            kernel_pid = next((e.get("pid") for e in events if e["event"] == "kernel"), None)
            if proc.poll() is None:  # over the time limit, or the grader was interrupted
                _kill_group(kernel_pid)
                _kill_group(proc.pid)
            proc.wait()
    return _read_events(results), timed_out, time.monotonic() - t0


def _read_events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line cut short by the kill
    return events


def _check_feedback(label: str, event: dict) -> str:
    ename, evalue = event.get("ename", ""), (event.get("evalue") or "").strip()
    if ename == "AssertionError":
        msg = evalue or "the check failed"
        return msg if label in msg else f"{label}: {msg}"
    if ename == "NameError":
        return f"{label}: no answer ({evalue})"
    if ename == "CellTimeoutError":
        return f"{label}: the check was interrupted ({evalue})"
    return f"{label}: the check raised {ename}: {evalue}"


def _errors_before(events: list[dict], index: int) -> str:
    """The first error of a non-check cell between the previous check and cell ``index``."""
    start = max((e["index"] for e in events if e["event"] == "check" and e["index"] < index),
                default=-1)
    for e in events:
        if e["event"] == "error" and start < e["index"] < index:
            return f"{e['ename']}: {e['evalue']}".strip()
    return ""


def grade_notebook(nb: nbformat.NotebookNode, material: dict, *, student: str = "",
                   timeout: float = 600.0, cell_timeout: float | None = None,
                   executed: str | Path | None = None) -> list[ExerciseGrade]:
    """Grade one notebook: one :class:`ExerciseGrade` per exercise of ``material``.

    ``timeout`` (s) limits the whole notebook, ``cell_timeout`` (s, default ``timeout``) each
    cell. ``executed``: where to save the executed notebook (outputs and errors), if given.
    """
    cell_timeout = timeout if cell_timeout is None else min(cell_timeout, timeout)
    prepared = prepare_submission(nb, material)
    blank = unanswered(prepared, material)
    with tempfile.TemporaryDirectory(prefix="attnclust-grade-") as tmp:
        events, timed_out, seconds = _run_worker(
            prepared, Path(tmp), timeout, cell_timeout,
            Path(executed).resolve() if executed else None)
    check_events: dict[str, list[dict]] = {}
    for e in events:
        if e["event"] == "check":
            check_events.setdefault(e["label"], []).append(e)
    dead = next((e["error"] for e in events if e["event"] == "dead"), None)
    grades = []
    for ex in material["exercises"]:
        label, n_checks = ex["label"], len(ex["checks"])
        ran = check_events.get(label, [])
        failed = [e for e in ran if e["status"] != "ok"]
        if failed and label in blank:
            points, feedback = 0.0, f"{label}: not answered (the starter cell is unchanged)"
        elif failed:
            points, feedback = 0.0, _check_feedback(label, failed[0])
            earlier = _errors_before(events, failed[0]["index"])
            if earlier and failed[0].get("ename") != "AssertionError":
                feedback += f"; an earlier cell raised {earlier}"
        elif len(ran) < n_checks:
            points = 0.0
            if timed_out:
                feedback = (f"{label}: not graded, the notebook did not reach this check "
                            f"within the time limit of {timeout:g} s")
            elif dead:
                feedback = f"{label}: not graded, execution stopped before this check ({dead})"
            else:
                feedback = f"{label}: not graded, the check did not run"
        else:
            points, feedback = float(ex["points"]), "passed"
        grades.append(ExerciseGrade(student, label, points, float(ex["points"]), feedback))
    return grades


def discover_submissions(folder: str | Path, chapter: str) -> dict[str, Path]:
    """Map student name -> notebook for a folder of submissions.

    Accepted layouts (mixed freely):

    * ``folder/<student>__<chapter>.ipynb`` (two underscores): student ``<student>``;
      files named after another chapter are ignored;
    * ``folder/<student>.ipynb``: student ``<student>``;
    * ``folder/<student>/<chapter>.ipynb``, or a folder with exactly one notebook in it:
      student ``<student>``.

    Jupyter checkpoints and hidden files are ignored.
    """
    folder = Path(folder)
    found: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        if p.name.startswith((".", "_")):
            continue
        if p.is_file() and p.suffix == ".ipynb":
            if "__" in p.stem:
                student, _, chap = p.stem.partition("__")
                if chap != chapter:
                    continue
            else:
                student = p.stem
            found[student] = p
        elif p.is_dir():
            exact = p / f"{chapter}.ipynb"
            nbs = [q for q in sorted(p.glob("*.ipynb")) if not q.name.startswith(".")]
            if exact.exists():
                found[p.name] = exact
            elif len(nbs) == 1:
                found[p.name] = nbs[0]
    return found


def grade_submissions(folder: str | Path, material: dict, *, timeout: float = 600.0,
                      cell_timeout: float | None = None, jobs: int = 1,
                      executed_dir: str | Path | None = None) -> list[ExerciseGrade]:
    """Grade every submission of ``folder`` (see :func:`discover_submissions`).

    A notebook that cannot be read gets 0 on every exercise with the reason as feedback.
    ``jobs`` notebooks are graded at a time. ``executed_dir``: where to save each executed
    notebook (``<student>.ipynb``), to look at the errors.
    """
    subs = discover_submissions(folder, material["chapter"])
    if executed_dir is not None:
        Path(executed_dir).mkdir(parents=True, exist_ok=True)

    def one(item: tuple[str, Path]) -> list[ExerciseGrade]:
        student, path = item
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as e:  # noqa: BLE001 -- an unreadable file is graded 0, not fatal
            return [ExerciseGrade(student, ex["label"], 0.0, float(ex["points"]),
                                  f"{ex['label']}: the notebook could not be read "
                                  f"({type(e).__name__}: {e})")
                    for ex in material["exercises"]]
        executed = Path(executed_dir) / f"{student}.ipynb" if executed_dir else None
        return grade_notebook(nb, material, student=student, timeout=timeout,
                              cell_timeout=cell_timeout, executed=executed)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, subs.items()))
    return [g for r in results for g in r]


def write_csv(grades: list[ExerciseGrade], path: str | Path) -> Path:
    """Write the grades as CSV with columns student, exercise, points, max_points, feedback."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for g in grades:
            w.writerow(g.row())
    return path

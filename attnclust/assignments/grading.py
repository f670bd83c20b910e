"""Grade a folder of submitted notebooks against a chapter's checks; write a CSV.

For each submission:

1. **Prepare.** The notebook is read whatever its shape (a notebook that cannot be read, or
   is not a notebook, gets 0 on every exercise with the reason). Its cells are rebuilt
   clean (outputs and metadata dropped); every check cell (tagged ``check`` or starting
   with ``# check <label> points=N``) becomes an *export cell* that hands the answer
   variables the check reads to the grader, as data (``_export.py``); checks that the
   submission lost get an export cell at the end; a check cell of an unknown label is
   dropped.
2. **Execute** in a sandbox (:mod:`.sandbox`: no network, no view of the course material,
   the solutions, the other submissions or the grader, an unprivileged user, resource
   limits, every process killed at the end), in a fresh Jupyter kernel (nbclient), with
   ``allow_errors``: a cell that raises does not stop the next ones. A cell that runs longer
   than ``cell_timeout`` is interrupted and execution goes on; the whole notebook gets
   ``timeout`` seconds, after which the sandbox is killed. Answers exported before are kept.
3. **Check.** Once every submission has run, one trusted checker process (:mod:`._checker`,
   itself sandboxed) runs the chapter's own narrative code from the autograder material and,
   at each check, the check's source on each student's decoded answers
   (:mod:`.answers`: plain numbers, strings, arrays, SymPy objects; no pickles, no code).
   Nothing a submission does to builtins, modules or IPython reaches the checks.
4. **Score.** An exercise gets its points when all of its checks passed, else 0; the
   feedback is the check's assertion message (which names the exercise and what was
   expected), or why the check could not run. Each written part of an exercise (its
   rubric's, :mod:`.source`) gets a row of its own, 0 of its points, which the instructor
   fills in. With ``--executed``, each executed notebook
   is saved without the grader's cells, each check cell showing the verdict the student
   edition would print there (correct, not right yet with the hint, not answered yet).

Where no sandbox can be made (:func:`.sandbox.probe`), grading stops and says why, unless
``unsafe=True`` (``--unsafe``): the notebooks then run as the grader's user, seeing what it
sees; the checks still run outside their kernels.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import sandbox
from ._export import _ATTNCLUST_MIME as MIME
from ._text import printable, utf8
from .answers import MAX_ARRAY_BYTES, MAX_ARRAY_TEXT, MAX_ITEMS, MAX_JSON_DEPTH, MAX_STRING, json_depth
from .editions import COULD_NOT_RUN, CORRECT, NOT_ANSWERED, NOT_RIGHT
from .gradebook import ExerciseGrade, Gradebook, atomic_write
from .source import UNGRADED_KINDS, check_header
from .submissions import (GradingError, Submissions, discover_submissions, file_digest,
                          read_submission)

__all__ = ["check_output_path", "grade_notebook", "grade_notebooks", "grade_submissions",
           "prepare_submission", "require_sandbox", "unanswered", "ungraded_feedback",
           "validate_material"]

WORKER = Path(__file__).with_name("_worker.py")
_EXPORTER = Path(__file__).with_name("_export.py").read_text()
EXPORT_SOURCE = (
    _EXPORTER
    + "\n\n# a copy among the builtins: found by the export cells after %reset clears the names\n"
    + f"_attnclust_ns = {{}}\nexec({_EXPORTER!r}, _attnclust_ns)\n"
    + "__import__('builtins')._attnclust_export = _attnclust_ns['_attnclust_export']\n"
    + "del _attnclust_ns\n")
"""The first cell of every submission the grader runs: :mod:`._export`'s source, and the copy
of its export function that ``%reset`` does not remove."""

DEFAULT_TIMEOUT = 600.0
"""Seconds a whole notebook may run (``--timeout``)."""

DEFAULT_CHECK_TIMEOUT = 60.0
"""Seconds one check may run on one student's answers (``--check-timeout``)."""

MAX_OUTPUT_BYTES = 256 << 20
"""What one sandbox may send back (answers and, with ``--executed``, the executed
notebook); past it the sandbox is stopped and the answers sent so far are kept."""

MAX_LINE_BYTES = 128 << 20
"""Longest event line read from a sandbox."""

FEEDBACK_CHARS = 500
"""Feedback quoting a submission's own messages is cut to this length."""


def _clip(text: object) -> str:
    """One line of at most :data:`FEEDBACK_CHARS` characters."""
    text = re.sub(r"\s+", " ", utf8(text)).strip()
    return text if len(text) <= FEEDBACK_CHARS else text[:FEEDBACK_CHARS - 1] + "…"


def positive_seconds(value: object, name: str) -> float:
    """``value`` as a finite positive number of seconds.

    Raises:
        GradingError: otherwise (0, negative, NaN, infinite, not a number), naming ``name``.
    """
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise GradingError(f"{name} must be a positive number of seconds, got {value!r}")
    return seconds


# ---- the autograder material ---------------------------------------------------------------

def validate_material(material: object, source: str = "the autograder material") -> dict:
    """``material`` if it is autograder material as :func:`.editions.autograder_material`
    writes it (labels, variables, points, checks and the chapter's ``program``).

    Raises:
        GradingError: it is not, with what is wrong.
    """
    def bad(why: str) -> GradingError:
        return GradingError(f"{source} is not autograder material written by `build` "
                            f"({why}); rebuild it with: python -m attnclust.assignments "
                            "build --out DIR --chapters STEM")

    if not isinstance(material, dict):
        raise bad("not a JSON object")
    if not isinstance(material.get("chapter"), str) or not material["chapter"]:
        raise bad("no chapter name")
    exercises = material.get("exercises")
    if not isinstance(exercises, list):
        raise bad("no list of exercises")
    labels = set()
    for ex in exercises:
        if not (isinstance(ex, dict) and isinstance(ex.get("label"), str)
                and isinstance(ex.get("variable"), str) and isinstance(ex.get("kind", ""), str)
                and isinstance(ex.get("points"), (int, float))
                and not isinstance(ex.get("points"), bool) and ex["points"] >= 0
                and isinstance(ex.get("checks"), list)
                and all(isinstance(c, str) for c in ex["checks"])):
            raise bad("an exercise without label, variable, points or checks")
        parts = ex.setdefault("parts", [])  # material of format 2 has none
        if not (isinstance(parts, list) and all(
                isinstance(p, dict) and isinstance(p.get("name"), str) and p["name"]
                and isinstance(p.get("points"), (int, float))
                and not isinstance(p.get("points"), bool) and p["points"] >= 0 for p in parts)
                and len({p["name"] for p in parts}) == len(parts)):
            raise bad("an exercise whose written parts are not named with their points")
        if not isinstance(ex.setdefault("number", 0), int) or isinstance(ex["number"], bool):
            raise bad("an exercise whose number is not an integer")
        labels.add(ex["label"])
    program = material.get("program")
    if not isinstance(program, list):
        raise bad("no program: written by an older version")
    for item in program:
        ok = isinstance(item, dict) and isinstance(item.get("source"), str)
        if ok and item.get("kind") == "check":
            ok = (item.get("label") in labels and isinstance(item.get("occurrence"), int)
                  and isinstance(item.get("names"), list)
                  and all(isinstance(n, str) for n in item["names"]))
        elif ok:
            ok = item.get("kind") == "code"
        if not ok:
            raise bad("a malformed program item")
    material.setdefault("check_points", sum(float(e["points"]) for e in exercises))
    material.setdefault("written_points", sum(float(p["points"]) for e in exercises
                                              for p in e["parts"]))
    material.setdefault("total_points", material["check_points"] + material["written_points"])
    return material


# ---- reading and preparing a submission --------------------------------------------------

def _clean_cells(nb: object) -> list[tuple[str, str]]:
    """``(cell_type, source)`` of each cell of ``nb`` that has a usable shape; everything
    else a student's file may hold (metadata, outputs, attachments) is ignored.

    Raises:
        GradingError: ``nb`` has no list of cells.
    """
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise GradingError("the notebook has no list of cells")
    out = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown",
                                                                         "raw"):
            continue
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            src = "".join(src)
        elif not isinstance(src, str):
            src = ""
        out.append((cell["cell_type"], src))
    return out


def _export_cell(label: str, occurrence: int, names: list[str],
                 final: bool = False) -> nbformat.NotebookNode:
    """The cell that exports the answers ``names`` of check ``occurrence`` of ``label``;
    ``final``: the second export at the end of the notebook (:func:`prepare_submission`)."""
    cell = nbformat.v4.new_code_cell(f"_attnclust_export({label!r}, {occurrence}, {names!r})")
    export = {"label": label, "occurrence": occurrence}
    cell.metadata["attnclust"] = {"export": {**export, "final": True} if final else export}
    return cell


def _edition_forms(material: dict) -> dict[str, set[str]]:
    """Label -> the sources its check cells have in the student editions (visible and
    hidden), stripped: a check cell a student left as it was."""
    from .editions import guarded_check_source, hidden_check_source

    exercises = {ex["label"]: ex for ex in material["exercises"]}
    forms: dict[str, set[str]] = {}
    for item in material["program"]:
        ex = exercises.get(item["label"]) if item["kind"] == "check" else None
        if ex is not None and check_header(item["source"]):
            forms.setdefault(item["label"], set()).update({
                guarded_check_source(item["source"], ex["variable"]).strip(),
                hidden_check_source(item["source"], ex["variable"], int(ex["number"]),
                                    ex.get("kind", ""), str(ex.get("statement", ""))).strip()})
    return forms


def prepare_submission(nb: object, material: dict) -> nbformat.NotebookNode:
    """The notebook that is executed: the submission's cells rebuilt clean, its check cells
    replaced by export cells, the exporting code first.

    A check cell is one whose first line is a check header (``# check <label> points=N``);
    it is matched to the chapter's checks by that label, in order when an exercise has
    several checks, and the checks a notebook lacks are exported at the end. A check cell
    left as the edition wrote it is not run (the checks run in the grader's checker); one the
    student changed (an answer typed in it, cells merged) runs as the student's own code just
    before its export, so nothing the student wrote is lost. A cell whose metadata or tag
    still marks it as a check but whose header is gone (a copied check cell reused) is an
    ordinary cell.

    Every check is exported a second time at the end of the notebook: where an answer was
    not set yet at its check cell (``None``, or not defined; answers written in one cell at
    the end, say), the value it has at the end is graded (:func:`_settle`).

    Raises:
        GradingError: ``nb`` has no list of cells.
    """
    checks = [item for item in material["program"] if item["kind"] == "check"]
    by_label: dict[str, list[dict]] = {}
    for item in checks:
        by_label.setdefault(item["label"], []).append(item)
    placed = {label: 0 for label in by_label}
    forms = _edition_forms(material)
    out = nbformat.v4.new_notebook()
    out.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                  "name": "python3"}
    first = nbformat.v4.new_code_cell(EXPORT_SOURCE)
    first.metadata["attnclust"] = {"exporter": True}
    out.cells.append(first)
    for kind, src in _clean_cells(nb):
        if kind != "code":
            maker = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_raw_cell
            out.cells.append(maker(src))
            continue
        header = check_header(src)
        if header is None:
            out.cells.append(nbformat.v4.new_code_cell(src))
            continue
        label = header[0]
        if src.strip() not in forms.get(label, ()):
            out.cells.append(nbformat.v4.new_code_cell(src))  # the student's own code in it
        if label in by_label and placed[label] < len(by_label[label]):
            item = by_label[label][placed[label]]
            placed[label] += 1
            out.cells.append(_export_cell(label, item["occurrence"], item["names"]))
    for label, items in by_label.items():
        for item in items[placed[label]:]:
            out.cells.append(_export_cell(label, item["occurrence"], item["names"]))
    for item in checks:  # the answers as they stand at the end: used where one is unset above
        out.cells.append(_export_cell(item["label"], item["occurrence"], item["names"], final=True))
    return out


def unanswered(nb: nbformat.NotebookNode, material: dict) -> set[str]:
    """Labels whose starter cell is unchanged and whose variable no other cell assigns."""
    from .editions import STARTER_MARK

    sources = [c.source for c in nb.cells if c.cell_type == "code"
               and not check_header(c.source)]
    labels = set()
    for ex in material["exercises"]:
        var = ex["variable"]
        starter = f"{var} = None  {STARTER_MARK}"
        others = [s for s in sources if s.strip() != starter and _assigns(s, var)]
        if any(s.strip() == starter for s in sources) and not others:
            labels.add(ex["label"])
    return labels


def _assigns(source: str, var: str) -> bool:
    """Whether a line of ``source`` starts (after spaces) with ``var =`` (or ``var :=``,
    ``+=`` ...). Line by line, in time linear in the source: a regular expression
    ``^\\s*var`` over the whole cell backtracks quadratically in its number of lines, which
    a student's cell could use to spend the grader's time."""
    for line in source.splitlines():
        rest = line.lstrip(" \t")
        if rest.startswith(var):
            rest = rest[len(var):].lstrip(" \t")
            if rest.startswith("=") and not rest.startswith("==") or \
                    rest[:1] in (":", "+", "-", "*", "/") and rest[1:2] == "=":
                return True
    return False


# ---- running a sandboxed program -----------------------------------------------------------

MAX_EVENT_TOKENS = 4 * MAX_ITEMS
"""Most JSON values (counted by their brackets, braces and commas) in one event line: an
answer within the exporter's limit of :data:`~.answers.MAX_ITEMS` values takes fewer. A line
with more is not parsed, since parsing it would hold every value in the grader's memory (a
line of 120 MB of empty lists costs gigabytes)."""

_HEAD = re.compile(rb'"(index|label|occurrence)":\s*("(?:[^"\\]|\\.){0,200}"|\d{1,9})')


def _tokens(line: bytes) -> int:
    return line.count(b"[") + line.count(b"{") + line.count(b",")


def _oversized(line: bytes) -> dict | None:
    """The event that replaces an answer event too large to parse: an export error for its
    exercise, read from the keys before its values (None when they cannot be read)."""
    if re.search(rb'"final":\s*true', line[:2000]):
        return None  # the second export at the end: the first one stands
    head = dict((k.decode(), json.loads(v)) for k, v in _HEAD.findall(line[:2000]))
    if not (isinstance(head.get("label"), str) and isinstance(head.get("occurrence"), int)
            and isinstance(head.get("index"), int)):
        return None
    return {"event": "export_error", **head, "ename": "AnswerError",
            "evalue": f"the answer holds more than {MAX_ITEMS:,} values"}


class _Program:
    """A started worker or checker: its job written to its standard input (JSON lines:
    the worker's in one, the checker's in two, the answers sent later with :meth:`send`),
    its JSON-line events read from its standard output (at most :data:`MAX_OUTPUT_BYTES`),
    the end of its standard error kept for messages."""

    live: set = set()
    """The programs running now (stopped all at once when grading is interrupted)."""

    def __init__(self, proc: subprocess.Popen, job: dict, group: bool, more: bool = False):
        self.proc, self.group = proc, group
        self.out_of_memory = False
        """Set by :meth:`stop`: the sandbox hit its memory limit."""
        _Program.live.add(self)
        self.events: queue.Queue = queue.Queue()
        self.stderr: deque = deque(maxlen=64)
        self._writer: threading.Thread | None = None
        self.send(job, last=not more)
        for target in (self._read, self._read_err):
            threading.Thread(target=target, daemon=True).start()

    def send(self, line: dict, last: bool = True) -> None:
        """Write ``line`` (one JSON line) to the program's standard input, after what was
        written before; ``last``: then close it."""
        previous = self._writer

        def write() -> None:
            if previous is not None:
                previous.join()
            try:
                self.proc.stdin.write(json.dumps(line).encode() + b"\n")
                self.proc.stdin.flush()
                if last:
                    self.proc.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass

        self._writer = threading.Thread(target=write, daemon=True)
        self._writer.start()

    def _read(self) -> None:
        total, skipping = 0, False
        try:
            while True:
                line = self.proc.stdout.readline(MAX_LINE_BYTES)
                if not line:
                    break
                total += len(line)
                if total > MAX_OUTPUT_BYTES:
                    self.events.put({"event": "_overflow"})
                    break
                complete = line.endswith(b"\n")
                if skipping or not complete:
                    skipping = not complete
                    continue
                if _tokens(line) > MAX_EVENT_TOKENS:
                    event = _oversized(line)
                    if event is not None:
                        self.events.put(event)
                    continue
                try:
                    event = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(event, dict) and isinstance(event.get("event"), str):
                    self.events.put(event)
        except (OSError, ValueError):
            pass
        self.events.put(None)

    def _read_err(self) -> None:
        try:
            for line in iter(lambda: self.proc.stderr.readline(4096), b""):
                self.stderr.append(line.decode(errors="replace").rstrip())
        except (OSError, ValueError):
            pass

    def next_event(self, timeout: float) -> dict | None:
        """The next event (``None`` at the end of the output).

        Raises:
            queue.Empty: none within ``timeout`` seconds.
        """
        return self.events.get(timeout=max(timeout, 0.0))

    def last_error(self) -> str:
        lines = [ln for ln in self.stderr if ln.strip()]
        return _clip(lines[-1]) if lines else f"exit status {self.proc.poll()}"

    def stop(self) -> None:
        """Kill the program and everything it started (the whole sandbox)."""
        if self.proc.poll() is None and self.group:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self.out_of_memory = self.out_of_memory or sandbox.out_of_memory(self.proc)
        sandbox.release(self.proc)
        _Program.live.discard(self)


@dataclass(frozen=True)
class _Settings:
    """How submissions and checks run."""

    timeout: float
    cell_timeout: float
    check_timeout: float
    sandboxed: bool
    limits: sandbox.Limits
    hidden: tuple[str, ...] = ()

    def rlimits(self) -> dict[str, int]:
        limits = self.limits.rlimits()
        if not self.sandboxed:  # outside a user namespace RLIMIT_NPROC counts all the
            limits.pop("RLIMIT_NPROC")  # grader's processes, not those of one notebook
        return limits


def _start(argv: list[str], job: dict, settings: _Settings, tmp: str,
           more: bool = False) -> _Program:
    if settings.sandboxed:
        proc = sandbox.start(argv, limits=settings.limits, hidden=list(settings.hidden))
        return _Program(proc, job, group=False, more=more)
    proc = subprocess.Popen(argv, cwd=tmp, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    return _Program(proc, job, group=True, more=more)


@dataclass
class _Run:
    """What the execution of one submission gave (all of it untrusted data)."""

    answers: dict = field(default_factory=dict)  # (label, occurrence) -> (index, JSON text)
    final_answers: dict = field(default_factory=dict)  # the same, exported at the end
    export_errors: dict = field(default_factory=dict)  # (label, occurrence) -> message
    errors: list = field(default_factory=list)  # (index, "Ename: evalue") of other cells
    timed_out: bool = False
    overflow: bool = False
    dead: str | None = None
    executed: dict | None = None
    grader_failed: bool = False  # the grader, not the submission, stopped it
    memory: str = ""  # why, when a process of the sandbox was killed for its memory
    shown: Path | None = None  # where the executed notebook was saved, for its verdicts


def _oversized_string(values: dict) -> str | None:
    """Why an exported answer holds a string too long to pass on (every student's answers go
    to the checker together, so one student's huge string could cost a round its memory):
    a string over :data:`~.answers.MAX_STRING` characters, or an array's bytes over
    :data:`~.answers.MAX_ARRAY_BYTES`; None when there is none."""
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("t") == "ndarray" and isinstance(item.get("npy"), str):
                if len(item["npy"]) > MAX_ARRAY_TEXT:
                    return f"the array is larger than {MAX_ARRAY_BYTES >> 20} MiB"
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and len(item) > MAX_STRING:
            return f"the answer holds a string longer than {MAX_STRING:,} characters"
    return None


def _unset(text: str) -> bool:
    """Whether an export (JSON text) holds no answer: each name undefined or ``None``."""
    try:
        values = json.loads(text)
    except ValueError:
        return False
    return isinstance(values, dict) and all(
        isinstance(v, dict) and v.get("t") in ("missing", "none") for v in values.values())


def _settle(run: _Run) -> None:
    """The answers graded: each check's export where its check cell is, unless that one
    holds no answer (or failed) and the export at the end of the notebook does; and, for an
    exercise tested by several check cells, the answer as it stands at the last of them, for
    every one (one answer, graded by all its checks)."""
    for key, final in run.final_answers.items():
        here = run.answers.get(key)
        if (here is None or _unset(here[1])) and not _unset(final[1]):
            run.answers[key] = final
            run.export_errors.pop(key, None)
    run.final_answers = {}
    last = {label: text for (label, _), (_, text) in sorted(run.answers.items(),
                                                                key=lambda kv: kv[0][1])}
    for (label, occ), (index, _) in list(run.answers.items()):
        run.answers[label, occ] = (index, last[label])


def _execute(nb: nbformat.NotebookNode, settings: _Settings, executed: bool) -> _Run:
    """Run one prepared notebook in its sandbox (or process, when unsafe)."""
    run = _Run()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="attnclust-grade-") as tmp:
        # "work" in the program's working folder: the sandbox's scratch folder, or tmp
        job = {"notebook": nb, "cell_timeout": settings.cell_timeout, "executed": executed,
               "rlimits": settings.rlimits(), "workdir": "work", "mime": MIME}
        program = _start([sys.executable, str(WORKER)], job, settings, tmp)
        finished = False
        try:
            while not run.overflow:
                left = t0 + settings.timeout - time.monotonic()
                try:
                    event = program.next_event(left)
                except queue.Empty:
                    event = None
                    run.timed_out = True
                if event is None or left <= 0:
                    run.timed_out |= left <= 0
                    break
                finished |= _record(run, event)
        finally:
            program.stop()
        if not finished and not run.timed_out and run.dead is None and not run.overflow:
            run.dead = f"the notebook's process ended early ({program.last_error()})"
        if program.out_of_memory:
            limit = settings.limits.memory_bytes / (1 << 30)
            run.memory = (f"the notebook used more than the {limit:g} GiB of memory it may "
                          "use, and a process of it was stopped")
            if run.dead is not None:
                run.dead = f"{run.memory} ({run.dead})"
    return run


def _record(run: _Run, event: dict) -> bool:
    """Add one (untrusted) worker event to ``run``; True when it ends the notebook."""
    kind = event["event"]
    label, occ, index = event.get("label"), event.get("occurrence"), event.get("index")
    keyed = isinstance(label, str) and isinstance(occ, int) and isinstance(index, int)
    if kind == "answer" and keyed and isinstance(event.get("values"), dict):
        if json_depth(event["values"]) > MAX_JSON_DEPTH:
            run.export_errors[label, occ] = (index, "the answer is nested more than "
                                                    f"{MAX_JSON_DEPTH} levels deep")
        elif (why := _oversized_string(event["values"])) is not None:
            run.export_errors[label, occ] = (index, why)
        else:  # kept as JSON text: the checker decodes it within the check's time limit
            kept = run.final_answers if event.get("final") is True else run.answers
            kept[label, occ] = (index, json.dumps(event["values"]))
    elif kind == "export_error" and keyed:
        run.export_errors[label, occ] = (index, _clip(f"{event.get('ename', '')}: "
                                                     f"{event.get('evalue', '')}"))
    elif kind == "error" and isinstance(index, int):
        run.errors.append((index, _clip(f"{event.get('ename', '')}: {event.get('evalue', '')}")))
    elif kind == "dead":
        run.dead = _clip(event.get("error", "the kernel died"))
        return True
    elif kind == "done":
        return True
    elif kind == "executed" and isinstance(event.get("notebook"), dict):
        run.executed = event["notebook"]
    elif kind == "_overflow":
        run.overflow = True
    return False


# ---- the trusted checker -----------------------------------------------------------------

CHECK_GRACE = 10.0
"""Seconds past ``check_timeout`` before a check that does not return is killed (the checker
interrupts it itself at ``check_timeout`` when it runs Python code)."""


CHECKER = [sys.executable, "-m", "attnclust.assignments._checker"]


def _start_checker(material: dict, settings: _Settings, tmp: str,
                   skip: list | tuple = ()) -> _Program:
    """Start the checker on the chapter's program; it runs the narrative up to the first
    check while the submissions run, then waits for their answers (:meth:`_Program.send`)."""
    job = {"program": material["program"], "skip": sorted(skip),
           "check_timeout": settings.check_timeout, "rlimits": settings.rlimits()}
    return _start(CHECKER, job, settings, tmp, more=True)


def _run_checks(material: dict, runs: dict[str, _Run], settings: _Settings,
                checker: _Program | None = None
                ) -> tuple[dict[tuple[int, str], dict], dict[int, str]]:
    """Run the chapter's checks on every student's answers, in ``checker`` (started by
    :func:`_start_checker`) and in new checkers if it stops in a check; return the results
    by ``(program index, student)`` and the chapter's own code cells that failed."""
    program = material["program"]
    answers = {s: {f"{label}/{occ}": values for (label, occ), (_, values) in r.answers.items()}
               for s, r in runs.items()}
    expected = {(i, s) for i, item in enumerate(program) if item["kind"] == "check"
                for s in answers if f"{item['label']}/{item['occurrence']}" in answers[s]}
    results: dict[tuple[int, str], dict] = {}
    chapter_errors: dict[int, str] = {}
    fatal = None
    with tempfile.TemporaryDirectory(prefix="attnclust-check-") as tmp:
        while expected - results.keys() and fatal is None:
            if checker is None:
                checker = _start_checker(material, settings, tmp, list(results))
            checker.send(answers)
            try:
                fatal = _follow_checker(checker, settings, results, chapter_errors)
            finally:
                checker.stop()
                checker = None
    if checker is not None:
        checker.stop()
    for key in expected - results.keys():
        results[key] = {"status": "error", "ename": "CheckerError",
                        "evalue": fatal or "the checker did not run this check"}
    return results, chapter_errors


def _follow_checker(checker: _Program, settings: _Settings, results: dict,
                    chapter_errors: dict) -> str | None:
    """Read one checker run's events into ``results``; return why the checker cannot go on
    (``None`` when it finished, or stopped in a check that should be skipped next time)."""
    current, done = None, False
    deadline = time.monotonic() + settings.timeout
    while True:
        try:
            event = checker.next_event(deadline - time.monotonic())
        except queue.Empty:
            if current is None:
                return (f"a cell of the chapter's own code ran longer than "
                        f"{settings.timeout:g} s in the checker")
            results[current] = {"status": "timeout", "ename": "CheckTimeout",
                                "evalue": f"the check ran longer than "
                                          f"{settings.check_timeout:g} s"}
            return None
        if event is None:
            if current is not None:
                results[current] = {"status": "error", "ename": "CheckerError",
                                    "evalue": f"the checker stopped during this check "
                                              f"({checker.last_error()})"}
                return None
            return None if done else f"the checker stopped ({checker.last_error()})"
        kind = event["event"]
        if kind == "code_begin":
            deadline = time.monotonic() + settings.timeout
        elif kind == "code" and event.get("status") == "error":
            chapter_errors[event["index"]] = _clip(f"{event['ename']}: {event['evalue']}")
        elif kind == "begin":
            current = (event["index"], event["student"])
            deadline = time.monotonic() + settings.check_timeout + CHECK_GRACE
        elif kind == "result":
            # only the result of the check the checker announced last: nothing run inside
            # one student's check can report on another's
            if current == (event["index"], event["student"]) and current not in results:
                results[current] = event
            current = None
            deadline = time.monotonic() + settings.timeout
        elif kind == "done":
            done = True


# ---- scoring -----------------------------------------------------------------------------

def _earlier_error(run: _Run, index: int) -> str:
    """The first error of a submission's own cell between the previous export cell and
    cell ``index``."""
    exports = [i for i, _ in run.answers.values()] + [i for i, _ in run.export_errors.values()]
    start = max((i for i in exports if i < index), default=-1)
    return next((msg for i, msg in sorted(run.errors) if start < i < index), "")


def _check_feedback(label: str, result: dict, run: _Run, index: int, blank: bool,
                    variable: str) -> str:
    status, ename, evalue = result["status"], result.get("ename", ""), _clip(
        result.get("evalue", ""))
    earlier = _earlier_error(run, index)
    if status == "blank":
        return (f"{label}: not answered (the starter cell is unchanged)" if blank else
                f"{label}: not answered ({variable} is None)")
    if status == "fail":
        msg = evalue or "the check failed"
        return msg if label in msg else f"{label}: {msg}"
    if status == "missing":
        feedback = f"{label}: no answer ({evalue.replace('AnswerError: ', '')})"
    elif status == "refused":
        feedback = f"{label}: answer not accepted: {evalue}"
    elif status == "timeout":
        feedback = f"{label}: the check was interrupted ({evalue})"
    else:
        feedback = f"{label}: the check raised {ename}: {evalue}"
    return feedback + (f"; an earlier cell raised {earlier}" if earlier else "")


def _not_run_feedback(label: str, occ: int, run: _Run, settings: _Settings) -> str:
    if (label, occ) in run.export_errors:
        _, msg = run.export_errors[label, occ]
        return f"{label}: not graded, the answer could not be handed to the grader ({msg})"
    if run.timed_out:
        return (f"{label}: not graded, the notebook did not reach this check within the time "
                f"limit of {settings.timeout:g} s")
    if run.overflow:
        return (f"{label}: not graded, the notebook sent more than "
                f"{MAX_OUTPUT_BYTES >> 20} MiB of output and was stopped")
    if run.dead:
        return f"{label}: not graded, execution stopped before this check ({run.dead})"
    if run.memory:
        return f"{label}: not graded, {run.memory}"
    return f"{label}: not graded, the check did not run"


def _written_rows(student: str, ex: dict, final: bool = True) -> list[ExerciseGrade]:
    """The rows of ``ex``'s written parts: 0 points of each part's, for the instructor to
    grade against the rubric; or, for a proof or project without written parts, one row of
    0 points (:func:`ungraded_feedback`)."""
    number = int(ex.get("number") or 0)
    parts = ex.get("parts") or []
    if not parts and ex.get("kind") in UNGRADED_KINDS:
        return [ExerciseGrade(student, ex["label"], 0.0, float(ex["points"]),
                              ungraded_feedback(ex["label"], ex["kind"]), final, "", number)]
    return [ExerciseGrade(student, ex["label"], 0.0, float(p["points"]),
                          ungraded_feedback(ex["label"], ex.get("kind", ""), p["name"],
                                            float(p["points"])), final, p["name"], number)
            for p in parts]


def _score(student: str, material: dict, run: _Run, blank: set[str], results: dict,
           chapter_errors: dict, settings: _Settings) -> list[ExerciseGrade]:
    """One grade per exercise's checks: the points of each of its check cells that passed
    (an exercise tested by several check cells earns the points of those it passes), all of
    them checked on one answer (:func:`_settle`); then one row of 0 points per written part,
    which the instructor grades (:func:`_written_rows`)."""
    program = material["program"]
    grades = []
    for ex in material["exercises"]:
        label = ex["label"]
        number = int(ex.get("number") or 0)
        items = [(i, item) for i, item in enumerate(program)
                 if item["kind"] == "check" and item["label"] == label]
        final = not run.grader_failed
        if ex.get("kind") in UNGRADED_KINDS:
            grades += _written_rows(student, ex, final)
            continue
        if not items:
            grades.append(ExerciseGrade(student, label, 0.0, float(ex["points"]),
                                        f"{label}: the chapter has no check for it", final,
                                        "", number))
            grades += _written_rows(student, ex, final)
            continue
        points, failures = 0.0, []
        for i, item in items:
            occ = item["occurrence"]
            header = check_header(item["source"])
            worth = header[1] if header else float(ex["points"]) / len(items)
            if (label, occ) not in run.answers:
                failures.append(_not_run_feedback(label, occ, run, settings))
                continue
            result = results.get((i, student), {"status": "error", "ename": "CheckerError",
                                                "evalue": "no result"})
            if result["status"] == "ok":
                points += worth
                continue
            final = final and result.get("ename") != "CheckerError"
            feedback = _check_feedback(label, result, run, run.answers[label, occ][0],
                                       label in blank, ex["variable"])
            if chapter_errors and result["status"] == "error":
                first = min(chapter_errors)
                feedback += (f"; the chapter's own cell {first} failed in the checker "
                             f"({chapter_errors[first]})")
            failures.append(feedback)
        feedback = "passed" if not failures else failures[0] + (
            f" ({len(items) - len(failures)} of {len(items)} checks passed)"
            if len(items) > 1 and points else "")
        grades.append(ExerciseGrade(student, label, min(points, float(ex["points"])),
                                    float(ex["points"]), feedback, final, "", number))
        grades += _written_rows(student, ex, final)
    return grades


def ungraded_feedback(label: str, kind: str, part: str = "", points: float = 0.0) -> str:
    """The feedback of what no check grades, left to the instructor: a proof or project
    (``part`` empty: no rubric with points), or one written part of ``points`` points."""
    if not part:
        return f"{label}: ungraded, a {kind} is graded by the instructor (rubric in the solution)"
    return (f"{label} {part}: ungraded here, a written part is graded by the instructor "
            f"against the rubric in the solution ({points:g} point{'s' * (points != 1)})")


def _zero(student: str, material: dict, reason: str) -> list[ExerciseGrade]:
    rows = []
    for ex in material["exercises"]:
        if ex.get("kind") not in UNGRADED_KINDS:
            rows.append(ExerciseGrade(student, ex["label"], 0.0, float(ex["points"]),
                                      f"{ex['label']}: {reason}", True, "",
                                      int(ex.get("number") or 0)))
        rows += _written_rows(student, ex)
    return rows


# ---- the public entry points -------------------------------------------------------------

def require_sandbox(hidden: Sequence[str | Path] = ()) -> None:
    """Make sure submissions can be graded in a sandbox that shows none of ``hidden``.

    Raises:
        SandboxUnavailable: no sandbox can be made here (the message says why and what to
            do), or the Python environment holds one of ``hidden``.
    """
    why = sandbox.probe()
    if why is not None:
        raise sandbox.SandboxUnavailable(
            f"cannot grade in a sandbox: {why}. Fix that, or pass --unsafe to run the "
            "submissions without one, as your own user (only for notebooks you trust)")
    sandbox.environment_paths(hidden)


def _settings(timeout, cell_timeout, check_timeout, unsafe, limits, hidden) -> _Settings:
    timeout = positive_seconds(timeout, "timeout")
    cell_timeout = timeout if cell_timeout is None else min(
        positive_seconds(cell_timeout, "cell_timeout"), timeout)
    check_timeout = positive_seconds(check_timeout, "check_timeout")
    if not unsafe:
        require_sandbox(hidden)
    return _Settings(timeout, cell_timeout, check_timeout, not unsafe,
                     limits or sandbox.Limits(), tuple(str(h) for h in hidden))


def _prepare(nb: object, material: dict) -> tuple[nbformat.NotebookNode | None, str]:
    """``(prepared notebook, "")`` for a submission (a notebook dict, a file to read, or
    the exception that stopped its reading), or ``(None, why it cannot be graded)``."""
    try:
        if isinstance(nb, Exception):
            raise nb
        if isinstance(nb, (str, Path)):
            nb = read_submission(nb)
        return prepare_submission(nb, material), ""
    except Exception as e:  # noqa: BLE001 -- one malformed notebook costs only its rows
        return None, f"the notebook could not be read ({_clip(e)})"


def grade_notebooks(notebooks: dict[str, object], material: dict, *,
                    timeout: float = DEFAULT_TIMEOUT, cell_timeout: float | None = None,
                    check_timeout: float = DEFAULT_CHECK_TIMEOUT, jobs: int = 1,
                    executed_dir: str | Path | None = None, unsafe: bool = False,
                    limits: sandbox.Limits | None = None, hidden: Sequence[str | Path] = (),
                    progress: Callable[[str], None] | None = None,
                    on_graded: Callable[[str, list[ExerciseGrade]], None] | None = None,
                    ) -> list[ExerciseGrade]:
    """Grade ``notebooks`` (student -> notebook dict, the path of a notebook file, read when
    its turn comes, or a :class:`GradingError` saying why it could not be read): one
    :class:`ExerciseGrade` per student and exercise, in order.

    ``timeout`` (s) limits each whole notebook, ``cell_timeout`` (s, default ``timeout``)
    each of its cells, ``check_timeout`` (s) each check on one student's answers. ``jobs``
    notebooks run at a time. ``executed_dir``: where each executed notebook is saved
    (``<student>.ipynb``), to look at the errors: without the grader's plumbing, each check
    cell showing the check's verdict as the student edition prints it (:func:`student_view`,
    :func:`show_verdicts`). ``unsafe``: run without a sandbox.
    ``limits``: the sandboxes' resource limits. ``hidden``: paths (course material,
    submissions, grades) that no sandbox may see. ``progress(student)`` is called as each
    notebook finishes running, ``on_graded(student, grades)`` as its grades are final.

    Grading goes in rounds: while notebooks run, a checker runs the chapter's narrative; it
    checks the answers of every notebook finished by the time it is ready, and the next
    round starts at once. Each round's grades are handed to ``on_graded`` (which
    :func:`grade_submissions` uses to write them to disk), so an interrupted run loses at
    most the notebooks of its last round; the grader holds a notebook only while it runs.

    Raises:
        GradingError: a time limit is not a positive number, ``jobs`` < 1, or the material
            is malformed.
        SandboxUnavailable: no sandbox can be made and ``unsafe`` is false.
    """
    material = validate_material(material)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise GradingError(f"jobs must be a positive integer, got {jobs!r}")
    settings = _settings(timeout, cell_timeout, check_timeout, unsafe, limits, hidden)
    executed_path = Path(executed_dir) if executed_dir is not None else None
    graded: dict[str, list[ExerciseGrade]] = {}

    def finish(student: str, grades: list[ExerciseGrade]) -> None:
        graded[student] = grades
        if on_graded is not None:
            on_graded(student, grades)

    finished: queue.Queue = queue.Queue()

    def run_one(student: str) -> tuple[_Run | None, set[str] | str]:
        """Read, prepare and run one submission: ``(run, unanswered labels)``, or
        ``(None, why it cannot be graded)``."""
        try:
            nb, why = _prepare(notebooks[student], material)
            if nb is None:
                return None, why
            try:
                run = _execute(nb, settings, executed_path is not None)
            except Exception as e:  # noqa: BLE001 -- every submission gets its rows
                run = _Run(dead=f"the grader could not run it ({type(e).__name__}: "
                                f"{_clip(e)})", grader_failed=True)
            _settle(run)
            if executed_path is not None and run.executed is not None:
                path = executed_path / executed_name(student)
                view = student_view(run.executed, nb, material) or run.executed
                if _save_executed(view, path):
                    run.shown = path
            run.executed = None
            return run, unanswered(nb, material)
        finally:
            finished.put(student)
            if progress is not None:
                progress(student)

    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {student: pool.submit(run_one, student) for student in notebooks}
    waiting = set(futures)
    try:
        with tempfile.TemporaryDirectory(prefix="attnclust-checker-") as tmp:
            checker = None
            while waiting:
                if checker is None:  # its narrative runs while the notebooks do
                    checker = _start_checker(material, settings, tmp)
                batch = [_next_finished(finished)]
                while True:
                    try:
                        batch.append(finished.get_nowait())
                    except queue.Empty:
                        break
                waiting -= set(batch)
                outcome = {student: futures.pop(student).result() for student in batch}
                runs = {s: run for s, (run, _) in outcome.items() if run is not None}
                if runs:
                    results, chapter_errors = _run_checks(material, runs, settings, checker)
                    checker = None
                for student in sorted(outcome):
                    run, blank = outcome[student]
                    if run is None:
                        finish(student, _zero(student, material, blank))
                        continue
                    finish(student, _score(student, material, run, blank, results,
                                           chapter_errors, settings))
                    if run.shown is not None:
                        show_verdicts(run.shown, verdicts(student, material, run, blank,
                                                          results, settings))
            if checker is not None:
                checker.stop()
    except BaseException:  # interrupted: stop every sandbox now, not at its time limit
        pool.shutdown(wait=False, cancel_futures=True)
        for program in list(_Program.live):
            program.stop()
        raise
    pool.shutdown()
    return [g for student in notebooks for g in graded[student]]


def _next_finished(finished: queue.Queue) -> str:
    """The next student whose notebook finished (waiting in steps, so that Ctrl-C is
    seen)."""
    while True:
        try:
            return finished.get(timeout=0.5)
        except queue.Empty:
            continue


MAX_NAME_BYTES = 200
"""Longest file name (bytes of UTF-8) of a saved executed notebook: file systems allow 255,
and a submission's own name may already be that long."""


def executed_name(student: str) -> str:
    """The file name of ``student``'s executed notebook: ``<student>.ipynb``, or, for a name
    too long to save (or to write through a temporary file beside it), its first characters
    and a hash of the whole name."""
    name = f"{student}.ipynb"
    if len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    head = student.encode("utf-8", "surrogateescape")[:MAX_NAME_BYTES - 40].decode("utf-8", "ignore")
    return f"{head}-{digest}.ipynb"


def _save_executed(nb: dict | None, path: Path) -> bool:
    """Save an executed notebook; whether it was saved. One that cannot be written (a full
    disk, a name the file system refuses) is reported on standard error and skipped: it
    never stops the grading."""
    try:
        text = nbformat.writes(nbformat.from_dict(nb))
    except Exception:  # noqa: BLE001 -- a sandbox sent something that is not a notebook
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)
    except OSError as e:
        print(f"warning: the executed notebook {printable(str(path))} was not saved "
              f"({printable(e.strerror or str(e))})", file=sys.stderr)
        return False
    return True


# ---- the executed notebook as the student sees it ------------------------------------------

def shown_check_source(label: str, points: float) -> str:
    """The source of a check cell in a student's executed notebook: its header and a line
    saying that the verdict below is the grader's. Not the check itself: with hidden checks
    (``build --hidden-checks``) the student never saw it, and the executed notebook goes
    back to the student."""
    return (f"# check {label} points={points:g}\n"
            "# Checked by the grader on your answer; its verdict is below.")


def student_view(executed: object, prepared: nbformat.NotebookNode,
                 material: dict) -> dict | None:
    """The executed notebook as it goes back to the student (``--executed``): the grader's
    plumbing taken out (the exporter's first cell, the exports at the end) and each export
    cell shown as the check cell it stands for (:func:`shown_check_source`, tagged
    ``check``, ``{"attnclust": {"check": label, "occurrence": n}}`` in its metadata), where
    :func:`show_verdicts` puts the check's verdict once the checks have run. Which cells
    are plumbing is read from ``prepared`` (the notebook the grader built, whose cells the
    executed one has in the same order), not from the executed notebook's metadata, which
    the sandbox sent; ``None`` when ``executed`` is not a notebook of those cells."""
    cells = executed.get("cells") if isinstance(executed, dict) else None
    if not isinstance(cells, list) or len(cells) != len(prepared.cells):
        return None
    points = {item["label"]: check_header(item["source"]) for item in material["program"]
              if item["kind"] == "check"}
    kept = []
    for ours, cell in zip(prepared.cells, cells):
        mark = ours.metadata.get("attnclust", {})
        if not isinstance(cell, dict) or mark.get("exporter") or \
                mark.get("export", {}).get("final"):
            continue
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        cell = dict(cell, metadata={k: v for k, v in meta.items() if k != "attnclust"})
        if "export" in mark:
            label, occ = mark["export"]["label"], mark["export"]["occurrence"]
            header = points.get(label)
            cell = dict(nbformat.v4.new_code_cell(shown_check_source(
                label, header[1] if header else 0)), execution_count=cell.get("execution_count"))
            cell["metadata"] = {"tags": ["check"],
                                "attnclust": {"check": label, "occurrence": occ}}
        kept.append(cell)
    return dict(executed, cells=kept)


def verdict(label: str, variable: str, result: dict) -> str:
    """What a check printed in the student edition (:func:`.editions.guarded_check_source`)
    for the checker's ``result``: "correct", "not right yet" with the check's message as
    the hint, "not answered yet", or that the check could not run on the answer."""
    status, ename, evalue = result["status"], result.get("ename", ""), result.get("evalue", "")
    if status == "ok":
        return CORRECT.format(label=label)
    if status == "fail":
        return (f"{NOT_RIGHT.format(label=label)} "
                f"{_clip(evalue).removeprefix(f'{label}: ') or 'The check failed.'}")
    if status in ("blank", "missing"):
        return NOT_ANSWERED.format(label=label, var=variable)
    return COULD_NOT_RUN.format(label=label, var=variable, error=f"{ename}: {_clip(evalue)}")


def verdicts(student: str, material: dict, run: _Run, blank: set[str], results: dict,
             settings: _Settings) -> dict[tuple[str, int], str]:
    """``(label, occurrence)`` -> the verdict shown at that check cell of ``student``'s
    executed notebook: :func:`verdict` of the check that graded it, or, where no check
    ran, why (the grade's feedback)."""
    variables = {ex["label"]: ex["variable"] for ex in material["exercises"]}
    out = {}
    for i, item in enumerate(material["program"]):
        if item["kind"] != "check":
            continue
        label, occ = item["label"], item["occurrence"]
        result = results.get((i, student))
        if (label, occ) not in run.answers:
            out[label, occ] = _not_run_feedback(label, occ, run, settings)
        elif result is None or result.get("ename") == "CheckerError":
            out[label, occ] = _check_feedback(label, result or {"status": "error", "ename":
                                              "CheckerError", "evalue": "no result"},
                                              run, run.answers[label, occ][0],
                                              label in blank, variables[label])
        else:
            said = verdict(label, variables[label], result)
            earlier = _earlier_error(run, run.answers[label, occ][0])
            if result["status"] not in ("ok", "fail", "blank") and earlier:
                said += f"; an earlier cell raised {earlier}"
            out[label, occ] = said
    return out


def show_verdicts(path: Path, said: dict[tuple[str, int], str]) -> None:
    """Put each check's verdict (``said``) into the executed notebook saved at ``path`` by
    :func:`student_view`, as the standard output of its check cell, as the student edition
    prints it. A notebook that cannot be read or written again keeps what it had."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 -- saved by us; if it is gone, nothing to show
        return
    for cell in nb.cells:
        mark = cell.metadata.get("attnclust", {}) if cell.cell_type == "code" else {}
        key = (mark.get("check"), mark.get("occurrence")) if isinstance(mark, dict) else None
        if key in said:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                   text=said[key] + "\n")]
    _save_executed(nb, path)


def grade_notebook(nb: object, material: dict, *, student: str = "",
                   timeout: float = DEFAULT_TIMEOUT, cell_timeout: float | None = None,
                   check_timeout: float = DEFAULT_CHECK_TIMEOUT,
                   executed: str | Path | None = None, unsafe: bool = False,
                   limits: sandbox.Limits | None = None) -> list[ExerciseGrade]:
    """Grade one notebook: one :class:`ExerciseGrade` per exercise of ``material``
    (the arguments are those of :func:`grade_notebooks`; ``executed``: where to save the
    executed notebook)."""
    with tempfile.TemporaryDirectory(prefix="attnclust-executed-") as tmp:
        grades = grade_notebooks({student: nb}, material, timeout=timeout,
                                 cell_timeout=cell_timeout, check_timeout=check_timeout,
                                 executed_dir=tmp if executed is not None else None,
                                 unsafe=unsafe, limits=limits)
        saved = Path(tmp) / f"{student}.ipynb"
        if executed is not None and saved.exists():
            Path(executed).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(Path(executed), saved.read_text())
    return grades


def grade_submissions(folder: str | Path | Submissions, material: dict, *,
                      out: str | Path | None = None, fresh: bool = False,
                      log: Callable[[str], None] | None = None,
                      **options) -> list[ExerciseGrade]:
    """Grade every submission of ``folder`` (a folder, see :func:`discover_submissions`, or
    what it found; the options are those of :func:`grade_notebooks`): one
    :class:`ExerciseGrade` per student and exercise, in the order of the students' names.

    A notebook that cannot be read, or is a link, gets 0 on every exercise with the reason as
    feedback; each file that is not graded is named in a warning (:mod:`warnings`, when
    ``folder`` is a folder); the folder itself is hidden from every sandbox.

    ``out``: the grades CSV, rewritten (atomically) as each round of grading ends, next to
    its journal (:class:`.gradebook.Gradebook`); a run stopped at any point and started
    again with the same ``out`` keeps the grades of every submission whose file, material
    and options are unchanged and grades the rest. ``fresh``: grade everything again.
    ``log(line)`` receives what the run has to say besides the grades: the warnings about
    names (when ``folder`` is a folder), and which earlier grades were kept.

    Raises:
        GradingError: see :func:`discover_submissions` and :func:`grade_notebooks`.
    """
    material = validate_material(material)
    if isinstance(folder, Submissions):
        subs = folder
    else:
        subs = discover_submissions(folder, material["chapter"])
        for line in subs.warnings:
            if log is None:
                warnings.warn(line, stacklevel=2)
            else:
                log(f"warning: {line}")
    options["hidden"] = [subs.folder, *options.get("hidden", ())]
    digests: dict[str, str | None] = {}
    for student, path in subs.notebooks.items():
        try:
            digests[student] = file_digest(path)
        except GradingError:
            digests[student] = None  # read_submission says why, in its rows
    book = Gradebook(out, material, _fingerprint(material, options), subs.students,
                     fresh=fresh)
    for student, why in subs.refused.items():
        book.record(student, _zero(student, material, why))
    todo = {s: p for s, p in subs.notebooks.items() if not book.keep(s, digests[s])}
    if log is not None and book.stale:
        log(f"note: {out} was graded with other material, options or grader version: "
            "grading every submission again")
    if log is not None and book.kept:
        log(f"note: kept the grades of {len(book.kept)} submission"
            f"{'s' * (len(book.kept) != 1)} graded earlier into {out} (same file, material "
            "and options; --fresh grades them again)")
    if todo:
        grade_notebooks(todo, material, **options,
                        on_graded=lambda s, grades: book.record(s, grades, digests[s]))
    book.write()
    return book.grades()


def _fingerprint(material: dict, options: dict) -> str:
    """What the grades of a submission depend on besides its file: the material, the
    options that change a grade, and the grader's version."""
    from attnclust import __version__

    limits = options.get("limits") or sandbox.Limits()
    keys = ("timeout", "cell_timeout", "check_timeout", "unsafe")
    text = json.dumps({"material": material, "version": __version__,
                       "limits": limits.rlimits(),
                       **{k: options.get(k) for k in keys}}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def check_output_path(path: str | Path, *, folder: bool = False) -> Path:
    """Make sure ``path`` can be written before grading starts: its folder is created if
    missing and a file is written there and removed; ``folder=True``: ``path`` is a folder.

    Raises:
        GradingError: it cannot be written (the message says why).
    """
    path = Path(path)
    target = path if folder else path.parent
    if not folder and path.is_dir():
        raise GradingError(f"{path} is a folder; give a file name for the CSV")
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target, prefix=".attnclust-write-test-"):
            pass
    except OSError as e:
        raise GradingError(f"cannot write to {target} ({e.strerror or e})") from e
    return path

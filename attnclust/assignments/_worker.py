"""Execute one prepared submission notebook and stream what happens as JSON lines.

Run as a script by :mod:`attnclust.assignments.grading`, inside the sandbox
(:mod:`attnclust.assignments.sandbox`) or, with ``--unsafe``, as a plain process. It imports
only the standard library, nbformat and nbclient (not attnclust), so it starts fast. It
reads one JSON job, a line on standard input::

    {"notebook": {...}, "cell_timeout": s, "executed": bool, "rlimits": {...},
     "workdir": path (relative to the working folder), "mime": the MIME type of the answers
     that _export.py displays}

applies the resource limits, writes the notebook into ``workdir`` (a private copy, the
kernel's working folder) and runs it with nbclient: every code cell with ``allow_errors``
(an error in one cell does not stop the others) and a per-cell time limit (a cell over it
is interrupted with SIGINT and recorded as an error, and execution goes on). Events go to
standard output, one JSON object a line, as they happen, so the grader keeps everything
recorded before it stops the sandbox at the whole-notebook time limit:

    {"event": "answer", "label", "occurrence", "index", "values"}   an export cell's data
    {"event": "export_error", "label", "occurrence", "index", "ename", "evalue"}
    {"event": "error", "index", "ename", "evalue"}             another cell raised
    {"event": "done"} | {"event": "dead", "error": ...}        end of the notebook / kernel died
    {"event": "executed", "notebook": {...}}                   if asked, at the very end

Everything here runs next to the student's code and may be tampered with: the grader
treats these events as untrusted data (an answer event is only an answer, which the
trusted checker then checks).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable



def apply_rlimits(rlimits: dict[str, int]) -> None:
    """Set soft and hard limits ``{RLIMIT name: value}`` on this process and its children."""
    import resource

    for name, value in rlimits.items():
        resource.setrlimit(getattr(resource, name), (value, value))

MAX_EXECUTED_BYTES = 32 << 20
"""Executed notebooks larger than this are saved without their outputs."""


def events_stream():
    """Standard output for the events only: fd 1 is re-pointed at standard error, so that
    whatever else writes there (the kernel inherits it) cannot interleave with them."""
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def not_dumpable() -> None:
    """Make this process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): a process of the same
    user, such as the kernel this worker starts, may then neither open this one's file
    descriptors through ``/proc/<pid>/fd`` nor take them with ``pidfd_getfd``, so it cannot
    write into the events stream. The kernel, started by ``execve``, is dumpable again, as
    every new program is; only the grader's side is closed."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def begin() -> tuple[dict, Callable[..., None]]:
    """Read the job (the first line of standard input), set its resource limits, make this
    process non-dumpable, and return it with ``emit(**event)``, which writes one event (a
    JSON line) to the events stream."""
    not_dumpable()
    job = json.loads(sys.stdin.readline())
    if job.get("rlimits"):
        apply_rlimits(job["rlimits"])
    events = events_stream()

    def emit(**event) -> None:
        events.write(json.dumps(event) + "\n")
        events.flush()

    return job, emit


def _strip_answers(nb, mime: str) -> None:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if mime in data:
                data.pop(mime)
                data["text/plain"] = "(answers handed to the grader)"


def main() -> int:
    job, emit = begin()

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    workdir = os.path.abspath(job["workdir"])
    os.makedirs(workdir, exist_ok=True)
    os.makedirs(os.environ.get("HOME", workdir), exist_ok=True)
    nb = nbformat.from_dict(job["notebook"])
    nbformat.write(nb, os.path.join(workdir, "submission.ipynb"))
    cell_timeout, mime = float(job["cell_timeout"]), job["mime"]

    def on_cell_executed(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        status = content.get("status", "ok")
        export = cell.metadata.get("attnclust", {}).get("export")
        error = {"ename": content.get("ename", ""), "evalue": content.get("evalue", "")}
        if export:
            found = [o["data"][mime] for o in cell.get("outputs", [])
                     if mime in o.get("data", {})]
            if status == "ok" and found:
                emit(event="answer", index=cell_index, label=export["label"],
                     occurrence=export["occurrence"], final=bool(export.get("final")),
                     values=found[-1].get("values", {}))
            elif not export.get("final"):  # a failed export at the end changes nothing
                emit(event="export_error", index=cell_index, label=export["label"],
                     occurrence=export["occurrence"], **error)
        elif status != "ok":
            emit(event="error", index=cell_index, **error)

    client = NotebookClient(
        nb,
        timeout=max(1, int(round(cell_timeout))),
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout={"ename": "CellTimeoutError",
                          "evalue": f"the cell ran longer than {cell_timeout:g} s and was "
                                    "interrupted",
                          "traceback": []},
        raise_on_iopub_timeout=False,
        iopub_timeout=10,
        startup_timeout=120,
        record_timing=False,
        on_cell_executed=on_cell_executed,
        resources={"metadata": {"path": workdir}},
    )
    code = 0
    try:
        client.execute()
        emit(event="done")
    except DeadKernelError as e:
        emit(event="dead", error=f"the kernel died: {e}")
        code = 2
    except Exception as e:  # noqa: BLE001 -- report anything, the grader grades what it has
        emit(event="dead", error=f"{type(e).__name__}: {e}")
        code = 3
    if job.get("executed"):
        _strip_answers(nb, mime)
        text = nbformat.writes(nb)
        if len(text) > MAX_EXECUTED_BYTES:
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = []
            text = nbformat.writes(nb)
        emit(event="executed", notebook=json.loads(text))
    return code


if __name__ == "__main__":
    sys.exit(main())

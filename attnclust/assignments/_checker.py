"""The trusted checker: run a chapter's checks on the answers that submissions exported.

Run by :mod:`attnclust.assignments.grading` as ``python -m attnclust.assignments._checker``
(in a sandbox of its own unless grading is ``--unsafe``), once for all the submissions of a
chapter, started as they start. Its standard input holds two JSON lines: the job, read at
once, and the answers, read when the first check is reached (the grader sends them when
every submission has run, so the narrative runs meanwhile)::

    {"program": [...], "skip": [[index, student], ...], "check_timeout": s, "rlimits": {...}}
    {student: {"label/occurrence": JSON text of {name: encoded}}}

``program`` is the chapter's own code in source order, from the autograder material: its
narrative code cells (``{"kind": "code", "source"}``) and check cells (``{"kind": "check",
"label", "occurrence", "source", "names", "exercise_kind"}``), without the solutions. The
narrative runs once, in an IPython shell of this process; at each check, for every student
in turn, the check's source runs in a copy of the shell's namespace where the names it reads
(``names``) are bound to that student's decoded answers (:mod:`.answers`). No code of a
student runs here: answers are data, decoded by a parser that evaluates nothing. Each
student's answers arrive as JSON text and are parsed and decoded inside that student's
check, under its time limit: an answer that is slow or too deep to parse costs its own
check, never the chapter's narrative or another student's checks.

Events, one JSON line each on standard output (fd 1 is pointed at standard error for
everything else the chapter prints)::

    {"event": "code_begin", "index": i}                        a narrative cell starts
    {"event": "code", "index": i, "status": "ok"|"error", "ename", "evalue"}
    {"event": "begin", "index": i, "student": s}
    {"event": "result", "index": i, "student": s, "status": status, "ename", "evalue"}
    {"event": "done"}

``status``: ``ok`` (the check passed), ``fail`` (its assertion failed), ``error`` (it raised),
``refused`` (the answer is not accepted data: ``evalue`` says why), ``missing`` (the name was
not defined), ``blank`` (the answer is ``None``), ``timeout`` (the check ran longer than
``check_timeout`` and was interrupted). A check that never returns from C code is stopped by
the grader, which starts the checker again with ``skip`` holding what was already done.
"""

from __future__ import annotations

import json
import signal
import sys

from ._worker import begin
from .answers import AnswerError, check_kind, decode


class CheckTimeout(BaseException):
    """Raised in a check that ran past its time limit (SIGALRM); a ``BaseException``, so
    that neither the check's own ``except Exception`` nor SymPy's catches it."""


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    class CheckerShell(InteractiveShell):
        """A terminal-less IPython shell; ``%matplotlib inline`` needs no GUI loop."""

        def enable_gui(self, gui=None):
            return None

    return CheckerShell.instance()


def _message(e: BaseException) -> str:
    return str(e)[:2000]


def _bind(item: dict, namespace: dict, text: str) -> tuple[dict | None, dict | None]:
    """``(space, None)``: a copy of ``namespace`` with the check's names bound to the
    answers decoded from ``text`` (JSON); or ``(None, result)``, the result saying why the
    check cannot run."""
    try:
        encoded = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError, MemoryError) as e:
        encoded = None
        why = f"the answers are not readable data ({type(e).__name__})"
    else:
        why = "the answers are not readable data"
    if not isinstance(encoded, dict):
        return None, {"status": "refused", "ename": "AnswerError", "evalue": why}
    space = dict(namespace)
    for name in item["names"]:
        if name not in encoded:
            return None, {"status": "missing", "ename": "NameError",
                          "evalue": f"name {name!r} is not defined"}
        try:
            value = decode(encoded[name])
            check_kind(value, item.get("exercise_kind", ""))
        except RecursionError:
            return None, {"status": "refused", "ename": "AnswerError",
                          "evalue": f"{name}: the answer is too deeply nested"}
        except AnswerError as e:
            status = "missing" if str(e) == "not defined" else "refused"
            return None, {"status": status, "ename": "AnswerError",
                          "evalue": f"{name}: {_message(e)}"}
        if value is None:
            return None, {"status": "blank", "ename": "", "evalue": f"{name} is None"}
        space[name] = value
    return space, None


def _run_check(item: dict, namespace: dict, encoded: str, timeout: float) -> dict:
    """One check on one student's answers: ``{"status", "ename", "evalue"}``. Decoding the
    answers and running the check share the time limit."""
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        space, refused = _bind(item, namespace, encoded)
        if refused is not None:
            return refused
        exec(compile(item["source"], f"<check {item['label']}>", "exec"), space)  # noqa: S102
    except CheckTimeout:
        return {"status": "timeout", "ename": "CheckTimeout",
                "evalue": f"the check ran longer than {timeout:g} s"}
    except AssertionError as e:
        return {"status": "fail", "ename": "AssertionError", "evalue": _message(e)}
    except Exception as e:  # noqa: BLE001 -- a check that raises fails, with the reason
        return {"status": "error", "ename": type(e).__name__, "evalue": _message(e)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return {"status": "ok", "ename": "", "evalue": ""}


def main() -> int:
    job, emit = begin()

    def on_alarm(signum, frame):
        raise CheckTimeout

    signal.signal(signal.SIGALRM, on_alarm)
    shell = _shell()
    skip = {(int(i), str(s)) for i, s in job.get("skip", [])}
    answers: dict | None = None  # the second line: read when the first check is reached
    timeout = float(job["check_timeout"])
    for index, item in enumerate(job["program"]):
        if item["kind"] == "code":
            emit(event="code_begin", index=index)
            result = shell.run_cell(item["source"], store_history=False)
            err = result.error_in_exec or result.error_before_exec
            emit(event="code", index=index, status="error" if err else "ok",
                 ename=type(err).__name__ if err else "", evalue=_message(err) if err else "")
            continue
        key = f"{item['label']}/{item['occurrence']}"
        if answers is None:
            try:
                answers = json.loads(sys.stdin.readline() or "{}")
            except (ValueError, RecursionError):  # the grader sends a flat object of texts
                answers = {}
        for student in sorted(answers):
            if (index, student) in skip or key not in answers[student]:
                continue
            emit(event="begin", index=index, student=student)
            result = _run_check(item, shell.user_ns, answers[student][key], timeout)
            emit(event="result", index=index, student=student, **result)
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())

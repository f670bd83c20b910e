"""The grader against links, hostile bytes, deep answers, messy names and being killed.

Unit tests cover finding the submissions (links refused with a row, every other file graded
or named in a warning), text made safe for the terminal, the CSV and UTF-8, the journal a
stopped run resumes from, and the checker's parsing of answers. The integration tests grade,
in one sandboxed run through the command line, submissions that are links to the
instructor edition or to another student's notebook, that print lone surrogates, that are
named with newlines, escape sequences, a spreadsheet formula or Latin-1 bytes, that are
near-misses of the naming rule, and one that writes an answer nested nearly a thousand
levels deep into the grader's event pipe; each scores what its own answers earn and the
honest students keep full marks. A last test kills a run halfway and resumes it.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from test_assignments import ATTACK_TOY, FULL, HONEST, NONE, Attack, _attack_notebook

from attnclust.assignments import (
    ExerciseGrade,
    Gradebook,
    GradingError,
    autograder_material,
    discover_submissions,
    instructor_notebook,
    parse_chapter,
    read_submission,
    student_notebook,
    write_csv,
)
from attnclust.assignments import sandbox
from attnclust.assignments._checker import _bind
from attnclust.assignments.gradebook import atomic_write
from attnclust.assignments._text import csv_cell, file_name, printable, utf8
from attnclust.assignments.answers import MAX_JSON_DEPTH, json_depth

ROOT = Path(__file__).resolve().parents[1]


def _touch(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---- finding the submissions -------------------------------------------------------------

def test_links_are_refused_with_a_row_that_says_why(tmp_path):
    key = _touch(tmp_path / "key" / "instructor.ipynb")
    subs = tmp_path / "subs"
    victim = _touch(subs / "vic.ipynb")
    (subs / "sym__toy.ipynb").symlink_to(key)
    (subs / "copycat.ipynb").symlink_to(victim)
    os.link(key, subs / "hard.ipynb")
    (subs / "lnfolder").symlink_to(key.parent, target_is_directory=True)
    _touch(subs / "inner" / "x.txt")
    (subs / "inner" / "toy.ipynb").symlink_to(key)
    found = discover_submissions(subs, "toy")
    assert sorted(found.notebooks) == ["vic"]
    assert sorted(found.refused) == ["copycat", "hard", "inner", "lnfolder", "sym"]
    assert "symbolic link" in found.refused["sym"] and "hard links" in found.refused["hard"]
    assert found.students == ["copycat", "hard", "inner", "lnfolder", "sym", "vic"]


def test_reading_refuses_a_link_made_after_discovery(tmp_path):
    key = _touch(tmp_path / "key.ipynb")
    with pytest.raises(GradingError, match="symbolic link"):
        (tmp_path / "late.ipynb").symlink_to(key)
        read_submission(tmp_path / "late.ipynb")
    os.link(key, tmp_path / "hard.ipynb")
    with pytest.raises(GradingError, match="hard links"):
        read_submission(tmp_path / "hard.ipynb")
    os.mkfifo(tmp_path / "pipe.ipynb")
    with pytest.raises(GradingError, match="not a regular file"):
        read_submission(tmp_path / "pipe.ipynb")


def test_every_file_is_graded_or_named_in_a_warning(tmp_path):
    for name in ["carl__toy (1).ipynb", "dina__Toy.ipynb", "eve__toy.ipynb",
                 "eve__toy (1).ipynb", "fay__other.ipynb", "notes.pdf", "gus.IPYNB",
                 ".hidden.ipynb"]:
        _touch(tmp_path / name)
    _touch(tmp_path / "empty" / "readme.txt")
    _touch(tmp_path / "two" / "a.ipynb")
    _touch(tmp_path / "two" / "b.ipynb")
    _touch(tmp_path / ".ipynb_checkpoints" / "x.ipynb")
    found = discover_submissions(tmp_path, "toy")
    assert sorted(found.notebooks) == ["carl", "dina", "eve", "gus"]
    assert found.notebooks["eve"].name == "eve__toy.ipynb"
    text = "\n".join(found.warnings)
    for name in ["carl__toy (1).ipynb", "dina__Toy.ipynb", "eve__toy (1).ipynb",
                 "fay__other.ipynb", "notes.pdf", "empty/", "two/"]:
        assert name in text, name
    assert ".hidden" not in text and "checkpoints" not in text
    assert all("<student>__toy.ipynb" in w for w in found.warnings if "other chapters" not in w)
    assert len(found.warnings) == 7


def test_messy_but_honest_names_are_graded(tmp_path):
    """Names a course meets: a student's name holding two underscores, a file manager's
    copy, a space before the extension, copies in a student's folder; each is graded (the
    near-misses with a warning), none is dropped."""
    for name in ["mary__jane__toy.ipynb", "bob__toy - Copy.ipynb", "gina__toy .ipynb",
                 "hal__toy copy 2.ipynb", "dave/Toy.ipynb", "dave/Toy (1).ipynb"]:
        _touch(tmp_path / name)
    os.utime(tmp_path / "dave" / "Toy.ipynb", (1, 1))  # the older copy
    found = discover_submissions(tmp_path, "toy")
    assert sorted(found.notebooks) == ["bob", "dave", "gina", "hal", "mary__jane"]
    assert found.notebooks["dave"].name == "Toy (1).ipynb"
    text = "\n".join(found.warnings)
    for name in ["bob__toy - Copy.ipynb", "gina__toy .ipynb", "hal__toy copy 2.ipynb",
                 "dave/Toy (1).ipynb", "dave/Toy.ipynb"]:
        assert name in text, name
    assert "mary__jane__toy.ipynb" not in text  # named exactly


def test_one_name_in_two_unicode_forms_is_one_student(tmp_path):
    """"josé" with the accented letter (NFC) and with e + a combining accent (NFD) name one
    student, so two files are the duplicate they are (not two students who print the same);
    a name mixing writing systems (a Cyrillic a in "anna") is graded with a warning."""
    _touch(tmp_path / "jos\u00e9__toy.ipynb")
    _touch(tmp_path / "jose\u0301__toy.ipynb")
    with pytest.raises(GradingError, match="more than one submission for the same student"):
        discover_submissions(tmp_path, "toy")
    (tmp_path / "jose\u0301__toy.ipynb").unlink()
    _touch(tmp_path / "\u0430nna__toy.ipynb")
    _touch(tmp_path / "anna__toy.ipynb")
    found = discover_submissions(tmp_path, "toy")
    assert sorted(found.notebooks) == ["anna", "jos\u00e9", "\u0430nna"]
    assert any("\u0430nna" in w and "cyrillic" in w and "latin" in w for w in found.warnings)
    _touch(tmp_path / "ann\u200ba__toy.ipynb")  # a zero-width space
    found = discover_submissions(tmp_path, "toy")
    assert any("print as nothing" in w for w in found.warnings)


def test_two_unicode_forms_of_one_name_are_said_to_be_that():
    """The duplicate error for one name in two Unicode forms says so: the two file names
    it lists print the same."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        _touch(Path(d) / "jos\u00e9__toy.ipynb")
        _touch(Path(d) / "jose\u0301__toy.ipynb")
        with pytest.raises(GradingError, match="two Unicode forms"):
            discover_submissions(Path(d), "toy")


def test_copies_saved_in_the_same_second_are_ordered_by_their_number(tmp_path):
    """Copies with equal times: the highest copy number is the newest (a browser numbers
    its downloads in order); a notebook that is not a copy is not called an older one."""
    for name in ["eve/Toy (1).ipynb", "eve/Toy (2).ipynb", "eve/notes.ipynb",
                 "hal__toy (1).ipynb", "hal__toy (2).ipynb"]:
        _touch(tmp_path / name)
        os.utime(tmp_path / name, (1000, 1000))
    found = discover_submissions(tmp_path, "toy")
    assert found.notebooks["eve"].name == "Toy (2).ipynb"
    assert found.notebooks["hal"].name == "hal__toy (2).ipynb"
    text = "\n".join(found.warnings)
    assert "eve/notes.ipynb: ignored, not named toy.ipynb" in text
    assert "eve/Toy (1).ipynb: ignored, an older copy" in text


def test_names_are_one_printable_line(tmp_path):
    os.close(os.open(os.fsencode(tmp_path) + b"/jos\xe9__nope.ipynb", os.O_CREAT | os.O_WRONLY))
    _touch(tmp_path / "zed\nzed: 4__other.ipynb")
    _touch(tmp_path / "esc\x1b[2J.txt")
    warnings = discover_submissions(tmp_path, "toy").warnings
    assert all("\n" not in w and "\x1b" not in w for w in warnings)
    assert any("josé__nope" in w for w in warnings) and any("zed\\nzed" in w for w in warnings)


def test_text_is_made_safe_for_terminal_csv_and_utf8():
    assert printable("a\nb\x1b[31m\u202e") == "a\\nb\\x1b[31m\\u202e"
    assert printable("josé: 4/4") == "josé: 4/4"
    assert utf8("x\ud800y") == "x\\ud800y"
    assert [csv_cell(s) for s in ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "ok", "a=b"]] == [
        "'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "ok", "a=b"]
    assert file_name(os.fsdecode(b"jos\xe9")) == "josé"
    assert file_name("josé") == "josé"


def test_the_csv_takes_any_string_and_runs_no_formula(tmp_path):
    grades = [ExerciseGrade("=HYPERLINK(\"http://x\")", "ex-1", 0, 1, "bad \ud800 byte"),
              ExerciseGrade(os.fsdecode(b"jos\xe9"), "ex-1", 1, 1, "-passed")]
    path = write_csv(grades, tmp_path / "g.csv")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["student"] == "'=HYPERLINK(\"http://x\")"
    assert rows[0]["feedback"] == "bad \\ud800 byte" and rows[1]["feedback"] == "'-passed"
    assert rows[1]["student"] == "jos\\udce9"


# ---- the journal: a stopped run resumes ----------------------------------------------------

MATERIAL = {"chapter": "toy", "exercises": [{"label": "ex-1"}, {"label": "ex-2"}]}


def _rows(student, points=(1, 1), final=True):
    return [ExerciseGrade(student, f"ex-{i + 1}", p, 1, "passed" if p else "no", final)
            for i, p in enumerate(points)]


def test_a_gradebook_keeps_final_grades_of_unchanged_files_only(tmp_path):
    out = tmp_path / "grades.csv"
    book = Gradebook(out, MATERIAL, "f1", ["ann", "bob", "cy", "dee"])
    book.record("ann", _rows("ann"), "sha-a")
    book.record("bob", _rows("bob", (0, 1)), "sha-b")
    book.record("cy", _rows("cy", (0, 0), final=False), "sha-c")  # the grader failed
    book.record("dee", _rows("dee", (0, 0)))  # a link: no file to keep grades for
    with open(out, newline="") as f:
        assert [r["student"] for r in csv.DictReader(f)] == ["ann"] * 2 + ["bob"] * 2 + [
            "cy"] * 2 + ["dee"] * 2
    again = Gradebook(out, MATERIAL, "f1", ["ann", "bob", "cy", "dee"])
    assert again.keep("ann", "sha-a") and not again.keep("bob", "sha-b2")
    assert not again.keep("cy", "sha-c") and not again.keep("dee", None)
    assert [g.student for g in again.grades()] == ["ann", "ann"] and again.kept == ["ann"]
    other = Gradebook(out, MATERIAL, "f2", ["ann"])
    assert other.stale and not other.keep("ann", "sha-a")
    assert not Gradebook(out, MATERIAL, "f1", ["ann"], fresh=True).keep("ann", "sha-a")


def test_a_damaged_journal_is_ignored(tmp_path):
    out = tmp_path / "grades.csv"
    Gradebook(out, MATERIAL, "f1", ["ann"]).record("ann", _rows("ann"), "sha-a")
    journal = Gradebook(out, MATERIAL, "f1", ["ann"]).journal
    for damage in ["{", "[]", '{"fingerprint": "f1", "students": {"ann": 5}}',
                   '{"fingerprint": "f1", "students": {"ann": {"file": "sha-a", "rows": '
                   '[{"student": "ann"}]}}}']:
        journal.write_text(damage)
        assert not Gradebook(out, MATERIAL, "f1", ["ann"]).keep("ann", "sha-a"), damage


# ---- answers too deep or malformed ---------------------------------------------------------

def test_json_depth_counts_without_recursion():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert json_depth(deep) == MAX_JSON_DEPTH + 1
    assert json_depth({"t": "list", "v": [{"t": "int", "v": "1"}]}) == 3
    assert json_depth(5) == 0


@pytest.mark.parametrize("text, why", [
    ("[" * 5000 + "]" * 5000, "not readable"),
    ('{"x": ' + '{"t": "list", "v": [' * 400 + "]}" * 400 + "}", "nested"),
    ("not json", "not readable"),
    ("[1, 2]", "not readable"),
])
def test_the_checker_refuses_answers_it_cannot_parse_without_raising(text, why):
    space, result = _bind({"names": ["x"]}, {}, text)
    assert space is None and result["status"] == "refused" and why in result["evalue"]


# ---- one sandboxed run of messy and hostile submissions ------------------------------------

DEEP_EVENT = r'''
import json, os
deep = "[" * 980 + "]" * 980
lines = "".join('{"event": "answer", "index": 999, "label": "ex-toy-%d", "occurrence": 0, '
                '"values": {"ex_toy_%d": %s}}\n' % (i, i, deep) for i in (1, 2, 3))
for fd in os.listdir(f"/proc/{os.getppid()}/fd"):  # the worker's event stream among them
    try:
        with open(f"/proc/{os.getppid()}/fd/{fd}", "w") as f:
            f.write(lines)
    except OSError:
        pass
'''

SURROGATES = r'''
print("lone \ud800 surrogate")
raise ValueError("bad \udcff message")
'''

DICT_KEY = ('ex_toy_1 = {"__import__(\'pathlib\').Path(\'/tmp/attnclust-dict-key\').write_text('
            '\'ran\') or x": 1}')
"""An answer whose dict key is code: a check that computes ``ex_toy_1 - 4*x**3`` makes SymPy
sympify the key, which would run it in the trusted checker."""
SETUP_AGAIN = "import numpy as np\nimport sympy\nx = sympy.Symbol('x', positive=True)"
"""The toy chapter's setup, run again after ``%reset -f`` cleared it."""

# student (as the CSV names it) -> (file name, attack); the file name None: "<student>.ipynb"
MESSY = {
    "ref": (None, Attack("ref", FULL, HONEST)),
    "victim": (None, Attack("victim", FULL, HONEST)),
    "sym_key": (None, Attack("sym_key", NONE, what="a symbolic link to the instructor edition")),
    "hard_key": (None, Attack("hard_key", NONE, what="a hard link to the instructor edition")),
    "copycat": (None, Attack("copycat", NONE, what="a symbolic link to victim's notebook")),
    "surrogates": (None, Attack("surrogates", FULL, HONEST, post=(SURROGATES,),
                                what="prints a lone surrogate, raises with another")),
    "deep": (None, Attack("deep", FULL, HONEST, post=(DEEP_EVENT,),
                          what="writes answers nested 980 deep into the event pipe")),
    "zed\nzed: 4 of 4": (None, Attack("newline", NONE, what="a newline forging a summary line")),
    "esc\x1b[2J\x1b[31m": (None, Attack("escape", NONE, what="terminal escape sequences")),
    "'=HYPERLINK(\"https:x.example\",\"y\")": ("=HYPERLINK(\"https:x.example\",\"y\").ipynb",
                                                   Attack("formula", NONE,
                                                          what="a formula for a name")),
    "josé": (b"jos\xe9.ipynb", Attack("latin1", FULL, HONEST, what="a Latin-1 file name")),
    "carl": ("carl__toy (1).ipynb", Attack("copy_suffix", FULL, HONEST,
                                           what="a browser's second download")),
    "dina": ("dina__Toy.ipynb", Attack("capital", FULL, HONEST,
                                       what="the chapter capitalised")),
    "dict_key": (None, Attack("dict_key", {"ex-toy-1": 0, "ex-toy-2": 1, "ex-toy-3": 1},
                              {**HONEST, "ex_toy_1": DICT_KEY},
                              what="code in a dict key, which SymPy would run in the checker")),
    "resetter": (None, Attack("resetter", FULL, HONEST, pre=("%reset -f", SETUP_AGAIN),
                              what="clears every name (%reset -f) and runs the setup again")),
    "inline": (None, Attack("inline", FULL, {k: v for k, v in HONEST.items() if k != "ex_toy_2"},
                            what="types ex_toy_2's answer in its check cell")),
    "late": (None, Attack("late", FULL, post=("\n".join(HONEST.values()),),
                          what="answers every exercise in one cell at the end")),
    "mary__jane": ("mary__jane__toy.ipynb", Attack("underscores", FULL, HONEST,
                                                  what="two underscores in the student's name")),
    "bob": ("bob__toy - Copy.ipynb", Attack("file_copy", FULL, HONEST,
                                           what="a file manager's copy")),
    "l" * 240: (None, Attack("long_name", FULL, HONEST, what="a 246-byte file name")),
}


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    """Grade :data:`MESSY` once through the command line, in sandboxes."""
    root = tmp_path_factory.mktemp("messy")
    book = root / "book"
    _touch(book / "chapters" / "toy.md", ATTACK_TOY)
    chapter = parse_chapter(book / "chapters" / "toy.md")
    student = student_notebook(chapter)
    key = root / "key" / "instructor.ipynb"
    key.parent.mkdir()
    nbformat.write(instructor_notebook(chapter), key)
    subs = root / "subs"
    subs.mkdir()
    for name, (fname, attack) in MESSY.items():
        target = os.fsencode(subs) + b"/" + (fname if isinstance(fname, bytes) else
                                             os.fsencode(fname or f"{name}.ipynb"))
        if name == "sym_key":
            os.symlink(key, target)
        elif name == "hard_key":
            os.link(key, target)
        elif name == "copycat":
            os.symlink(subs / "victim.ipynb", target)
        elif name == "inline":  # the answer typed under the check cell's header
            nb = json.loads(_attack_notebook(student, attack))
            cell = next(c for c in nb["cells"] if "".join(c["source"]).startswith("# check ex-toy-2"))
            header, _, rest = "".join(cell["source"]).partition("\n")
            cell["source"] = f"{header}\n{HONEST['ex_toy_2']}\n{rest}"
            with open(target, "wb") as f:
                f.write(json.dumps(nb).encode())
        else:
            with open(target, "wb") as f:
                f.write(_attack_notebook(student, attack))
    out = root / "out" / "grades.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "attnclust.assignments", "--root", str(book), "grade",
         str(subs), "--chapter", "toy", "--out", str(out), "--timeout", "120",
         "--cell-timeout", "20", "--check-timeout", "10", "--jobs", "2",
         "--executed", str(root / "executed")],
        capture_output=True, cwd=root, timeout=900)
    with open(out, newline="", encoding="utf-8") as f:
        rows = {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}
    return {"proc": proc, "rows": rows, "executed": root / "executed"}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(MESSY))
def test_each_messy_submission_scores_what_it_earned(messy, name):
    attack = MESSY[name][1]
    rows = messy["rows"]
    assert {ex: int(float(rows[name, ex]["points"])) for ex in FULL} == attack.expect, (
        [rows[name, ex]["feedback"] for ex in FULL], messy["proc"].stderr.decode()[-2000:])


@pytest.mark.integration
def test_the_messy_run_gives_every_student_rows_and_a_clean_summary(messy):
    proc, rows = messy["proc"], messy["rows"]
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert proc.returncode == 0, err[-3000:]
    assert len(rows) == 3 * len(MESSY)
    assert "zed: 4 of 4: 0/4" not in out.splitlines() and "zed\\nzed: 4 of 4: 0/4" in out
    assert "\x1b" not in out + err and "\ud800" not in out
    assert all(not r[c].startswith(("=", "+", "-", "@")) for r in rows.values() for c in r)
    assert "symbolic link" in rows["sym_key", "ex-toy-1"]["feedback"]
    assert "hard links" in rows["hard_key", "ex-toy-1"]["feedback"]
    assert "carl__toy (1).ipynb" in err and "dina__Toy.ipynb" in err
    assert all(rows[s, ex]["feedback"] == "passed" for s in ("ref", "victim") for ex in FULL)
    assert "is a dict" in rows["dict_key", "ex-toy-1"]["feedback"]
    assert "bob__toy - Copy.ipynb" in err
    saved = sorted(p.name for p in messy["executed"].glob("*.ipynb"))
    assert len(saved) == len(MESSY) - 3 and all(len(n.encode()) <= 200 for n in saved)


def _toy_submissions(root: Path, n_fast: int, slow_seconds: float) -> tuple[Path, Path]:
    book = root / "book"
    _touch(book / "chapters" / "toy.md", ATTACK_TOY)
    chapter = parse_chapter(book / "chapters" / "toy.md")
    subs = root / "subs"
    subs.mkdir()
    for i in range(n_fast):
        (subs / f"fast{i}.ipynb").write_bytes(_attack_notebook(
            student_notebook(chapter), Attack(f"fast{i}", FULL, HONEST)))
    (subs / "slow.ipynb").write_bytes(_attack_notebook(student_notebook(chapter), Attack(
        "slow", FULL, HONEST, post=(f"import time\ntime.sleep({slow_seconds})",))))
    return book, subs


@pytest.mark.integration
def test_a_killed_run_keeps_what_it_graded_and_a_rerun_finishes(tmp_path):
    """SIGKILL once the first grades are on disk: the CSV is whole; the same command again
    keeps those grades (without running their notebooks again) and grades the rest."""
    book, subs = _toy_submissions(tmp_path, 2, 60)
    out = tmp_path / "grades.csv"
    argv = [sys.executable, "-m", "attnclust.assignments", "--root", str(book), "grade",
            str(subs), "--chapter", "toy", "--out", str(out), "--timeout", "120",
            "--jobs", "1"]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    deadline = time.monotonic() + 600
    graded: set = set()
    while time.monotonic() < deadline and first.poll() is None:
        if out.exists():
            with open(out, newline="") as f:
                graded = {r["student"] for r in csv.DictReader(f)}
            if {"fast0", "fast1"} <= graded:
                break
        time.sleep(0.2)
    assert first.poll() is None, first.communicate()
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert graded == {"fast0", "fast1"}  # the slow one is still running
    (subs / "slow.ipynb").write_bytes((subs / "slow.ipynb").read_bytes().replace(
        b"time.sleep(60)", b"time.sleep(0)"))
    second = subprocess.run(argv, capture_output=True, timeout=600)
    err = second.stderr.decode()
    assert second.returncode == 0, err
    assert "kept the grades of 2 submissions" in err
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted({r["student"] for r in rows}) == ["fast0", "fast1", "slow"]
    assert len(rows) == 9 and all(r["points"] == r["max_points"] for r in rows)
    second_summary = second.stdout.decode()
    assert "slow: 4/4" in second_summary and "fast0: 4/4" in second_summary


def test_grade_submissions_warns_about_names_through_warnings(tmp_path, monkeypatch):
    from attnclust.assignments import grading

    _touch(tmp_path / "book" / "chapters" / "toy.md", ATTACK_TOY)
    material = autograder_material(parse_chapter(tmp_path / "book" / "chapters" / "toy.md"))
    _touch(tmp_path / "subs" / "notes.pdf")
    link = tmp_path / "subs" / "ann.ipynb"
    link.symlink_to(tmp_path / "book" / "chapters" / "toy.md")
    monkeypatch.setattr(grading, "grade_notebooks", lambda *a, **k: pytest.fail("graded"))
    monkeypatch.setattr(grading, "require_sandbox", lambda hidden=(): None)
    with pytest.warns(UserWarning, match="notes.pdf"):
        grades = grading.grade_submissions(tmp_path / "subs", material,
                                           out=tmp_path / "g.csv")
    assert [g.points for g in grades] == [0, 0, 0] and "symbolic link" in grades[0].feedback
    assert json.loads(Gradebook(tmp_path / "g.csv", material, "x", []).journal.read_text())


# ---- a check of the real book --------------------------------------------------------------

def _real_check(stem: str, label: str) -> str:
    material = autograder_material(parse_chapter(ROOT / "chapters" / f"{stem}.md"))
    return next(i["source"] for i in material["program"]
                if i["kind"] == "check" and i["label"] == label)


@pytest.mark.parametrize("answer, accepted", [
    (([0.9, 0.1], [[0, 0], [2, 0]], 1.0, [1.5, 0]), True),  # the worked answer
    (([0.9, 0.1], [[0, 0], [2e-150, 0]], 1e-150, [1.5e-150, 0]), True),  # the same, scaled
    (([0.9, 0.1], [[0, 0], [2, 0]], 1e-200, [1.5, 0]), False),  # sigma squared underflows
    (([0.9, 0.1], [[0, 0], [2, 0]], 1e-3, [1.5, 0]), False),  # both rules pick mu_2
    (([0.5, 0.5], [[0, 0], [2, 0]], 1.0, [1.0, 0]), False),  # a tie, not a disagreement
    (([0.9, 0.1], [[0, 0], [2, 0]], float("nan"), [1.5, 0]), False),
])
def test_the_nearest_centroid_check_is_not_fooled_by_underflow(answer, accepted):
    import numpy as np

    source = _real_check("mixtures", "ex-mixtures-5")
    space = {"np": np, "ex_mixtures_5": tuple(np.asarray(a, float) for a in answer)}
    if accepted:
        exec(source, space)  # noqa: S102
    else:
        with pytest.raises(AssertionError, match="ex-mixtures-5"):
            exec(source, space)  # noqa: S102


# ---- memory: the whole sandbox, memfd and child processes included --------------------------

MEMFD = '''
import os
fds = [os.memfd_create("hoard") for _ in range(2)]  # each under the file size limit
for fd in fds:
    for _ in range(85):  # 2 x 0.85 GiB in 10 MiB writes: pages that no RLIMIT_AS counts
        os.write(fd, b"\\1" * (10 << 20))
print("HOARDED")
'''

TWO_PROCESSES = '''
import subprocess, sys
hog = "b = bytearray(900 << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(30)"
first = subprocess.Popen([sys.executable, "-c", hog])
b = bytearray(900 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
import time
time.sleep(3)
if first.poll() is None:  # both still alive: 1.8 GiB held
    print("HOARDED")
first.kill()
'''


@pytest.mark.integration
@pytest.mark.parametrize("hog", [MEMFD, TWO_PROCESSES], ids=["memfd", "two_processes"])
def test_the_memory_limit_holds_for_the_whole_sandbox(tmp_path, hog):
    """1.7 GiB held in a memfd, or 1.8 GiB in two processes of 0.9 GiB, under a limit of
    1.5 GiB: the notebook is stopped, with a reason that names the limit, and the honest
    student graded beside it keeps full marks."""
    from attnclust.assignments import grading, sandbox

    why = sandbox.memory_cgroups()
    if why is not None and os.geteuid() != 0:
        pytest.skip(f"not root and {why}")
    assert why is None, why  # as root (CI, make test here) the cgroup must be there
    _touch(tmp_path / "chapters" / "toy.md", ATTACK_TOY)
    chapter = parse_chapter(tmp_path / "chapters" / "toy.md")
    student = student_notebook(chapter)
    notebooks = {"hog": json.loads(_attack_notebook(student, Attack("hog", NONE, HONEST,
                                                                     pre=(hog,)))),
                 "ref": json.loads(_attack_notebook(student, Attack("ref", FULL, HONEST)))}
    executed = tmp_path / "executed"
    grades = grading.grade_notebooks(notebooks, autograder_material(chapter), timeout=120,
                                     limits=sandbox.Limits(memory_bytes=3 << 29), jobs=2,
                                     executed_dir=executed)
    by = {(g.student, g.exercise): g for g in grades}
    assert all(by["ref", ex].points == by["ref", ex].max_points for ex in FULL)
    hog_feedback = [by["hog", ex].feedback for ex in FULL]
    saved = executed / "hog.ipynb"
    printed = "" if not saved.exists() else "".join(
        o.get("text", "") for c in nbformat.read(saved, as_version=4).cells
        if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "stream")
    assert "HOARDED" not in printed, hog_feedback
    if hog is MEMFD:  # the kernel holding the memfd is the one stopped
        assert sum(by["hog", ex].points for ex in FULL) == 0, hog_feedback
        assert any("1.5 GiB of memory" in f for f in hog_feedback), hog_feedback


# ---- the event stream: deep answers written into it ------------------------------------------

def test_an_answer_event_nested_too_deep_is_refused_not_stored():
    from attnclust.assignments.grading import _record, _Run

    run = _Run()
    deep: list = []
    for _ in range(MAX_JSON_DEPTH + 5):
        deep = [deep]
    honest = {"x": {"t": "int", "v": "1"}}
    _record(run, {"event": "answer", "label": "ex-1", "occurrence": 0, "index": 3,
                  "values": honest})
    _record(run, {"event": "answer", "label": "ex-1", "occurrence": 0, "index": 9,
                  "values": {"x": deep}})
    assert json.loads(run.answers["ex-1", 0][1]) == honest  # the forged one did not replace it
    assert "nested more than" in run.export_errors["ex-1", 0][1]


def test_the_worker_makes_itself_not_dumpable():
    code = ("import ctypes, sys; sys.path.insert(0, sys.argv[1]); import _worker; "
            "_worker.not_dumpable(); print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))")
    done = subprocess.run([sys.executable, "-c", code,
                           str(ROOT / "attnclust" / "assignments")],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "0", done.stderr  # PR_GET_DUMPABLE


REPORTED_EVENT = DEEP_EVENT.replace("    except OSError:\n        pass",
                                    "        print('WROTE')\n    except OSError:\n        pass")


@pytest.mark.integration
def test_deep_answers_written_into_the_event_pipe_cost_no_one_else(tmp_path):
    """Without a sandbox a root grader's kernel may write into the worker's event pipe (as a
    kernel of the same user may where the worker is not protected): answers nested 980
    deep, forged for every exercise, are refused; the honest student graded in the same
    checker keeps full marks."""
    from attnclust.assignments import grading

    _touch(tmp_path / "chapters" / "toy.md", ATTACK_TOY)
    chapter = parse_chapter(tmp_path / "chapters" / "toy.md")
    student = student_notebook(chapter)
    notebooks = {"deep": json.loads(_attack_notebook(student, Attack(
                     "deep", FULL, HONEST, post=(REPORTED_EVENT,)))),
                 "ref": json.loads(_attack_notebook(student, Attack("ref", FULL, HONEST)))}
    executed = tmp_path / "executed"
    grades = grading.grade_notebooks(notebooks, autograder_material(chapter), timeout=120,
                                     unsafe=True, executed_dir=executed)
    assert [g.points for g in grades] == [2, 1, 1, 2, 1, 1], [g.feedback for g in grades]
    if os.geteuid() == 0:  # the attack did reach the pipe: the test tests something
        assert "WROTE" in (executed / "deep.ipynb").read_text()


# ---- scoring: several checks of one exercise, answers set late, oversized events ----------

def _two_check_material() -> dict:
    program = [{"kind": "check", "label": "ex-a", "occurrence": occ, "names": ["ex_a"],
                "exercise_kind": "coding", "source": f"# check ex-a points={pts}\nassert True"}
               for occ, pts in ((0, 1), (1, 2))]
    return {"exercises": [{"label": "ex-a", "variable": "ex_a", "points": 3.0, "number": 1,
                           "kind": "coding"}], "program": program}


def _answer(value: int | None) -> str:
    return json.dumps({"ex_a": {"t": "none"} if value is None else {"t": "int", "v": str(value)}})


@pytest.mark.parametrize("statuses, points", [
    (("ok", "ok"), 3.0),
    (("ok", "fail"), 1.0),     # the points of the check cells it passes
    (("fail", "ok"), 2.0),
    (("fail", "fail"), 0.0),
])
def test_an_exercise_earns_the_points_of_the_checks_it_passes(statuses, points):
    from attnclust.assignments.grading import _Run, _score, _Settings

    material = _two_check_material()
    run = _Run(answers={("ex-a", occ): (5 + occ, _answer(1)) for occ in (0, 1)})
    results = {(i, "s"): {"status": st, "ename": "", "evalue": "wrong"}
               for i, st in enumerate(statuses)}
    settings = _Settings(60, 20, 10, True, sandbox.Limits())
    [grade] = _score("s", material, run, set(), results, {}, settings)
    assert grade.points == points and grade.max_points == 3.0
    assert (grade.feedback == "passed") == (points == 3.0), grade.feedback


def test_every_check_of_an_exercise_grades_its_answer_at_the_last_check_cell():
    """An exercise tested by two check cells is graded on one answer, the one at its last
    check cell: an answer switched between the checks to pass each cannot pass both, and an
    honest correction made before the second check counts for both."""
    from attnclust.assignments.grading import _record, _Run, _settle

    run = _Run()
    for occ, value in ((0, 1), (1, 2)):
        _record(run, {"event": "answer", "index": 3 + occ, "label": "ex-a", "occurrence": occ,
                      "values": {"ex_a": {"t": "int", "v": str(value)}}})
    _settle(run)
    assert [index for index, _ in run.answers.values()] == [3, 4]  # each check keeps its place
    assert [json.loads(text) for _, text in run.answers.values()] == [{"ex_a": {"t": "int", "v": "2"}}] * 2


def test_an_answer_with_a_huge_string_is_refused_before_the_checker():
    """Every student's answers go to the checker together: a string answer over the
    checker's limit is refused when it arrives (an export error of its exercise), so it
    cannot cost a round of other students' checks its memory; arrays keep their own limit."""
    from attnclust.assignments.answers import MAX_ARRAY_BYTES, MAX_STRING
    from attnclust.assignments.grading import _record, _Run

    run = _Run()
    huge = {"x": {"t": "list", "v": [{"t": "str", "v": "\"" * (MAX_STRING + 1)}]}}
    array = {"x": {"t": "ndarray", "npy": "A" * (MAX_STRING * 4)}}
    too_big = {"x": {"t": "ndarray", "npy": "A" * (MAX_ARRAY_BYTES * 4 // 3 + 17)}}
    for label, values in (("ex-a", huge), ("ex-b", array), ("ex-c", too_big)):
        _record(run, {"event": "answer", "index": 1, "label": label, "occurrence": 0, "values": values})
    assert set(run.answers) == {("ex-b", 0)}
    assert "string longer than" in run.export_errors["ex-a", 0][1]
    assert "array is larger than" in run.export_errors["ex-c", 0][1]


def test_an_answer_set_after_its_check_cell_is_graded_at_the_end():
    """An answer that is unset (None or undefined) where its check cell is, and set by the
    end of the notebook (all answers in one last cell, say), is graded with its final
    value; one set at its check cell keeps that value."""
    from attnclust.assignments.grading import _record, _Run, _settle

    run = _Run()
    for label, here, end in (("ex-a", None, 3), ("ex-b", 1, 2), ("ex-c", "missing", 4),
                             ("ex-d", None, None)):
        for final, value in ((False, here), (True, end)):
            enc = ({"t": "missing"} if value == "missing" else {"t": "none"} if value is None
                   else {"t": "int", "v": str(value)})
            _record(run, {"event": "answer", "index": 9 if final else 1, "label": label,
                          "occurrence": 0, "final": final, "values": {"x": enc}})
    _settle(run)
    got = {label: json.loads(text)["x"] for (label, _), (_, text) in run.answers.items()}
    assert got == {"ex-a": {"t": "int", "v": "3"}, "ex-b": {"t": "int", "v": "1"},
                   "ex-c": {"t": "int", "v": "4"}, "ex-d": {"t": "none"}}
    assert run.final_answers == {}


def test_an_event_too_large_to_parse_is_an_export_error_not_a_memory_cost():
    """A line of millions of JSON values is not parsed (parsing would hold them all in the
    grader's memory): it becomes an export error of its exercise."""
    from attnclust.assignments.grading import MAX_EVENT_TOKENS, _oversized, _tokens

    head = '{"event": "answer", "index": 7, "label": "ex-toy-1", "occurrence": 0, "values": {"ex_toy_1": '
    line = (head + "[" + "[]," * (MAX_EVENT_TOKENS // 2) + "[]]}}\n").encode()
    assert _tokens(line) > MAX_EVENT_TOKENS
    assert _oversized(line) == {"event": "export_error", "index": 7, "label": "ex-toy-1",
                                "occurrence": 0, "ename": "AnswerError",
                                "evalue": "the answer holds more than 1,000,000 values"}
    assert _oversized(line.replace(b'"values"', b'"final": true, "values"')) is None
    assert _oversized(b"[" * 100) is None


def test_an_executed_notebook_with_a_name_too_long_is_saved_under_a_short_one(tmp_path):
    """A legal 255-byte submission name: its executed notebook gets a bounded name (a
    temporary file beside it must fit too), and a notebook that cannot be saved is
    reported, never an error that ends the run."""
    from attnclust.assignments.grading import MAX_NAME_BYTES, _save_executed, executed_name

    long_a, long_b = "a" * 240 + "1", "a" * 240 + "2"
    assert executed_name("bob") == "bob.ipynb"
    names = {executed_name(long_a), executed_name(long_b)}
    assert len(names) == 2 and all(len(n.encode()) <= MAX_NAME_BYTES for n in names)
    nb = nbformat.v4.new_notebook()
    _save_executed(nb, tmp_path / executed_name(long_a))
    assert nbformat.read(tmp_path / executed_name(long_a), as_version=4).cells == []
    atomic_write(tmp_path / ("b" * 249 + ".ipynb"), "{}")  # a 255-byte name fits
    (tmp_path / "ro").mkdir(mode=0o500)
    _save_executed(nb, tmp_path / "ro" / "sub" / ("c" * 300 + ".ipynb"))  # reported, no raise

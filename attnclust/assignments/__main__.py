"""Command line: ``python -m attnclust.assignments build|grade ...`` (see ``--help``).

Parsing the arguments needs only the standard library; each command first checks that the
``[assignments]`` extra is installed and otherwise exits with one line saying so. Every
error is one line on standard error and a non-zero exit status (2 for a usage error, 1 for
anything else), never a traceback; ``ATTNCLUST_DEBUG=1`` shows the traceback of an
unexpected error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

from .._cli import OneLineParser, fail, positive_float, positive_int
from . import EXTRA_MODULES


def require_extra() -> None:
    """Exit (status 1, one line on stderr) unless every module of the ``[assignments]`` extra
    is installed."""
    missing = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"error: the assignments commands need the [assignments] extra (missing: "
                 f"{', '.join(missing)}); install it with: pip install 'attnclust[assignments]'")


class CommandError(Exception):
    """An error of a command's input, reported as one line."""


def _chapter_source(root: Path, stem: str) -> Path:
    if not root.is_dir():
        raise CommandError(f"--root {root}: no such folder")
    src = root / "chapters" / f"{stem}.md"
    if not src.is_file():
        raise CommandError(f"no chapter source {src} (is --root the book's root folder, and "
                           f"{stem!r} a chapter?)")
    return src


def _material(args) -> dict:
    from .grading import validate_material

    if args.material:
        path = Path(args.material)
        if not path.is_file():
            raise CommandError(f"--material {path}: no such file")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CommandError(f"--material {path} is not valid JSON ({e})") from e
        material = validate_material(data, f"--material {path}")
        if material["chapter"] != args.chapter:
            raise CommandError(f"--material {path} is for the chapter "
                               f"{material['chapter']!r}, not {args.chapter!r}")
        return material
    from .editions import autograder_material
    from .source import parse_chapter

    return autograder_material(parse_chapter(_chapter_source(Path(args.root), args.chapter)))


def cmd_build(args) -> int:
    """Write the editions of each chapter, with the values of the book's build
    (:mod:`.built`): a chapter whose build is missing or older than it is reported in one
    line naming ``make book``, and the others are written."""
    require_extra()
    from . import course_chapters
    from .built import BookNotBuilt, chapter_values
    from .editions import points_summary, write_editions
    from .grading import check_output_path
    from .source import parse_chapter

    root = Path(args.root)
    if not args.chapters and not (root / "_toc.yml").is_file():
        raise CommandError(f"--root {root} has no _toc.yml: give the book's root folder, or "
                           "name the chapters with --chapters")
    stems = args.chapters or course_chapters(root)
    build_dir = Path(args.build_dir) if args.build_dir else root / "_build"
    check_output_path(args.out, folder=True)
    status = 0
    for stem in stems:
        try:
            src = _chapter_source(root, stem)
            chapter = parse_chapter(src)
            glued = chapter_values(chapter, build_dir, src.relative_to(root).with_suffix("")
                                   .as_posix())
        except (CommandError, BookNotBuilt) as e:
            fail(e)
            status = 1
            continue
        paths = write_editions(chapter, args.out, hidden_checks=not args.visible_checks,
                               glued=glued)
        n = len(chapter.exercises)
        shown = " (checks visible)" if args.visible_checks else " (checks hidden)"
        print(f"{stem}: {n} exercise{'s' * (n != 1)}, {points_summary(chapter)} -> "
              f"{paths['student']}{shown}, {paths['practice']}, {paths['instructor']}")
        for problem in chapter.problems:
            print(f"  warning: {stem}: {problem}", file=sys.stderr)
        if n == 0:
            print(f"  warning: {stem}: no exercises", file=sys.stderr)
    return status


def cmd_grade(args) -> int:
    require_extra()
    from tqdm.auto import tqdm

    from ._text import printable
    from .gradebook import totals
    from .grading import check_output_path, grade_submissions, require_sandbox
    from .sandbox import Limits
    from .submissions import discover_submissions

    subs = discover_submissions(args.submissions, args.chapter)
    material = _material(args)
    if not material["exercises"]:
        raise CommandError(f"chapter {material['chapter']} has no exercises")
    for line in subs.warnings:
        print(f"warning: {line}", file=sys.stderr)
    if not subs.students:
        raise CommandError(f"no submissions for chapter {material['chapter']} in "
                           f"{args.submissions}")
    out = check_output_path(args.out)
    if args.executed:
        check_output_path(args.executed, folder=True)
    hidden = [p for p in (Path(args.root) / "chapters", args.material, args.out,
                          args.executed, args.submissions) if p]
    if args.unsafe:
        print("warning: --unsafe: the submissions run without a sandbox, as your user, and "
              "see what you see", file=sys.stderr)
    else:
        require_sandbox(hidden)
    bar = tqdm(total=len(subs.notebooks), desc="grading", unit="notebook", file=sys.stderr,
               disable=None)
    try:
        grades = grade_submissions(
            subs, material, out=out, fresh=args.fresh, timeout=args.timeout,
            cell_timeout=args.cell_timeout, check_timeout=args.check_timeout, jobs=args.jobs,
            executed_dir=args.executed, unsafe=args.unsafe, hidden=hidden,
            limits=Limits(memory_bytes=int(args.memory * (1 << 30))),
            progress=lambda student: bar.update(),
            log=lambda line: bar.write(printable(line), file=sys.stderr))
    finally:
        bar.close()
    # the checks' points, then the written parts' (rows of 0 points for the instructor)
    for student, t in totals(grades).items():
        written = (f" from the checks, and {t.written_max:g} points of written parts to grade "
                   "against the rubrics (rows with a part in the CSV)" if t.written_max else "")
        print(f"{printable(student)}: {t.checked:g}/{t.checked_max:g}{written}")
    print(f"wrote {printable(out)}")
    unchecked = sorted({g.student for g in grades if not g.final})
    if unchecked:
        print(f"error: the grader could not check {len(unchecked)} submission"
              f"{'s' * (len(unchecked) != 1)} ({', '.join(map(printable, unchecked))}); "
              "their rows say why: run the same command again to grade them",
              file=sys.stderr)
        return 1
    return 0


def _configure(p: argparse.ArgumentParser) -> None:
    """Add ``--root`` and the ``build`` and ``grade`` subcommands to ``p``."""
    p.add_argument("--root", default=".", help="book root (holds _toc.yml and chapters/)")
    sub = p.add_subparsers(dest="assignments_command", required=True, metavar="COMMAND",
                           parser_class=OneLineParser)

    b = sub.add_parser("build", help="write student and instructor notebooks and the "
                                     "autograder material (after make book)")
    b.add_argument("--out", required=True, help="output folder")
    b.add_argument("--chapters", nargs="*", help="chapter stems (default: the Theory and "
                                                 "Experiments chapters of _toc.yml)")
    b.add_argument("--build-dir", help="the book's build folder, whose numbers and claim "
                                       "sentences the editions show (default: ROOT/_build, "
                                       "written by make book)")
    shown = b.add_mutually_exclusive_group()
    shown.add_argument("--visible-checks", action="store_true",
                       help="the student edition shows its checks, as the practice edition "
                            "does (for a course that grades nothing by code); by default it "
                            "says what each check verifies, without its code and expected "
                            "values")
    shown.add_argument("--hidden-checks", action="store_true",
                       help="the default (kept for older scripts): the student edition hides "
                            "its checks")
    b.set_defaults(func=_guarded(cmd_build))

    g = sub.add_parser("grade", help="grade a folder of submitted notebooks into a CSV")
    g.add_argument("submissions", help="folder: <student>__<chapter>.ipynb, <student>.ipynb "
                                       "or <student>/<chapter>.ipynb")
    g.add_argument("--chapter", required=True, help="chapter stem, e.g. mixtures")
    g.add_argument("--out", default="grades.csv", help="CSV to write (default grades.csv)")
    g.add_argument("--timeout", type=positive_float, default=600.0,
                   help="time limit per notebook in seconds (default 600)")
    g.add_argument("--cell-timeout", type=positive_float, default=None,
                   help="time limit per cell in seconds (default: --timeout)")
    g.add_argument("--check-timeout", type=positive_float, default=60.0,
                   help="time limit of one check on one student's answers (default 60)")
    g.add_argument("--jobs", type=positive_int, default=1, help="notebooks graded at a time")
    g.add_argument("--memory", type=positive_float, default=8.0,
                   help="address space of each process of a submission, in GiB (default 8)")
    g.add_argument("--material", help="autograder JSON written by build (default: read the "
                                      "checks from chapters/<chapter>.md)")
    g.add_argument("--executed", help="folder where the executed notebooks are saved")
    g.add_argument("--fresh", action="store_true",
                   help="grade every submission again (default: a run with the same --out "
                        "keeps the grades of unchanged submissions graded before, so that "
                        "an interrupted run resumes)")
    g.add_argument("--unsafe", action="store_true",
                   help="grade without a sandbox where none can be made (the notebooks run "
                        "as your user and see your files: only for notebooks you trust)")
    g.set_defaults(func=_guarded(cmd_grade))


    h = sub.add_parser("student-html", help="copy the built HTML book without its solutions "
                                            "(after make book)")
    h.add_argument("--html", default="_build/html", help="the built book (default _build/html)")
    h.add_argument("--out", default="_build/student",
                   help="folder to write, replaced if it exists (default _build/student)")
    h.set_defaults(func=_guarded(cmd_student_html))


def cmd_student_html(args) -> int:
    """Copy the built book without its solution blocks (:mod:`.student_html`)."""
    from .student_html import student_book

    removed = student_book(args.html, args.out)
    print(f"{args.out}: the book without its solutions ({sum(removed.values())} solution "
          f"blocks removed from {len(removed)} pages, the page sources and notebooks left out)")
    return 0


_DESCRIPTION = "Student/instructor notebooks and autograding of the book's exercises."


def add_parser(sub) -> None:
    """Add the ``assignments`` subcommand to the ``python -m attnclust`` parser's ``sub``."""
    _configure(sub.add_parser("assignments", help="student/instructor notebooks and "
                                                  "autograding of the exercises",
                              description=_DESCRIPTION))


def _guarded(command):
    """``command`` (args -> exit status) with every error reported as one line."""

    def run(args) -> int:
        from .sandbox import SandboxUnavailable

        try:
            return command(args)
        except KeyboardInterrupt:
            return fail("interrupted", 130)
        except (CommandError, SandboxUnavailable, ValueError, OSError) as e:
            if os.environ.get("ATTNCLUST_DEBUG"):
                raise
            return fail(e)
        except Exception as e:  # noqa: BLE001 -- one line, not a traceback, even for a bug
            if os.environ.get("ATTNCLUST_DEBUG"):
                raise
            return fail(f"unexpected {type(e).__name__}: {e} (ATTNCLUST_DEBUG=1 shows where)")

    run.__name__ = command.__name__
    return run


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m attnclust.assignments", description=_DESCRIPTION)
    _configure(p)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

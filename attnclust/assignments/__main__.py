"""Command line: ``python -m attnclust.assignments build|grade ...`` (see ``--help``).

Parsing the arguments needs only the standard library; each command first checks that the
``[assignments]`` extra is installed and otherwise exits with one line saying so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from . import EXTRA_MODULES


def require_extra() -> None:
    """Exit (status 1, one line on stderr) unless every module of the ``[assignments]`` extra
    is installed."""
    missing = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"error: the assignments commands need the [assignments] extra (missing: "
                 f"{', '.join(missing)}); install it with: pip install 'attnclust[assignments]'")


def _material(args) -> dict:
    if args.material:
        return json.loads(Path(args.material).read_text())
    from .editions import autograder_material
    from .source import parse_chapter

    src = Path(args.root) / "chapters" / f"{args.chapter}.md"
    if not src.exists():
        sys.exit(f"no chapter source {src}")
    return autograder_material(parse_chapter(src))


def cmd_build(args) -> int:
    require_extra()
    from . import course_chapters
    from .editions import write_editions
    from .source import parse_chapter

    root = Path(args.root)
    stems = args.chapters or course_chapters(root)
    status = 0
    for stem in stems:
        src = root / "chapters" / f"{stem}.md"
        if not src.exists():
            print(f"{stem}: no such chapter ({src})", file=sys.stderr)
            status = 1
            continue
        chapter = parse_chapter(src)
        paths = write_editions(chapter, args.out)
        n = len(chapter.exercises)
        print(f"{stem}: {n} exercise{'s' * (n != 1)}, {chapter.total_points:g} points -> "
              f"{paths['student']}, {paths['instructor']}")
        for problem in chapter.problems:
            print(f"  warning: {stem}: {problem}", file=sys.stderr)
        if n == 0:
            print(f"  warning: {stem}: no exercises", file=sys.stderr)
    return status


def cmd_grade(args) -> int:
    require_extra()
    from .grading import grade_submissions, write_csv

    material = _material(args)
    if not material["exercises"]:
        sys.exit(f"chapter {material['chapter']} has no exercises")
    grades = grade_submissions(args.submissions, material, timeout=args.timeout,
                               cell_timeout=args.cell_timeout, jobs=args.jobs,
                               executed_dir=args.executed)
    if not grades:
        sys.exit(f"no submissions for chapter {material['chapter']} in {args.submissions}")
    write_csv(grades, args.out)
    totals: dict[str, float] = {}
    for g in grades:
        totals[g.student] = totals.get(g.student, 0.0) + g.points
    full = float(material["total_points"])
    for student, pts in totals.items():
        print(f"{student}: {pts:g}/{full:g}")
    print(f"wrote {args.out}")
    return 0


def _configure(p: argparse.ArgumentParser) -> None:
    """Add ``--root`` and the ``build`` and ``grade`` subcommands to ``p``."""
    p.add_argument("--root", default=".", help="book root (holds _toc.yml and chapters/)")
    sub = p.add_subparsers(dest="assignments_command", required=True, metavar="COMMAND")

    b = sub.add_parser("build", help="write student and instructor notebooks and the "
                                     "autograder material")
    b.add_argument("--out", required=True, help="output folder")
    b.add_argument("--chapters", nargs="*", help="chapter stems (default: the Theory and "
                                                 "Experiments chapters of _toc.yml)")
    b.set_defaults(func=cmd_build)

    g = sub.add_parser("grade", help="grade a folder of submitted notebooks into a CSV")
    g.add_argument("submissions", help="folder: <student>__<chapter>.ipynb, <student>.ipynb "
                                       "or <student>/<chapter>.ipynb")
    g.add_argument("--chapter", required=True, help="chapter stem, e.g. mixtures")
    g.add_argument("--out", default="grades.csv", help="CSV to write (default grades.csv)")
    g.add_argument("--timeout", type=float, default=600.0,
                   help="time limit per notebook in seconds (default 600)")
    g.add_argument("--cell-timeout", type=float, default=None,
                   help="time limit per cell in seconds (default: --timeout)")
    g.add_argument("--jobs", type=int, default=1, help="notebooks graded at a time")
    g.add_argument("--material", help="autograder JSON written by build (default: read the "
                                      "checks from chapters/<chapter>.md)")
    g.add_argument("--executed", help="folder where the executed notebooks are saved")
    g.set_defaults(func=cmd_grade)


_DESCRIPTION = "Student/instructor notebooks and autograding of the book's exercises."


def add_parser(sub) -> None:
    """Add the ``assignments`` subcommand to the ``python -m attnclust`` parser's ``sub``."""
    _configure(sub.add_parser("assignments", help="student/instructor notebooks and "
                                                  "autograding of the exercises",
                              description=_DESCRIPTION))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnclust.assignments", description=_DESCRIPTION)
    _configure(p)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""Command line: ``python -m attnclust`` (or the ``attnclust`` script).

    python -m attnclust reproduce --list
    python -m attnclust reproduce NAME [NAME ...] --out DIR [--size small|full] [--no-pdf]
    python -m attnclust reproduce all --out DIR
    python -m attnclust experiment --list | NAME [NAME ...] [--size full|test] [--seed N --out DIR]
    python -m attnclust assignments build|grade ...   (needs the [assignments] extra)

``reproduce`` redraws the book's figures by name from ``attnclust.book.figures`` and writes
DIR/NAME.png and DIR/NAME.pdf. Unknown names exit with status 2 and the list of known ones.
``assignments`` is :mod:`attnclust.assignments`' command line; without its extra it exits
with status 1 and one line naming the extra to install.

Adding a subcommand: write ``_add_<name>(sub)`` that calls ``sub.add_parser(...)`` and sets
``func`` with ``parser.set_defaults(func=...)`` (a function ``args -> int`` exit status),
then append it to ``SUBCOMMANDS`` (or call ``add_subcommands`` from a module of your own).
Import what the subcommand needs inside ``func``, not at module level: the parser is built
for every command, and ``pip install attnclust`` without extras must run ``reproduce``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from collections.abc import Callable, Sequence

from ._cli import OneLineParser, fail, nonnegative_int, positive_int

EXIT_USAGE = 2
"""Exit status for a usage error (unknown figure name, bad option), as argparse uses."""


def _figure_table() -> list[tuple[str, str, str]]:
    """(name, chapter, description) of every registered figure, sorted by name."""
    from attnclust.book.figures import FIGURES, names

    return [(n, FIGURES[n].chapter, FIGURES[n].description) for n in names()]


def _print_list(file=None) -> None:
    file = sys.stdout if file is None else file
    rows = _figure_table()
    width = max((len(n) for n, _, _ in rows), default=4)
    cw = max((len(c) for _, c, _ in rows), default=7)
    print(f"{'name':<{width}}  {'chapter':<{cw}}  description", file=file)
    for name, chapter, description in rows:
        print(f"{name:<{width}}  {chapter:<{cw}}  {description}", file=file)


def _missing_figures_extra() -> int | None:
    """Exit status 1 with a line naming the extra to install when matplotlib is missing
    (``pip install attnclust`` is the science core alone); None when it is installed."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return fail("reproduce draws the book's figures with matplotlib, which is not installed: "
                    "pip install 'attnclust[figures]'")
    return None


def _reproduce(args: argparse.Namespace) -> int:
    """Draw the requested figures and save them; the exit status."""
    missing = _missing_figures_extra()
    if missing is not None:
        return missing
    if args.list:
        _print_list()
        return 0
    if not args.names:
        print("error: give figure names, 'all', or --list", file=sys.stderr)
        return EXIT_USAGE
    if args.out is None:
        print("error: --out DIR is required to write figures", file=sys.stderr)
        return EXIT_USAGE
    from attnclust.book.figures import make, names

    known = names()
    wanted = known if "all" in args.names else list(dict.fromkeys(args.names))
    unknown = [n for n in wanted if n not in known]
    if unknown:
        print(f"error: unknown figure name(s): {', '.join(unknown)}", file=sys.stderr)
        print("known figures:", file=sys.stderr)
        _print_list(file=sys.stderr)
        return EXIT_USAGE
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / ".attnclust-write-test").touch()
        (out / ".attnclust-write-test").unlink()
    except OSError as e:
        return fail(f"--out {out}: cannot write there ({e.strerror or e})")
    for name in tqdm(wanted, desc="figures", unit="fig", disable=args.quiet):
        fig = make(name, size=args.size)
        fig.savefig(out / f"{name}.png", dpi=args.dpi, bbox_inches="tight")
        if not args.no_pdf:
            fig.savefig(out / f"{name}.pdf", bbox_inches="tight")
        plt.close(fig)
    if not args.quiet:
        print(f"wrote {len(wanted)} figure(s) to {out}")
    return 0


def _add_reproduce(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="redraw the book's figures by name",
        description="Redraw figures of the book by name (see --list) into DIR/NAME.png and .pdf.",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="figure names, or 'all'")
    p.add_argument("--list", action="store_true", help="list the figures (name, chapter, description)")
    p.add_argument("--out", metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--size", choices=("small", "full"), default="small",
                   help="'small': the book's CPU scale (default); 'full': paper scale, for an accelerator")
    p.add_argument("--dpi", type=positive_int, default=150, help="PNG resolution (default 150)")
    p.add_argument("--no-pdf", action="store_true", help="write only PNG files")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=_reproduce)


def _experiment(args: argparse.Namespace) -> int:
    from attnclust.book.experiments import COMMITTED, names, run

    known = names()
    if args.list or not args.names:
        for n in known:
            print(f"{n}  {COMMITTED[n].description}")
        return 0 if args.list else EXIT_USAGE
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print(f"error: unknown experiment(s): {', '.join(unknown)}; known: {', '.join(known) or 'none'}",
              file=sys.stderr)
        return EXIT_USAGE
    if args.seed and args.out is None:
        return fail("--seed other than 0 needs --out DIR: a replication never replaces the book's results files",
                    EXIT_USAGE)
    for name in args.names:
        print(f"wrote {run(name, size=args.size, directory=args.out, seed=args.seed)}")
    return 0


def _add_experiment(sub) -> None:
    p = sub.add_parser(
        "experiment",
        help="run an experiment too large for the book's build and commit its results",
        description="Run committed experiments by name (see --list); each writes attnclust/book/results/NAME.json "
                    "with the command, commit and date, which the book reads.",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="experiment names")
    p.add_argument("--list", action="store_true", help="list the committed experiments")
    p.add_argument("--size", choices=("full", "test"), default="full",
                   help="'full' (default): the size the book shows; 'test': a quick check of every code path")
    p.add_argument("--seed", type=nonnegative_int, default=0, metavar="N",
                   help="the master seed (attnclust.book.seeds): 0 (default) the book's draws, another "
                        "integer a replication of them")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="write NAME.json into DIR instead of the book's results folder")
    p.set_defaults(func=_experiment)


def _add_assignments(sub) -> None:
    """``assignments build|grade``: its parser needs only the standard library; its commands
    import the ``[assignments]`` extra when they run (and say so when it is missing)."""
    from .assignments.__main__ import add_parser

    add_parser(sub)


SUBCOMMANDS: list[Callable] = [_add_reproduce, _add_experiment, _add_assignments]
"""Functions ``f(sub)`` that each add one subcommand to the ``attnclust`` parser. Append a new
one here; ``add_subcommands`` calls them in order."""


def add_subcommands(sub) -> None:
    """Add every subcommand of ``SUBCOMMANDS`` to the subparsers object ``sub``."""
    for add in SUBCOMMANDS:
        add(sub)


def build_parser() -> argparse.ArgumentParser:
    """The ``attnclust`` argument parser with all subcommands."""
    parser = OneLineParser(prog="attnclust", description="attnclust: the book's command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    add_subcommands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (``python -m attnclust`` and the ``attnclust`` script): the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return EXIT_USAGE
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())

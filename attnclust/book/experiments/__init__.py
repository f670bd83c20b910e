"""Experiments: the computations behind the chapters' figures and claims, apart from drawing.

Each module here holds the experiments of one chapter as named functions that take a size
(``attnclust.book.sizes``: "test", "small" for the book's build, "full") and return a
small frozen dataclass of arrays and numbers. Figures (``attnclust.book.figures``) only draw such a
result, and chapters show what they compute by its attribute names, not by string keys.

An experiment too large for the book's build is registered with ``committed`` (in any module
of this package: :func:`names` imports them all, none is listed): its result is
written, with its provenance, to ``attnclust/book/results/<name>.json`` by

    python -m attnclust experiment NAME [--size full]

and a chapter reads it with ``attnclust.book.results.load(NAME)``; a test fails when the file is
stale (a source it depends on changed) or has the wrong shape.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attnclust import _validate as v
from attnclust.book import sizes
from attnclust._public import import_submodules


@dataclass(frozen=True)
class Committed:
    """A committed experiment: ``func(size) -> dict`` of JSON data, written to
    ``attnclust/book/results/<name>.json``; ``sources`` are the files whose change makes the file
    stale: its own module, the default setting (``attnclust/setting.py``: a changed default
    makes every results file stale) and those it names."""

    name: str
    func: Callable
    sources: tuple[str, ...]
    description: str


SETTING = "attnclust/setting.py"
"""The default setting's module: a source of every committed experiment."""

COMMITTED: dict[str, Committed] = {}


def committed(name: str, *, sources: tuple[str, ...], description: str = ""):
    """Decorator: register ``func(size="full") -> dict`` as the committed experiment ``name``
    (its own module and ``attnclust/setting.py`` are always among its sources)."""

    def wrap(func):
        from attnclust.book.results import SOURCE_ROOT

        own = Path(inspect.getsourcefile(func)).resolve()
        module = (own.relative_to(SOURCE_ROOT).as_posix(),) if own.is_relative_to(SOURCE_ROOT / "attnclust") else ()
        srcs = tuple(dict.fromkeys((*module, SETTING, *sources)))
        COMMITTED[name] = Committed(name, func, srcs, description or (func.__doc__ or "").strip().split("\n")[0])
        return func

    return wrap


def names() -> list[str]:
    """The names of the committed experiments, sorted (every public module of this package
    is imported first: each registers its experiments with :func:`committed`)."""
    import_submodules(__name__)
    return sorted(COMMITTED)


def run(name: str, size: str = "full", directory=None, seed: int = 0):
    """Run the committed experiment ``name`` at ``size`` under the master seed ``seed``
    (``attnclust.book.seeds``; 0, the book's draws) and write its results file into
    ``directory`` (the book's results folder by default); the path.

    Raises:
        ValueError: an unknown name or size, or a seed other than the book's without a
            ``directory`` (a replication never replaces the book's results files).
    """
    from attnclust.book import results, seeds

    v.one_of("name", name, names())
    sizes.check(size, ("test", "full"))
    seed = v.positive_int("seed", seed, minimum=0)
    if seed != seeds.BOOK_SEED and directory is None:
        raise ValueError(f"seed={seed} needs a directory: a replication never replaces the book's results files")
    exp = COMMITTED[name]
    with seeds.replicating(seed):
        data = exp.func(size=size)
    command = f"python -m attnclust experiment {name} --size {size}"
    if seed != seeds.BOOK_SEED:
        command += f" --seed {seed} --out DIR"
    return results.save(name, {"size": size, "seed": seed, **data} if seed != seeds.BOOK_SEED
                        else {"size": size, **data}, command=command, sources=exp.sources, directory=directory)

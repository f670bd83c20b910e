"""The book's registries find their modules: a module dropped into ``attnclust.book.figures``,
``attnclust.book.experiments`` or ``attnclust.book.widgets`` registers itself, with no
list to edit, and everything downstream (``python -m attnclust reproduce`` and
``experiment``, the benchmark's explorers, the browser test's parametrization, the widgets'
lazy names) sees it; a module whose name starts with an underscore is not imported. And
the real registries agree with the chapters that show what they register."""

from __future__ import annotations

import base64
import importlib
import re
import sys
import textwrap
from pathlib import Path

import pytest

from attnclust import _public

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
BROWSER = Path(__file__).resolve().parent / "browser"


@pytest.fixture
def drop(tmp_path, monkeypatch):
    """``drop(package, module, source)``: the file ``module.py`` in a folder added to the
    package's ``__path__``, as if it had been written into the package; the modules it made
    are forgotten afterwards."""
    added = []

    def put(package: str, module: str, source: str) -> str:
        pkg = importlib.import_module(package)
        folder = tmp_path / package
        folder.mkdir(exist_ok=True)
        (folder / f"{module}.py").write_text(textwrap.dedent(source))
        if str(folder) not in pkg.__path__:
            monkeypatch.setattr(pkg, "__path__", [*pkg.__path__, str(folder)])
        importlib.invalidate_caches()
        added.append(f"{package}.{module}")
        return added[-1]

    yield put
    for name in added:
        sys.modules.pop(name, None)


def test_a_dropped_figure_module_is_registered_and_a_private_one_is_not(drop, capsys):
    from attnclust import __main__ as cli
    from attnclust.book.figures import FIGURES, names

    names()  # the real figures first: they stay registered afterwards
    before = dict(FIGURES)
    try:
        drop("attnclust.book.figures", "toy_figures", """
            from attnclust.book.figures import register

            @register("toy-dropped", chapter="mixtures")
            def toy(size="small"):
                '''A figure nobody listed.'''
            """)
        drop("attnclust.book.figures", "_toy_private", """
            from attnclust.book.figures import register

            @register("toy-private", chapter="mixtures")
            def toy(size="small"):
                '''Never imported by the registry.'''
            """)
        assert "toy-dropped" in names() and "toy-private" not in names()
        assert cli.main(["reproduce", "--list"]) == 0
        assert "A figure nobody listed." in capsys.readouterr().out
    finally:
        FIGURES.clear()
        FIGURES.update(before)


def test_a_dropped_experiment_module_is_registered(drop, capsys):
    from attnclust import __main__ as cli
    from attnclust.book.experiments import COMMITTED, names

    names()
    before = dict(COMMITTED)
    try:
        drop("attnclust.book.experiments", "toy_experiment", """
            from attnclust.book.experiments import committed

            @committed("toy-experiment", sources=())
            def toy(size="full"):
                '''An experiment nobody listed.'''
                return {}
            """)
        assert "toy-experiment" in names()
        assert cli.main(["experiment", "--list"]) == 0
        assert "toy-experiment  An experiment nobody listed." in capsys.readouterr().out
    finally:
        COMMITTED.clear()
        COMMITTED.update(before)


PLANTED_EXPLORER = """
    import matplotlib.figure

    from attnclust.book.widgets import register

    DEFAULTS = dict(a=1)


    def draw_planted(a):
        fig = matplotlib.figure.Figure(figsize=(1, 1))
        fig.add_subplot().plot([0, 1], [0, a])
        return fig


    class _Box:
        sliders = {"a": type("Slider", (), {"description": "A", "value": 1})()}

        def _repr_mimebundle_(self, include=None, exclude=None):
            return {"text/plain": "toy"}


    @register("planted-toy", chapter="mixtures", draw=draw_planted, moves=(("a", (2, 3)),))
    def planted_explorer(static=False):
        box = _Box()
        if not static:
            return box
        from attnclust.book.widgets.static import twin

        return twin(planted_explorer, box, {"a": (1, 2)}, DEFAULTS, "a line")
    """


@pytest.fixture
def planted_explorer(drop):
    from attnclust.book.widgets import EXPLORERS, explorers

    explorers()
    before = dict(EXPLORERS)
    name = drop("attnclust.book.widgets", "planted_explorer_module", PLANTED_EXPLORER)
    yield name
    EXPLORERS.clear()
    EXPLORERS.update(before)


def test_a_dropped_explorer_reaches_the_benchmark_and_the_lazy_names(planted_explorer, monkeypatch):
    from attnclust.book import widgets

    spec = {s.name: s for s in widgets.explorers()}["planted-toy"]
    assert spec.module == planted_explorer and spec.chapter == "mixtures"
    assert widgets.planted_explorer is spec.func  # resolved lazily from the dropped module
    monkeypatch.syspath_prepend(str(BENCH))
    sys.modules.pop("run", None)
    try:
        import run

        assert (planted_explorer, "draw_planted", "planted_explorer", (("a", (2, 3)),)) in run.widget_callbacks()
    finally:
        sys.modules.pop("run", None)


def test_a_registered_explorers_static_twin_carries_its_name_and_frames(planted_explorer):
    from attnclust.book import widgets
    from attnclust.book.widgets.static import frame_png

    widgets.explorers()
    page = widgets.planted_explorer(static=True)._repr_mimebundle_()["text/html"]
    assert 'data-explorer="planted-toy"' in page
    # the default frame's place is empty: it is in the page once, as the <img>'s src
    (frames,) = re.findall(r'"frames": \["([^"]*)", "([^"]+)"\]', page)
    assert base64.b64decode(frames[1]) == frame_png(widgets.planted_explorer_module.draw_planted(2))


def _browser_parametrization() -> list[str]:
    """The explorer names the static-explorer browser test is parametrized over (its module
    imported afresh, as pytest collects it)."""
    sys.path.insert(0, str(BROWSER))
    sys.modules.pop("test_static_explorers", None)
    try:
        mod = importlib.import_module("test_static_explorers")
        test = mod.test_every_slider_switches_to_the_frame_of_its_value
        (mark,) = [m for m in test.pytestmark if m.name == "parametrize"]
        return list(mark.args[1])
    finally:
        sys.modules.pop("test_static_explorers", None)
        sys.path.remove(str(BROWSER))


def test_the_browser_test_covers_every_registered_explorer(planted_explorer):
    from attnclust.book.widgets import explorers

    assert _browser_parametrization() == sorted(s.name for s in explorers())
    assert "planted-toy" in _browser_parametrization()


def test_an_explorer_registered_twice_or_without_moves_is_refused():
    from attnclust.book.widgets import EXPLORERS, explorers, register

    explorers()
    with pytest.raises(ValueError, match="moves"):
        register("x", chapter="mixtures", draw=print, moves=())
    with pytest.raises(ValueError, match="moves"):
        register("x", chapter="mixtures", draw=print, moves=(("a", ()),))
    before = dict(EXPLORERS)
    try:
        register("dup", chapter="mixtures", draw=print, moves=(("a", (1,)),))(lambda static=False: 1)

        def other(static=False):
            return 2

        with pytest.raises(ValueError, match="registered twice"):
            register("dup", chapter="mixtures", draw=print, moves=(("a", (1,)),))(other)
    finally:
        EXPLORERS.clear()
        EXPLORERS.update(before)


# --- the real registries against the chapters ---------------------------------------------

_STATIC_CALL = re.compile(r"\b(\w+_explorer)\(static=True\)")


def _chapter(stem: str) -> str:
    return (ROOT / "chapters" / f"{stem}.md").read_text()


def test_every_registered_explorer_is_shown_by_its_chapter_and_only_those_are_shown():
    from attnclust.book.widgets import explorers

    specs = explorers()
    assert specs, "no explorer registered"
    for spec in specs:
        assert f"{spec.func.__name__}(static=True)" in _chapter(spec.chapter), (
            f"explorer {spec.name!r} is registered with chapter {spec.chapter!r}, whose source "
            f"does not call {spec.func.__name__}(static=True)")
    shown = {m for p in (ROOT / "chapters").glob("*.md") for m in _STATIC_CALL.findall(p.read_text())}
    assert shown == {s.func.__name__ for s in specs}, "an explorer shown in a chapter is not registered"


def test_every_registered_figure_names_a_chapter_of_the_book():
    from attnclust.book.figures import FIGURES, names

    chapters = {p.stem for p in (ROOT / "chapters").glob("*.md")}
    assert names()
    assert {n: FIGURES[n].chapter for n in names() if FIGURES[n].chapter not in chapters} == {}


def test_discovery_lists_every_public_module_file():
    """``import_submodules`` imports exactly the package's files (and subpackages) whose
    names do not start with an underscore."""
    folder = ROOT / "attnclust" / "book" / "widgets"
    files = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    assert {m.__name__.rsplit(".", 1)[-1] for m in _public.import_submodules("attnclust.book.widgets")} == files


def test_the_graders_lazy_names_are_public_names_of_their_submodules():
    """``attnclust.assignments`` re-exports a chosen few names of its submodules, imported on
    first use (so that importing the package needs no extra); each must be a public name of
    the submodule it is said to come from, and resolve to that object."""
    import attnclust.assignments as asg

    for name, module in asg._EXPORTS.items():
        sub = importlib.import_module(f"attnclust.assignments.{module}")
        assert name in _public.public_names(sub), f"{name!r} is not public in attnclust.assignments.{module}"
        assert getattr(asg, name) is getattr(sub, name)
    assert set(asg._EXPORTS) <= set(asg.__all__) and set(asg.__all__) <= set(dir(asg))

"""`make book`'s build settings, on a tiny book using the real _config.yml.

- a failing cell fails the build (exit status != 0), as does stderr output (a warning);
- after a change to attnclust, scripts/book_cache.py makes the next build re-execute, so
  a page never shows outputs computed with an older library (without it, it would);
- pages not in the cache are executed side by side (_ext/parallel_execute.py), and the
  read serves them from the cache; a page that fails there still fails the build.

Each build starts a kernel on a one-cell page: a few seconds each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnclust.assignments.source import MYST_HEADER

ROOT = Path(__file__).resolve().parents[1]
JB = Path(sys.executable).parent / "jupyter-book"
FLAGS = ["--builder", "html", "-W", "-n", "--keep-going"]  # as in the Makefile's book target

pytestmark = pytest.mark.integration

PAGE = MYST_HEADER + """

# Page

```{{code-cell}} python3
{code}
```
"""


def scaffold(root: Path) -> Path:
    """A book at ``root`` with the project's config, bibliography and extensions, and no page."""
    (root / "chapters").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    shutil.copy(ROOT / "chapters" / "references.bib", root / "chapters" / "references.bib")
    if (ROOT / "_ext").is_dir() and not (root / "_ext").exists():
        shutil.copytree(ROOT / "_ext", root / "_ext")
    return root


def make_book(root: Path, code: str) -> Path:
    scaffold(root)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/page\n")
    (root / "chapters" / "page.md").write_text(PAGE.format(code=code))
    return root


def build(root: Path, cache_step: bool = True) -> subprocess.CompletedProcess:
    if cache_step:
        subprocess.run([sys.executable, str(ROOT / "scripts" / "book_cache.py"), "--root", str(root)],
                       check=True, capture_output=True)
    return subprocess.run([str(JB), "build", str(root), *FLAGS],
                          capture_output=True, text=True, timeout=600, check=False)


def test_failing_cell_fails_the_build(tmp_path):
    r = build(make_book(tmp_path, 'raise ValueError("planted failure")'))
    assert r.returncode != 0
    assert "planted failure" in r.stdout + r.stderr


def test_stderr_output_fails_the_build(tmp_path):
    r = build(make_book(tmp_path, 'import warnings; warnings.warn("planted warning")'))
    assert r.returncode != 0
    assert "stderr" in r.stdout + r.stderr


def test_library_change_re_executes_pages(tmp_path):
    # The page imports a stand-in `attnclust` from the book's root (ahead of the real one).
    code = 'import sys; sys.path.insert(0, ".."); import attnclust; print("VALUE", attnclust.VALUE)'
    root = make_book(tmp_path, code)
    lib = root / "attnclust"
    lib.mkdir()
    (lib / "__init__.py").write_text("VALUE = 111\n")
    html = root / "_build" / "html" / "chapters" / "page.html"

    r = build(root)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "VALUE 111" in html.read_text()

    (lib / "__init__.py").write_text("VALUE = 222\n")
    # Without the cache step the build reuses the cached notebook: the stale output stays.
    r = build(root, cache_step=False)
    assert r.returncode == 0
    assert "VALUE 111" in html.read_text(), "the cache no longer reuses outputs? then simplify"

    r = build(root)  # what `make book` does
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "VALUE 222" in html.read_text()


# Each page's second cell meets the other page's: it leaves a file saying it started, runs
# the page's code, then waits for the other page's file, and prints once (two prints would be
# two output blocks in the HTML). Executed side by side, both find it; one after the other,
# the first page waits for a page that cannot start before it ends, and gives up after
# MEET_TRIES tries of 0.1 s (a guard against a hang, far beyond the other kernel's start,
# not a timing). Then it sleeps 1 s, which the seconds recorded for the page include. The
# first cell only imports, so _ext/setup_cells.py tags it (the parallel execution must read
# the page with that tag, as MyST-NB does, or the read executes it again and -W fails the
# build).
MEET_TRIES = 1200
TIMED = MYST_HEADER + """

# {name}

```{{code-cell}} python3
import pathlib, time
```

```{{code-cell}} python3
here, there = pathlib.Path({here!r}), pathlib.Path({there!r})
here.touch()
{code}
for _ in range({tries}):
    if there.exists():
        break
    time.sleep(0.1)
else:
    raise RuntimeError("the other page did not run while this one ran")
time.sleep(1)
print("MET", page)
```
"""


def two_page_book(root: Path, code_b: str = "") -> Path:
    scaffold(root)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/a\nchapters:\n  - file: chapters/b\n")
    # different code, or the two notebooks would be one entry of the cache
    started = {x: str(root / f"{x}.started") for x in "ab"}
    (root / "chapters" / "a.md").write_text(TIMED.format(name="A", code='page = "A"', tries=MEET_TRIES,
                                                         here=started["a"], there=started["b"]))
    (root / "chapters" / "b.md").write_text(TIMED.format(name="B", code=code_b or 'page = "B"', tries=MEET_TRIES,
                                                         here=started["b"], there=started["a"]))
    return root


def test_pages_execute_side_by_side_and_are_read_from_the_cache(tmp_path):
    root = two_page_book(tmp_path)
    r = build(root)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-3000:]
    assert "executing 2 notebook pages, 2 at a time" in log
    assert "executed twice" not in log
    # side by side: each page met the other while it ran
    for x in "ab":
        assert f"MET {x.upper()}" in (root / "_build" / "html" / "chapters" / f"{x}.html").read_text()
    # the order of the next clean build: the seconds each page took (its planted 1 s sleep
    # at least: a lower bound that load cannot break)
    times = json.loads((root / "_build" / ".attnclust-exec-seconds.json").read_text())
    assert set(times) == {"chapters/a", "chapters/b"} and all(t >= 1 for t in times.values())


def test_a_page_failing_in_the_parallel_execution_fails_the_build(tmp_path):
    r = build(two_page_book(tmp_path, 'raise ValueError("planted failure")'))
    log = r.stdout + r.stderr
    assert r.returncode != 0
    assert "chapters/b failed" in log and "planted failure" in log

"""`make book`'s build settings, on a tiny book using the real _config.yml.

- a failing cell fails the build (exit status != 0), as does stderr output (a warning);
- after a change to attnclust, scripts/book_cache.py makes the next build re-execute, so
  a page never shows outputs computed with an older library (without it, it would);
- pages not in the cache are executed side by side (jupyter-cache's local-parallel
  executor, as the Makefile's book target runs it), and the build reads them from the
  cache; a page that fails there still fails the build.

Each build starts a kernel on a one-cell page: a few seconds each.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from attnclust.assignments.source import MYST_HEADER

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
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


def book_commands(root: Path, bin_dir: Path = BIN) -> list[list[str]]:
    """What the Makefile's book target runs in ``root`` after scripts/book_cache.py: the
    notebook pages added to the execution cache's project, those missing from the cache
    executed side by side, then the build (test_make_book_runs_these checks the Makefile)."""
    cache = str(root / "_build" / ".jupyter_cache")
    pages = [str(p) for p in sorted((p for p in (root / "chapters").glob("*.md")
                                     if re.search(r"(?m)^kernelspec:", p.read_text())),
                                    key=lambda p: (-p.stat().st_size, p.name))]  # as ls -S
    timeout = str(yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"])
    jcache = str(bin_dir / "jcache")
    return [
        ["mkdir", "-p", cache],
        [jcache, "notebook", "-p", cache, "add", "--reader", "myst_nb_md", *pages],
        [jcache, "project", "-p", cache, "execute", "--executor", "local-parallel",
         "--timeout", timeout],
        [str(bin_dir / "jupyter-book"), "build", str(root), *FLAGS],
    ]


@dataclass
class Build:
    returncode: int
    stdout: str
    stderr: str
    read_at: float  # when the last step run started: jupyter-book, when the others succeeded


def build(root: Path, cache_step: bool = True) -> Build:
    """``make book`` in ``root`` (its steps stop at the first that fails, as make's do)."""
    if cache_step:
        subprocess.run([sys.executable, str(ROOT / "scripts" / "book_cache.py"), "--root", str(root)],
                       check=True, capture_output=True)
    out, err, read_at = [], [], float("nan")
    for argv in book_commands(root):
        read_at = time.time()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        out.append(r.stdout)
        err.append(r.stderr)
        if r.returncode:
            break
    return Build(r.returncode, "".join(out), "".join(err), read_at)


def test_make_book_runs_these(monkeypatch):
    """book_commands is what `make book` runs (a dry run of the Makefile, in the repository)."""
    monkeypatch.chdir(ROOT)
    r = subprocess.run(["make", "-n", "-B", "-o", ".venv/.installed", "book"],
                       cwd=ROOT, capture_output=True, text=True, check=True)
    lines = [ln.strip() for ln in r.stdout.splitlines()]
    for argv in book_commands(Path("."), Path(".venv") / "bin"):
        assert any(ln.endswith(" ".join(argv)) for ln in lines), (" ".join(argv), r.stdout)
    assert "chapters/preface.md" in book_commands(Path("."))[1]  # the pages were found


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
# not a timing). The first cell only imports and is tagged (cell metadata is part of the
# cache's key: the parallel execution must read it as the build does).
MEET_TRIES = 1200
TIMED = MYST_HEADER + """

# {name}

```{{code-cell}} python3
:tags: [hide-input]
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
    # side by side: each page met the other while it ran
    for x in "ab":
        assert f"MET {x.upper()}" in (root / "_build" / "html" / "chapters" / f"{x}.html").read_text()
    # the pages show what jupyter-cache computed before jupyter-book started: the build read
    # both from the cache (a page it executed again would have touched its file after)
    for x in "ab":
        assert (root / f"{x}.started").stat().st_mtime < r.read_at


def test_a_page_failing_in_the_parallel_execution_fails_the_build(tmp_path):
    r = build(two_page_book(tmp_path, 'raise ValueError("planted failure")'))
    log = r.stdout + r.stderr
    assert r.returncode != 0
    assert re.search(r"Execution Excepted: \S*chapters/b\.md", log), log[-3000:]
    assert "planted failure" in log

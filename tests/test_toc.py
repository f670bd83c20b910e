"""_toc.yml and chapters/ agree: every TOC entry exists, every chapter is in the TOC (the API
reference pages are checked in test_api_pages.py).

Files in chapters/ whose name starts with an underscore (chapters/_*.md) are helpers
(snippets for {include}, drafts) and are not chapters; see CONTRIBUTING.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent / "browser"))
from book_checks import toc_entries  # noqa: E402  (no browser needed: plain YAML walking)

ROOT = Path(__file__).resolve().parents[1]
SOURCE_SUFFIXES = (".md", ".ipynb", ".rst")


def load_toc() -> list[str]:
    return toc_entries(yaml.safe_load((ROOT / "_toc.yml").read_text()))


def source_for(entry: str) -> Path | None:
    base = ROOT / entry
    if base.suffix in SOURCE_SUFFIXES and base.is_file():
        return base
    for suffix in SOURCE_SUFFIXES:
        candidate = base.with_name(base.name + suffix)
        if candidate.is_file():
            return candidate
    return None


def test_toc_is_a_jupyter_book_1_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert toc.get("format") == "jb-book"
    assert isinstance(toc.get("root"), str)


def test_every_toc_entry_exists():
    entries = load_toc()
    assert entries, "empty _toc.yml"
    missing = [e for e in entries if source_for(e) is None]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_no_toc_entry_twice():
    entries = [e.removesuffix(".md") for e in load_toc()]
    dupes = sorted({e for e in entries if entries.count(e) > 1})
    assert not dupes, f"listed more than once in _toc.yml: {dupes}"


def test_every_chapter_is_in_the_toc():
    listed = {source_for(e).resolve() for e in load_toc() if source_for(e)}
    chapters = [
        p for p in sorted((ROOT / "chapters").glob("*.md")) if not p.name.startswith("_")
    ]
    assert chapters, "no chapters/*.md found"
    orphans = [p.relative_to(ROOT).as_posix() for p in chapters if p.resolve() not in listed]
    assert not orphans, (
        f"chapters not listed in _toc.yml: {orphans} "
        "(add them, or prefix helper files with '_' as CONTRIBUTING.md says)"
    )

"""Every chapter's reader edition runs from a folder outside the repository, as a reader
who downloaded it (the page's download button, Colab) or opened it with `make lab` runs
it: each executes top to bottom in a fresh kernel in a temporary folder, with no error.

Editions are made from the sources (the numbers in their text are glue names here; the
code is the same). Two run at a time (a kernel keeps about one core busy).
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from attnclust.assignments import parse_chapter, reader_notebook

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.md")
                           if p.read_text().startswith("---") and "\nkernelspec:" in p.read_text())
CELL_TIMEOUT_S = 600


def _run(stem: str, nb, folder: Path) -> str | None:
    """Execute ``stem``'s reader edition ``nb`` in ``folder``; the error, or None."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    folder.mkdir()
    try:
        NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
    except CellExecutionError as e:
        return f"{stem}: {str(e)[-1500:]}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return None


def test_every_reader_edition_runs_outside_the_repository(tmp_path):
    assert len(NOTEBOOK_CHAPTERS) >= 8, NOTEBOOK_CHAPTERS
    assert not str(tmp_path).startswith(str(ROOT))
    # made here: Python 3.11's ast.parse is not safe in threads
    editions = {s: reader_notebook(parse_chapter(ROOT / "chapters" / f"{s}.md"), {})
                for s in NOTEBOOK_CHAPTERS}
    with ThreadPoolExecutor(2) as pool:
        errors = list(pool.map(lambda s: _run(s, editions[s], tmp_path / s), NOTEBOOK_CHAPTERS))
    assert not [e for e in errors if e], "\n\n".join(e for e in errors if e)

"""The measures of the book's main path (attnclust.book.reading, scripts/reading_stats.py):
right on a small planted chapter whose counts are known, and sane on the real chapters.

The goals (reading.GOALS) are met by the real book, and a test keeps them met: a chapter that
grows past its minutes or falls below two figures per 1,000 words fails it.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnclust.assignments.source import MYST_HEADER
from attnclust.book import reading

ROOT = Path(__file__).resolve().parents[1]

PLANTED = MYST_HEADER + textwrap.dedent('''
    # Title here

    One two three four five.

    ```{code-cell} python3
    :tags: [hide-input]
    import numpy as np
    from myst_nb import glue
    from attnclust.book import claims
    ```

    Six seven eight nine ten. Run `make book` to see it.

    $$
    a = b + c
    $$

    ```{code-cell} python3
    ---
    mystnb:
      figure:
        caption: A planted figure.
        name: fig-planted
    ---
    glue("x", 1, display=False)
    y = 2
    assert y == 2
    ```

    {claim}`planted-one`

    ```{code-cell} python3
    claims.claim("planted-one", f"The value is {y} today.",
                 verdict=claims.holds_if(True))
    z = y + 1
    ```

    ```{exercise} A planted exercise
    :label: ex-planted-1

    These statement words are work, not reading.
    ```
    ''')
# prose: "Title here" (2), "One two three four five." (5), "Six seven eight nine ten." (5),
# "Run `make book` to see it." (5: inline code is one word) = 17, all before the figure;
# the claim's sentence from the source: "The value is N today." (5)


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "planted.md").write_text(PLANTED)
    (tmp_path / "chapters" / "other.md").write_text(MYST_HEADER + "\n# Other\n\nNot on the path.\n")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: chapters/planted\nparts:\n"
        "  - caption: Using the book\n    chapters:\n      - file: chapters/other\n")
    return tmp_path


def test_planted_chapter_measures(book: Path):
    s = reading.chapter_stats(book / "chapters" / "planted.md")
    assert s.prose_words == 17 and s.title == "Title here"
    assert s.claim_words == 5 and s.claims_from == "source"
    assert s.words == 22 and s.minutes == pytest.approx(22 / reading.WORDS_PER_MINUTE)
    assert s.figures == 1 and s.first_figure_word == 17
    assert s.equations == 1
    assert s.exercises == 1
    # shown: the figure cell (3 lines) and the claim cell (3); the hide-input cell is not.
    # checking: glue and assert of the first, the two lines of the claim call of the second
    assert (s.code_lines, s.checking_lines) == (6, 4)
    assert s.checking_share == pytest.approx(100 * 4 / 6)
    assert s.sentences == 4 and len(s.tooling) == 1 and "make book" in s.tooling[0]
    assert s.tooling_share == pytest.approx(25)
    assert s.figures_per_1000 == pytest.approx(1000 / 22)


def test_planted_chapter_reads_the_ledger_when_given(book: Path):
    ledger = {"planted-one": "The value is 2 today, as the build computed it."}
    s = reading.chapter_stats(book / "chapters" / "planted.md", ledger=ledger)
    assert s.claim_words == 10 and s.claims_from == "ledger"
    path = book / "claims.json"
    path.write_text(json.dumps({"claims": [{"id": "planted-one", "sentence": ledger["planted-one"]}]}))
    assert reading.ledger_sentences(path) == ledger
    assert reading.ledger_sentences(book / "missing.json") == {}


def test_main_path_is_the_root_and_the_theory_and_experiment_parts(book: Path):
    stats = reading.book_stats(book)
    assert [s.chapter for s in stats] == ["planted"]
    table = reading.table(stats)
    assert "| prose words | 17 | 17 |" in table
    assert "≤ 20 (each chapter)" in table and "met" in table


def test_a_page_in_a_part_without_caption_is_on_the_main_path(book: Path):
    """An overview page right after the root page, in a part of its own without a caption, is
    read on the main path like the root page (and, like it, is not held to the exercise goal)."""
    (book / "chapters" / "overview.md").write_text(MYST_HEADER + "\n# Overview\n\nRead this first.\n")
    (book / "_toc.yml").write_text(
        "format: jb-book\nroot: chapters/planted\nparts:\n"
        "  - chapters:\n      - file: chapters/overview\n"
        "  - caption: Using the book\n    chapters:\n      - file: chapters/other\n")
    assert reading.main_path(book) == [("chapters/planted", None), ("chapters/overview", None)]


def test_figures_are_counted_where_they_appear(tmp_path: Path):
    text = MYST_HEADER + textwrap.dedent('''
        # A

        ```{code-cell} python3
        :tags: [widget]
        explorer(static=True)
        ```

        Three more words.

        ```{figure} picture.png
        :name: fig-static

        A caption of five words.
        ```

        ```{code-cell} python3
        ---
        mystnb:
          figure:
            caption: Removed, so not shown.
        tags: [remove-cell]
        ---
        make("x")
        ```
        ''')
    path = tmp_path / "a.md"
    path.write_text(text)
    s = reading.chapter_stats(path)
    assert s.figures == 2 and s.first_figure_word == 1  # the explorer, after the heading
    assert s.prose_words == 1 + 3 + 5
    assert (s.code_lines, s.checking_lines) == (1, 0)


def test_the_evidence_layer_is_not_on_the_main_path(tmp_path: Path):
    """An admonition of class evidence (collapsed) and a cell whose input is hidden are not
    read on the main path; an ordinary admonition is."""
    text = MYST_HEADER + textwrap.dedent('''
        # A

        Four words of prose.

        ````{admonition} Evidence: a cross-check
        :class: dropdown evidence

        These seven words are for the expert, and {claim}`planted-two` too.

        ```{math}
        x = 1
        ```
        ````

        ```{note}
        Three noted words.
        ```

        ```{code-cell} python3
        :tags: [hide-input]
        assert 1 == 1
        claims.claim("planted-two", "Hidden.", verdict=claims.holds_if(True))
        ```
        ''')
    path = tmp_path / "a.md"
    path.write_text(text)
    s = reading.chapter_stats(path)
    assert s.prose_words == 1 + 4 + 3 and s.claim_words == 0
    assert s.evidence == 1 and s.equations == 0
    assert (s.code_lines, s.checking_lines) == (0, 0)
    text_without = text.replace(":class: dropdown evidence", ":class: dropdown")
    path.write_text(text_without)
    assert reading.chapter_stats(path).prose_words > s.prose_words + 7


@pytest.mark.parametrize("sentence", [
    "Run `make book` first.", "It is in `results/training-long.json`.",
    "`python -m attnclust reproduce` redraws them.", "It is too long for the book's build.",
    "The committed results file says so.", "`tests/test_results.py` fails when it is stale.",
])
def test_tooling_sentences(sentence):
    assert reading.is_tooling(sentence)


@pytest.mark.parametrize("sentence", [
    "Two one-sided tests decide the claim.", "We build a layer from two heads.",
    "The risk is a function of the heads.", "Make the temperature large.",
])
def test_subject_sentences_are_not_tooling(sentence):
    assert not reading.is_tooling(sentence)


def test_checking_lines_of_a_cell():
    src = "x = 1\n\nassert x == 1, (\n    'x')\nglue('x', x, display=False)\n%matplotlib inline\n"
    assert reading.checking_lines(src) == (5, 3)


def test_claim_sentence_from_source():
    code = 'claims.claim("a-b", f"Over {n} prompts " f"it holds.", verdict=v)'
    assert reading.source_sentences(code) == {"a-b": "Over N prompts it holds."}


def test_real_chapters_have_a_sane_row_each():
    """The script on the real book (claims from the chapters' code, so that the numbers do
    not depend on whether a build is there): one row per main-path chapter of _toc.yml, each
    with prose, figures, shown code and, for theory and experiment chapters, exercises."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "reading_stats.py"), "--json",
                          "--source"], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    expected = [f.split("/")[-1] for f, _ in reading.main_path(ROOT)]
    assert [r["chapter"] for r in rows] == expected
    assert {"preface", "mixtures", "training_dynamics", "beyond"} <= set(expected)
    assert "instructors" not in expected and "claims" not in expected
    for r in rows:
        assert r["prose_words"] > 300, r
        assert r["figures"] > 0 and r["first_figure_word"] is not None, r
        assert 0 < r["minutes"] < 200, r
        assert 0 < r["code_lines"] and 0 <= r["checking_lines"] <= r["code_lines"], r
        assert r["sentences"] > 10 and 0 <= r["tooling_sentences"] <= r["sentences"], r
        if r["part"] is not None:
            assert r["exercises"] > 0 and r["claim_words"] > 0, r
    table = subprocess.run([sys.executable, str(ROOT / "scripts" / "reading_stats.py"), "--source"],
                           capture_output=True, text=True, timeout=300,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout
    assert table.splitlines()[0].startswith("| measure | " + " | ".join(expected) + " | total | goal | met |")
    assert len([ln for ln in table.splitlines() if ln.startswith("| ")]) == 1 + len(reading._ROWS)


def _plan_markdown() -> str:
    """The Markdown of the instructors' page (the teaching guide), code cells left out."""
    from attnclust.assignments.markdown import split_fences

    page = (ROOT / "chapters" / "instructors.md").read_text()
    plan = page[page.index("# For instructors"):]
    return "\n\n".join(p for p in split_fences(plan) if isinstance(p, str))


def test_instructors_plan_is_free_of_tooling_and_computes_its_minutes():
    """The teaching guide names every main-path chapter, says no word of the machinery
    (which the grading appendix explains), and types no minutes, seconds, points or
    weights: they are glued by cells that call attnclust.book.reading and the course tools."""
    import re

    plan = _plan_markdown()
    assert reading.tooling_sentences(plan) == []
    for f, _ in reading.main_path(ROOT):
        assert f"{{doc}}`{f.split('/')[-1]}`" in plan, f
    untyped = re.sub(r"\{glue:text\}`[^`]*`", "", plan)
    assert not re.search(r"\d\s*(minutes|min|s|seconds|points?|%)\b", untyped)
    page = (ROOT / "chapters" / "instructors.md").read_text()
    assert "book_stats(ROOT)" in page and "compute_seconds(ROOT)" in page
    assert page.index("## A two-week plan") < page.index("## Grading: a suggested weighting") \
        < page.index("## A short syllabus")
    assert "{doc}`grading`" in plan and "sandbox" not in plan.lower()
    for session in range(1, 7):  # every session, the experiment chapters' too, has objectives
        part = plan[plan.index(f"**Session {session}:"):]
        part = part[:part.index(f"**Session {session + 1}:")] if session < 6 else part
        assert "*Objectives:*" in part, session


def test_the_grading_appendix_follows_the_instructors_page():
    """The autograder's machinery is on its own page, right after the instructors' page in
    the table of contents, with the walk from a clone to a CSV of grades."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert files.index("chapters/grading") == files.index("chapters/instructors") + 1
    page = (ROOT / "chapters" / "grading.md").read_text()
    assert page.index("# Grading with the course editions") \
        < page.index("## From a fresh clone to a CSV of grades") < page.index("## The sandbox")
    assert "## Appendix" not in (ROOT / "chapters" / "instructors.md").read_text()


def test_compute_seconds_reads_the_benchmark(tmp_path: Path):
    assert reading.compute_seconds(tmp_path) == {}
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "book.json").write_text('{"clean_s": 300}')
    assert reading.compute_seconds(tmp_path) == {}
    (tmp_path / "benchmarks" / "book.json").write_text('{"chapters_s": {"mixtures": 28.5}}')
    assert reading.compute_seconds(tmp_path) == {"mixtures": 28.5}


def test_the_book_benchmark_times_every_page_on_the_plan(monkeypatch, tmp_path: Path):
    """make bench-book records the execution time of every page make book executes (the
    pages with a kernel in their header), so every main-path page on the instructors' plan,
    the overview after the preface included, gets a compute time; a page left without one
    is named (benchmarks/book.py, ``chapters_missing``)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import importlib

    book = importlib.import_module("book")
    pages = book.notebook_pages(ROOT)
    assert {f.split("/")[-1] for f, _ in reading.main_path(ROOT)} <= set(pages)
    assert "at_a_glance" in pages and "instructors" in pages and "grading" in pages
    assert book.missing_pages({p: 1.0 for p in pages}, ROOT) == []
    assert book.missing_pages({p: 1.0 for p in pages if p != "at_a_glance"}, ROOT) == ["at_a_glance"]
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "page.md").write_text("---\nkernelspec:\n  name: python3\n---\n# P\n")
    (tmp_path / "chapters" / "plain.md").write_text("# Plain Markdown, not executed\n")
    assert book.notebook_pages(tmp_path) == ["page"]


def test_the_real_book_meets_every_goal():
    """Every goal of the main path holds on the real chapters (claim sentences from the
    chapters' code, as the script's --source computes them), so that an edit that pushes a
    chapter past its reading minutes, below two figures per 1,000 words or above 15 % of
    checking code fails here, naming the goal and the chapters that miss it."""
    stats = reading.book_stats(ROOT)
    missed = []
    for goal in reading.GOALS:
        verdict, count = reading._goal_value(stats, goal)
        if verdict != "met":
            held = [s_ for s_ in stats if not goal.experiments_only or s_.part in reading.EXPERIMENT_PARTS]
            who = [s_.chapter for s_ in held if not goal.met(getattr(s_, goal.measure))]
            missed.append(f"{goal.label} {goal.text()}: {count} ({', '.join(who) or 'total'})")
    assert not missed, missed


def test_a_goal_missed_is_reported_as_missed():
    """The goal check can fail: a chapter planted below a goal is counted as missing it."""
    stats = reading.book_stats(ROOT)
    goal = next(g for g in reading.GOALS if g.measure == "figures_per_1000")
    worse = [dataclasses.replace(stats[0], figures=0, first_figure_word=None), *stats[1:]]
    assert reading._goal_value(worse, goal)[0] == "not met"

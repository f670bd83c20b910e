"""The book's multiple-choice questions give no answer away by their form
(attnclust.assignments.choices, scripts/choice_tells.py): each tell is planted once to show
that the scan finds it, then every question of the book is held to none."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnclust.assignments import parse_chapter
from attnclust.assignments.choices import (Choice, parse_options, position_tells, read_choices,
                                           shared_phrase, shown_length, tells)
from attnclust.assignments.source import toc_chapters

ROOT = Path(__file__).resolve().parents[1]

FAIR = {"a": "The heads grow along the mean of the two centroids, slowly.",
        "b": "The heads grow along the gap between the two centroids, fast.",
        "c": "The heads drift at random until the batch noise settles down.",
        "d": "The heads split at once, each towards its own nearest centroid."}
STEM = "Where do two tiny heads go first?"


def _choice(options: dict[str, str], key: str = "a", stem: str = STEM) -> Choice:
    return Choice("ex-t-1", 1, stem, options, key)


def test_fair_options_have_no_tell():
    assert tells(_choice(FAIR)) == []


@pytest.mark.parametrize("change, key, why", [
    ({"a": FAIR["a"] + " This is so because the eigenvalue of the mean is much larger than the others."},
     "a", "length: the key (a) is the longest"),
    ({"a": "Mean."}, "a", "length: the key (a) is the shortest"),
    ({"a": "Two tiny heads go first along the mean, slowly."}, "a", "wording"),
    ({"a": "Tiny heads grow along the top eigenvector of $M$, slowly."}, "a", "repeats a phrase"),
    ({"a": "Along the mean of the two centroids, slowly, the heads grow."}, "a", "opens with"),
    ({"b": FAIR["b"].replace("fast", "always fast"),
      "c": FAIR["c"].replace("random", "random, never"),
      "d": FAIR["d"].replace("each", "every head")}, "a", "the only option without"),
    ({"a": FAIR["a"].replace("slowly", "only slowly")}, "a", "the key (a) is the only option with"),
    ({"c": FAIR["c"].replace("drift", "never drift")}, "a", "a distractor (c) is the only"),
])
def test_each_tell_is_found(change, key, why):
    stem = ("Read the proposition (Tiny heads grow along the top eigenvector of $M$). Where do "
            "two tiny heads go first?") if "eigenvector" in str(change) else STEM
    found = tells(_choice({**FAIR, **change}, key, stem))
    assert any(why in t for t in found), found


def test_positions_of_the_keys_are_checked_over_the_book():
    many = [_choice(FAIR, "d") for _ in range(6)] + [_choice(FAIR, k) for k in "abc"]
    found = position_tells(many)
    assert any("(d) is the key of 6 of 9" in t for t in found), found
    assert position_tells([_choice(FAIR, k) for k in "abcdabcd"]) == []
    assert any("(d) is never the key" in t for t in position_tells(
        [_choice(FAIR, k) for k in "abcabcab"]))


def test_options_are_read_on_lines_paragraphs_and_inline():
    stem, opts = parse_options("Which?\n\n(a) One.\n\n(b) Two;\n(c) Three.\n\nStore the letter in `x`.")
    assert stem == "Which?" and opts == {"a": "One", "b": "Two", "c": "Three"}
    stem, opts = parse_options("What is it? (a) 1; (b) 0.5; (c) $-1$; (d) 0. Store the letter.")
    assert opts == {"a": "1", "b": "0.5", "c": "$-1$", "d": "0"}
    assert parse_options("A proof, see (a) above.") == ("", {})
    assert shown_length(r"$\theta_h$ times") == len("θh times")
    assert shared_phrase("the top eigenvector of $M$ grows", "along the top eigenvector of $M$") == 5


BOOK = [f for f, _ in toc_chapters(ROOT)]
QUESTIONS = [q for f in BOOK for q in read_choices(parse_chapter(ROOT / f"{f}.md"))]


def test_every_multiple_choice_question_of_the_book_is_read():
    """Every interpretation exercise with lettered options is read, with its key."""
    expected = [ex.label for f in BOOK for ex in parse_chapter(ROOT / f"{f}.md").exercises.values()
                if ex.kind == "interpretation" and "(a)" in ex.statement]
    assert [q.label for q in QUESTIONS] == expected and len(expected) >= 10
    assert all(q.key in q.options and len(q.options) >= 4 for q in QUESTIONS)


@pytest.mark.parametrize("question", QUESTIONS, ids=[q.label for q in QUESTIONS])
def test_no_question_of_the_book_gives_its_answer_away(question):
    assert question.found == [], f"exercise {question.number}: {question.found}"


def test_the_keys_of_the_book_are_spread_over_the_letters():
    assert position_tells(QUESTIONS) == []


def test_the_script_reports_the_book(capsys):
    import runpy
    import sys

    sys.argv = ["choice_tells.py"]
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "scripts" / "choice_tells.py"), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"{len(QUESTIONS)} questions" in out and "ex-beyond-4" in out

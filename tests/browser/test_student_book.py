"""The student copy of the built book (make book-student): the book without its solutions,
checked on the real build, which only the browser stage has (it runs after make book)."""

from __future__ import annotations

import book_checks
import pytest

from attnclust.assignments.student_html import solution_blocks, student_book

pytestmark = pytest.mark.browser


def test_the_student_copy_of_the_built_book_has_no_solutions(built_book, browser, tmp_path):
    """Every chapter with exercises loses exactly its solution blocks and keeps its
    exercises; opened in chromium, a chapter page shows its exercises and no solution."""
    before = solution_blocks(built_book)
    assert before, "the built book has no solution blocks to remove"
    out = tmp_path / "student"
    assert student_book(built_book, out) == before
    assert solution_blocks(out) == {}
    for page in before:
        text = (out / page).read_text(encoding="utf-8")
        assert 'class="exercise' in text and "Solution to Exercise" not in text, page
    page_name = min(before)
    with book_checks.serve_directory(out) as url:
        context = browser.new_context()
        try:
            tab = context.new_page()
            tab.goto(url + page_name, timeout=book_checks.PAGE_TIMEOUT_MS)
            assert tab.locator(".exercise").count() > 0, page_name
            assert tab.locator(".solution").count() == 0, page_name
            assert "Solution to Exercise" not in tab.inner_text("body"), page_name
        finally:
            context.close()

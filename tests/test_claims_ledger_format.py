"""_ext/claims_ledger.py: how a row of the Claims page prints an interval (no sphinx build)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("claims_ledger", ROOT / "_ext" / "claims_ledger.py")
ledger = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ledger)


def iv(estimate, low, high):
    return {"estimate": estimate, "low": low, "high": high, "level": 0.95, "method": "t", "n": 16}


def test_interval_ends_that_agree_at_four_digits_get_more():
    # 0.98641 and 0.98644 both print 0.9864 at four significant digits
    assert ledger._value(iv(0.986425, 0.98641, 0.98644)) == "0.98642 (95% t CI 0.98641 to 0.98644, n = 16)"


def test_interval_of_equal_ends_is_one_value():
    text = ledger._value(iv(0.9864, 0.9864, 0.9864))
    assert text == "0.9864 (95% t CI of one value, 0.9864, n = 16)"
    assert "0.9864 to 0.9864" not in text


def test_interval_of_distinct_ends_keeps_four_digits():
    assert ledger._value(iv(0.5, 0.41234, 0.61234)) == "0.5 (95% t CI 0.4123 to 0.6123, n = 16)"


def test_paper_column_words_each_finding_as_a_verdict_on_the_papers_statement():
    words = ledger._outcome_words
    assert words("supported", {"verdict": "holds"}) == "holds"
    assert words("contradicted", {"verdict": "holds"}) == "does not hold"
    assert words("qualified", {"verdict": "holds"}) == "holds with a qualification"
    assert words("open", {"verdict": "open", "detail": "the interval contains 0"}) == "not decided"
    # a claim of the book that holds only approximately says so, and by how much
    assert words("supported", {"verdict": "approx", "detail": "by 0.014"}) == "holds approximately (by 0.014)"
    assert words("contradicted", {"verdict": "approx", "detail": "by 3%"}) == (
        "does not hold, approximately (by 3%)")


def test_the_large_L_limit_prints_as_infinity():
    assert ledger._pairs({"L": "inf", "d": 5}, ", ") == "L = ∞, d = 5"

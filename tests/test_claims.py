"""attnclust.book.claims: verdicts computed from the evidence, and a claim whose evidence
contradicts its prose fails (ClaimError)."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnclust.book import claims
from attnclust import stats


def iv(est, lo, hi):
    return stats.Interval(est, lo, hi)


@pytest.mark.parametrize("value, bound, approx, kind", [
    (0.97, 0.95, False, "holds"),
    (0.94, 0.95, False, "fails"),
    (0.94, 0.95, True, "approx"),     # short by 0.01, within 10% of 0.95
    (0.85, 0.95, True, "fails"),      # short by 0.10 > 0.095
    (0.86, 0.95, True, "approx"),     # short by 0.09 <= 0.095
    (iv(0.9, 0.8, 0.97), 0.5, False, "holds"),
    (iv(0.5, 0.3, 0.7), 0.5, False, "open"),
    (iv(0.3, 0.2, 0.4), 0.5, False, "fails"),
    (iv(0.3, 0.2, 0.4), 0.5, True, "fails"),     # the whole interval below 0.45
    (iv(0.49, 0.46, 0.495), 0.5, True, "approx"),  # the whole interval >= 0.45
    (iv(0.49, 0.46, 0.53), 0.5, True, "approx"),   # straddles 0.5, but all >= 0.45
    (iv(0.49, 0.40, 0.495), 0.5, True, "open"),    # contains the relaxed bound 0.45
    (iv(-0.01, -0.02, 0.0), 0.0, True, "open"),    # a sign has no margin
])
def test_at_least(value, bound, approx, kind):
    assert claims.at_least(value, bound, approx=approx).kind == kind


def test_the_margin_is_one_rule():
    """The margin is RELATIVE_MARGIN of the bound's size, for every claim: the edge of the band
    is where the verdict turns, at any scale and for either sign."""
    assert claims.RELATIVE_MARGIN == 0.1
    for bound in (0.95, 2.0, -3.0, 1e-3):
        m = claims.margin(bound)
        assert m == pytest.approx(0.1 * abs(bound))
        assert claims.at_least(bound - 0.99 * m, bound, approx=True).kind == "approx"
        assert claims.at_least(bound - 1.01 * m, bound, approx=True).kind == "fails"
        assert claims.at_most(bound + 0.99 * m, bound, approx=True).kind == "approx"
        assert claims.at_most(bound + 1.01 * m, bound, approx=True).kind == "fails"
    assert claims.margin(0.0) == 0.0
    # without approx=True there is no band at all
    assert claims.at_least(0.95 - 1e-9, 0.95).kind == "fails"


@pytest.mark.usefixtures("typecheck_off")
def test_a_claim_cannot_pick_its_own_margin():
    with pytest.raises(TypeError, match="approx"):
        claims.at_least(0.94, 0.95, approx=0.02)
    with pytest.raises(TypeError, match="approx"):
        claims.close_to(0.9, 0.886, tol=0.005, approx=0.02)


def test_at_most_mirrors_at_least():
    assert claims.at_most(0.9, 1.0).kind == "holds"
    assert claims.at_most(1.1, 1.0).kind == "fails"
    assert claims.at_most(1.05, 1.0, approx=True).kind == "approx"
    assert claims.at_most(iv(0.5, 0.4, 0.6), 0.7).kind == "holds"
    assert claims.at_most(iv(0.5, 0.4, 0.8), 0.7).kind == "open"
    assert claims.at_most(iv(0.72, 0.71, 0.76), 0.7, approx=True).kind == "approx"


@pytest.mark.parametrize("value, kind", [
    # target 0.886, tol 0.005: the approximate band is 0.005 + 0.0886
    (0.886, "holds"), (0.9, "approx"), (0.97, "approx"), (0.99, "fails"),
    (iv(0.886, 0.884, 0.888), "holds"), (iv(0.9, 0.89, 0.95), "approx"),
    (iv(0.95, 0.94, 0.99), "open"), (iv(1.2, 1.1, 1.3), "fails"),
])
def test_close_to(value, kind):
    assert claims.close_to(value, 0.886, tol=0.005, approx=True).kind == kind


def test_close_to_without_the_margin():
    assert claims.close_to(0.9, 0.886, tol=0.005).kind == "fails"
    assert claims.close_to(iv(0.886, 0.87, 0.9), 0.886, tol=0.005).kind == "open"
    assert claims.close_to(iv(0.95, 0.94, 0.96), 0.886, tol=0.005).kind == "fails"
    assert claims.close_to(0.003, 0.0, tol=0.005, approx=True).kind == "holds"
    assert claims.close_to(0.006, 0.0, tol=0.005, approx=True).kind == "fails"  # no margin at 0


def test_verdict_details_say_by_how_much():
    v = claims.close_to(0.9, 0.886, tol=0.005, approx=True)
    assert "0.014" in v.detail and "10%" in v.detail
    assert "0.01" in claims.at_least(0.94, 0.95, approx=True).detail


def test_excludes_and_paired_difference():
    pd = stats.PairedDifference(iv(-0.0075, -0.013, -0.002), 0, 8, 56)
    assert claims.excludes(pd).kind == "holds"
    assert claims.excludes(iv(0.0, -0.01, 0.01)).kind == "open"
    assert claims.holds_if(True).kind == "holds" and claims.holds_if(False, "why").detail == "why"


def test_equivalent_is_two_one_sided_tests_on_the_90_percent_interval():
    ninety = lambda est, lo, hi: stats.Interval(est, lo, hi, level=0.9)  # noqa: E731
    assert claims.equivalent(ninety(0.1, -0.5, 0.8), 1.0).kind == "holds"
    # an interval that contains 0 but reaches past the margin is no evidence of equivalence
    assert claims.equivalent(ninety(0.1, -0.5, 1.2), 1.0).kind == "open"
    assert claims.equivalent(ninety(2.0, 1.5, 2.5), 1.0).kind == "fails"
    assert claims.equivalent(ninety(-2.0, -2.5, -1.0), 1.0).kind == "fails"
    assert claims.equivalent(ninety(5.1, 4.6, 5.4), 0.5, point=5.0).kind == "holds"
    v = claims.equivalent(ninety(0.9, 0.8, 0.99), 1.0)
    assert v.kind == "holds" and 0 < v.margin_se < 3            # close to the upper margin
    pd = stats.PairedDifference(ninety(0.0, -0.1, 0.1), 0, 8, 56)
    assert claims.equivalent(pd, 0.2).kind == "holds"
    with pytest.raises(ValueError, match="90% interval"):
        claims.equivalent(iv(0.0, -0.1, 0.1), 1.0)              # a 95% interval
    with pytest.raises(ValueError, match="margin"):
        claims.equivalent(ninety(0.0, -0.1, 0.1), 0.0)


def make(**kw):
    args = dict(setting=dict(K=2, d=5, L=50, lam=1.0), evidence=dict(x=0.97),
                verdict=claims.at_least(0.97, 0.95))
    args.update(kw)
    return claims.claim("toy-claim", "The toy holds.", **args)


def test_claim_record_is_json():
    c = make(evidence=dict(x=np.float32(0.97), rate=stats.binomial_interval(15, 16), Ls=np.arange(3),
                           L_inf=float("inf")), paper="alignment", bearing="supports")
    rec = json.loads(json.dumps(c.as_dict()))
    assert rec["verdict"] == "holds" and rec["setting"]["L"] == 50
    assert rec["evidence"]["rate"]["n"] == 16 and rec["evidence"]["Ls"] == [0, 1, 2]
    assert rec["evidence"]["L_inf"] == "inf"
    assert rec["paper_claim"] == claims.PAPER["alignment"].statement and rec["bearing"] == "supports"


def test_claim_that_the_evidence_contradicts_fails():
    with pytest.raises(claims.ClaimError, match="fails"):
        make(verdict=claims.at_least(0.9, 0.95))
    # a prose written for "does not hold" states it
    assert make(verdict=claims.at_least(0.9, 0.95), expect="fails").verdict.kind == "fails"
    assert make(verdict=claims.at_least(0.94, 0.95, approx=True), expect=("holds", "approx"))


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("kw, err", [
    (dict(setting={}), ValueError),
    (dict(evidence={}), ValueError),
    (dict(verdict="holds"), TypeError),
    (dict(expect="true"), ValueError),
    (dict(paper="nonexistent", bearing="supports"), ValueError),
    (dict(paper="alignment"), ValueError),  # a claim of the paper without how it bears on it
    (dict(bearing="supports"), ValueError),
    (dict(paper="alignment", bearing="agrees"), ValueError),
    (dict(evidence=dict(x=object())), TypeError),
    (dict(evidence=dict(x=np.zeros(100))), ValueError),
])
def test_claim_bad_input(kw, err):
    with pytest.raises(err):
        make(**kw)
    with pytest.raises(ValueError, match="id"):
        claims.claim("Not An Id", "s", setting=dict(L=1), evidence=dict(x=1), verdict=claims.holds_if(True))


def test_a_claim_as_a_cells_value_displays_nothing():
    """The sentence is in the prose; a cell ending with ``claims.claim(...)`` must not print
    the record's repr onto the page."""
    from IPython.core.formatters import DisplayFormatter

    record = claims.claim("display-test", "A sentence.", setting={"L": 50}, evidence={"x": 1.0},
                          verdict=claims.at_least(1.0, 0.5))
    assert DisplayFormatter().format(record) == ({}, {})  # what a kernel shows: nothing


def test_a_cosine_is_relaxed_on_its_angle():
    """On the angle scale the margin is 10% of the bound's angle, not of the cosine's size: 10%
    of 0.999 would accept |cos| >= 0.899 (26 degrees) as "aligned approximately"; 10% of its
    2.56 degrees accepts 2.81 degrees. Each case below gives "approx" on the size scale."""
    import math

    assert claims.SCALES == ("size", "angle")
    for bound in (0.999, 0.95, 0.5):
        angle = math.degrees(math.acos(bound))
        lower = claims.relaxed(bound, +1, "angle")
        assert math.degrees(math.acos(lower)) == pytest.approx(1.1 * angle)
        upper = claims.relaxed(bound, -1, "angle")
        assert math.degrees(math.acos(upper)) == pytest.approx(0.9 * angle)
    # 0.9 and 0.9 are within 10% of the size of 0.999 and 0.95, not of their angles
    assert claims.at_least(0.9, 0.999, approx=True).kind == "approx"
    assert claims.at_least(0.9, 0.999, approx=True, scale="angle").kind == "fails"
    assert claims.at_least(0.9985, 0.999, approx=True, scale="angle").kind == "fails"
    assert claims.at_least(0.99885, 0.999, approx=True, scale="angle").kind == "approx"
    assert claims.at_least(0.9, 0.95, approx=True).kind == "approx"
    assert claims.at_least(0.9, 0.95, approx=True, scale="angle").kind == "fails"
    assert claims.at_least(0.941, 0.95, approx=True, scale="angle").kind == "approx"
    assert claims.at_least(iv(0.99, 0.9, 0.999), 0.95, approx=True, scale="angle").kind == "open"
    # an upper bound: 60 degrees relaxed to 54 (|cos| 0.588), wider here than 10% of 0.5
    assert claims.at_most(0.58, 0.5, approx=True).kind == "fails"
    assert claims.at_most(0.58, 0.5, approx=True, scale="angle").kind == "approx"
    assert claims.at_most(0.6, 0.5, approx=True, scale="angle").kind == "fails"
    # exact alignment has no margin: its angle is 0
    assert claims.margin(1.0, +1, "angle") == 0.0
    assert "angle" in claims.at_least(0.941, 0.95, approx=True, scale="angle").detail


def test_close_to_a_cosine_on_its_angle():
    """target 0.986 +- 0.005: the band's edges 0.981 and 0.991 relaxed on their angles (11.2 to
    12.3 degrees, and 7.7 to 6.9 degrees), far narrower than 0.986 +- (0.005 + 0.0986)."""
    assert claims.close_to(0.97, 0.986, tol=0.005, approx=True).kind == "approx"
    assert claims.close_to(0.97, 0.986, tol=0.005, approx=True, scale="angle").kind == "fails"
    assert claims.close_to(0.979, 0.986, tol=0.005, approx=True, scale="angle").kind == "approx"
    assert claims.close_to(0.9927, 0.986, tol=0.005, approx=True, scale="angle").kind == "approx"
    assert claims.close_to(0.9935, 0.986, tol=0.005, approx=True, scale="angle").kind == "fails"
    assert claims.close_to(iv(0.985, 0.983, 0.988), 0.986, tol=0.005, scale="angle").kind == "holds"
    # the band stays inside [-1, 1]
    assert claims.close_to(1.0, 0.998, tol=0.005, scale="angle").kind == "holds"


@pytest.mark.usefixtures("typecheck_off")
def test_a_scale_is_named_not_chosen():
    with pytest.raises(ValueError, match="scale"):
        claims.at_least(0.9, 0.95, approx=True, scale="log")
    with pytest.raises(ValueError, match="cosine"):
        claims.relaxed(1.5, +1, "angle")
    with pytest.raises(ValueError, match="side"):
        claims.relaxed(0.5, 0, "angle")


def test_all_of_is_the_weakest_verdict():
    h, a = claims.holds_if(True), claims.at_least(0.94, 0.95, approx=True)
    o, f = claims.excludes(iv(0.0, -1.0, 1.0)), claims.holds_if(False, "no")
    assert claims.all_of(h, h).kind == "holds"
    assert claims.all_of(h, a).kind == "approx"
    assert claims.all_of(a, o, h).kind == "open"
    assert claims.all_of(o, f, a).kind == "fails" and "no" in claims.all_of(o, f).detail
    with pytest.raises(TypeError):
        claims.all_of()


def test_a_failed_supporting_claim_counts_against_the_paper():
    on = claims.bears_on_paper
    assert [on(v, "supports") for v in claims.VERDICTS] == ["supported", "supported", "contradicted", "open"]
    assert [on(v, "contradicts") for v in claims.VERDICTS] == ["contradicted", "contradicted", "supported", "open"]
    assert [on(v, "qualifies") for v in claims.VERDICTS] == ["qualified", "qualified", "supported", "open"]
    with pytest.raises(ValueError, match="bearing"):
        on("holds", "agrees")
    with pytest.raises(ValueError, match="verdict"):
        on("true", "supports")


def test_paper_verdict_names_what_its_claims_say_together():
    def rec(verdict, bearing, L=50):
        return dict(id=f"c-{verdict}-{bearing}", verdict=verdict, bearing=bearing, setting=dict(L=L))

    verdict = claims.paper_verdict
    assert verdict([]).headline == "not tested"
    assert verdict([rec("open", "supports")]).headline == "open"
    assert verdict([rec("holds", "supports")]).headline == "holds at every setting tested"
    assert verdict([rec("holds", "supports"), rec("approx", "qualifies")]).headline == "holds with qualifications"
    # a supporting claim that fails is evidence against the paper's claim
    assert verdict([rec("fails", "supports")]).headline.startswith("does not hold")
    mixed = verdict([rec("holds", "supports", 50), rec("holds", "contradicts", 100), rec("open", "supports")])
    assert mixed.headline == "holds in some of the book's tests, does not hold in others; open in some"
    assert [(o, s["L"]) for o, _, s in mixed.outcomes] == [("supported", 50), ("contradicted", 100), ("open", 50)]


def test_margin_in_standard_errors():
    # a symmetric 95% interval of half-width 1.96 has standard error 1
    x = iv(0.5, 0.5 - 1.959964, 0.5 + 1.959964)
    assert claims.margin_in_se(x, 0.0, +1) == pytest.approx(0.5, rel=1e-5)
    assert claims.margin_in_se(x, 0.0, -1) == pytest.approx(-0.5, rel=1e-5)
    # the verdicts carry it: an interval that barely holds has a small margin
    assert claims.at_least(iv(0.5, 0.45, 0.55), 0.44).margin_se == pytest.approx(0.06 / (0.05 / 1.959964), rel=1e-5)
    assert claims.excludes(iv(0.1, 0.02, 0.18)).margin_se == pytest.approx(0.1 / (0.08 / 1.959964), rel=1e-5)
    inside = claims.close_to(iv(0.5, 0.45, 0.55), 0.5, tol=0.1)
    assert inside.margin_se == pytest.approx(0.1 / (0.05 / 1.959964), rel=1e-5)
    both = claims.all_of(claims.at_least(iv(0.5, 0.45, 0.55), 0.44), claims.holds_if(True))
    assert both.margin_se == pytest.approx(claims.at_least(iv(0.5, 0.45, 0.55), 0.44).margin_se)
    assert claims.at_least(0.9, 0.5).margin_se is None  # a plain number has no standard error
    # an asymmetric interval: the half facing the bound decides
    assert claims.at_least(iv(1.0, 0.79, 1.0), 0.5).margin_se == pytest.approx(0.5 / (0.21 / 1.959964), rel=1e-5)


def test_plain_verdicts_carry_their_relative_margin():
    """A verdict on a plain number records how far it is from its threshold as a fraction of
    the threshold (on the angle scale, of its angle); holds_if given the number and threshold
    does too, and all_of keeps its closest part, so a claim decided by a hair is visible."""
    assert claims.at_least(1.1, 1.0).margin_rel == pytest.approx(0.1)
    assert claims.at_most(1.1, 1.0).margin_rel == pytest.approx(-0.1)
    assert claims.close_to(0.3, 0.0, tol=0.4).margin_rel == pytest.approx(0.25)
    hair = claims.at_least(0.9512, 0.95, scale="angle")
    a = np.arccos(0.95)
    assert hair.margin_rel == pytest.approx((a - np.arccos(0.9512)) / a) and 0 < hair.margin_rel < 0.02
    fact = claims.holds_if(True, "no", value=3.0, bound=2.0, side=-1, se=0.5)
    assert fact.kind == "holds" and fact.margin_rel == pytest.approx(-0.5) and fact.margin_se == pytest.approx(-2.0)
    assert "3 <= 2" in fact.against
    joined = claims.all_of(claims.holds_if(True), claims.at_least(5.0, 1.0), hair)
    assert joined.kind == "holds" and joined.margin_rel == hair.margin_rel and joined.against == hair.against
    assert claims.holds_if(True).margin_rel is None and claims.at_least(0.5, 0.0).margin_rel is None
    with pytest.raises(ValueError, match="value and bound"):
        claims.holds_if(True, value=1.0)


def test_span_prints_a_range_whose_ends_differ_or_one_value():
    """A range is printed with enough decimals for its ends to differ (up to two more), and as
    one value when they agree even then: never "0.052 to 0.052"."""
    assert claims.span(0.0512, 0.0541) == "0.051 to 0.054"
    assert claims.span(0.05182, 0.05234) == "0.0518 to 0.0523"
    assert claims.span(0.051801, 0.051804) == "0.052"
    assert claims.span(0.05, 0.05, digits=2) == "0.05"
    with pytest.raises(ValueError, match="low"):
        claims.span(0.2, 0.1)


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.05, 0.95))
def test_a_negative_restated_positively_bears_the_same_on_the_paper(a, b, bound):
    """A claim "the rate is at least b" that the evidence refutes (expect="fails", bearing
    "supports") and the same evidence stated as "the rate is at most b" (holds, bearing
    "contradicts") say the same of the paper's claim, but for an interval ending exactly at b."""
    low, high = min(a, b), max(a, b)
    if bound in (low, high):
        return
    iv = stats.Interval((low + high) / 2, low, high)
    old = claims.bears_on_paper(claims.at_least(iv, bound).kind, "supports")
    new = claims.bears_on_paper(claims.at_most(iv, bound).kind, "contradicts")
    assert old == new

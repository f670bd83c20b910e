"""The benchmark's results file and the Performance page's table (attnclust.book.perf).

A malformed benchmarks/results.json fails here, not on the page; the goal marking is
checked on synthetic inputs.
"""

import copy
import json
from pathlib import Path

import pytest

from attnclust.book import perf

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results.json"


def synthetic(metrics):
    return {
        "schema": perf.SCHEMA,
        "command": "make bench",
        "date": "2026-01-01T00:00:00Z",
        "machine": {"cpu": "test cpu", "cores": 2, "memory_gb": 4.0, "versions": {"jax": "0"}},
        "load": {"start": [0.1, 0.2, 0.3], "end": [0.1, 0.2, 0.3]},
        "duration_s": 1.0,
        "metrics": metrics,
        "identity": [],
        "widgets": [],
        "book": None,
    }


def m(id_, value, goal=None, unit="s", section="S"):
    return {"id": id_, "section": section, "label": id_, "value": value, "unit": unit, "goal": goal,
            "load": 0.5}


def test_committed_results_file_is_valid():
    results = json.loads(RESULTS.read_text())
    perf.validate(results)
    ids = {x["id"] for x in results["metrics"]}
    # every goal is reported, met or not
    for goal_id in perf.GOALS:
        assert goal_id in ids, f"results.json lacks the goal metric {goal_id!r}"
    table = perf.markdown_table(results)
    assert table.count("\n") == len(results["metrics"]) + 1


STATED_MISSES = {"step_frac_roofline_L256"}
"""Goals the committed benchmark misses and the Performance page says so (a negative finding,
stated as one): the training step at L = 256 reaches a quarter of the exp roofline, not 40%."""


def test_committed_results_meet_their_goals():
    """Every metric of the committed benchmark that has a goal meets it (``goal_verdict``: a
    goal decided by an interval may be unresolved, the run's noise not deciding it; only a
    goal the measurement misses fails), apart from the misses the Performance page states
    (``STATED_MISSES``), which must still be misses. A missed goal is fixed in the code and
    measured again, or stated, not dropped from the file or from ``perf.GOALS``."""
    results = json.loads(RESULTS.read_text())
    missed = {x["id"]: f"{x['id']} = {x['value']!r} {x['unit']} (goal {x['goal']['op']} {x['goal']['target']})"
              for x in results["metrics"] if perf.goal_verdict(x) == perf.NOT_MET}
    unstated = [text for key, text in missed.items() if key not in STATED_MISSES]
    assert not unstated, f"benchmarks/results.json ({results['command']}, {results['date']}) misses: " + \
        "; ".join(unstated)
    assert STATED_MISSES <= set(missed), f"now met, no longer a stated miss: {STATED_MISSES - set(missed)}"
    page = (RESULTS.parents[1] / "chapters" / "performance.md").read_text()
    assert "the goal is not met" in page


def test_committed_results_figure_draws():
    import matplotlib

    matplotlib.use("Agg")
    from attnclust.book.figures.performance import identity_scaling, load_results

    fig = identity_scaling(results=load_results())
    assert len(fig.axes) == 2
    from attnclust.book.figures.performance import roofline_fractions

    results = load_results()
    fig = roofline_fractions(results=results)
    # one bar per L for each kernel measured: the library, the previous kernel, the C++ FFI
    # kernels (when the run timed them) and two PyTorch peers
    kernels = 4 + all("kernel" in row for row in results["steps"])
    bars = [p for p in fig.axes[0].patches]
    assert len(bars) == kernels * len(results["steps"])
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert ("C++ FFI kernels (benchmark only)" in labels) == (kernels == 5), labels
    fig = roofline_fractions(results={**results, "steps": [], "identity": []})
    assert "no training-step measurements" in [t.get_text() for t in fig.axes[0].texts]


@pytest.mark.parametrize(
    "value, goal, expected",
    [
        (5.0, {"op": ">=", "target": 5.0}, True),
        (4.99, {"op": ">=", "target": 5.0}, False),
        (0.3, {"op": "<=", "target": 0.3}, True),
        (0.31, {"op": "<=", "target": 0.3}, False),
        (None, {"op": "<=", "target": 0.3}, False),
        (float("nan"), {"op": ">=", "target": 1.0}, False),
        (1.0, None, None),
    ],
)
def test_goal_met(value, goal, expected):
    assert perf.goal_met(value, goal) is expected


def test_table_marks_goals():
    r = synthetic([
        m("a", 12.0, {"op": ">=", "target": 10.0}, unit="x"),
        m("b", 61.0, {"op": "<=", "target": 60.0}),
        m("c", 3.0),
        m("d", None, {"op": "<=", "target": 60.0}),
    ])
    rows = {row["quantity"]: row for row in perf.metric_rows(r)}
    assert rows["a"]["met"] == "met" and rows["a"]["goal"] == "≥ 10.0 x"
    assert rows["b"]["met"] == "NOT met" and rows["b"]["goal"] == "≤ 60.0 s"
    assert rows["c"]["met"] == "" and rows["c"]["goal"] == ""
    assert rows["d"]["met"] == "NOT met" and rows["d"]["measured"] == "n/a s"
    assert perf.summary(r) == {"met": 1, "not_met": 2, "unresolved": 0}
    md = perf.markdown_table(r).splitlines()
    assert md[0].startswith("| Section |") and len(md) == 2 + 4
    assert "NOT met" in perf.text_table(r)
    html = perf.html_table(r, section="S")
    assert html.count("<tr") == 1 + 4 and html.count('class="goal-not-met"') == 2
    with pytest.raises(ValueError, match="no metric in section"):
        perf.html_table(r, section="nope")


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r.pop("metrics"), "lacks the key 'metrics'"),
        (lambda r: r.update(schema=99), "schema"),
        (lambda r: r["machine"].pop("cpu"), "machine"),
        (lambda r: r.update(load={"start": [1.0], "end": [1.0, 1.0, 1.0]}), "load"),
        (lambda r: r["metrics"][0].pop("unit"), "lacks the key 'unit'"),
        (lambda r: r["metrics"][0].update(value="fast"), "value must be a number"),
        (lambda r: r["metrics"][0].update(goal={"op": ">", "target": 1}), "goal must be"),
        (lambda r: r["metrics"].append(copy.deepcopy(r["metrics"][0])), "appears twice"),
        (lambda r: r.update(metrics=[]), "non-empty"),
        (lambda r: r.update(identity={}), "identity"),
    ],
)
def test_validate_rejects_malformed(mutate, message):
    r = synthetic([m("a", 1.0, {"op": ">=", "target": 1.0})])
    perf.validate(r)
    mutate(r)
    with pytest.raises(ValueError, match=message):
        perf.validate(r)


def test_goals_are_well_formed():
    for goal in perf.GOALS.values():
        assert goal["op"] in perf.OPS and isinstance(goal["target"], float)


def _sign_test_k(n, level=0.95):
    """The sign test's k by brute force: the largest k with P(Binomial(n, 1/2) < k) <=
    (1 - level) / 2, from scipy's binomial."""
    from scipy.stats import binom

    return max((k for k in range(1, n // 2 + 1) if binom.cdf(k - 1, n, 0.5) <= (1 - level) / 2), default=0)


@pytest.mark.parametrize("n, k", [(5, 0), (6, 1), (8, 1), (9, 2), (15, 4), (20, 6), (41, 14)])
def test_sign_test_interval_exact_order_statistics(n, k):
    """The interval is the k-th smallest and k-th largest draw, k from the binomial tables
    (n = 15: the 4th and 12th of 15), and none below n = 6 at 95 %."""
    assert _sign_test_k(n) == k
    x = [float(i) for i in range(n, 0, -1)]  # n, ..., 1: the order statistics are 1..n
    lo, hi = perf.sign_test_interval(x)
    if k == 0:
        assert lo != lo and hi != hi  # nan
    else:
        assert (lo, hi) == (k, n - k + 1)


@pytest.mark.parametrize("n", range(1, 60))
def test_sign_test_interval_matches_scipy(n):
    import numpy as np

    x = np.random.default_rng(n).lognormal(size=n)
    k = _sign_test_k(n)
    lo, hi = perf.sign_test_interval(x)
    xs = np.sort(x)
    assert (k == 0 and lo != lo) or (lo, hi) == (xs[k - 1], xs[n - k])
    if k:
        assert lo <= np.median(x) <= hi
    k90 = _sign_test_k(n, 0.9)
    lo90, hi90 = perf.sign_test_interval(x, 0.9)
    assert (k90 == 0 and lo90 != lo90) or (lo90, hi90) == (xs[k90 - 1], xs[n - k90])


def test_paired_ratio():
    num = [2.0, 4.0, 3.0, 6.0, 5.0, 1.0, 8.0]
    den = [1.0, 2.0, 3.0, 2.0, 5.0, 2.0, 4.0]  # ratios 2, 2, 1, 3, 1, 0.5, 2
    r = perf.paired_ratio(num, den)
    assert r["n"] == 7 and r["median"] == 2.0 and (r["min"], r["max"]) == (0.5, 3.0)
    assert r["below_one"] == 1 and r["ci"] == [0.5, 3.0]  # n = 7: k = 1, the extremes
    assert perf.paired_ratio(num[:5], den[:5])["ci"] == [None, None]  # too few for an interval
    assert perf.paired_ratio([], [])["median"] is None
    with pytest.raises(ValueError):
        perf.paired_ratio([1.0, 2.0], [1.0])


GOAL_TOL = {"op": ">=", "target": 1.0, "tol": 0.05}


@pytest.mark.parametrize(
    "goal, interval, expected",
    [
        (GOAL_TOL, [0.96, 1.2], perf.MET),  # all above 1 / 1.05 = 0.952
        (GOAL_TOL, [0.90, 0.95], perf.NOT_MET),  # all below
        (GOAL_TOL, [0.949, 1.13], perf.UNRESOLVED),  # straddles
        (GOAL_TOL, [None, None], perf.UNRESOLVED),
        (GOAL_TOL, None, perf.UNRESOLVED),
        ({"op": "<=", "target": 2.0, "tol": 0.1}, [1.5, 2.19], perf.MET),  # all below 2.2
        ({"op": "<=", "target": 2.0, "tol": 0.1}, [2.3, 2.5], perf.NOT_MET),
        ({"op": "<=", "target": 2.0, "tol": 0.1}, [2.1, 2.3], perf.UNRESOLVED),
        ({"op": ">=", "target": 1.0}, [0.5, 2.0], perf.MET),  # no tol: the value decides
        (None, [0.5, 2.0], None),
    ],
)
def test_goal_verdict_three_states(goal, interval, expected):
    metric = {"value": 1.0, "goal": goal, **({"interval": interval} if interval is not None else {})}
    assert perf.goal_verdict(metric) == expected


def test_unresolved_goal_in_tables_and_summary():
    r = synthetic([
        {**m("a", 0.99, GOAL_TOL, unit="x"), "interval": [0.9, 1.1]},
        {**m("b", 1.2, GOAL_TOL, unit="x"), "interval": [1.1, 1.3]},
    ])
    perf.validate(r)
    rows = {row["quantity"]: row for row in perf.metric_rows(r)}
    assert rows["a"]["met"] == "unresolved" and rows["b"]["met"] == "met"
    assert rows["a"]["goal"] == "≥ 1 x within 5 % (95 % interval)"
    exact = synthetic([{**m("a", 0.5, {"op": ">=", "target": 0.4, "tol": 0.0}, unit=""), "interval": [0.39, 0.6]}])
    assert perf.metric_rows(exact)[0]["goal"] == "≥ 0.4 (95 % interval)"
    assert perf.metric_rows(exact)[0]["met"] == "unresolved"  # the median alone would meet it
    assert perf.summary(r) == {"met": 1, "not_met": 0, "unresolved": 1}
    html = perf.html_table(r)
    assert html.count('class="goal-unresolved"') == 1 and "<em>unresolved</em>" in html
    bad = synthetic([{**m("a", 1.0, GOAL_TOL), "interval": [1.0]}])
    with pytest.raises(ValueError, match="interval"):
        perf.validate(bad)
    with pytest.raises(ValueError, match="tol"):
        perf.validate(synthetic([m("a", 1.0, {**GOAL_TOL, "tol": 2})]))


@pytest.mark.parametrize("phrase, expected", [("AMD EPYC", "an AMD EPYC"), ("Intel Xeon", "an Intel Xeon"),
                                              ("Neoverse-N1", "a Neoverse-N1"), ("", "a ")])
def test_indefinite_article(phrase, expected):
    assert perf.indefinite_article(phrase) == expected

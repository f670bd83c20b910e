"""The benchmark's results file and the Performance page's table (attnclust.perf).

A malformed benchmarks/results.json fails here, not on the page; the goal marking is
checked on synthetic inputs.
"""

import copy
import json
from pathlib import Path

import pytest

from attnclust import perf

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


def test_committed_results_figure_draws():
    import matplotlib

    matplotlib.use("Agg")
    from attnclust.figures.performance import identity_scaling, load_results

    fig = identity_scaling(results=load_results())
    assert len(fig.axes) == 2
    from attnclust.figures.performance import roofline_fractions

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
    assert perf.summary(r) == {"met": 1, "not_met": 2}
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

"""The benchmark's results file and its table (chapter "Performance").

``benchmarks/run.py`` (``make bench``) measures the library and writes
``benchmarks/results.json``; the Performance page reads that file and shows the table built
here, so the page is rebuilt from data, never typed. This module holds no measurement: only
the schema of the file (``validate``), the goals (``GOALS``), the rules that mark a goal met
(``goal_met``, and ``goal_verdict`` for a goal decided by an interval), the paired ratios of
two interleaved timings with their sign-test interval (``sign_test_interval``,
``median_ci``, ``paired_ratio``), shared by the benchmark and the page, and the tables (``metric_rows``,
``markdown_table``, ``text_table``).

The file is one JSON object::

    {"schema": 1, "command": "make bench", "date": "...Z", "duration_s": 412.0,
     "machine": {"cpu": "...", "cores": 2, "memory_gb": 23.4, "platform": "...",
                 "versions": {"jax": "...", ...}, "backend": "cpu", "devices": 1},
     "load": {"start": [1m, 5m, 15m], "end": [...]},
     "metrics": [{"id": "...", "section": "...", "label": "...", "value": 1.0,
                  "unit": "...", "goal": {"op": ">=", "target": 5.0} | null,
                  "load": 1.2, "note": "..."}, ...],
     "roofline": {"exp": {...}, "bandwidth": {...}},
     "steps": [{"L": 50, "library": {...}, "previous": {...}, ...}, ...],
     "identity": [{"L": 1000, "blocked_s": ..., "blocked_rss_mb": ..., ...}, ...],
     "widgets": [...], "book": {...} | null}

Only ``metrics`` feeds the goal table; ``roofline``, ``steps``, ``peers``, ``identity``,
``widgets`` and ``book`` hold the raw numbers behind it (for the page's figures).
"""

from __future__ import annotations

import math
from typing import Any

SCHEMA = 1
"""Version of the results file layout; bump when a required key changes."""

OPS = (">=", "<=")
"""The comparisons a goal may use (the measured value must be >= or <= the target)."""

GOALS: dict[str, dict[str, Any]] = {
    # the training step as a fraction of this machine's exp roofline (measured in the run),
    # decided by the 95 % sign-test interval of the median fraction over the step's repeats
    # (``tol`` 0: the whole interval at or above the target)
    "step_frac_roofline_L256": {"op": ">=", "target": 0.40, "tol": 0.0},
    "step_frac_roofline_L1024": {"op": ">=", "target": 0.40, "tol": 0.0},
    # at the book's L = 50 the step is bound by overheads: no slower than the previous kernel,
    # within a tolerance (``tol``: the library may be up to 5 % slower), decided by the 95 %
    # sign-test interval of the paired ratios (``goal_verdict``), not by their median
    "step_vs_previous_L50": {"op": ">=", "target": 1.0, "tol": 0.05},
    # many seeds at once, against PyTorch's own way of running them (torch.func.vmap)
    "seeds_vs_torch_vmap": {"op": ">=", "target": 5.0},
    "identity_L100k_time": {"op": "<=", "target": 60.0},
    "identity_L100k_rss": {"op": "<=", "target": 2048.0},
    # what a reader waits for after a slider move: the explorer's callback and the PNG of its
    # figure that the notebook shows
    "widget_wait_p95_max": {"op": "<=", "target": 0.3},
    "book_clean": {"op": "<=", "target": 480.0},
    "book_cached": {"op": "<=", "target": 60.0},
}
"""The goals for this 2-core CPU, by metric id (units are the metric's own). The Performance
page says what each one means for a user. A goal with ``tol`` is decided by the interval its
metric records (``goal_verdict``)."""

MET, NOT_MET, UNRESOLVED = "met", "NOT met", "unresolved"
"""The marks of a goal in the table."""

REQUIRED_TOP = ("schema", "command", "date", "machine", "load", "metrics")
REQUIRED_MACHINE = ("cpu", "cores", "memory_gb", "versions")
REQUIRED_METRIC = ("id", "section", "label", "value", "unit", "goal")


def goal_met(value: float | None, goal: dict[str, Any] | None) -> bool | None:
    """Whether ``value`` meets ``goal`` ({"op": ">=" | "<=", "target": number}).

    Returns None when there is no goal, and False when the value is missing or not finite
    (a measurement that failed does not meet its goal).
    """
    if goal is None:
        return None
    op, target = goal["op"], float(goal["target"])
    if op not in OPS:
        raise ValueError(f"goal op must be one of {OPS}, got op={op!r}")
    if value is None or not math.isfinite(float(value)):
        return False
    return float(value) >= target if op == ">=" else float(value) <= target


def goal_threshold(goal: dict[str, Any]) -> float:
    """The value a goal's metric must reach: its target, moved by its tolerance ``tol`` (a
    fraction, 0 without one) in the direction the goal allows: target / (1 + tol) for ">="
    (a ratio "no slower than" may be up to tol slower), target (1 + tol) for "<="."""
    tol = float(goal.get("tol", 0.0))
    return float(goal["target"]) / (1 + tol) if goal["op"] == ">=" else float(goal["target"]) * (1 + tol)


def goal_verdict(metric: dict[str, Any]) -> str | None:
    """The mark of a metric's goal: None without a goal; for a goal with a tolerance
    (``tol``), decided by the 95 % interval the metric records (``interval``: [lo, hi]) against
    ``goal_threshold``: MET when the whole interval is on the goal's side of it, NOT_MET when
    the whole interval is on the other side, UNRESOLVED when it straddles the threshold or no
    finite interval was recorded (the noise of the run cannot decide); every other goal by
    ``goal_met`` on the value (MET or NOT_MET)."""
    goal = metric["goal"]
    if goal is None:
        return None
    if "tol" not in goal:
        return MET if goal_met(metric["value"], goal) else NOT_MET
    if goal["op"] not in OPS:
        raise ValueError(f"goal op must be one of {OPS}, got op={goal['op']!r}")
    lo, hi = (metric.get("interval") or (math.nan, math.nan))
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return UNRESOLVED
    t = goal_threshold(goal)
    above, below = lo >= t, hi < t
    if goal["op"] == "<=":
        above, below = hi <= t, lo > t
    return MET if above else (NOT_MET if below else UNRESOLVED)


def sign_test_interval(x: Any, level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of ``x`` (independent draws): the k-th
    smallest and the k-th largest of them, k the largest with P(Binomial(n, 1/2) < k) <=
    (1 - level) / 2 (the sign test's interval; its coverage is at least ``level``). (nan,
    nan) when n is too small for any k (n < 6 at 95 %)."""
    xs = sorted(float(v) for v in x)
    n = len(xs)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    alpha, cdf, k = (1 - level) / 2, 0.0, 0
    for j in range(n // 2):  # cdf = P(Binomial(n, 1/2) <= j)
        cdf += math.comb(n, j) / 2**n
        if cdf > alpha:
            break
        k = j + 1
    return (xs[k - 1], xs[n - k]) if k else (math.nan, math.nan)


def median_ci(x: Any, level: float = 0.95) -> list[float | None]:
    """``sign_test_interval`` of ``x`` as a results file stores it: [lo, hi], or [None, None]
    when there are too few values for one (plain JSON has no nan)."""
    return [None if math.isnan(v) else v for v in sign_test_interval(x, level)]


def paired_ratio(num: Any, den: Any, level: float = 0.95) -> dict[str, Any]:
    """The ratios num_i / den_i of two timings' interleaved repeats (``per_rep_s``, paired
    repeat by repeat): their median, the sign-test interval of the median
    (``sign_test_interval``; [None, None] when there are too few repeats for one, so that the
    results file stays plain JSON), their range, and how many are below 1 (den slower)."""
    import statistics

    r = sorted(p / q for p, q in zip(num, den, strict=True))
    if not r:
        return {"n": 0, "median": None, "ci": [None, None], "level": level, "min": None, "max": None,
                "below_one": 0}
    return {"n": len(r), "median": statistics.median(r), "ci": median_ci(r, level), "level": level, "min": r[0], "max": r[-1],
            "below_one": sum(x < 1 for x in r)}


def indefinite_article(phrase: str) -> str:
    """``phrase`` with "a" or "an" before it, by its first letter (a vowel: "an AMD EPYC",
    "an Intel Xeon"; otherwise "a": "a Neoverse-N1")."""
    return ("an " if phrase[:1].lower() in ("a", "e", "i", "o", "u") else "a ") + phrase


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def validate(results: dict[str, Any]) -> None:
    """Raise ValueError naming the first problem if ``results`` is not a results file the
    page can show (missing keys, wrong types, unknown goal op, duplicate metric ids)."""
    if not isinstance(results, dict):
        raise ValueError(f"results must be a JSON object, got {type(results).__name__}")
    for key in REQUIRED_TOP:
        if key not in results:
            raise ValueError(f"results lacks the key {key!r}")
    if results["schema"] != SCHEMA:
        raise ValueError(f"results schema must be {SCHEMA}, got {results['schema']!r}")
    machine = results["machine"]
    if not isinstance(machine, dict):
        raise ValueError("results['machine'] must be an object")
    for key in REQUIRED_MACHINE:
        if key not in machine:
            raise ValueError(f"results['machine'] lacks the key {key!r}")
    load = results["load"]
    if not isinstance(load, dict) or not all(
        isinstance(load.get(k), list) and len(load[k]) == 3 and all(map(_is_number, load[k]))
        for k in ("start", "end")
    ):
        raise ValueError("results['load'] must have 'start' and 'end', each 3 load averages")
    metrics = results["metrics"]
    if not isinstance(metrics, list) or not metrics:
        raise ValueError("results['metrics'] must be a non-empty list")
    seen: set[str] = set()
    for i, m in enumerate(metrics):
        if not isinstance(m, dict):
            raise ValueError(f"metrics[{i}] must be an object")
        for key in REQUIRED_METRIC:
            if key not in m:
                raise ValueError(f"metrics[{i}] ({m.get('id', '?')}) lacks the key {key!r}")
        if m["id"] in seen:
            raise ValueError(f"metric id {m['id']!r} appears twice")
        seen.add(m["id"])
        if m["value"] is not None and not _is_number(m["value"]):
            raise ValueError(f"metric {m['id']!r}: value must be a number or null, got {m['value']!r}")
        goal = m["goal"]
        if goal is not None:
            if not isinstance(goal, dict) or goal.get("op") not in OPS or not _is_number(goal.get("target")):
                raise ValueError(
                    f"metric {m['id']!r}: goal must be null or {{'op': '>=' or '<=', 'target': number}}, got {goal!r}"
                )
            if "tol" in goal and not (_is_number(goal["tol"]) and 0 <= goal["tol"] < 1):
                raise ValueError(f"metric {m['id']!r}: a goal's tol must be a number in [0, 1), got {goal['tol']!r}")
            interval = m.get("interval")
            if interval is not None and not (isinstance(interval, list) and len(interval) == 2
                                             and all(x is None or _is_number(x) for x in interval)):
                raise ValueError(f"metric {m['id']!r}: interval must be [lo, hi], got {interval!r}")
    for key in ("identity", "widgets"):
        if key in results and not isinstance(results[key], list):
            raise ValueError(f"results[{key!r}] must be a list")


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e4:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 0.01:
        return f"{v:.3g}"
    return f"{v:.2e}"


def _goal_text(goal: dict[str, Any] | None, unit: str) -> str:
    if goal is None:
        return ""
    sign = "≥" if goal["op"] == ">=" else "≤"
    text = f"{sign} {_fmt(goal['target'])} {unit}".strip()
    if "tol" in goal:  # decided by the interval (goal_verdict)
        tol = float(goal["tol"])
        text += f" within {100 * tol:g} % (95 % interval)" if tol else " (95 % interval)"
    return text


def metric_rows(results: dict[str, Any]) -> list[dict[str, str]]:
    """One row per metric: section, quantity, measured (value and unit), goal, met
    (``goal_verdict``: "met", "NOT met", "unresolved", or "" without a goal) and the 1-minute
    load when it was measured."""
    validate(results)
    rows = []
    for m in results["metrics"]:
        met = goal_verdict(m)
        load = m.get("load")
        rows.append(
            {
                "section": m["section"],
                "quantity": m["label"],
                "measured": f"{_fmt(m['value'])} {m['unit']}".strip(),
                "goal": _goal_text(m["goal"], m["unit"]),
                "met": met or "",
                "load": "" if load is None else f"{float(load):.1f}",
                "note": m.get("note", ""),
            }
        )
    return rows


COLUMNS = (("section", "Section"), ("quantity", "Quantity"), ("measured", "Measured"),
           ("goal", "Goal"), ("met", "Met"), ("load", "Load"))


def sections(results: dict[str, Any]) -> list[str]:
    """The sections of the table, in order of first appearance."""
    return list(dict.fromkeys(m["section"] for m in results["metrics"]))


def _table(results: dict[str, Any], section: str | None) -> tuple[list[dict], tuple]:
    """The goal table's rows and columns: every metric, or only those of ``section`` (then
    without the Section column)."""
    rows = metric_rows(results)
    if section is None:
        return rows, COLUMNS
    rows = [r for r in rows if r["section"] == section]
    if not rows:
        raise ValueError(f"no metric in section {section!r}; sections: {sections(results)}")
    return rows, tuple(c for c in COLUMNS if c[0] != "section")


def markdown_table(results: dict[str, Any], section: str | None = None) -> str:
    """The goal table as Markdown (for the Performance page): every metric, or only those
    of ``section`` (then without the Section column)."""
    rows, cols = _table(results, section)
    head = "| " + " | ".join(title for _, title in cols) + " |"
    rule = "|" + "|".join("---" for _ in cols) + "|"
    body = [
        "| " + " | ".join(r[key].replace("|", "\\|") for key, _ in cols) + " |" for r in rows
    ]
    return "\n".join([head, rule, *body])


def html_table(results: dict[str, Any], section: str | None = None) -> str:
    """The goal table as an HTML table (the Performance page shows it as a cell output;
    Markdown outputs are rendered as CommonMark there, which has no tables). Rows whose
    goal is not met carry the class ``goal-not-met``, those whose goal is unresolved the class
    ``goal-unresolved``."""
    import html

    rows, cols = _table(results, section)
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title in cols)
    body = []
    for r in rows:
        cls = {NOT_MET: ' class="goal-not-met"', UNRESOLVED: ' class="goal-unresolved"'}.get(r["met"], "")
        marked = {NOT_MET: "<strong>NOT met</strong>", UNRESOLVED: "<em>unresolved</em>"}
        cells = "".join(
            f"<td>{marked[r[k]] if k == 'met' and r[k] in marked else html.escape(r[k])}</td>" for k, _ in cols
        )
        title = f' title="{html.escape(r["note"])}"' if r.get("note") else ""
        body.append(f"<tr{cls}{title}>{cells}</tr>")
    return (
        '<table class="table perf-table">\n<thead><tr>' + head + "</tr></thead>\n<tbody>\n"
        + "\n".join(body) + "\n</tbody>\n</table>"
    )


def text_table(results: dict[str, Any]) -> str:
    """The goal table as fixed-width text (what ``make bench`` prints)."""
    rows = metric_rows(results)
    cols = [(key, title) for key, title in COLUMNS if key != "section"]
    widths = {k: max(len(t), *(len(r[k]) for r in rows)) for k, t in cols}
    lines = []
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            lines.append("")
            lines.append(f"== {section}")
            lines.append("  ".join(t.ljust(widths[k]) for k, t in cols))
        lines.append("  ".join(r[k].ljust(widths[k]) for k, _ in cols))
    return "\n".join(lines).lstrip("\n")


def summary(results: dict[str, Any]) -> dict[str, int]:
    """Counts of goals met, not met and unresolved (``goal_verdict``)."""
    marks = [goal_verdict(m) for m in results["metrics"]]
    return {"met": marks.count(MET), "not_met": marks.count(NOT_MET), "unresolved": marks.count(UNRESOLVED)}

"""The claims of the ledger whose verdict is close to changing: margin / standard error.

Every verdict the ledger computes on a statistic records how far the statistic's estimate is
from the bound it was decided against, in standard errors (``attnclust.book.claims.margin_in_se``,
the record's ``margin_se``). A verdict a few more samples could turn has a small margin. This
script reads the ledger of a built book (``_build/html/claims.json``) or of executed chapters
(``.ipynb`` files, whose cells glued the claims' records) and prints, smallest first, the
claims with ``|margin_se|`` below ``--below`` (2.5 by default: a "holds" on a 95% interval
has at least about 2), with their verdict, evidence sizes and the margin; then the claims
with a plain number against a threshold (``at_least``/``at_most``/``close_to`` on a number,
``holds_if`` given its value and threshold, any part of an ``all_of``: the record's
``margin_rel``), within ``--rel`` of their threshold. A build older than ``margin_se`` is read from the verdicts' details where they
name the bound.

    python scripts/claim_margins.py _build/html/claims.json
    python scripts/claim_margins.py executed/training_dynamics.ipynb --below 3
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

from scipy.stats import norm

MIME = "application/vnd.attnclust.claim+json"  # attnclust.book.claims.MIME, kept import-free
GLUED = "application/papermill.record/" + MIME  # as myst_nb.glue stores it in a notebook


def records(path: Path) -> list[dict]:
    """The ledger records in ``path``: a claims.json or an executed notebook."""
    data = json.loads(path.read_text(encoding="utf8"))
    if "claims" in data:
        return list(data["claims"])
    out = []
    for cell in data.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            rec = data.get(MIME, data.get(GLUED))
            if rec is not None:
                out.append(json.loads(rec) if isinstance(rec, str) else rec)
    return out


ONE_SIDED = re.compile(r"the whole interval is (>=|<=) (\S+?)(?:,|$)")
PLAIN = re.compile(r"^(\S+) (>=|<=) (\S+)$|^off by (\S+) \(tolerance (\S+)\)$")


def intervals(evidence: dict) -> list[dict]:
    return [v for v in evidence.values() if isinstance(v, dict) and {"estimate", "low", "high"} <= set(v)]


def margin(rec: dict) -> tuple[float | None, str]:
    """The record's margin: ``margin_se`` where the ledger recorded it; for a record of an older
    build, the same margin from its detail ("the whole interval is >= b") when its evidence holds
    one interval; for a plain number, its distance to the bound as a fraction of the bound
    ("rel"), which has no standard error."""
    if rec.get("margin_se") is not None:
        return rec["margin_se"], "s.e."
    detail = rec.get("detail", "")
    m, ivs = ONE_SIDED.search(detail), intervals(rec["evidence"])
    if m and len(ivs) == 1:
        iv, side, bound = ivs[0], 1 if m.group(1) == ">=" else -1, float(m.group(2))
        q = norm.ppf(0.5 + iv.get("level", 0.95) / 2)
        half = iv["estimate"] - iv["low"] if side > 0 else iv["high"] - iv["estimate"]
        se = half / q if half > 0 else (iv["high"] - iv["low"]) / (2 * q)
        return (side * (iv["estimate"] - bound) / se if se > 0 else math.inf), "s.e."
    m = PLAIN.match(detail)
    if m and m.group(1):
        x, side, bound = float(m.group(1)), 1 if m.group(2) == ">=" else -1, float(m.group(3))
        return (side * (x - bound) / abs(bound) if bound else None), "rel"
    if m and m.group(4):
        off, tol = float(m.group(4)), float(m.group(5))
        return ((tol - off) / tol if tol else None), "rel"
    return None, ""


def relative(rec: dict) -> tuple[float | None, str]:
    """The record's margin against a threshold as a fraction of the threshold's size, and the
    comparison it measures: ``margin_rel`` where the ledger recorded it (a verdict on a plain
    number, ``holds_if`` given its value and threshold, or the closest part of an ``all_of``),
    else, for an older build, from a detail that names the bound (``margin``)."""
    if rec.get("margin_rel") is not None:
        return rec["margin_rel"], rec.get("margin_against", "")
    z, kind = margin(rec)
    return (z, rec.get("detail", "")) if kind == "rel" else (None, "")


def sizes(evidence: dict) -> str:
    """The sample sizes of the evidence's intervals ("rate n=16")."""
    found = [f"{k} n={v['n']}" for k, v in evidence.items() if isinstance(v, dict) and v.get("n")]
    return ", ".join(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, help="claims.json or executed .ipynb files")
    ap.add_argument("--below", type=float, default=2.5, help="list claims with |margin_se| below this")
    ap.add_argument("--rel", type=float, default=0.25,
                    help="list plain-number claims within this fraction of their bound")
    args = ap.parse_args(argv)
    recs = [r for p in args.paths for r in records(p)]
    scored = [(r, *margin(r)) for r in recs]
    by_se = sorted(((r, z) for r, z, kind in scored if kind == "s.e." and abs(z) < args.below),
                   key=lambda t: abs(t[1]))
    rels = [(r, *relative(r)) for r in recs]
    by_rel = sorted(((r, z, what) for r, z, what in rels if z is not None and abs(z) < args.rel),
                    key=lambda t: abs(t[1]))
    n_se = sum(kind == "s.e." for _, _, kind in scored)
    n_rel = sum(z is not None for _, z, _ in rels)
    n_none = sum(kind != "s.e." and z is None for (_, _, kind), (_, z, _) in zip(scored, rels))
    print(f"{len(recs)} claims; {n_se} decided on a statistic (margin in standard errors), {n_rel} "
          f"with a plain number against a threshold (margin as a fraction of the threshold), "
          f"{n_none} on a fact alone.")
    print(f"On a statistic, |margin| < {args.below:g} s.e.:")
    for r, z in by_se:
        print(f"  {z:+6.2f} s.e.  {r['verdict']:7s} {r['id']}  ({sizes(r['evidence'])})")
        if r.get("detail"):
            print(f"           {r['detail']}")
    print(f"On a plain number, within {args.rel:.0%} of its threshold:")
    for r, z, what in by_rel:
        print(f"  {z:+6.1%}       {r['verdict']:7s} {r['id']}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

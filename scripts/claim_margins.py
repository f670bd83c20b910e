"""The claims of the ledger whose verdict is close to changing: margin / standard error.

Every verdict the ledger computes on a statistic records how far the statistic's estimate is
from the bound it was decided against, in standard errors (``attnclust.claims.margin_in_se``,
the record's ``margin_se``). A verdict a few more samples could turn has a small margin. This
script reads the ledger of a built book (``_build/html/claims.json``) or of executed chapters
(``.ipynb`` files, whose cells glued the claims' records) and prints, smallest first, the
claims with ``|margin_se|`` below ``--below`` (2 by default), with their verdict, evidence
sizes and the margin; and how many claims have no margin (a verdict on a plain number or a
fact).

    python scripts/claim_margins.py _build/html/claims.json
    python scripts/claim_margins.py executed/training_dynamics.ipynb --below 3
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MIME = "application/vnd.attnclust.claim+json"  # attnclust.claims.MIME, kept import-free


def records(path: Path) -> list[dict]:
    """The ledger records in ``path``: a claims.json or an executed notebook."""
    data = json.loads(path.read_text(encoding="utf8"))
    if "claims" in data:
        return list(data["claims"])
    out = []
    for cell in data.get("cells", []):
        for output in cell.get("outputs", []):
            rec = output.get("data", {}).get(MIME)
            if rec is not None:
                out.append(json.loads(rec) if isinstance(rec, str) else rec)
    return out


def sizes(evidence: dict) -> str:
    """The sample sizes of the evidence's intervals ("rate n=16")."""
    found = [f"{k} n={v['n']}" for k, v in evidence.items() if isinstance(v, dict) and v.get("n")]
    return ", ".join(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, help="claims.json or executed .ipynb files")
    ap.add_argument("--below", type=float, default=2.0, help="list claims with |margin_se| below this")
    args = ap.parse_args(argv)
    recs = [r for p in args.paths for r in records(p)]
    with_margin = [r for r in recs if r.get("margin_se") is not None]
    close = sorted((r for r in with_margin if abs(r["margin_se"]) < args.below), key=lambda r: abs(r["margin_se"]))
    print(f"{len(recs)} claims; {len(with_margin)} with a margin in standard errors; "
          f"{len(close)} with |margin| < {args.below:g} s.e.:")
    for r in close:
        print(f"  {r['margin_se']:+6.2f} s.e.  {r['verdict']:7s} {r['id']}  ({sizes(r['evidence'])})")
        if r.get("detail"):
            print(f"           {r['detail']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

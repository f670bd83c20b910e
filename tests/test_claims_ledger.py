"""The claims ledger in a built book (_ext/claims_ledger.py), on a tiny book with the real
_config.yml: the role shows a claim's sentence with a link to its row, the Claims page lists
every claim with its setting, evidence and verdict, the build writes claims.json, and a claim
recorded but never shown, or shown but never recorded, fails the build.

Each build starts a kernel per page: a few seconds each."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from attnclust.assignments.source import MYST_HEADER

from test_book_build import ROOT, build

pytestmark = pytest.mark.integration

GOOD = MYST_HEADER + r"""

# Toy chapter

```{code-cell} python3
from attnclust.book import claims
from attnclust import stats
rate = stats.binomial_interval(15, 16)
claims.claim("toy-aligns", f"{15} of {16} seeds end with $|\cos| \ge 0.95$.",
             setting=dict(K=2, d=5, L=50, lam=1.0, seeds=16), evidence=dict(rate=rate),
             verdict=claims.at_least(rate, 0.5), paper="alignment", bearing="supports")
claims.claim("toy-risk", "The risk is below one.", setting=dict(L="inf"), evidence=dict(risk=0.9),
             verdict=claims.at_most(0.9, 1.0));
```

Training: {claim}`toy-aligns` And {claim}`toy-risk`
"""

UNSHOWN = MYST_HEADER + """

# Unshown

```{code-cell} python3
from attnclust.book import claims
claims.claim("toy-hidden", "Never shown.", setting=dict(L=1), evidence=dict(x=1.0),
             verdict=claims.holds_if(True));
```

Nothing here.
"""

UNKNOWN = MYST_HEADER + """

# Unknown

```{code-cell} python3
1 + 1
```

A claim no cell made: {claim}`toy-missing`
"""

LEDGER = """# Claims

```{claims-ledger}
:paper:
```

```{claims-ledger}
:replications:
```

```{claims-ledger}
:summary:
```

```{claims-ledger}
```
"""


def make_book(root, pages: dict[str, str]):
    (root / "chapters").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    shutil.copy(ROOT / "chapters" / "references.bib", root / "chapters" / "references.bib")
    shutil.copytree(ROOT / "_ext", root / "_ext")
    for name, text in pages.items():
        (root / "chapters" / f"{name}.md").write_text(text)
    entries = "".join(f"  - file: chapters/{n}\n" for n in pages if n != "toy")
    (root / "_toc.yml").write_text(f"format: jb-book\nroot: chapters/toy\nchapters:\n{entries}")
    return root


def _write_report(root, seed: int, verdicts: dict[str, str]) -> None:
    """A replication report (attnclust.book.replication.report) in which each claim of
    ``verdicts`` was recorded with that verdict, its prose written for "holds"."""
    from attnclust.book import replication

    log = root / f"claims-{seed}.jsonl"
    log.write_text("".join(json.dumps({"id": k, "verdict": v, "detail": "toy", "expect": ["holds"],
                                       "sentence": k, "evidence": {"x": 1}}) + "\n"
                           for k, v in verdicts.items()))
    rep = replication.report(seed, log, [], expected_ids=list(verdicts), experiments={}, commit="abc1234def",
                             clean=True)
    (root / replication.REPORT_DIR).mkdir(exist_ok=True)
    (root / replication.REPORT_DIR / f"seed-{seed}.json").write_text(json.dumps(rep))


def test_ledger_page_json_and_links(tmp_path):
    root = make_book(tmp_path, {"toy": GOOD, "claims": LEDGER})
    _write_report(root, 7, {"toy-aligns": "holds", "toy-risk": "fails"})
    r = build(root)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    html = root / "_build" / "html"
    toy = (html / "chapters" / "toy.html").read_text()
    ledger = (html / "chapters" / "claims.html").read_text()
    # the sentence in the prose, with its anchor and a link to its row
    assert 'id="claim-toy-aligns"' in toy and "seeds end with" in toy
    assert 'href="claims.html#ledger-toy-aligns"' in toy
    # the row, its verdict, its setting (lam shown as the symbol) and the link back
    assert 'id="ledger-toy-aligns"' in ledger and 'href="toy.html#claim-toy-aligns"' in ledger
    assert "λ = 1" in ledger and "holds" in ledger and "exact binomial" in ledger
    # the paper's table names the paper's claims with their setting, tested or not, and judges
    # the paper's claim from the book's claims that bear on it
    assert 'id="paper-quantization"' in ledger and "The book has no claim that tests it." in ledger
    assert "Setting: The paper&#8217;s simplified layer" in ledger or "Setting: The paper's simplified layer" in ledger
    assert "the book's test: holds; so the paper's claim holds here" in ledger.replace("&#8217;", "'")
    assert "<strong>holds at every setting tested</strong>" in ledger
    assert "<strong>not tested</strong>" in ledger
    assert "holds at K = 2, d = 5, L = 50, λ = 1, seeds = 16 (toy-aligns)" in ledger
    # each claim's verdict under the replication seed beside the book's, a flip in bold, and
    # the table of the committed reports
    assert "seed 7: holds" in ledger and "<strong>seed 7: does not hold (flips)</strong>" in ledger
    assert re.search(r"<td><p>7</p>\s*</td>\s*<td><p>abc1234, \d{4}-\d\d-\d\d</p>\s*</td>\s*<td><p>2</p>"
                     r"\s*</td>\s*<td><p>1</p>\s*</td>\s*<td><p>1</p>", ledger)
    # the summary counts both claims as holding
    assert re.search(r"All chapters</p>\s*</td>\s*<td><p>2</p>\s*</td>\s*<td><p>2</p>", ledger)
    # math inserted into the page is typeset (MathJax is loaded on the page)
    assert "mathjax" in ledger.lower()
    data = json.loads((html / "claims.json").read_text())
    assert [c["id"] for c in data["claims"]] == ["toy-aligns", "toy-risk"]
    assert data["claims"][0]["evidence"]["rate"]["n"] == 16
    assert data["claims"][0]["url"] == "chapters/toy.html#claim-toy-aligns"
    assert data["counts"]["holds"] == 2


def test_unshown_and_unknown_claims_fail_the_build(tmp_path):
    root = make_book(tmp_path, {"toy": GOOD, "unshown": UNSHOWN, "unknown": UNKNOWN, "claims": LEDGER})
    r = build(root)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "'toy-hidden' is recorded but its prose never shows it" in out
    assert "claim 'toy-missing': no cell of this page recorded it" in out


def _verdict_page(expect: str) -> str:
    return MYST_HEADER + f"""

# Toy chapter

```{{code-cell}} python3
from attnclust.book import claims
claims.claim("toy-below", "The toy's risk is below one half.", setting=dict(L="inf"),
             evidence=dict(risk=0.7), verdict=claims.at_most(0.7, 0.5), expect={expect!r})
```

The risk: {{claim}}`toy-below`
"""


def test_a_claim_whose_verdict_differs_from_its_expected_one_fails_the_build(tmp_path):
    """A planted claim: the evidence (0.7) says "does not hold"; written for "holds" the
    build fails and names it, written for "fails" it builds and the ledger says so."""
    r = build(make_book(tmp_path / "holds", {"toy": _verdict_page("holds"), "claims": LEDGER}))
    assert r.returncode != 0
    assert "toy-below" in r.stdout + r.stderr and "fails" in r.stdout + r.stderr
    root = make_book(tmp_path / "fails", {"toy": _verdict_page("fails"), "claims": LEDGER})
    r = build(root)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    ledger = json.loads((root / "_build" / "html" / "claims.json").read_text())
    rows = ledger["claims"] if isinstance(ledger, dict) else ledger
    assert [c["verdict"] for c in rows if c["id"] == "toy-below"] == ["fails"], rows

"""Tests of the browser checks: a tiny book with planted faults must be reported.

A temporary copy of the book's configuration (_config.yml, _ext/, references.bib) with a
two-page _toc.yml is built with errors allowed (not -W): `good` has every feature done
right (theorem, exercise with a solution dropdown, math, a captioned figure, a widget
with its static figure, cross-references) and must give no problem at all; `planted`
has a failing cell, stderr, a broken image, an external image, images without alt text,
raw and erroneous TeX, a widget without a figure, dead links, a JavaScript error, a
theorem that never renders and a dropdown that does not open, and each must be reported.
The build takes seconds (two small notebooks, matplotlib and ipywidgets only).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import book_checks

from attnclust.assignments.source import MYST_HEADER

pytestmark = pytest.mark.browser
REPO = book_checks.REPO

HEADER = MYST_HEADER

GOOD = HEADER + r'''
# Good page

The centroid $\mu_k \in \R^d$ of a cluster, and a display:

$$
\E[x] = \sum_{k=1}^K \pi_k \mu_k .
$$ (eq-mean)

See {prf:ref}`thm-good`, {ref}`sec-widget`, {eq}`eq-mean` and {doc}`planted`.

A SymPy result is shown as typeset math (a text/latex output):

```{code-cell} python3
import sympy
x = sympy.Symbol("x", positive=True)
sympy.sqrt(x) / (1 + sympy.exp(-x))
```

```{prf:definition} Centroid
:label: def-centroid

The mean $\mu_k$ of cluster $k$.
```

```{prf:theorem} Good theorem
:label: thm-good

For every $x$, $\|x - \mu\|^2 \ge 0$.
```

```{prf:proof}
A norm is non-negative.
```

```{exercise}
:label: ex-good

Compute $1 + 1$.
```

```{solution} ex-good
:class: dropdown

$1 + 1 = 2$.
```

````{exercise-start}
:label: ex-code
````

Write code that prints 2.

````{exercise-end}
````

````{solution-start} ex-code
:class: dropdown
````

```{code-cell} python3
print(1 + 1)
```

````{solution-end}
````

## A captioned figure

```{code-cell} python3
---
mystnb:
  image:
    alt: A straight line through the origin with slope 2.
  figure:
    caption: The line at the widget's default slope.
    name: fig-good-line
---
import matplotlib.pyplot as plt

def draw(slope=2.0):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, slope])
    plt.show()

draw()
```

(sec-widget)=
## A widget and its frame

```{code-cell} python3
---
tags: [widget]
mystnb:
  image:
    alt: A straight line through the origin with slope 2, the widget at its default slope.
---
import ipywidgets
draw()  # the widget's own frame, in its cell's output (what a static explorer shows)
ipywidgets.interactive(draw, slope=(0.0, 4.0))
```
'''

PLANTED = HEADER + r'''
# Planted faults

Inline math with an unknown macro: $\notamacro{x}$.

<div class="raw">$$ y = x^2 $$</div>

![](missing-image.png)

<img src="https://example.invalid/outside.png" alt="an image from elsewhere">

<a href="nowhere.html">a dead link</a> and <a href="#no-such-anchor">a bad anchor</a>.

<script>throw new Error("planted javascript error")</script>

<details class="planted-details"><summary onclick="event.preventDefault()">Stuck</summary>Hidden.</details>

`````{only} latex
```{prf:theorem} Never shown in HTML
:label: thm-hidden

Nothing.
```
`````

```{code-cell} python3
raise ValueError("planted failure")
```

```{code-cell} python3
import sys
print("planted stderr", file=sys.stderr)
```

## Widget without a figure

```{code-cell} python3
import matplotlib.pyplot as plt
plt.plot([0, 2])
plt.show()
```

```{code-cell} python3
:tags: [widget]
print("a widget with no frame of its own, a static figure above it")
```

```{code-cell} python3
:tags: [widget, remove-cell]
print("a widget whose cell is removed from the page")
```

```{code-cell} python3
import matplotlib.pyplot as plt
plt.plot([0, 1])
plt.show()
```
'''

EXPECTED = {
    "failing cell": r"execution: .*traceback",
    "stderr": r"execution: .*stderr",
    "broken image": r"image: does not load .*missing-image\.png",
    "external image": r"image: from another host .*outside\.png",
    "image without alt": r"image: no alt text and no caption \(alt=''\)",
    "plot without alt": r"image: no alt text and no caption \(alt='\.\./_images/",
    "raw math": r"math: raw TeX in the visible text: '\$\$ y = x\^2 \$\$'",
    "TeX error": r"math: MathJax error: .*notamacro",
    "widget without figure": r"widgets: widget 1 under 'Widget without a figure'.*shows 0 images, not one frame",
    "figure above a widget": r"widgets: widget 1 under 'Widget without a figure'.*1 other image\(s\) above it",
    "removed widget": r"widgets: the source has 2 cell\(s\) tagged 'widget' but the page shows 1",
    "dead link": r"link: 'nowhere.html' .*missing file",
    "bad anchor": r"link: '#no-such-anchor' .*no id 'no-such-anchor'",
    "javascript error": r"javascript exception: .*planted javascript error",
    "theorem not rendered": r"directive: 1 \{prf:theorem\} in the source, 0 rendered",
    "stuck dropdown": r"dropdown \(details\) 'Stuck': does not open on click",
}


@pytest.fixture(scope="module")
def planted_book(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("planted_book")
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    config["execute"]["allow_errors"] = True
    config["execute"]["stderr_output"] = "show"
    config["sphinx"]["config"]["nb_execution_raise_on_error"] = False
    config["sphinx"]["config"]["nb_execution_allow_errors"] = True
    config["title"] = "Planted book"
    (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: chapters/good\nchapters:\n  - file: chapters/planted\n")
    (root / "chapters").mkdir()
    shutil.copy(REPO / "chapters" / "references.bib", root / "chapters" / "references.bib")
    if (REPO / "_ext").is_dir():
        shutil.copytree(REPO / "_ext", root / "_ext")
    (root / "chapters" / "good.md").write_text(GOOD)
    (root / "chapters" / "planted.md").write_text(PLANTED)
    jb = Path(sys.executable).parent / "jupyter-book"
    r = subprocess.run([str(jb), "build", str(root), "--builder", "html"],
                       capture_output=True, text=True, timeout=600, check=False)
    html = root / "_build" / "html"
    assert r.returncode == 0 and (html / "chapters" / "planted.html").is_file(), (
        r.stdout[-3000:] + r.stderr[-3000:])
    return root


@pytest.fixture(scope="module")
def planted_site(planted_book, browser):
    html = planted_book / "_build" / "html"
    # its own: the planted page's image from another host must not fail the session's
    # check that the book's pages ask no other host (conftest.py)
    assets = book_checks.OfflineAssets()
    with book_checks.serve_directory(html) as url:
        context = book_checks.new_context(browser, url, assets)
        yield planted_book, html, url, context
        context.close()


def problems_for(site, docname, tmp_path=None):
    root, html, url, context = site
    source = book_checks.read_source(root, docname)
    return book_checks.check_page(context, url, html, source, tmp_path)


def test_toc_of_planted_book(planted_book):
    assert book_checks.toc_docnames(planted_book) == ["chapters/good", "chapters/planted"]


def test_source_parsing(planted_book):
    good = book_checks.read_source(planted_book, "chapters/good")
    assert good.has_math
    assert good.widget_cells == 1
    assert good.count("prf:theorem") == 1 and good.count("prf:definition") == 1
    assert good.count("exercise", "exercise-start") == 2
    assert good.count("solution", "solution-start") == 2
    assert good.solution_dropdowns == 2
    planted = book_checks.read_source(planted_book, "chapters/planted")
    assert planted.widget_cells == 2
    assert planted.count("prf:theorem") == 1
    # code in cells is not prose: `print(...)` is not mistaken for math or directives
    assert "print(" not in planted.prose


def test_good_page_has_no_problem(planted_site, tmp_path):
    problems = problems_for(planted_site, "chapters/good", tmp_path)
    assert problems == [], "\n".join(problems)
    assert (tmp_path / "chapters__good.png").stat().st_size > 10_000  # a real screenshot


def test_every_planted_fault_is_reported(planted_site):
    problems = problems_for(planted_site, "chapters/planted")
    text = "\n".join(problems)
    missing = [name for name, pattern in EXPECTED.items() if not re.search(pattern, text)]
    assert not missing, f"not reported: {missing}\nproblems were:\n{text}"


def test_search_in_planted_book(planted_site):
    _, _, url, context = planted_site
    problems, links = book_checks.check_search(context, url, "centroid")
    assert not problems, problems
    assert any("chapters/good.html" in link for link in links), links


def test_search_reports_nothing_found(planted_site):
    _, _, url, context = planted_site
    problems, links = book_checks.check_search(context, url, "zyxwvutsrq")
    assert not links
    assert any("found nothing" in p for p in problems), problems


REMOTE_ASSETS = """<!doctype html><html lang="en"><head><title>remote</title>
<link rel="stylesheet" href="https://fonts.example.invalid/planted.css">
<script src="https://cdn.example.invalid/planted.js"></script></head>
<body><p>A page that needs other hosts.</p>
<script>fetch("https://api.example.invalid/planted.json").catch(() => {});</script>
</body></html>"""


def test_a_page_asking_another_host_fails(browser, tmp_path):
    """What conftest.py wraps every page test in (book_checks.no_other_host) fails on a page
    that loads a script and a stylesheet from a CDN and fetches from another host, and
    passes on one that does not."""
    (tmp_path / "remote.html").write_text(REMOTE_ASSETS)
    (tmp_path / "local.html").write_text("<!doctype html><title>local</title><p>Here.</p>")
    assets = book_checks.OfflineAssets()
    with book_checks.serve_directory(tmp_path) as url:
        context = book_checks.new_context(browser, url, assets)
        try:
            with book_checks.no_other_host(assets, "local.html"):
                page, _ = book_checks.open_page(context, f"{url}local.html")
                page.close()
            with pytest.raises(AssertionError, match="remote.html asked another host") as failed:
                with book_checks.no_other_host(assets, "remote.html"):
                    page, _ = book_checks.open_page(context, f"{url}remote.html")
                    for _ in range(100):  # the script's fetch has been made
                        if any("api.example.invalid" in u for u in assets.stubbed):
                            break
                        page.wait_for_timeout(100)
                    page.close()
        finally:
            context.close()
    for host in ("fonts.example.invalid/planted.css", "cdn.example.invalid/planted.js",
                 "api.example.invalid/planted.json"):
        assert host in str(failed.value), (host, str(failed.value))

"""The chapters' Markdown parses as the book's MyST parser reads it, without broken math; the
theory chapters' figure captions and alt texts hold no number typed by hand, and no chapter
with exercises (the Theory and Experiments parts of ``_toc.yml``) types a setting in a caption
or a count or setting in a claim's sentence.

A source line that starts with ``+ ``, ``- `` or ``* `` inside a paragraph opens a bullet list
in MyST; when that line is the middle of a ``$...$`` span, the span is cut in two and the HTML
shows raw TeX. The test parses every chapter with the parser and extensions the book uses
(``_config.yml``), descends into directives (proofs, exercises, solutions), and fails on any
text that still holds a ``$``: a dollar left over from a math span that did not pair up.
No build, no kernel: a few hundred milliseconds.

A number in a caption or an alt text comes from a cell (``{glue:text}``, which
_ext/glued_alt.py resolves in alt text) or is named in words. The scan fails on a digit in an
alt text or outside math in a caption once the roles are removed, and on a math span
of a caption that sets a symbol to a typed number (``$L = 50$``, ``$\\lambda = 1,$``); digits of a
formula (``$L^{-1/2}$``, ``$(d-2)\\sigma^2$``, ``$\\lambda \\to 0$``) are not settings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
DIRECTIVE = re.compile(r"^\{([\w:-]+)\}")
# Directives whose body is code, not Markdown.
CODE_DIRECTIVES = {"code-cell", "code", "code-block", "raw-cell"}


def _parser():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    extensions = set(config["parse"]["myst_enable_extensions"])
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


MD = _parser()


def unpaired_dollars(text: str, first_line: int = 1) -> list[tuple[int, str]]:
    """(line, paragraph start) of every paragraph of ``text`` with a ``$`` left as text."""
    found = []
    for tok in MD.parse(text):
        if tok.type in ("fence", "colon_fence"):
            name = DIRECTIVE.match(tok.info.strip())
            if name and name.group(1) not in CODE_DIRECTIVES:
                body = tok.content.splitlines()
                n_options = 0
                while n_options < len(body) and body[n_options].startswith(":"):
                    n_options += 1
                found += unpaired_dollars(
                    "\n".join(body[n_options:]), first_line + tok.map[0] + 1 + n_options
                )
        elif tok.type == "inline":
            if any(c.type == "text" and "$" in c.content for c in tok.children or []):
                found.append((first_line + tok.map[0], tok.content[:60]))
    return found


def test_detects_a_math_span_cut_by_a_list_marker():
    whole = "A sum $a + b +\nc$ on two lines, and $x$.\n"
    cut = "A sum $a + b\n- c$ on two lines.\n"
    assert unpaired_dollars(whole) == []
    assert [line for line, _ in unpaired_dollars(cut)] == [1, 2]
    in_proof = "````{prf:proof}\n:nonumber:\nSo $a =\n* b$ holds.\n````\n"
    assert [line for line, _ in unpaired_dollars(in_proof)] == [3, 4]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_no_math_span_is_broken(chapter):
    broken = unpaired_dollars(chapter.read_text())
    assert not broken, "math span cut (a line starting with +, - or *?): " + "; ".join(
        f"{chapter.name}:{line} {text!r}" for line, text in broken
    )


def _part(caption: str) -> list[str]:
    """The chapter stems of the part ``caption`` of ``_toc.yml``, in book order."""
    from attnclust.assignments.source import toc_chapters

    return [Path(f).name for f, part in toc_chapters(ROOT) if part == caption]


THEORY = _part("Theory")
COURSE = _part("Theory") + _part("Experiments")
"""The theory chapters; every chapter with exercises and claims (theory and experiments)."""
FIGURE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n---\n(.*?)\n---\n", re.S | re.M)
ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
MATH = re.compile(r"\$([^$]+)\$")
TYPED_SETTING = re.compile(r"=\s*-?\d[\d.,]*\s*(?:$|[,;)])")


def typed_numbers(text: str) -> list[tuple[int, str, str]]:
    """(line, "alt" or "caption", text) of every figure cell of ``text`` whose alt text or
    caption holds a number typed by hand (module docstring)."""
    found = []
    for m in FIGURE_CELL.finditer(text):
        meta = (yaml.safe_load(m.group(1)) or {}).get("mystnb", {})
        line = text.count("\n", 0, m.start()) + 1
        alt = str(meta.get("image", {}).get("alt", ""))
        caption = str(meta.get("figure", {}).get("caption", ""))
        if re.search(r"\d", ROLE.sub("", alt)):  # glued values (_ext/glued_alt.py) are allowed
            found.append((line, "alt", alt))
        bare = ROLE.sub("", caption)
        spans = MATH.findall(bare)
        if re.search(r"\d", MATH.sub("", bare)) or any(TYPED_SETTING.search(span) for span in spans):
            found.append((line, "caption", caption))
    return found


def _figure(alt: str, caption: str) -> str:
    return (f"```{{code-cell}} python3\n---\nmystnb:\n  image:\n    alt: {alt}\n  figure:\n"
            f"    caption: {caption}\n    name: fig-x\n---\nmake('x')\n```\n")


def test_detects_a_typed_setting_in_a_caption_or_alt_text():
    glued = _figure("\"Curves against lambda, lowest at lambda = {glue:text}`lam_1:.2f`.\"",
                    "Risk at $L =$ {glue:text}`n_L`, $\\lambda =$ {glue:text}`lam:g`, against "
                    "$L^{-1/2}$ and $(d-2)\\sigma^2$ as $\\lambda \\to 0$ ({numref}`fig-2`).")
    assert typed_numbers(glued) == []
    for alt, caption in [("Curves at L = 50.", "Risk."),
                         ("Curves.", "Risk at $L = 50$."),
                         ("Curves.", "Risk at $\\lambda = 1, L =$ {glue:text}`n_L`."),
                         ("Curves.", "Risk over 16 prompts.")]:
        assert [kind for _, kind, _ in typed_numbers(_figure(alt, caption))] == (
            ["alt"] if alt != "Curves." else ["caption"]), (alt, caption)


@pytest.mark.parametrize("chapter", THEORY)
def test_theory_captions_and_alt_texts_type_no_setting(chapter):
    typed = typed_numbers((ROOT / "chapters" / f"{chapter}.md").read_text())
    assert not typed, "a number typed by hand (glue it, or name the setting in words): " + "; ".join(
        f"{chapter}.md:{line} {kind}: {text[:90]!r}" for line, kind, text in typed
    )


CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
COUNT_NOUNS = (r"(?:prompts?|draws?|samples?|seeds?|settings?|values?|tokens?|standard errors?|restarts?|"
               r"nodes|labelings|queries|runs?|keys|coordinates|eigenvalues|points|times)\b")
TYPED_COUNT = re.compile(r"(?<![\w.{])(?:\d[\d,_]*|two|three|four|five|six|seven|eight|nine|ten|"
                         r"twenty|hundred|thousand)\s+(?:[a-z-]+\s+){0,2}" + COUNT_NOUNS, re.I)


def _claim_texts(source: str):
    """(claim id, literal text) of every ``claims.claim(id, text, ...)`` in ``source``: the
    constant parts of the text's f-string, without its replacement fields or format specs."""
    import ast

    source = re.sub(r"\A---\n.*?\n---\n", "", source, flags=re.S)        # a figure cell's metadata
    source = re.sub(r"\A(?::\w+:[^\n]*\n)+", "", source)                  # :tags: lines
    try:
        tree = ast.parse("\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "claim" and len(node.args) >= 2):
            continue
        parts = []

        def collect(n):
            if isinstance(n, ast.JoinedStr):
                parts.extend(v.value for v in n.values if isinstance(v, ast.Constant))
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                parts.append(n.value)
            elif isinstance(n, ast.BinOp):
                collect(n.left)
                collect(n.right)

        collect(node.args[1])
        name = node.args[0].value if isinstance(node.args[0], ast.Constant) else "?"
        yield name, "".join(parts)


def typed_claim_numbers(text: str) -> list[tuple[str, str]]:
    """(claim id, match) for every claim f-string of ``text`` that types a count by hand
    ("200 prompts", "three standard errors") or a setting inside math ("$\\lambda = 1$")."""
    found = []
    for cell in CODE_CELL.finditer(text):
        for name, literal in _claim_texts(cell.group(1)):
            prose = MATH.sub(" ", literal)
            found += [(name, m.group(0)) for m in TYPED_COUNT.finditer(prose)]
            found += [(name, span) for span in MATH.findall(literal) if TYPED_SETTING.search(span + ")")]
    return found


def test_detects_a_typed_count_in_a_claim_fstring():
    def cell(body):
        return f"```{{code-cell}} python3\nclaims.claim(\n    \"x\",\n    {body},\n)\n```\n"

    assert typed_claim_numbers(cell('f"Over {n} prompts at $\\\\lambda =$ {lam:g}, {k:.3f} of 1 (95% interval)"')) == []
    for body in ('f"Over 200 prompts, {x:.3f}"', 'f"At three random settings {x}"',
                 'f"within {n} of the 3 standard errors"', 'f"At $\\\\lambda = 1$ the risk is {r:.3f}"',
                 'f"Over 40,000 Monte Carlo draws {x}"'):
        assert typed_claim_numbers(cell(body)), body


TYPED_PARAMETER = re.compile(r"(?<![\w/])(?:lambda|λ|sigma|σ|[LdrK]|seeds?|steps?)\s*=\s*-?\d", re.I)


def typed_settings(text: str) -> list[tuple[int, str, str]]:
    """(line, "alt" or "caption", text) of every figure cell of ``text`` whose alt text or
    caption sets a parameter to a number typed by hand ("lambda = 1", "L = 50"), outside glue
    roles; a narrower check than ``typed_numbers`` for chapters whose captions also describe
    bands and quantiles ("10% to 90% of the seeds")."""
    found = []
    for m in FIGURE_CELL.finditer(text):
        meta = (yaml.safe_load(m.group(1)) or {}).get("mystnb", {})
        line = text.count("\n", 0, m.start()) + 1
        for kind, words in (("alt", meta.get("image", {}).get("alt", "")),
                            ("caption", meta.get("figure", {}).get("caption", ""))):
            if TYPED_PARAMETER.search(ROLE.sub("", str(words)).replace("$", " ")):
                found.append((line, kind, str(words)))
    return found


def test_detects_a_typed_parameter_in_a_caption():
    assert typed_settings(_figure("Curves.", "Risk at the default setting, 1/L = 0 marked.")) == []
    assert typed_settings(_figure("Curves.", "At $\\lambda =$ {glue:text}`lam:g`.")) == []
    for caption in ("Sweep (lambda = 1, L = 50).", "At $L = 50$.", "K = 3 centroids.", "r = 2, sigma = 0.5"):
        assert [k for _, k, _ in typed_settings(_figure("Curves.", caption))] == ["caption"], caption


@pytest.mark.parametrize("chapter", COURSE)
def test_captions_type_no_setting(chapter):
    typed = typed_settings((ROOT / "chapters" / f"{chapter}.md").read_text())
    assert not typed, "a setting typed by hand (glue it, or name the setting in words): " + "; ".join(
        f"{chapter}.md:{line} {kind}: {text[:90]!r}" for line, kind, text in typed
    )


@pytest.mark.parametrize("chapter", COURSE)
def test_claims_type_no_count(chapter):
    typed = typed_claim_numbers((ROOT / "chapters" / f"{chapter}.md").read_text())
    assert not typed, "a number typed by hand in a claim (use the cell's variable): " + "; ".join(
        f"{chapter}.md {name}: {m!r}" for name, m in typed
    )

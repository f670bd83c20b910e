"""The chapters' Markdown parses as the book's MyST parser reads it, without broken math.

A source line that starts with ``+ ``, ``- `` or ``* `` inside a paragraph opens a bullet list
in MyST; when that line is the middle of a ``$...$`` span, the span is cut in two and the HTML
shows raw TeX. The test parses every chapter with the parser and extensions the book uses
(``_config.yml``), descends into directives (proofs, exercises, solutions), and fails on any
text that still holds a ``$``: a dollar left over from a math span that did not pair up.
No build, no kernel: a few hundred milliseconds.
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

"""The chapters' MyST Markdown: its fenced blocks, and its rewriting as plain Jupyter
Markdown for the student and instructor notebooks (the appendix "Grading with the course
editions").

:func:`split_fences` splits Markdown into plain text and top-level fenced blocks
(:class:`Fenced`, a MyST directive when named); :mod:`.source` reads the exercises with it.

Jupyter renders neither MyST roles nor directives: ``{cite}`key``` would show as raw text
and a ``{prf:proposition}`` fence as a code block. :func:`to_jupyter` rewrites them with
what the HTML book shows in their place, taken from the book's own sources
(:class:`References`):

- ``{cite}`` → (Author et al., year), from ``chapters/references.bib`` (pybtex);
- ``{doc}`` → the chapter's title in italics; ``{prf:ref}`` → the result's kind and title;
  ``{numref}`` → Fig. "caption"; ``{eq}`` → the equation's number as the book shows it,
  "(2)" (:func:`equation_numbers`; an unknown label as "equation (label)");
- a labelled display equation ``$$ … $$ (label)`` → ``$$ … \tag{2} $$``: MathJax shows its
  number beside it, as the book does;
- ``{glue:text}`name:fmt``` and ``{glue:md}`name``` → the value the book's build glued
  under that name, formatted as the HTML book formats it (:attr:`References.glued`,
  :func:`glued_text`; every edition is made with the build's values, :mod:`.built`);
- ``{claim}`id``` → the claim's sentence, computed by the cell that states it
  (``attnclust.book.claims``), which the build glued as ``claim:<id>``;
- without the build's value (a notebook made in memory without one, for grading or a
  test), the glue name in code style and "(claim ``id``)": :data:`RAW_MARKUP` flags both,
  and :func:`.editions.write_editions` refuses to write such an edition;
- ``{prf:*}`` fences → block quotes headed by the kind and title (a proof ends with ∎);
  ``{bibliography}`` and MyST targets ``(label)=`` are dropped;
- the book's MathJax macros (``_config.yml``) are defined once, in the first cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["RAW_MARKUP", "Fenced", "References", "equation_numbers", "glue_names", "glued_keys",
           "glued_text", "raw_markup", "render_roles", "shown_keys", "split_fences", "to_jupyter"]

_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<role>[a-z]+(?::[a-z]+)?)\}`(?P<content>[^`]*)`")
_EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
_TARGET_LINE = re.compile(r"^\s*\([\w:.-]+\)=\s*$", re.M)
_FIGURE = re.compile(r"caption:\s*(?P<caption>[^\n]+)\n(?:[^\n]*\n){0,3}?\s*name:\s*(?P<name>[\w:.-]+)")


@dataclass
class Fenced:
    """A top-level fenced block of a Markdown cell; ``name`` is set for a MyST directive."""

    raw: str
    name: str | None
    arg: str
    options: dict[str, str]
    body: str


def split_fences(text: str) -> list[str | Fenced]:
    """Split Markdown into plain text and top-level fenced blocks (CommonMark fence rules).

    A fence opened with ``n`` backticks, tildes or colons closes at the first line made only of
    at least ``n`` of the same character; nested directives therefore use longer outer fences,
    as MyST requires. An unclosed fence runs to the end of the text.
    """
    lines = text.split("\n")
    out: list[str | Fenced] = []
    plain: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            plain.append(lines[i])
            i += 1
            continue
        char, n = m["fence"][0], len(m["fence"])
        close = re.compile(r"^ {0,3}" + re.escape(char) + "{" + str(n) + r",}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        block = lines[i:j + 1]
        inner = lines[i + 1:j]
        if plain:
            out.append("\n".join(plain))
            plain = []
        d = _DIRECTIVE.match(m["info"].strip())
        options: dict[str, str] = {}
        body_start = 0
        if d:
            for k, line in enumerate(inner):
                om = _OPTION.match(line.strip())
                if om and line.strip():
                    options[om["key"]] = om["value"].strip()
                    body_start = k + 1
                else:
                    break
        body = "\n".join(inner[body_start:]).strip("\n")
        out.append(Fenced("\n".join(block), d["name"] if d else None,
                          d["arg"].strip() if d else "", options, body))
        i = j + 1
    if plain:
        out.append("\n".join(plain))
    return out


@dataclass(frozen=True)
class References:
    """What the roles of the chapters point to, read from ``chapters/``."""

    titles: dict[str, str] = field(default_factory=dict)  # chapter stem -> title
    results: dict[str, str] = field(default_factory=dict)  # prf label -> "Proposition (title)"
    figures: dict[str, str] = field(default_factory=dict)  # figure name -> caption
    citations: dict[str, str] = field(default_factory=dict)  # bib key -> "Lloyd, 1982"
    macros: dict[str, str] = field(default_factory=dict)  # MathJax macros of _config.yml
    equations: dict[str, int] = field(default_factory=dict)  # equation label -> its number
    # glued values of the executed chapter (name -> MIME bundle, myst-nb's <page>.glue.json,
    # a claim's sentence under claim:<id>; .built reads them from the book's build)
    glued: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def from_chapters(cls, chapters_dir: str | Path) -> "References":
        chapters_dir = Path(chapters_dir)
        titles, results, figures, equations = {}, {}, {}, {}
        for path in sorted(chapters_dir.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            equations.update(equation_numbers(text))
            heading = re.search(r"^# (.+)$", text, re.M)
            if heading:
                titles[path.stem] = heading[1].strip()
            for part in split_fences(text):
                if isinstance(part, Fenced) and part.name and part.name.startswith("prf:"):
                    label = part.options.get("label")
                    if label:
                        results[label] = _result_name(part)
            for m in _FIGURE.finditer(text):
                figures[m["name"]] = _caption(m["caption"])
        return cls(titles, results, figures, _citations(chapters_dir / "references.bib"),
                   _macros(chapters_dir.parent / "_config.yml"), equations=equations)

    def macro_definitions(self) -> str:
        """The book's MathJax macros as inline \\newcommand math, which Jupyter's MathJax
        keeps for the notebook's later cells (empty when there are none)."""
        defs = "".join(f"\\newcommand{{\\{name}}}{{{body}}}" for name, body in self.macros.items())
        return f"${defs}$" if defs else ""


_LABELLED_MATH = re.compile(r"\$\$(?P<body>.*?)\$\$(?:[ \t]*\((?P<label>[\w:.-]+)\))?",
                            re.DOTALL)
"""A display equation ``$$ … $$``, with its MyST label ``(label)`` after it when it has one
(each ``$$`` pair in turn, so that a closing ``$$`` never opens the next equation)."""

_NO_MATH_FENCES = ("code-cell", "code", "code-block", "bibliography")


def _labels_in_order(text: str) -> list[str]:
    """The labels of the labelled display equations of ``text`` (MyST), in page order:
    in its prose and in its directives' bodies, nested ones included, not in code."""
    labels = []
    for part in split_fences(text):
        if isinstance(part, str):
            labels += [m["label"] for m in _LABELLED_MATH.finditer(part) if m["label"]]
        elif part.name and part.name not in _NO_MATH_FENCES:
            labels += _labels_in_order(part.body)
    return labels


def equation_numbers(text: str) -> dict[str, int]:
    """Label -> number of each labelled display equation of a chapter (its MyST text),
    numbered as the book numbers them: Sphinx numbers labelled display mathematics per
    page, 1, 2, … in page order (the book's table of contents is not ``numbered``, so no
    chapter prefix), and shows ``{eq}`` references as "(N)"."""
    return {label: n for n, label in enumerate(_labels_in_order(text), start=1)}


def _number_equations(text: str, refs: References) -> str:
    """``text`` with each labelled display equation's label replaced by ``\\tag{N}``
    inside it (its number, :func:`equation_numbers`), which MathJax shows beside the
    equation; an equation of unknown label keeps ``(label)``."""
    def tag(m: re.Match) -> str:
        number = refs.equations.get(m["label"]) if m["label"] else None
        if number is None:
            return m[0]
        return f"$${m['body'].rstrip()} \\tag{{{number}}}\n$$"
    return _LABELLED_MATH.sub(tag, text)


def _caption(value: str) -> str:
    r"""A figure's caption as the book reads it from the cell's YAML options: a quoted one
    unescaped (``"... $\\mathcal N$ ..."`` is ``$\mathcal N$``), a plain one as it stands."""
    value = value.strip()
    if value[:1] in "'\"":
        import yaml

        try:
            return str(yaml.safe_load(value))
        except yaml.YAMLError:
            return value.strip("'\"")
    return value


def _macros(config: Path) -> dict[str, str]:
    if not config.exists():
        return {}
    import yaml

    conf = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    mathjax = (conf.get("sphinx", {}).get("config", {}) or {}).get("mathjax3_config", {}) or {}
    return {str(k): str(v) for k, v in (mathjax.get("tex", {}).get("macros", {}) or {}).items()}


def _citations(bib: Path) -> dict[str, str]:
    if not bib.exists():
        return {}
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(bib)).entries.items():
        people = entry.persons.get("author", [])
        names = [" ".join(p.last_names) for p in people]
        who = (names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2
               else f"{names[0]} et al." if names else entry.fields.get("title", key))
        out[key] = f"{who}, {entry.fields.get('year', 'n.d.')}".replace("{", "").replace("}", "")
    return out


def _result_name(part: Fenced) -> str:
    kind = part.name.split(":", 1)[1].capitalize()
    return f"{kind} ({part.arg})" if part.arg else kind


def glued_text(bundle: dict, spec: str = "", markdown: bool = False) -> str:
    """A glued value as the HTML book prints it: its Markdown (``{glue:md}``), or its plain
    text, formatted with the role's format spec (``{glue:text}`name:.3f```) when given."""
    if markdown and "text/markdown" in bundle:
        return str(bundle["text/markdown"]).strip()
    plain = str(bundle.get("text/plain", "")).strip()
    if len(plain) >= 2 and plain[0] == plain[-1] and plain[0] in "'\"":
        plain = plain[1:-1]
    if spec:
        for kind in (int, float):
            try:
                return format(kind(plain), spec)
            except ValueError:
                continue
    return plain


def render_roles(text: str, refs: References) -> str:
    """``text`` with every MyST role (``{glue:text}`name:fmt```, ``{ref}``, ``{eq}``, ...)
    rendered as in the Markdown cells: for a text outside them, such as a figure's alt."""
    return _ROLE.sub(lambda m: _role(m, refs), text)


def _caption_shown(refs: References, figure: str) -> str | None:
    """What a ``{numref}`` to ``figure`` shows of its caption (its first sentence, roles
    unresolved); None for a figure of no caption."""
    caption = refs.figures.get(figure)
    return caption.split(". ")[0].rstrip(".") if caption else None


def _role(m: re.Match, refs: References) -> str:
    role, content = m["role"], m["content"].strip()
    explicit = _EXPLICIT.match(content)
    text, target = (explicit["text"], explicit["target"]) if explicit else ("", content)
    if role.startswith("glue"):
        name, _, spec = target.partition(":")
        if name in refs.glued:
            return glued_text(refs.glued[name], spec, markdown=role == "glue:md")
        return f"`{name}`"
    if role == "claim":  # the sentence is computed by a cell of the chapter (the claims ledger)
        glued = refs.glued.get(f"claim:{target}")
        return glued_text(glued, markdown=True) if glued else f"(claim `{target}`)"
    if role.startswith("cite"):
        return "(" + "; ".join(refs.citations.get(k.strip(), k.strip()) for k in target.split(",")) + ")"
    if text:
        return text
    if role == "doc":
        stem = Path(target).stem
        return f"*{refs.titles.get(stem, stem)}*"
    if role == "prf:ref":
        return refs.results.get(target, target)
    if role == "numref":
        first = _caption_shown(refs, target)
        if first is None:
            return f"Fig. `{target}`"
        inner = replace(refs, figures={})  # a caption's own roles, without figures: no cycles
        return "Fig. “" + _ROLE.sub(lambda r: _role(r, inner), first) + "”"
    if role == "eq":
        number = refs.equations.get(target)
        return f"({number})" if number is not None else f"equation ({target})"
    return m[0]


_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)


def _quote(head: str, body: str) -> str:
    """A theorem-like box as a block quote. Each display equation is put on one line first:
    Jupyter takes the mathematics out before it renders the Markdown, so the quote's ``>``
    markers inside a multi-line ``$$`` block would be typeset as ">" glyphs."""
    body = _DISPLAY_MATH.sub(lambda m: " ".join(m.group(0).split()), body)
    lines = f"{head} {body}".strip().split("\n")
    return "\n".join("> " + line if line.strip() else ">" for line in lines)


def to_jupyter(text: str, refs: References | None = None) -> str:
    """``text`` (MyST Markdown) as Markdown that Jupyter renders (see the module docstring)."""
    refs = refs or References()
    out = []
    for part in split_fences(text):
        if isinstance(part, str):
            part = _number_equations(_TARGET_LINE.sub("", part), refs)
            out.append(render_roles(part, refs))
        elif part.name == "prf:proof":
            out.append(_quote("*Proof.*", to_jupyter(part.body, refs) + " ∎"))
        elif part.name and part.name.startswith("prf:"):
            out.append(_quote(f"**{_result_name(part)}.**", to_jupyter(part.body, refs)))
        elif part.name == "bibliography":
            continue
        elif part.name == "admonition":  # an evidence block, a note: its title in bold, quoted
            title = render_roles(part.arg, refs) if part.arg else "Note"
            out.append(_quote(f"**{title}.**", to_jupyter(part.body, refs)))
        else:
            out.append(part.raw)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


# ---- what a reader must never see -------------------------------------------------------

RAW_MARKUP = re.compile(
    r"\{[a-z:-]+\}`"                                   # a role
    r"|```\{|:::\{"                                     # a directive's fence
    r"|^:(?:label|class|name|tags):"                    # a directive's option line
    r"|\{glue"                                          # a glue role, however written
    r"|\$\$[ \t]*\([\w:.-]+\)"                          # a display equation's MyST label
    r"|\((?:eq|fig|sec|def|thm|prop|lem|tbl)-[\w:.-]+\)"  # a label shown for its number
    r"|\(claim `",                                     # a claim's id for its sentence
    re.MULTILINE)
"""MyST that Jupyter shows as text: a role, a directive fence or option, a glue role, the
label of a display equation after its ``$$``, a label in parentheses where the book shows
a number ("equation (eq-head-limit)" for "(2)") and a claim shown by its id where the book
shows its sentence ("(claim `id`)", :func:`to_jupyter` without the build's values).
Exercise labels are not in it: the editions name each exercise by its label on purpose
(`` (`ex-mixtures-2`) ``). Shared by the unit tests of the editions and the browser test of
JupyterLab (tests/browser/)."""


def glue_names(text: str) -> set[str]:
    """The names that the glue roles of ``text`` (MyST) show."""
    return {m["content"].strip().partition(":")[0] for m in _ROLE.finditer(text)
            if m["role"].startswith("glue")}


def glued_keys(text: str) -> set[str]:
    """The keys of the build's glued values that the roles of ``text`` (MyST) show: each
    glue name (:func:`glue_names`) and ``claim:<id>`` for each ``{claim}`id``` (the claim's
    sentence, which ``attnclust.book.claims.claim`` glues under that key)."""
    claims = {f"claim:{m['content'].strip()}" for m in _ROLE.finditer(text) if m["role"] == "claim"}
    return glue_names(text) | claims


def shown_keys(text: str, refs: References) -> set[str]:
    """:func:`glued_keys` of ``text`` and of what its ``{numref}`` roles show of the
    figures' captions (:class:`References`): every glued value that ``text`` rendered with
    ``refs`` (:func:`to_jupyter`, :func:`render_roles`) shows."""
    keys = glued_keys(text)
    for m in _ROLE.finditer(text):
        if m["role"] == "numref":
            explicit = _EXPLICIT.match(m["content"].strip())
            if not explicit:  # an explicit title shows no caption
                keys |= glued_keys(_caption_shown(refs, m["content"].strip()) or "")
    return keys


def raw_markup(text: str, missing_glue: set[str] | frozenset = frozenset()) -> list[str]:
    """What of ``text`` (Markdown, or the text a browser rendered from it) a reader would
    see unrendered: each match of :data:`RAW_MARKUP`, and each name of ``missing_glue`` (a
    chapter's glue names, :func:`glue_names`, in an edition that should show their values)
    left as the code span `` `name` `` that stands for a value the build did not glue."""
    found = [m.group(0) for m in RAW_MARKUP.finditer(text)]
    return found + [f"`{name}`" for name in sorted(missing_glue) if f"`{name}`" in text]

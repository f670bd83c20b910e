"""What a learner reads on the book's main path, measured from the chapters' MyST sources.

Issue 29 ("A textbook for learners") sets goals for the main path (the root page, the pages
of a part without caption such as the overview after it, and the chapters of the Theory and
Experiments parts of ``_toc.yml``): reading time, figures, tooling
talk, checking code, exercises. :func:`book_stats` measures each chapter, :func:`table`
prints the measures beside the goals (``scripts/reading_stats.py``), and the chapter "For
instructors" reads the reading minutes from here at build time.

The chapters are read with the course tools' own reader (``attnclust.assignments.source``:
jupytext cells, ``split_fences`` of ``attnclust.assignments.markdown``, ``toc_chapters``), so that
narrative, exercises, solutions and check cells are told apart as the editions tell them apart.
What each measure counts:

- **the evidence layer** is not on the main path: an admonition of class ``evidence``
  (collapsed: ``:class: dropdown evidence``, titled "Evidence: ...") holds what an expert
  checks and a learner may skip (cross-checks beyond the one that teaches, sampler checks,
  forensics, provenance, statistical detail), and the code that only checks or records is in
  cells whose input is hidden (:data:`HIDDEN_TAGS`). Neither is counted below; **evidence
  blocks** counts the admonitions.
- **prose words**: the words of the narrative Markdown (headings, paragraphs, lists, tables,
  the bodies and titles of directives such as ``{prf:theorem}`` or ``{note}``), not exercise
  statements nor solutions (work, not reading), not code (code cells, fenced code blocks,
  inline code), not display mathematics. An inline formula ``$...$``, a glued number
  ``{glue:text}``, a citation or a cross-reference counts as one word; a link as its text.
- **claim words**: the words of the sentence each ``{claim}`` role shows, every time it
  is shown. The sentence is read from the built ledger (``_build/html/claims.json``, its
  ``sentence``) when one is given, else from the source: the constant words of the f-string
  passed to ``claims.claim(id, sentence, ...)``, each formatted value one word.
- **reading minutes**: (prose words + claim words) / :data:`WORDS_PER_MINUTE`.
- **shown code lines**: the non-blank lines of the narrative code cells that a reader sees
  without a click: cells with a tag of :data:`HIDDEN_TAGS` (removed, or collapsed behind a
  toggle as ``hide-input`` does), check cells and solutions (in a collapsed dropdown) are not
  shown. **checking lines**: those of them that belong to a statement that checks or
  records rather than computes: ``assert``, a call of ``claims.claim`` (or ``claim``), of
  ``glue`` or ``gl`` (every line of a statement spanning several).
- **figures**: narrative code cells with ``mystnb: figure:`` metadata, explorer cells (tag
  ``widget``), and ``{figure}`` directives in the narrative. **first figure at word**: the
  prose and claim words read before the first of them.
- **display equations**: ``$$`` blocks, ``{math}`` directives and amsmath environments
  (``\\begin{align}`` ...) of the narrative, directives' bodies included.
- **exercises**: the chapter's ``{exercise}`` directives (plain or gated).
- **tooling sentences**: sentences of the narrative that talk about the machinery rather than
  the subject (:data:`TOOLING_PATTERNS`: commands, ``make``, ``python -m``, file paths,
  results files, budgets, caches and staleness, building, committing, the test suite).
  Their **share** is of the narrative's sentences.

Only the course tools' reader is imported, never the science core's internals: the book's
machinery may read chapters, the core does not.
"""

from __future__ import annotations

import ast
import json
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["EVIDENCE_CLASS", "GOALS", "HIDDEN_TAGS", "MAIN_PARTS", "TOOLING_PATTERNS", "WORDS_PER_MINUTE",
           "ChapterStats", "Goal", "book_stats", "chapter_stats", "compute_seconds",
           "ledger_sentences", "main_path", "section_minutes", "table", "tooling_sentences"]

WORDS_PER_MINUTE = 200
"""Reading speed of the goals of issue 29 (prose and claim sentences)."""

HIDDEN_TAGS = frozenset({"remove-cell", "remove-input", "hide-input", "hide-cell"})
"""Code cell tags whose source a reader does not see without a click (removed, or collapsed
behind a toggle)."""

MAIN_PARTS = ("Theory", "Experiments")
"""The parts of ``_toc.yml`` on the main path, besides the root page."""

EXPERIMENT_PARTS = MAIN_PARTS
"""Parts whose chapters are held to the exercise goal (the root page is not)."""

TOOLING_PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (name, re.compile(rx, re.I)) for name, rx in (
        ("make", r"`make\b|\bmake (book|test|lab|venv|bench|assignments|unit|quick|clean)\b"),
        ("python -m", r"python3? -m\b|\bpip install\b|\.venv\b|`python\b"),
        ("file path", r"`[^`\s]*\.(py|json|md|ya?ml|toml|txt|csv|ipynb|bib|sh|npz|cff|html)`"
                      r"|\b[\w.-]+/[\w./-]*\.(py|json|md|ya?ml|toml|txt|csv|ipynb|npz)\b"
                      r"|\b(results|benchmarks|scripts|tests|_build|chapters)/"),
        ("results file", r"\bresults? files?\b|\bcommitted\b|\bcommits?\b|\bre-?computed? at build\b"),
        ("budget", r"\b(compute|time|device|CPU|GPU) budget|\bbudget of \d"),
        ("staleness", r"\bstale(ness)?\b|\b(execution )?cache[ds]?\b"),
        ("build", r"\b(the|a|each|every|this|its|at) (book's )?build\b|\bbuild time\b"
                  r"|\bbuilds? the book\b|\brebuil(d|t)\b|\bjupyter[- ]book\b|\bSphinx\b"),
        ("tests", r"\b(the|a|unit|its) tests? (suite|file)s?\b|\bpytest\b|\btests/|\btest suite\b"
                  r"|\bthe tests\b|\bCI\b"),
    ))
"""The machinery a sentence may name, each with a name; a sentence matching any is a tooling sentence."""


@dataclass(frozen=True)
class Goal:
    """A goal of issue 29 on one measure: ``at_most``/``at_least`` ``value``, of the total
    (``scope="total"``) or of every chapter it applies to (``"chapter"``)."""

    measure: str
    label: str
    bound: str  # "at_most" | "at_least"
    value: float
    scope: str = "chapter"
    experiments_only: bool = False

    def met(self, x: float | None) -> bool:
        """Whether the value ``x`` of the measure meets the goal (``None`` does not)."""
        if x is None:
            return False
        return x <= self.value if self.bound == "at_most" else x >= self.value

    def text(self) -> str:
        """The goal as the table prints it, "≤ 20 (each chapter)"."""
        sign = "≤" if self.bound == "at_most" else "≥"
        where = "total" if self.scope == "total" else (
            "each theory/experiment chapter" if self.experiments_only else "each chapter")
        return f"{sign} {self.value:g} ({where})"


GOALS = (
    Goal("minutes", "reading minutes", "at_most", 80, scope="total"),
    Goal("minutes", "reading minutes", "at_most", 20),
    Goal("tooling_share", "tooling sentences, %", "at_most", 1),
    Goal("checking_share", "checking code, % of shown lines", "at_most", 15),
    Goal("figures_per_1000", "figures per 1,000 words", "at_least", 2),
    Goal("first_figure_word", "first figure at word", "at_most", 400),
    Goal("exercises", "exercises", "at_least", 5, experiments_only=True),
)
"""The goals of the main path, printed beside the measures; every one is met, and a test keeps it so."""


@dataclass
class ChapterStats:
    """The measures of one chapter (see the module docstring)."""

    chapter: str  # stem, "mixtures"
    part: str | None
    prose_words: int = 0
    claim_words: int = 0
    code_lines: int = 0  # shown
    checking_lines: int = 0  # of the shown lines
    figures: int = 0
    equations: int = 0
    exercises: int = 0
    evidence: int = 0  # evidence blocks, not on the main path
    sentences: int = 0
    tooling: list[str] = field(default_factory=list)  # the tooling sentences
    first_figure_word: int | None = None
    claims_from: str = "source"  # "ledger" when every shown sentence came from the ledger
    title: str = ""  # the chapter's first heading

    @property
    def words(self) -> int:
        """Prose and claim words."""
        return self.prose_words + self.claim_words

    @property
    def minutes(self) -> float:
        """Reading minutes, at :data:`WORDS_PER_MINUTE`."""
        return self.words / WORDS_PER_MINUTE

    @property
    def tooling_sentences(self) -> int:
        """How many tooling sentences."""
        return len(self.tooling)

    @property
    def tooling_share(self) -> float:
        """Tooling sentences, % of the sentences."""
        return 100 * len(self.tooling) / self.sentences if self.sentences else 0.0

    @property
    def checking_share(self) -> float:
        """Checking lines, % of the shown code lines."""
        return 100 * self.checking_lines / self.code_lines if self.code_lines else 0.0

    @property
    def figures_per_1000(self) -> float:
        """Figures per 1,000 words (prose and claims)."""
        return 1000 * self.figures / self.words if self.words else 0.0

    def as_dict(self) -> dict:
        """The fields and the derived measures, for ``--json``."""
        out = asdict(self)
        for name in ("words", "minutes", "tooling_sentences", "tooling_share", "checking_share",
                     "figures_per_1000"):
            out[name] = getattr(self, name)
        return out


# ---------------------------------------------------------------- Markdown to words

_WORD = re.compile(r"[^\W_](?:[\w'’.-]*[^\W_])?")
_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<content>[^`]*)`")
_EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<[^<>]+>$", re.S)
_DISPLAY = re.compile(r"\$\$.*?\$\$(?:[ \t]*\([\w:.-]+\))?", re.S)
_AMS = re.compile(r"^[ \t]*\\begin\{(?P<env>align|equation|gather|multline|eqnarray)\*?\}.*?"
                  r"\\end\{(?P=env)\*?\}", re.S | re.M)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:\\.|[^$\\\n])+?\$")
_INLINE_CODE = re.compile(r"(`+)(?P<code>.+?)\1", re.S)
_LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\([^)]*\)")
_TARGET = re.compile(r"^\s*\([\w:.-]+\)=\s*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->|^%.*$", re.S | re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z(\"'*`{$])|\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.)\s)"
                           r"|\n(?=#)|\n(?=\|)")  # a heading, list item or table row ends one
_FIGURE_MARK = "\x00FIGURE\x00"

_NON_WORD_FENCES = ("math", "code", "code-block", "bibliography", "code-cell", "raw", "glue:figure")
_FIGURE_FENCES = ("figure", "glue:figure")


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _role_text(m: re.Match) -> str:
    role, content = m["role"], m["content"]
    if role == "claim":
        return f"\x00CLAIM:{content.strip()}\x00"
    if role in ("glue:text", "glue", "glue:any", "glue:md"):
        return "N"
    e = _EXPLICIT.match(content)
    if e and e["text"].strip():
        return e["text"].strip()
    return "R"  # a citation, a reference: one word


@dataclass
class _Prose:
    """Narrative Markdown reduced to what a reader reads: text, claims, figure marks."""

    text: str = ""
    equations: int = 0
    figures: int = 0
    evidence: int = 0


EVIDENCE_CLASS = "evidence"
"""The class of an admonition of the evidence layer (see the module docstring)."""


def _is_evidence(part) -> bool:
    return part.name == "admonition" and EVIDENCE_CLASS in part.options.get("class", "").split()


def _reduce(markdown: str) -> _Prose:
    """``markdown`` (a narrative piece) as reading text: roles resolved, code and display
    math taken out (and counted), figure directives replaced by a mark; directives' bodies
    kept, recursively."""
    from attnclust.assignments.markdown import Fenced, split_fences

    out = _Prose()
    parts = []
    for part in split_fences(markdown):
        if isinstance(part, Fenced):
            if part.name == "math":
                out.equations += 1
            elif _is_evidence(part):
                out.evidence += 1
            elif part.name in _FIGURE_FENCES:
                out.figures += 1
                inner = _reduce(part.body)  # its caption
                parts.append(_FIGURE_MARK + "\n\n" + inner.text)
                out.equations += inner.equations
            elif part.name is None or part.name in _NON_WORD_FENCES:
                pass  # code
            else:
                inner = _reduce(part.body)
                parts.append((part.arg + "\n\n" if part.arg else "") + inner.text)
                out.equations += inner.equations
                out.figures += inner.figures
                out.evidence += inner.evidence
            continue
        text = _COMMENT.sub("", _TARGET.sub("", part))
        out.equations += len(_DISPLAY.findall(text)) + len(_AMS.findall(text))
        text = _AMS.sub(" ", _DISPLAY.sub(" ", text))
        text = _ROLE.sub(_role_text, text)
        parts.append(text)
    out.text = "\n\n".join(parts)
    return out


def _plain(text: str) -> str:
    """Reading text without the markup: inline code and math as one word, links as text."""
    text = _INLINE_CODE.sub("C", text)
    text = _INLINE_MATH.sub("M", text)
    text = _LINK.sub(lambda m: m["text"], text)
    return text


def _sentences(text: str) -> list[str]:
    """The sentences of reading text (headings, list items and table rows end one)."""
    out = []
    for block in _SENTENCE_END.split(text):
        block = block.strip()
        if block and _words(_plain(block.replace(_FIGURE_MARK, " "))) > 0:
            out.append(" ".join(block.split()))
    return out


def is_tooling(sentence: str) -> list[str]:
    """The names of :data:`TOOLING_PATTERNS` that ``sentence`` (Markdown) matches."""
    return [name for name, rx in TOOLING_PATTERNS if rx.search(sentence)]


def tooling_sentences(markdown: str) -> list[str]:
    """The tooling sentences of narrative Markdown (no code cells): those of its reading
    text, roles resolved, that match :data:`TOOLING_PATTERNS`."""
    text = _CLAIM_MARK.sub(" ", _reduce(markdown).text.replace(_FIGURE_MARK, "\n\n"))
    return [s for s in _sentences(text) if is_tooling(s)]


# ---------------------------------------------------------------- code

_CHECK_CALLS = ("claim", "glue", "gl")


def _code_ast(src: str) -> ast.AST | None:
    # magics and shell lines as blank statements, keeping the line numbers
    lines = ["pass" if ln.lstrip().startswith(("%", "!")) else ln for ln in src.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


def checking_lines(src: str) -> tuple[int, int]:
    """``(shown, checking)``: the non-blank lines of a code cell's source, and those of them
    in an ``assert`` or a ``claim``/``glue``/``gl`` call statement."""
    lines = src.splitlines()
    nonblank = {i for i, ln in enumerate(lines, start=1) if ln.strip()}
    tree = _code_ast(src)
    checking: set[int] = set()
    if tree is not None:
        for node in ast.walk(tree):
            value = getattr(node, "value", None)
            if isinstance(node, ast.Assert) or (
                    isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign))
                    and _call_name(value) in _CHECK_CALLS):
                checking |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return len(nonblank), len(nonblank & checking)


def _fstring_words(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else " N "
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _fstring_words(node.left) + _fstring_words(node.right)
    return ""


def source_sentences(code: str) -> dict[str, str]:
    """Claim id -> its sentence as the source writes it (each formatted value as "N"), from
    the ``claims.claim(id, sentence, ...)`` calls of a code cell."""
    tree = _code_ast(code)
    out = {}
    if tree is None:
        return out
    for node in ast.walk(tree):
        if _call_name(node) == "claim" and len(node.args) >= 2:
            cid = node.args[0]
            if isinstance(cid, ast.Constant) and isinstance(cid.value, str):
                out[cid.value] = " ".join(_fstring_words(node.args[1]).split())
    return out


def ledger_sentences(path: str | Path) -> dict[str, str]:
    """Claim id -> sentence of a built ledger (``_build/html/claims.json``); empty when the
    file does not exist or is not a ledger."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {c["id"]: c["sentence"] for c in data.get("claims", [])
            if isinstance(c, dict) and "id" in c and isinstance(c.get("sentence"), str)}


# ---------------------------------------------------------------- a chapter

_CLAIM_MARK = re.compile("\x00CLAIM:(?P<id>[^\x00]*)\x00")


def _tags(cell) -> set[str]:
    return set(cell.metadata.get("tags", []) or []) if cell is not None else set()


def _is_figure(cell) -> bool:
    if cell is None:
        return False
    tags = _tags(cell)
    if tags & {"remove-cell", "remove-output"}:
        return False
    mystnb = cell.metadata.get("mystnb", {}) or {}
    return bool(mystnb.get("figure")) or "widget" in tags


def chapter_stats(path: str | Path, part: str | None = None,
                  ledger: dict[str, str] | None = None) -> ChapterStats:
    """The measures of the chapter at ``path`` (a MyST notebook); ``ledger``: claim id ->
    sentence of a built book (:func:`ledger_sentences`), else the sentences are read from the
    chapter's code."""
    import jupytext

    from attnclust.assignments.source import parse_notebook

    path = Path(path)
    nb = jupytext.read(path)
    chapter = parse_notebook(nb, path.stem)
    stats = ChapterStats(path.stem, part, exercises=len(chapter.exercises))
    heading = next((m for p in chapter.pieces if p.kind == "text"
                    for m in [re.search(r"^# (.+)$", p.source, re.M)] if m), None)
    stats.title = heading[1].strip() if heading else path.stem
    from_source: dict[str, str] = {}
    for p in chapter.pieces:
        if p.kind in ("code", "check", "solution_code"):
            from_source.update(source_sentences(p.source))
    ledger = ledger or {}
    shown_from = set()

    def claim_words(m: re.Match) -> int:
        cid = m["id"]
        sentence = ledger.get(cid)
        shown_from.add("ledger" if sentence is not None else "source")
        return _words(sentence if sentence is not None else from_source.get(cid, ""))

    read = 0  # words read so far, for the first figure
    for p in chapter.pieces:
        if p.kind == "text":
            prose = _reduce(p.source)
            stats.equations += prose.equations
            stats.evidence += prose.evidence
            chunks = prose.text.split(_FIGURE_MARK)
            for i, chunk in enumerate(chunks):
                if i > 0:
                    stats.figures += 1
                    if stats.first_figure_word is None:
                        stats.first_figure_word = read
                claims_here = sum(claim_words(m) for m in _CLAIM_MARK.finditer(chunk))
                prose_here = _words(_plain(_CLAIM_MARK.sub(" ", chunk)))
                stats.prose_words += prose_here
                stats.claim_words += claims_here
                read += prose_here + claims_here
                for sentence in _sentences(_CLAIM_MARK.sub(" ", chunk)):
                    stats.sentences += 1
                    if is_tooling(sentence):
                        stats.tooling.append(sentence)
        elif p.kind == "code":
            if _is_figure(p.cell):
                stats.figures += 1
                if stats.first_figure_word is None:
                    stats.first_figure_word = read
            if not _tags(p.cell) & HIDDEN_TAGS:
                shown, checking = checking_lines(p.source)
                stats.code_lines += shown
                stats.checking_lines += checking
    stats.claims_from = "ledger" if shown_from == {"ledger"} else "source"
    return stats


# ---------------------------------------------------------------- the book

def main_path(root: str | Path) -> list[tuple[str, str | None]]:
    """``(file, part)`` of the main path's pages in book order: the root page, the pages of a
    part without caption (part ``None``, like the root page), and the chapters of
    :data:`MAIN_PARTS`."""
    from attnclust.assignments.source import toc_chapters

    return [(f, part) for f, part in toc_chapters(root) if part is None or part in MAIN_PARTS]


def book_stats(root: str | Path, ledger: str | Path | None = None) -> list[ChapterStats]:
    """The measures of every main-path chapter of the book at ``root``. ``ledger``: a built
    ledger (``claims.json``) to read the claims' sentences from, when it exists."""
    root = Path(root)
    sentences = ledger_sentences(ledger) if ledger is not None else {}
    return [chapter_stats(root / f"{f}.md", part, sentences) for f, part in main_path(root)]


def compute_seconds(root: str | Path) -> dict[str, float]:
    """Chapter stem -> seconds its notebook took to execute in the last clean build that
    ``benchmarks/book.py`` timed (``benchmarks/book.json``, its ``chapters_s``); empty when
    no timing per chapter has been recorded yet."""
    path = Path(root) / "benchmarks" / "book.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in (data.get("chapters_s") or {}).items()}


def _goal_value(stats: list[ChapterStats], goal: Goal) -> tuple[str, str]:
    """The goal's met column: whether it is met, and by how many chapters."""
    if goal.scope == "total":
        total = sum(getattr(s, goal.measure) for s in stats)
        return ("met" if goal.met(total) else "not met"), f"{total:.0f}"
    held = [s for s in stats if not goal.experiments_only or s.part in EXPERIMENT_PARTS]
    ok = sum(goal.met(getattr(s, goal.measure)) for s in held)
    return ("met" if ok == len(held) else "not met"), f"{ok} of {len(held)}"


_ROWS = (
    ("prose words", "prose_words", "{:d}"),
    ("claim words", "claim_words", "{:d}"),
    ("reading minutes", "minutes", "{:.1f}"),
    ("shown code lines", "code_lines", "{:d}"),
    ("checking code, % of shown lines", "checking_share", "{:.0f}"),
    ("figures", "figures", "{:d}"),
    ("figures per 1,000 words", "figures_per_1000", "{:.2f}"),
    ("first figure at word", "first_figure_word", "{}"),
    ("display equations", "equations", "{:d}"),
    ("exercises", "exercises", "{:d}"),
    ("evidence blocks (not on the main path)", "evidence", "{:d}"),
    ("tooling sentences", "tooling_sentences", "{:d}"),
    ("tooling sentences, %", "tooling_share", "{:.1f}"),
)


def _total(stats: list[ChapterStats], attr: str) -> str:
    if attr in ("minutes",):
        return f"{sum(s.minutes for s in stats):.1f}"
    if attr == "checking_share":
        code = sum(s.code_lines for s in stats)
        return f"{100 * sum(s.checking_lines for s in stats) / code:.0f}" if code else "0"
    if attr == "figures_per_1000":
        words = sum(s.words for s in stats)
        return f"{1000 * sum(s.figures for s in stats) / words:.2f}" if words else "0"
    if attr == "tooling_share":
        n = sum(s.sentences for s in stats)
        return f"{100 * sum(s.tooling_sentences for s in stats) / n:.1f}" if n else "0"
    if attr == "first_figure_word":
        return ""
    return str(sum(getattr(s, attr) for s in stats))


def table(stats: list[ChapterStats]) -> str:
    """The measures as a Markdown table, one column per chapter, a total, the goal and
    whether it is met (``met`` or ``not met``, with how many chapters meet it)."""
    goals: dict[str, list[Goal]] = {}
    for g in GOALS:
        goals.setdefault(g.measure, []).append(g)
    head = ["measure", *(s.chapter for s in stats), "total", "goal", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(stats) + 1)
                                                           + ["---", "---"]) + "|"]
    for label, attr, fmt in _ROWS:
        cells = []
        for s in stats:
            v = getattr(s, attr)
            cells.append("–" if v is None else fmt.format(v))
        gs = goals.get(attr, [])
        goal = "; ".join(g.text() for g in gs)
        met = "; ".join("{0} ({1})".format(*_goal_value(stats, g)) if g.scope == "chapter"
                        else _goal_value(stats, g)[0] for g in gs)
        lines.append("| " + " | ".join([label, *cells, _total(stats, attr), goal, met]) + " |")
    return "\n".join(lines)


def section_minutes(path: str | Path, titles: list[str]) -> dict[str, float]:
    """Title -> the reading minutes (:func:`chapter_stats`) that the section of the chapter
    at ``path`` headed ``title`` adds: the chapter's minutes less those of the chapter
    without it (cut by ``attnclust.assignments.plan.strip_section``). The instructors'
    page (chapters/instructors.md) gives them for the optional sections."""
    from attnclust.assignments.plan import strip_section

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    full = chapter_stats(path).minutes
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for title in titles:
            short = Path(folder) / path.name
            short.write_text(strip_section(text, title), encoding="utf-8")
            out[title] = full - chapter_stats(short).minutes
    return out

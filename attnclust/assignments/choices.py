"""The book's multiple-choice questions, and the tells that give their answers away.

An interpretation exercise (:mod:`.source`) states a question and lettered options, ``(a)``
to ``(d)`` (each at the start of a line or paragraph, or inline, ``(a) 1; (b) 0.5; ...``),
and its reference solution stores the key (``ex_beyond_4 = "b"``; its check compares the
answer with it). :func:`read_choices`
reads them back from a parsed chapter; :func:`tells` finds what lets a student who has not
read the chapter pick the key, or rule an option out, from the options' form alone:

- **length**: the key is the longest or the shortest option by a clear margin
  (:data:`LENGTH_RATIO`, and at least :data:`LENGTH_MIN_CHARS` characters);
- **wording**: the key repeats the stem clearly more than every other option, in content
  words (:data:`OVERLAP_MARGIN` more) or in a phrase (a run of at least :data:`PHRASE_MIN`
  words and formulas, :data:`OVERLAP_MARGIN` longer than any other option's), the stem read
  as the book shows it: a result it names by ``{prf:ref}`` shows its title, whose words the
  key may echo; or the key is the only option that does not open with the others' first word
  (the odd one out of three parallel options);
- **absolutes**: the key is the only option without an absolute word (always, never, only,
  every, ...: :data:`ABSOLUTES`), which marks the others as the overstated ones, or a single
  option has one: the key then stands out, a distractor is ruled out by its form;

and :func:`position_tells` what the keys' letters show over a set of questions: a letter
that is the key far more often than the others (:data:`POSITION_SHARE`), or one that never
is. ``scripts/choice_tells.py`` prints the tells of every question of the book; the tests
hold every question to none.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .markdown import render_roles
from .source import Chapter

__all__ = ["ABSOLUTES", "LENGTH_MIN_CHARS", "LENGTH_RATIO", "OVERLAP_MARGIN", "PHRASE_MIN",
           "POSITION_SHARE", "Choice", "content_words", "parse_options", "position_tells",
           "read_choices", "shared_phrase", "shown_length", "tells"]

LENGTH_RATIO = 1.25
"""The key is told by its length when it is this many times longer than every other option
(or this many times shorter than every other one)."""

LENGTH_MIN_CHARS = 15
"""... and by at least this many characters (a one-word option is not a tell)."""

OVERLAP_MARGIN = 2
"""The key is told by its wording when it shares at least this many more content words with
the stem than every other option does."""

PHRASE_MIN = 3
"""A phrase shared by the key and the stem counts from this many words (formulas count as
words)."""

POSITION_SHARE = 0.5
"""Over the book's questions, no letter may be the key of more than this share of them."""

ABSOLUTES = frozenset({
    "always", "never", "all", "none", "every", "everything", "nothing", "only", "exactly",
    "any", "cannot", "must", "completely", "entirely", "whatever", "impossible", "no",
})
"""Words that state without exception: an option that has one and others that do not give
a test-wise student a cue."""

_STOP = frozenset("""
a an the and or of to in on at by for with from as is are be been being it its this that these
those their there than then so such not but if when where which who whom whose what why how
into onto over under about between both each more most less least same other another one two
do does did has have had was were will would can could should may might very much many own
they them he she his her we our you your i also just like off out up down because since while
""".split())

_OPTION = re.compile(r"(?:^|(?<=[\s;,.]))\((?P<letter>[a-h])\)\s+", re.M)
_TAIL = re.compile(r"\s*(?:Store (?:the|your)|Answer with|Store the pair)\b", re.S)
_KEY = re.compile(r"""==\s*["'](?P<letter>[a-h])["']""")
_STORED = re.compile(r"""^(?P<var>ex_\w+)\s*=\s*\(?[^\n]*?["'](?P<letter>[a-h])["']\)?\s*(?:#.*)?$""", re.M)
_MATH = re.compile(r"\$\$?(?P<math>[^$]+)\$\$?")
_ROLE = re.compile(r"\{[\w:-]+\}`(?P<content>[^`]*)`")
_WORD = re.compile(r"[a-z][a-z'-]*")


@dataclass
class Choice:
    """A multiple-choice question: its exercise's label and number, the stem, the options
    (letter -> text, in order) and the key (its letter)."""

    label: str
    number: int
    stem: str
    options: dict[str, str]
    key: str
    found: list[str] = field(default_factory=list)
    """What :func:`tells` found (filled by :func:`read_choices`)."""


def parse_options(statement: str) -> tuple[str, dict[str, str]]:
    """The stem and the options ``{letter: text}`` of a statement with lettered options
    ``(a)``, ``(b)``, ... in order; ``("", {})`` when it has fewer than two."""
    body = _TAIL.split(statement, maxsplit=1)[0]
    marks = []
    expected = "a"
    for m in _OPTION.finditer(body):
        if m["letter"] == expected:
            marks.append(m)
            expected = chr(ord(expected) + 1)
    if len(marks) < 2:
        return "", {}
    options = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        text = body[m.end():nxt.start() if nxt else len(body)]
        options[m["letter"]] = " ".join(text.split()).rstrip(";,. ")
    stem = body[:marks[0].start()]
    return " ".join(stem.split()), options


def shown_length(text: str) -> int:
    """Characters as a reader sees them: a formula by its symbols, a TeX command one symbol
    (``\\theta_h``: two); a role by its content."""
    text = _ROLE.sub(lambda m: m["content"], text)
    text = _MATH.sub(lambda m: re.sub(r"[{}^_\\ ]", "", re.sub(r"\\[a-zA-Z]+", "x", m["math"]))
                     or "x", text)
    return len(" ".join(text.split()))


def _stem_word(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """The text's content words, lowercased and crudely stemmed (``heads`` -> ``head``), its
    formulas and roles left out, stop words and absolutes dropped."""
    text = _ROLE.sub(" ", _MATH.sub(" ", text)).lower()
    return {_stem_word(w) for w in _WORD.findall(text)
            if len(w) > 2 and w not in _STOP and w not in ABSOLUTES}


_TOKEN = re.compile(r"\$[^$]+\$|[A-Za-z][A-Za-z'-]*|\d+")


def _tokens(text: str) -> list[str]:
    return [re.sub(r"\s+", "", t) if t.startswith("$") else t.lower()
            for t in _TOKEN.findall(_ROLE.sub(lambda m: m["content"], text))]


def shared_phrase(a: str, b: str) -> int:
    """The length of the longest run of consecutive words (a formula is one word, compared
    without spaces) that ``a`` and ``b`` share."""
    ta, tb = _tokens(a), _tokens(b)
    best = 0
    for n in range(1, min(len(ta), len(tb)) + 1):
        grams = {tuple(tb[i:i + n]) for i in range(len(tb) - n + 1)}
        if not any(tuple(ta[i:i + n]) in grams for i in range(len(ta) - n + 1)):
            break
        best = n
    return best


def _absolute_words(text: str) -> set[str]:
    return set(_WORD.findall(_ROLE.sub(" ", _MATH.sub(" ", text)).lower())) & ABSOLUTES


def _absolutes(text: str) -> bool:
    return bool(_absolute_words(text))


def tells(choice: Choice) -> list[str]:
    """What gives ``choice``'s key away by its form (see the module docstring), one
    sentence each; empty when nothing does."""
    key, opts = choice.key, choice.options
    others = [o for o in opts if o != key]
    if key not in opts or not others:
        return [f"the key ({key}) is not one of the options"]
    found = []
    n = {o: shown_length(t) for o, t in opts.items()}
    longest, shortest = max(n[o] for o in others), min(n[o] for o in others)
    if n[key] >= LENGTH_RATIO * longest and n[key] - longest >= LENGTH_MIN_CHARS:
        found.append(f"length: the key ({key}) is the longest option, {n[key]} characters "
                     f"against at most {longest}")
    if n[key] * LENGTH_RATIO <= shortest and shortest - n[key] >= LENGTH_MIN_CHARS:
        found.append(f"length: the key ({key}) is the shortest option, {n[key]} characters "
                     f"against at least {shortest}")
    stem = content_words(choice.stem)
    shared = {o: stem & content_words(t) for o, t in opts.items()}
    most = max(len(shared[o]) for o in others)
    if len(shared[key]) - most >= OVERLAP_MARGIN:
        found.append(f"wording: the key ({key}) shares {len(shared[key])} words with the stem "
                     f"({', '.join(sorted(shared[key]))}), the others at most {most}")
    run = {o: shared_phrase(t, choice.stem) for o, t in opts.items()}
    longest_run = max(run[o] for o in others)
    if run[key] >= PHRASE_MIN and run[key] - longest_run >= OVERLAP_MARGIN:
        found.append(f"wording: the key ({key}) repeats a phrase of {run[key]} words of the "
                     f"stem, the others at most {longest_run}")
    first = {o: (_tokens(t) or [""])[0] for o, t in opts.items()}
    if len(others) >= 2 and len({first[o] for o in others}) == 1 and first[key] != first[others[0]]:
        found.append(f"wording: the key ({key}) opens with '{first[key]}', every other option "
                     f"with '{first[others[0]]}'")
    absolute = {o: _absolutes(t) for o, t in opts.items()}
    if len(others) >= 2 and not absolute[key] and all(absolute[o] for o in others):
        found.append(f"absolutes: the key ({key}) is the only option without an absolute word")
    lone = [o for o in opts if absolute[o]]
    if len(others) >= 2 and len(lone) == 1:
        what = "the key" if lone[0] == key else "a distractor"
        found.append(f"absolutes: {what} ({lone[0]}) is the only option with an absolute word "
                     f"({', '.join(sorted(_absolute_words(opts[lone[0]])))})")
    return found


def position_tells(choices: list[Choice]) -> list[str]:
    """What the keys' letters give away over ``choices``: a letter that is the key of more
    than :data:`POSITION_SHARE` of them, or, with at least twice as many questions as
    letters, a letter of every question that is never the key."""
    if not choices:
        return []
    keys = Counter(c.key for c in choices)
    found = [f"position: ({letter}) is the key of {count} of {len(choices)} questions"
             for letter, count in sorted(keys.items()) if count > POSITION_SHARE * len(choices)]
    common = set.intersection(*(set(c.options) for c in choices))
    if len(choices) >= 2 * len(common):
        found += [f"position: ({letter}) is never the key of {len(choices)} questions"
                  for letter in sorted(common - set(keys))]
    return found


def read_choices(chapter: Chapter) -> list[Choice]:
    """The multiple-choice questions of ``chapter`` (its interpretation exercises with
    lettered options and a key in a check), each with its :func:`tells`."""
    out = []
    for ex in chapter.exercises.values():
        if ex.kind != "interpretation":
            continue
        stem, options = parse_options(ex.statement)
        # the key: the letter the reference solution stores, else the one its check compares
        keys = {m["letter"] for src in ex.solution_code for m in _STORED.finditer(src)
                if m["var"] == ex.variable}
        keys = keys or {m["letter"] for check in ex.checks for m in _KEY.finditer(check)}
        if not options or len(keys) != 1:
            continue
        # the stem without the headline "Kind: ... minutes.", its roles as the book shows
        # them: a result's title that a stem names is wording the key may echo
        stem = re.sub(r"^Kind: .*? minutes\.\s*", "", stem)
        if chapter.refs is not None:
            stem = render_roles(stem, chapter.refs)
        choice = Choice(ex.label, ex.number, stem, options, keys.pop())
        choice.found = tells(choice)
        out.append(choice)
    return out

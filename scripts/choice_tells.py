#!/usr/bin/env python3
"""Print every multiple-choice question of the book with the tells that give its key away.

A tell is what lets a student pick the key, or rule an option out, from the options' form
alone: the key's length, its wording shared with the stem (a result the stem names counts by
its title), absolute words, and, over the book, the keys' positions. What each measures and
its thresholds: attnclust.assignments.choices. Exit status 1 when any question has a tell.

    python scripts/choice_tells.py            # one line per question, its tells below it
    python scripts/choice_tells.py --options  # with each option's length and shared words
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's package, not an installed one

from attnclust.assignments.choices import (  # noqa: E402
    content_words, position_tells, read_choices, shown_length)
from attnclust.assignments.source import parse_chapter, toc_chapters  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=str(ROOT), help="the book (folder of _toc.yml)")
    p.add_argument("--options", action="store_true", help="show each option's measures")
    a = p.parse_args(argv)
    root = Path(a.root)
    questions = []
    for f, _ in toc_chapters(root):
        path = root / f"{f}.md"
        if path.is_file():
            questions += read_choices(parse_chapter(path))
    for q in questions:
        print(f"Exercise {q.number} ({q.label}): key ({q.key}), {len(q.options)} options"
              + ("" if q.found else ", no tell"))
        for t in q.found:
            print(f"  - {t}")
        if a.options:
            stem = content_words(q.stem)
            for letter, text in q.options.items():
                shared = sorted(stem & content_words(text))
                print(f"    ({letter}) {shown_length(text):4d} characters, shares with the stem: "
                      f"{', '.join(shared) or '-'}")
    overall = position_tells(questions)
    keys = ", ".join(f"({q.key})" for q in questions)
    print(f"{len(questions)} questions; keys in book order: {keys}")
    for t in overall:
        print(f"  - {t}")
    return 1 if overall or any(q.found for q in questions) else 0


if __name__ == "__main__":
    sys.exit(main())

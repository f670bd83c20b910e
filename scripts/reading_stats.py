#!/usr/bin/env python3
"""Print the measures of the book's main path beside the goals of issue 29 (Markdown table).

The measures and what each counts: attnclust.book.reading. The claims' sentences are read from
the built ledger, _build/html/claims.json, when it exists (--ledger to name another, --source to
read them from the chapters' code), else from the chapters' code.

    python scripts/reading_stats.py            # the table
    python scripts/reading_stats.py --json     # the measures, one object per chapter
    python scripts/reading_stats.py --tooling  # the table, then the tooling sentences
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's package, not an installed one

from attnclust.book.reading import book_stats, table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=str(ROOT), help="the book (folder of _toc.yml)")
    p.add_argument("--ledger", help="a built claims.json (default: _build/html/claims.json)")
    p.add_argument("--source", action="store_true", help="claims' sentences from the code only")
    p.add_argument("--json", action="store_true", help="print the measures as JSON")
    p.add_argument("--tooling", action="store_true", help="list the tooling sentences too")
    a = p.parse_args(argv)
    root = Path(a.root)
    ledger = None if a.source else Path(a.ledger) if a.ledger else root / "_build" / "html" / "claims.json"
    stats = book_stats(root, ledger)
    if a.json:
        print(json.dumps([s.as_dict() for s in stats], indent=1))
        return 0
    print(table(stats))
    if a.tooling:
        for s in stats:
            for sentence in s.tooling:
                print(f"- {s.chapter}: {sentence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

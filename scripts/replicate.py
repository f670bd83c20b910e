#!/usr/bin/env python3
"""``make replicate SEED=N``: every claim of the book checked again under the master seed N.

    python scripts/replicate.py --seed N [--results DIR] [--report PATH] [--chapters NAME ...]
                                [--skip-experiments]

1. Runs every committed experiment at the book's size under the master seed N into
   ``_build/replicate/seed-N/results`` (``python -m attnclust experiment NAME --seed N --out
   DIR``), keeping a file already there that was written under N from the same sources.
2. Executes every chapter that states claims in a fresh kernel under N, reading those files,
   each claim recording its verdict (``attnclust.book.replication``).
3. Writes the report ``replications/seed-N.json`` (committed; the Claims page shows it) and
   prints the claims whose verdict flipped and the cells that failed.

It takes about as long as running every committed experiment (about an hour on 2 cores) plus
a clean build of the book; CI does not run it. Exit status 0 when the report is written,
whatever it finds; 1 when an experiment fails.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnclust.book import replication, results  # noqa: E402
from attnclust.book.experiments import names  # noqa: E402

CHAPTERS = ROOT / "chapters"
ROLE = re.compile(r"\{claim\}`([a-z0-9-]+)`")


def _chapters_with_claims() -> list[Path]:
    toc = (ROOT / "_toc.yml").read_text()
    order = re.findall(r"file:\s*chapters/(\S+)", toc)
    return [CHAPTERS / f"{n}.md" for n in order
            if "claims.claim(" in (CHAPTERS / f"{n}.md").read_text(encoding="utf-8")]


def _fresh(path: Path, seed: int) -> bool:
    if not path.is_file():
        return False
    st = results.load(path.stem, directory=path.parent)
    return st.data.get("seed") == seed and not st.stale


def _git(*args: str) -> str | None:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, required=True, help="the master seed, an integer >= 1")
    p.add_argument("--results", type=Path, default=None, help="the folder of the replication's results files")
    p.add_argument("--report", type=Path, default=None, help="the report (default replications/seed-N.json)")
    p.add_argument("--chapters", nargs="*", default=None, help="chapter names (default: all that state claims)")
    p.add_argument("--skip-experiments", action="store_true",
                   help="run no experiment: use the results files already in the folder")
    args = p.parse_args(argv)
    if args.seed < 1:
        p.error(f"--seed must be an integer >= 1 (0 is the book's own seed), got {args.seed}")
    folder = (args.results or ROOT / "_build" / "replicate" / f"seed-{args.seed}" / "results").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    experiments = {}
    for name in names():
        path = folder / f"{name}.json"
        if args.skip_experiments and not path.is_file():
            continue
        if not args.skip_experiments and not _fresh(path, args.seed):
            print(f"experiment {name} under seed {args.seed} ...", flush=True)
            start = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "attnclust", "experiment", name, "--size", "full",
                                "--seed", str(args.seed), "--out", str(folder)], cwd=ROOT)
            if r.returncode != 0:
                print(f"error: experiment {name} failed (exit status {r.returncode})", file=sys.stderr)
                return 1
            print(f"  {time.perf_counter() - start:.0f} s", flush=True)
        st = results.load(name, directory=folder)
        experiments[name] = {"command": st.command, "commit": st.commit, "date": st.date, "machine": st.machine}
    chapters = ([CHAPTERS / f"{n}.md" for n in args.chapters] if args.chapters is not None
                else _chapters_with_claims())
    log = folder.parent / "claims.jsonl"
    log.unlink(missing_ok=True)
    log.touch()
    setup = replication.setup_source(args.seed, folder, log)
    runs = []
    for ch in chapters:
        print(f"chapter {ch.stem} under seed {args.seed} ...", flush=True)
        run = replication.run_chapter(ch, setup)
        print(f"  {run.seconds:.0f} s, {len(run.errors)} failing cells", flush=True)
        runs.append(run)
    expected = list(dict.fromkeys(i for ch in chapters for i in ROLE.findall(ch.read_text(encoding="utf-8"))))
    rep = replication.report(args.seed, log, runs, expected_ids=expected, experiments=experiments,
                             commit=_git("rev-parse", "HEAD"),
                             clean=_git("status", "--porcelain", "--", "attnclust", "chapters") == "")
    out = args.report or ROOT / replication.REPORT_DIR / f"seed-{args.seed}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rep, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    c = rep["counts"]
    print(f"seed {args.seed}: {c['claims']} claims recorded, {c['flipped']} flipped, "
          f"{c['not_recorded']} not recorded, {c['cell_errors']} failing cells; report {out}")
    for r in replication.flips(rep):
        print(f"  flipped: {r['id']}: {r['verdict']} ({r['detail']}); written for {r['expect']}")
    for ch in rep["chapters"]:
        for e in ch["errors"]:
            print(f"  failing cell: {ch['chapter']} cell {e['cell']}: {e['error']}")
    for i in rep["not_recorded"]:
        print(f"  not recorded: {i}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

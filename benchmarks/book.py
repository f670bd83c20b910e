#!/usr/bin/env python3
"""Time the book build: a clean build, then a cached rebuild right after (make bench-book).

The clean build runs in a fresh copy of the repository with no _build (by default the
committed tree, ``git archive HEAD``, which is what a fresh clone builds; ``--worktree``
copies the working tree instead), with ``make book`` itself (the copy's Makefile, this
checkout's .venv), with JAX's compilation cache in the copy (empty at the clean build, as in
a fresh clone).
The cached rebuild is the same command again in the same copy. Each time is recorded with
the machine's load averages before and after, since other processes slow a build.
Writes benchmarks/book.json, which ``benchmarks/run.py`` puts into the results table.

Per chapter (``chapters_s``): the seconds each page's notebook took to execute in the clean
build, as jupyter-cache recorded them (``execution_seconds`` of the copy's
``_build/.jupyter_cache``), JAX's compilations included, as on a reader's first run. The build
executes the pages side by side, one a core (``cores``), so each time is that of a page sharing
the machine with others, not alone; the chapter "For instructors" shows them
(``attnclust.book.reading.compute_seconds``). ``--chapters-from BUILD`` records them from an
existing build folder instead, without building (``"chapters_from"`` says which). Every
notebook page is timed, the overview after the preface (``at_a_glance``) as much as the
chapters: a page that ``make book`` executes but that has no time is named in
``"chapters_missing"`` and in a warning (:func:`missing_pages`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(copy: Path, venv_bin: Path) -> dict:
    # JAX's compilation cache of the copy itself (empty for the clean build, as in a fresh
    # clone), not the one scripts/jax_env.py sets for this checkout, which the tests have filled
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(copy / "_build" / ".jax-cache")}
    load_before = list(os.getloadavg())
    t0 = time.perf_counter()
    # -o: the environment is installed already (the copy's requirements files are newer
    # than its stamp, which would reinstall it)
    venv = venv_bin.parent
    proc = subprocess.run(
        ["make", "--no-print-directory", "-o", str(venv / ".installed"), "book", f"VENV={venv}"],
        cwd=copy, capture_output=True, text=True, env=env,
    )
    seconds = time.perf_counter() - t0
    # the last lines of the log that say something (not the kernels' repeated TCP notice)
    tail = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines()
            if ln.strip() and "[IPKernelApp]" not in ln][-5:]
    return {"seconds": seconds, "returncode": proc.returncode,
            "load_before": load_before, "load_after": list(os.getloadavg()), "log_tail": tail}


def notebook_pages(root: Path = ROOT) -> list[str]:
    """Stems of the pages ``make book`` executes (the Makefile's ``NOTEBOOK_PAGES``: the
    chapters whose MyST header names a kernel), which the clean build times."""
    return sorted(p.stem for p in (Path(root) / "chapters").glob("*.md")
                  if any(line.startswith("kernelspec:") for line in p.read_text().splitlines()))


def missing_pages(seconds: dict[str, float], root: Path = ROOT) -> list[str]:
    """The notebook pages without an execution time in ``seconds``."""
    return [stem for stem in notebook_pages(root) if stem not in seconds]


def chapter_seconds(build_dir: Path) -> dict[str, float]:
    """Chapter stem -> seconds its notebook took to execute, from the jupyter-cache of
    ``build_dir`` (``_build``); empty when there is no cache or jupyter-cache is missing."""
    cache = Path(build_dir) / ".jupyter_cache"
    if not cache.is_dir():
        return {}
    try:
        from jupyter_cache import get_cache
    except ImportError:
        return {}
    out = {}
    for record in get_cache(str(cache)).list_cache_records():
        seconds = (record.data or {}).get("execution_seconds")
        if seconds is not None:
            out[Path(record.uri).stem] = float(seconds)
    return dict(sorted(out.items()))


def record_chapters(build_dir: Path, out: Path) -> int:
    """Write the chapters' execution seconds of an existing build into ``out`` (book.json),
    keeping what it holds; 1 when the build has none."""
    seconds = chapter_seconds(build_dir)
    if not seconds:
        print(f"no executed chapters in {build_dir}/.jupyter_cache", file=sys.stderr)
        return 1
    result = json.loads(out.read_text()) if out.is_file() else {}
    result["chapters_s"] = seconds
    result["chapters_missing"] = _warn_missing(seconds, build_dir.parent)
    result["chapters_from"] = f"{build_dir} ({dt.datetime.now(dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ})"
    result["cores"] = os.cpu_count()
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {len(seconds)} chapters' seconds to {out}")
    return 0


def _warn_missing(seconds: dict[str, float], root: Path) -> list[str]:
    missing = missing_pages(seconds, root)
    if missing:
        print(f"warning: no execution time for {', '.join(missing)}", file=sys.stderr)
    return missing


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--worktree", action="store_true", help="copy the working tree, not HEAD")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "book.json"))
    p.add_argument("--keep", action="store_true", help="keep the copy (its path is printed)")
    p.add_argument("--chapters-from", metavar="BUILD",
                   help="only record the chapters' execution seconds of an existing build folder")
    a = p.parse_args()
    if a.chapters_from:
        return record_chapters(Path(a.chapters_from), Path(a.out))
    venv_bin = ROOT / ".venv" / "bin"
    tmp = Path(tempfile.mkdtemp(prefix="attnclust-bench-book-"))
    copy = tmp / "repo"
    if a.worktree:
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
            ".venv", "_build", ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info"))
        source = "working tree"
    else:
        copy.mkdir()
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(copy)], input=archive.stdout, check=True)
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        source = f"git HEAD {rev.stdout.strip()}"
    print(f"building {source} in {copy} (clean)...", flush=True)
    clean = build(copy, venv_bin)
    chapters = chapter_seconds(copy / "_build")  # the clean build's executions, before the rebuild
    print(f"clean: {clean['seconds']:.0f} s, exit {clean['returncode']}, load {clean['load_before'][0]:.1f} -> {clean['load_after'][0]:.1f}", flush=True)
    cached = build(copy, venv_bin)
    print(f"cached: {cached['seconds']:.0f} s, exit {cached['returncode']}, load {cached['load_before'][0]:.1f} -> {cached['load_after'][0]:.1f}", flush=True)
    result = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": source, "command": "make bench-book",
        "clean_s": clean["seconds"], "cached_s": cached["seconds"],
        "clean_ok": clean["returncode"] == 0, "cached_ok": cached["returncode"] == 0,
        "clean_load": clean["load_before"][0], "cached_load": cached["load_before"][0],
        "clean": clean, "cached": cached, "cores": os.cpu_count(),
        "chapters_s": chapters, "chapters_from": "the clean build",
        "chapters_missing": _warn_missing(chapters, copy),
    }
    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    if a.keep:
        print(f"copy kept at {copy}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {a.out}")
    return 0 if result["clean_ok"] and result["cached_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

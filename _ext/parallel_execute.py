"""Execute the book's notebook pages in parallel before Sphinx reads them (loaded from
_config.yml, sphinx.local_extensions).

With ``execute_notebooks: cache`` MyST-NB executes a page when Sphinx reads it, one page
after another, and a page's kernel keeps about one core busy (importing, compiling,
plotting), so on a machine with several cores most of them wait. Before the read
(``env-before-read-docs``) this extension reads every page that is to be read exactly as
MyST-NB will (the same readers and configuration, after the book's ``source-read``
transformation, _ext/setup_cells.py), looks each notebook up in jupyter-cache, and executes
the pages not found there in ``book_execution_jobs`` worker processes at once (0, the
default: one a core), the longest first where an earlier build recorded how long each took
(else in the table of contents' order). It stores each executed notebook in the cache as MyST-NB does, so that the read finds it
there. What a page shows, and when it is executed again, is unchanged: MyST-NB's cache is
keyed on the notebook's code, and ``scripts/book_cache.py`` empties it whenever an input of a
page changes.

A page that fails is not stored: MyST-NB executes it again as it reads it, and reports the
error as it always does (with ``-W``, a failed build). A page the read executes again
although this extension stored it means the two read it differently: that is a warning
(a failed build with ``-W``), not a silent second execution.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path, PurePosixPath

from sphinx.util import logging

from setup_cells import collapse_setup_cells

logger = logging.getLogger(__name__)

TIMES_FILE = ".attnclust-exec-seconds.json"
"""In the build folder: seconds each page took to execute at the last build that executed
it, for the order of the next (longest first; pages never timed go first, in the table of
contents' order)."""


def _execute(path: str, nb, timeout, allow_errors: bool):
    """In a worker process: the executed notebook, its seconds and its error, if any."""
    from jupyter_cache.executors.utils import single_nb_execution

    result = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    return nb, result.time, (None if result.err is None else result.exc_string or repr(result.err))


def _pages(env, docnames, cache):
    """(docname, path, notebook, read format, configuration) of every page to be read that
    is a notebook not in the cache, as MyST-NB's parser would read it."""
    from myst_nb.core.read import create_nb_reader
    from myst_nb.core.nb_to_tokens import nb_node_to_dict

    base = env.mystnb_config
    out = []
    for docname in sorted(docnames):
        path = str(env.doc2path(docname))
        text = collapse_setup_cells(Path(path).read_text(encoding="utf8"))
        reader = create_nb_reader(path, env.myst_config, base, text)
        if reader is None:
            continue
        nb = reader.read(text)
        config = base
        if base.metadata_key in nb.metadata:
            overrides = nb_node_to_dict(nb.metadata[base.metadata_key])
            overrides.pop("output_folder", None)
            config = base.copy(**overrides)
        if config.execution_mode != "cache" or any(
                PurePosixPath(Path(path).as_posix()).match(p) for p in config.execution_excludepatterns):
            continue
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            out.append((docname, path, nb, reader.read_fmt, config))
    return out


def pre_execute(app, env, docnames) -> None:
    """``env-before-read-docs``: execute the uncached notebook pages in parallel and cache them."""
    config = env.mystnb_config
    jobs = app.config.book_execution_jobs or os.cpu_count() or 1
    if config.execution_mode != "cache" or jobs < 2:
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(config.execution_cache_path)
    todo = _pages(env, docnames, cache)
    if len(todo) < 2:
        return  # nothing to run side by side: MyST-NB executes it as it reads
    times_path = Path(app.outdir).parent / TIMES_FILE
    times = json.loads(times_path.read_text()) if times_path.exists() else {}
    # the table of contents' order (sphinx-external-toc's site map) where nothing was timed
    toc = {d: i for i, d in enumerate(getattr(app.config, "external_site_map", None) or ())}
    todo.sort(key=lambda page: (-times.get(page[0], float("inf")), toc.get(page[0], len(toc)), page[0]))
    jobs = min(jobs, len(todo))
    logger.info(f"executing {len(todo)} notebook pages, {jobs} at a time "
                f"(book_execution_jobs)")
    stored = env.attnclust_pre_executed = {}
    t0 = time.perf_counter()
    # fork: the workers start at once, without importing Sphinx again; each only waits on
    # its page's kernel (a process of its own)
    with ProcessPoolExecutor(jobs, mp_context=get_context("fork")) as pool:
        futures = {pool.submit(_execute, path, nb, c.execution_timeout, c.execution_allow_errors):
                   (docname, path, read_fmt) for docname, path, nb, read_fmt, c in todo}
        for done, future in enumerate(as_completed(futures), 1):
            docname, path, read_fmt = futures[future]
            nb, seconds, error = future.result()
            progress = f"[{done}/{len(todo)}, {time.perf_counter() - t0:.0f} s]"
            if error is not None:
                last = error.strip().splitlines()[-1] if error.strip() else error
                logger.info(f"{progress} {docname} failed ({last}): executed again as it is read")
                continue
            times[docname] = seconds
            stage = cache.add_nb_to_project(path, read_data=read_fmt)
            record = cache.cache_notebook_bundle(
                CacheBundleIn(nb, stage.uri, data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
            stored[docname] = record.created.timestamp()
            logger.info(f"{progress} {docname} executed in {seconds:.0f} s")
    times_path.parent.mkdir(parents=True, exist_ok=True)
    times_path.write_text(json.dumps(times, indent=1, sort_keys=True))


def check_served(app, env) -> None:
    """``env-updated``: every page stored above was served from that cache record by the read.
    MyST-NB records when the outputs it used were made (``exec_data``'s ``mtime``): the
    record's creation time for a notebook found in the cache, the time of its own execution
    otherwise."""
    stored = getattr(env, "attnclust_pre_executed", None)
    if not stored:
        return
    from myst_nb.sphinx_ import NbMetadataCollector

    for docname, created in stored.items():
        data = NbMetadataCollector.get_exec_data(env, docname) or {}
        if data.get("mtime") != created:
            logger.warning(f"{docname}: executed twice (the parallel execution's notebook did "
                           "not match the one MyST-NB read; _ext/parallel_execute.py)",
                           location=docname)
    env.attnclust_pre_executed = {}


def setup(app):
    app.add_config_value("book_execution_jobs", 0, "", [int])
    # after MyST-NB's builder-inited (its configuration) and before the read
    app.connect("env-before-read-docs", pre_execute)
    app.connect("env-updated", check_served)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

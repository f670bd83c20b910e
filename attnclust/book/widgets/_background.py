"""Run an explorer module's ``prepare()`` once per process in a background thread."""

from __future__ import annotations

import atexit
import gc
import os
import threading
from collections.abc import Callable

DISABLE_ENV = "ATTNCLUST_WIDGETS_NO_PREPARE"
"""When this environment variable is set (non-empty), the explorers do not start their
``prepare()`` (for a batch execution of the notebooks, which has no reader to wait for)."""


def freeze_long_lived() -> None:
    """Collect the garbage, then move every object the process holds into the garbage
    collector's permanent generation (``gc.freeze``), where later collections do not walk
    them. Called at the end of an explorer's ``prepare()``: by then the process holds JAX's
    and matplotlib's modules, caches and compiled programs (hundreds of thousands of
    objects), and a full collection, which Python starts from time to time during a slider
    move, would walk all of them, a pause of the order of the move itself (``make bench``'s
    widget section measures the collector's pauses per move). The objects made later are
    collected as before."""
    gc.collect()
    gc.freeze()


class BackgroundPrepare:
    """Starts ``fn(stop=event)`` in a daemon thread at the first :meth:`start` (later calls
    return the same thread), after ``delay_s`` seconds. ``fn`` checks ``stop`` between
    compilations; at interpreter exit ``stop`` is set and the thread joined, so that the
    process does not end in the middle of a compilation (which aborts it); a batch
    execution of a notebook that ends within ``delay_s`` of opening the explorer (the book
    build) therefore compiles nothing. An exception ``fn`` raises is kept in ``error``,
    not printed: a notebook cell must not write to stderr, and a move then compiles what
    it needs itself."""

    def __init__(self, fn: Callable[..., None], name: str, delay_s: float = 2.0):
        self._fn = fn
        self._name = name
        self._delay_s = delay_s
        self._lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def _run(self) -> None:
        if self.stop.wait(self._delay_s):
            return
        try:
            self._fn(stop=self.stop)
        except Exception as err:  # noqa: BLE001 - kept for inspection (see the class)
            self.error = err

    def _finish(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()

    def start(self) -> threading.Thread | None:
        """The thread of ``fn`` (started now if not yet), or None when disabled by the
        environment variable ``DISABLE_ENV``."""
        if os.environ.get(DISABLE_ENV):
            return None
        with self._lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                atexit.register(self._finish)
                self.thread.start()
            return self.thread

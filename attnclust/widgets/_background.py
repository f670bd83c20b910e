"""Run an explorer module's ``prepare()`` once per process in a background thread."""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundPrepare:
    """Starts ``fn`` in a daemon thread at the first :meth:`start` (later calls return the
    same thread). An exception it raises is kept in ``error``, not printed: a notebook cell
    must not write to stderr, and a move then compiles what it needs itself."""

    def __init__(self, fn: Callable[[], None], name: str):
        self._fn = fn
        self._name = name
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._fn()
        except Exception as err:  # noqa: BLE001 - kept for inspection (see the class)
            self.error = err

    def start(self) -> threading.Thread:
        with self._lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self.thread.start()
            return self.thread

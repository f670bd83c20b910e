"""The explorers' background preparation (attnclust/book/widgets/_background.py): after an
explorer's ``prepare()`` the process's objects are frozen out of the garbage collector's
full collections (``freeze_long_lived``), which otherwise paused a slider move for most of a
second (the widget rows of benchmarks/results.json)."""

from __future__ import annotations

import gc

import pytest

from attnclust.book.widgets import _background, quantization, training


def test_freeze_long_lived_freezes_the_objects_the_process_holds():
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        _background.freeze_long_lived()
        assert gc.get_freeze_count() > 1000  # the interpreter's, pytest's and numpy's, at least
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("module", [quantization, training], ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_prepare_ends_by_freezing(module, monkeypatch):
    """Also when every program is compiled already (the explorer's own call after a
    chapter's cells compiled them): here nothing is compiled, every job being marked done."""
    calls = []
    monkeypatch.setattr(module, "freeze_long_lived", lambda: calls.append(1))
    if module is training:
        jobs = training._prepare_jobs()
        monkeypatch.setattr(training, "_PREPARED", {x for d, L, i in jobs for x in ((d, L), (d, i))})
        monkeypatch.setattr(training, "_sample_tokens", lambda *a: None)
    else:
        monkeypatch.setattr(quantization, "_PREPARED", set(quantization.K_VALUES))
    module.prepare()
    assert calls == [1]

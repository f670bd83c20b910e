"""What the command lines share (``python -m attnclust`` and its ``assignments``
subcommand): an argument parser whose errors are one line, and argument types that refuse
values that make no sense (a zero resolution, a negative or infinite time limit)."""

from __future__ import annotations

import argparse
import math
import sys


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on standard error (exit status
    2), naming the command and pointing at ``--help``, instead of the usage and the error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """An argument that must be an integer >= 1."""
    return _int_at_least(text, 1, "a positive integer")


def nonnegative_int(text: str) -> int:
    """An argument that must be an integer >= 0."""
    return _int_at_least(text, 0, "an integer >= 0")


def _int_at_least(text: str, minimum: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """An argument that must be a finite number > 0 (no 0, negative, nan or inf)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def fail(message: object, status: int = 1) -> int:
    """Print ``error: message`` (one line) on standard error; return ``status``."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return status

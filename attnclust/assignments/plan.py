"""The numbers of a teaching plan over the course chapters (the page "For instructors").

A plan is a list of sessions, each reading some chapters. From the chapters' exercises
(:mod:`.source`: each states its kind, level and time) :func:`assignments` splits a
session's exercises by level, as the page recommends using them: the warm-up ones in
class, the standard ones as homework, the challenge ones optional, except the lab projects,
of which each student does one (:func:`student_minutes` counts one, not all).
:func:`attnclust.book.reading.section_minutes` measures what skipping an optional section saves, with the book's
reading measure (:func:`attnclust.book.reading.chapter_stats`) applied to the chapter with
and without the section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .source import Chapter

__all__ = ["SessionWork", "assignments", "strip_section", "student_minutes"]

_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*$")
_FENCE = re.compile(r"^\s*(?P<ticks>`{3,}|:{3,})")


@dataclass
class SessionWork:
    """One session's exercises by use, each a list of the book's exercise numbers."""

    session: int
    in_class: list[int] = field(default_factory=list)  # warm-up
    homework: list[int] = field(default_factory=list)  # standard
    optional: list[int] = field(default_factory=list)  # challenge, labs excepted
    labs: list[int] = field(default_factory=list)  # projects: one per student
    minutes: dict[str, int] = field(default_factory=dict)  # in_class, homework, optional


def assignments(sessions: dict[int, list[str]], course: dict[str, Chapter]) -> list[SessionWork]:
    """For each session (number -> the chapter stems it reads), its exercises by use: a
    warm-up exercise in class, a standard one as homework, a challenge one optional, a
    project a lab (each student does one of all the labs); with the minutes the exercises
    state, per use."""
    out = []
    for n, stems in sessions.items():
        work = SessionWork(n)
        for stem in stems:
            chapter = course.get(stem)
            for ex in chapter.exercises.values() if chapter else []:
                use = ("labs" if ex.kind == "project" else
                       {"warm-up": "in_class", "standard": "homework"}.get(ex.level, "optional"))
                getattr(work, use).append(ex.number)
                work.minutes[use] = work.minutes.get(use, 0) + ex.minutes
        out.append(work)
    return out


def student_minutes(work: list[SessionWork], course: dict[str, Chapter]) -> dict[str, int]:
    """A student's exercise minutes over the plan: ``in_class`` and ``homework`` (every
    warm-up and standard exercise), ``lab_min`` / ``lab_max`` (the shortest and the longest
    lab, of which the student does one), ``total_min`` / ``total_max`` (the three together,
    with the shortest or the longest lab); the optional challenge exercises not counted."""
    minutes = {ex.number: ex.minutes for ch in course.values() for ex in ch.exercises.values()}
    labs = [minutes[n] for w in work for n in w.labs] or [0]
    in_class = sum(w.minutes.get("in_class", 0) for w in work)
    homework = sum(w.minutes.get("homework", 0) for w in work)
    return {"in_class": in_class, "homework": homework, "lab_min": min(labs),
            "lab_max": max(labs), "total_min": in_class + homework + min(labs),
            "total_max": in_class + homework + max(labs)}


def strip_section(text: str, title: str) -> str:
    """The MyST ``text`` without the section whose heading starts with ``title`` (the
    heading and everything up to the next heading of the same or a higher level, outside
    code cells and directives).

    Raises:
        ValueError: no heading starts with ``title``.
    """
    lines = text.splitlines(keepends=True)
    fence: str | None = None
    start = level = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m:
            mark = m["ticks"]
            if fence is None:
                fence = mark
            elif line.strip() == fence[0] * len(line.strip()) and len(line.strip()) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        h = _HEADING.match(line)
        if not h:
            continue
        if start is None and h["title"].startswith(title):
            start, level = i, len(h["hashes"])
        elif start is not None and len(h["hashes"]) <= level:
            return "".join(lines[:start] + lines[i:])
    if start is None:
        raise ValueError(f"no section headed {title!r}")
    return "".join(lines[:start])
